"""Unit 01's exercise cases: generated programs (:class:`grader.units.programs.Program`) for ``01.graph-walk``."""

from grader.units import programs


def walk_cases():
    return programs.programs(40, seed=101, max_ops=7)
