"""Unit 13, Autograd beyond eager: torch.func, forward mode, and torch.compile: its declarations are in ``questions.py``."""
