"""Unit 10, Capstone: audit a model you did not write: its declarations are in ``questions.py``."""
