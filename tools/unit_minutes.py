"""How long a unit takes a learner: what was measured, and a model of the work for units not measured yet.

    python tools/unit_minutes.py            # every unit: its parts, the model's minutes, the measured, the stated
    python tools/unit_minutes.py 04 04b     # some units

What was measured (``MEASURED``): four expert reviewers of release 0.5.0 (issue 46, which quotes their figures),
each a PyTorch autograd expert who teaches practitioners, worked through four units each (r1: 00-03, r2: 04-06, r3: 07-09b, r4: 10-13) and gave the minutes a
practitioner new to autograd internals needs to do every prediction, exercise and self-test honestly. One
reviewer per unit, one estimate each: they are estimates by people who did the work, not timings of learners. A
unit's stated time (``grader/engine/course.py``) is its measured figure; the total is about 28 hours.

The model counts what a learner has to do in a unit: read its prose (markdown words), read and run its code
(non-blank, non-comment code lines), make each prediction, answer each self-test question and write each
exercise. Its rates are the ones an earlier reviewer's seven units gave (issues 29 and 30: 80 words a minute, 3
seconds a code line, 1 minute a prediction or a self-test question, 10 minutes an exercise), scaled by one
factor, ``SCALE``, fitted by least squares to the sixteen measured units: 62 words a minute, 3.9 seconds a code
line, 1.3 minutes a prediction or a self-test question, 13 minutes an exercise. On the measured units it is within
10 minutes in root mean square, and 24 at most (unit 10, whose tools the model cannot see it has to learn). It
states a time only for a unit that has no measurement (a new unit), rounded to 5 minutes; where a measured unit
changes a lot, measure it again.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# the rates of the first calibration (one reviewer, seven units of release 0.4.0), and the one factor that scales
# them to the sixteen units measured for release 0.5.0
SCALE = 1.29
WORDS_PER_MINUTE = 80 / SCALE
MINUTES_PER_CODE_LINE = 0.05 * SCALE
MINUTES_PER_PREDICTION = 1.0 * SCALE
MINUTES_PER_SELF_TEST = 1.0 * SCALE
MINUTES_PER_EXERCISE = 10.0 * SCALE

# unit -> the minutes its reviewer measured (issue 46: reviews r1 to r4 of release 0.5.0, one unit each)
MEASURED = {
    "00": 15,
    "01": 90,
    "02": 130,
    "03": 110,
    "04": 95,
    "04b": 100,
    "05": 130,
    "06": 120,
    "07": 150,
    "08": 80,
    "09": 100,
    "09b": 60,
    "10": 130,
    "11": 150,
    "12": 110,
    "13": 120,
}


@dataclass
class Work:
    unit: str
    words: int
    code_lines: int
    predictions: int
    self_tests: int
    exercises: int

    @property
    def minutes(self) -> float:
        return (
            self.words / WORDS_PER_MINUTE
            + self.code_lines * MINUTES_PER_CODE_LINE
            + self.predictions * MINUTES_PER_PREDICTION
            + self.self_tests * MINUTES_PER_SELF_TEST
            + self.exercises * MINUTES_PER_EXERCISE
        )

    @property
    def measured(self) -> int | None:
        return MEASURED.get(self.unit)

    @property
    def stated(self) -> int:
        """The minutes a unit should state: the measured figure, or for a unit not measured yet the model's,
        rounded to 5."""
        return self.measured if self.measured is not None else int(5 * round(self.minutes / 5))


def _code_lines(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))


def work_of(unit: str) -> Work:
    """The work in ``unit``'s solution notebook and its questions."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from grader.engine.course import UNITS
    from grader.engine.question import of_unit

    notebook = ROOT / "solutions" / f"{unit}_{UNITS[unit].slug}.ipynb"
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    words = sum(len(re.findall(r"\w+", "".join(c["source"]))) for c in cells if c["cell_type"] == "markdown")
    code = sum(_code_lines("".join(c["source"])) for c in cells if c["cell_type"] == "code")
    roles = [q.role for q in of_unit(unit)]
    return Work(unit, words, code, roles.count("predict"), roles.count("self-test"), roles.count("exercise"))


def main(argv: list[str]) -> int:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from grader.engine.course import UNITS

    units = argv or list(UNITS)
    print(
        f"{'unit':5} {'words':>6} {'code':>5} {'pred':>5} {'self':>5} {'exer':>5} {'model':>6} {'measured':>9} "
        f"{'stated':>7}"
    )
    for unit in units:
        w = work_of(unit)
        measured = "-" if w.measured is None else str(w.measured)
        print(
            f"{unit:5} {w.words:6} {w.code_lines:5} {w.predictions:5} {w.self_tests:5} {w.exercises:5} "
            f"{w.minutes:6.0f} {measured:>9} {UNITS[unit].minutes:7}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
