"""The course's content: one package per unit, ``unitNN/``, found by name from ``engine/course.py``.

Each unit package holds ``questions.py`` (the unit's declarations, and only those) and, beside it,
what they use: ``cases.py`` (the generated cases of its exercises, each a :class:`grader.engine.cases.Case`),
``kinds.py`` (answer kinds only this unit needs) and ``support.py`` (models, modes, helpers). ``programs.py``
here makes the random straight-line programs several units share.
"""
