"""Unit 06, Graph lifetime: retain_graph, create_graph, higher order: its declarations are in ``questions.py``."""
