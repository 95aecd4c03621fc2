"""The instructor's tools: ``build`` (learner notebooks from solutions/), ``manifest`` (torch's answers,
recorded to notice drift), ``release``, ``classview`` (a class's progress), ``hub`` (the class on
JupyterHub), ``grading/`` (the gradebook pipeline) and ``cli`` (``python -m grader``)."""
