"""Unit 12, Finding the fault: anomaly mode, NaN hunting, memory that grows: its declarations are in ``questions.py``."""
