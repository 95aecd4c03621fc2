"""Unit 00, Start here: how the course works: its declarations are in ``questions.py``."""
