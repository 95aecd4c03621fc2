"""Unit 11, Writing a backward: autograd.Function and gradcheck: its declarations are in ``questions.py``."""
