"""How long a unit takes a learner: a model of the work in its solution notebook, calibrated on worked-through units.

    python tools/unit_minutes.py            # every unit: its parts, the model's minutes, the minutes course.py states
    python tools/unit_minutes.py 04 04b     # some units

The model counts what a learner has to do in a unit: read its prose (markdown words), read and run its code
(non-blank, non-comment code lines), make each prediction, answer each self-test question and write each
exercise. Its rates were fitted to an expert reviewer who worked through seven units by hand (issues 29 and 30;
the midpoints of the reviewer's ranges, in ``CALIBRATION``; the units were counted as they stand in release
0.4.0, a little longer than the ones reviewed, so the rates lean slow): 80 words a minute (prose
read with its outputs, slowly), 3 seconds a code line, 1 minute a prediction, 1 minute a self-test question,
10 minutes an exercise. On those seven units the model is within 12 minutes of the reviewer (the largest gap,
unit 06, is the model's 102 against the reviewer's 90). A unit's stated time (``grader/engine/course.py``) is
the model's figure rounded to 5 minutes.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WORDS_PER_MINUTE = 80
MINUTES_PER_CODE_LINE = 0.05
MINUTES_PER_PREDICTION = 1.0
MINUTES_PER_SELF_TEST = 1.0
MINUTES_PER_EXERCISE = 10.0

# unit -> the reviewer's minutes (the midpoint of the range reported in issues 29 and 30); "09" is the whole unit
# as 0.4.0 had it, before its checkpointing became unit 09b (solutions/09 today is the first half only)
CALIBRATION = {"01": 65, "04": 132, "06": 90, "07": 100, "08": 65, "09": 125, "11": 105}


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
    def stated(self) -> int:
        """The minutes a unit should state: the model's, rounded to 5."""
        return int(5 * round(self.minutes / 5))


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
    print(f"{'unit':5} {'words':>6} {'code':>5} {'pred':>5} {'self':>5} {'exer':>5} {'model':>6} {'stated':>7}")
    for unit in units:
        w = work_of(unit)
        print(
            f"{unit:5} {w.words:6} {w.code_lines:5} {w.predictions:5} {w.self_tests:5} {w.exercises:5} "
            f"{w.minutes:6.0f} {UNITS[unit].minutes:7}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
