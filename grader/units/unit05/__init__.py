"""Unit 05, Saved tensors and what they cost: its declarations are in ``questions.py``."""
