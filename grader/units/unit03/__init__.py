"""Unit 03, Observing gradients: retain_grad, hooks, autograd.grad: its declarations are in ``questions.py``."""
