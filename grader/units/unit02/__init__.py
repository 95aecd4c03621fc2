"""Unit 02, Backward, and why gradients add: its declarations are in ``questions.py``."""
