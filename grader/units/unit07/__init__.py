"""Unit 07, Version counters and in-place writes: its declarations are in ``questions.py``."""
