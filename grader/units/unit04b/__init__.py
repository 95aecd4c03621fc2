"""Unit 04b, The path through modules and optimizers: its declarations are in ``questions.py``."""
