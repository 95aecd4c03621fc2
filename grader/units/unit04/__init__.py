"""Unit 04, Where the path stops: detach, no_grad, inference_mode, .item(): its declarations are in ``questions.py``."""
