"""Unit 09, Saved-tensor hooks: offloading, compression, checkpointing: its declarations are in ``questions.py``."""
