"""Unit 09b, Checkpointing: keep less, compute again: its declarations are in ``questions.py``."""
