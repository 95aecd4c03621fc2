"""The course's units: their order, prerequisites and the time a learner needs for each."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# The course's version (grader.__version__): grading/versions.json lists the questions of each release, and a
# mark or a unit reset carries the version that wrote it (see moves.py).
VERSION = "0.6.0"

# A unit's id: two digits, and a letter where a unit was split in two (04 and 04b). A question's id begins with it.
UNIT_ID = r"\d\d[a-z]?"
_LEADING = re.compile(rf"({UNIT_ID})(?=$|[_\-. ])")


@dataclass(frozen=True)
class Unit:
    id: str
    slug: str
    title: str
    needs: tuple[str, ...]
    minutes: int

    @property
    def notebook(self) -> str:
        return f"{self.id}_{self.slug}.ipynb"


_TABLE = [
    ("00", "start_here", "Start here: how the course works", (), 15),
    ("01", "what_the_forward_pass_records", "What the forward pass records", ("00",), 65),
    ("02", "backward_and_why_gradients_add", "Backward, and why gradients add", ("01",), 100),
    ("03", "observing_gradients", "Observing gradients: retain_grad, hooks, autograd.grad", ("02",), 90),
    ("04", "where_the_path_stops", "Where the path stops: detach, no_grad, inference_mode, .item()", ("03",), 75),
    ("04b", "modules_and_optimizers", "The path through modules and optimizers", ("04",), 75),
    ("05", "saved_tensors_and_what_they_cost", "Saved tensors and what they cost", ("01",), 100),
    ("06", "graph_lifetime", "Graph lifetime: retain_graph, create_graph, higher order", ("05",), 100),
    ("07", "version_counters_and_in_place_writes", "Version counters and in-place writes", ("05",), 110),
    ("08", "carried_state_and_truncated_bptt", "Carried state and truncated BPTT", ("06", "07"), 70),
    ("09", "saved_tensor_hooks_in_practice", "Saved-tensor hooks: measuring, offloading, compression", ("07",), 75),
    ("09b", "checkpointing", "Checkpointing: keep less, compute again", ("09",), 65),
    ("10", "capstone_audit", "Capstone: audit a model you did not write", ("04b", "08"), 80),
    ("11", "writing_a_backward", "Writing a backward: autograd.Function and gradcheck", ("05", "06", "07"), 110),
    ("12", "finding_the_fault", "Finding the fault: anomaly mode, NaN hunting, memory that grows", ("10",), 75),
    (
        "13",
        "autograd_beyond_eager",
        "Autograd beyond eager: torch.func, forward mode, and torch.compile",
        ("05", "06", "11"),
        85,
    ),
]

UNITS: dict[str, Unit] = {row[0]: Unit(*row) for row in _TABLE}


def unit_id(unit: Any) -> str:
    """'01' from 1, '1', '01' or '01_what_the_forward_pass_records'; ValueError otherwise."""
    if isinstance(unit, bool):
        raise ValueError(f"{unit!r} is not a unit")
    if isinstance(unit, int):
        text = f"{unit:02d}"
    elif isinstance(unit, str):
        text = unit.strip().split("_")[0].split(".")[0]
        text = text.zfill(2) if text.isdigit() else text
    else:
        raise ValueError(f"a unit is a number such as 1 or '01', not {type(unit).__name__}")
    if text not in UNITS:
        raise ValueError(f"there is no unit {unit!r}; the units are {', '.join(UNITS)}")
    return text


def unit_of(qid: str) -> str:
    """The unit a question's id names: '04b' from '04b.module-list'."""
    return qid.split(".", 1)[0]


def leading_unit(name: str) -> str | None:
    """The unit a name begins with ('04b' from '04b_slug', '01' from '01' or '01-x'), if it is one; else None."""
    m = _LEADING.match(name)
    return m.group(1) if m and m.group(1) in UNITS else None


def leads_to(uid: str) -> list[str]:
    return [u.id for u in UNITS.values() if uid in u.needs]
