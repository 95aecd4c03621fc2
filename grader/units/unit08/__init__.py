"""Unit 08, Carried state and truncated BPTT: its declarations are in ``questions.py``."""
