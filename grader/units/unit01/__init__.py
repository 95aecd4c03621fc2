"""Unit 01, What the forward pass records: its declarations are in ``questions.py``."""
