"""What the doctor reports: the fixed vocabulary of mechanisms (each with the unit that teaches it) and
a :class:`Finding` (the mechanism, the line in the learner's file, the measured evidence, the fix)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Mechanism(str, enum.Enum):
    """What went wrong, named as the course teaches it; ``unit`` is where."""

    OPTIMIZER_MISMATCH = "optimizer-mismatch"
    UNREGISTERED_MODULE = "unregistered-module"
    CARRIED_STATE = "carried-state"
    INPLACE_ON_SAVED = "inplace-on-saved"
    NAN_MASKED_BRANCH = "nan-masked-branch"
    NO_GRAD_ROOT = "no-grad-root"
    INERT_LOSS_TERM = "inert-loss-term"
    FREED_GRAPH = "freed-graph"
    NONLEAF_GRAD = "nonleaf-grad"
    HOOKS_CHECKPOINT = "hooks-checkpoint"
    ACCUMULATED_GRAD = "accumulated-grad"
    HELD_GRAPH = "held-graph"
    PARAMETER_REBOUND = "parameter-rebound"

    @property
    def unit(self) -> str:
        return _UNITS[self]


_UNITS = {
    Mechanism.OPTIMIZER_MISMATCH: "12",
    Mechanism.UNREGISTERED_MODULE: "12",
    Mechanism.CARRIED_STATE: "08",
    Mechanism.INPLACE_ON_SAVED: "07",
    Mechanism.NAN_MASKED_BRANCH: "03/12",
    Mechanism.NO_GRAD_ROOT: "04",
    Mechanism.INERT_LOSS_TERM: "04",
    Mechanism.FREED_GRAPH: "06",
    Mechanism.NONLEAF_GRAD: "03",
    Mechanism.HOOKS_CHECKPOINT: "03/09b",
    Mechanism.ACCUMULATED_GRAD: "02",
    Mechanism.HELD_GRAPH: "06",
    Mechanism.PARAMETER_REBOUND: "04b",
}


@dataclass(frozen=True)
class Finding:
    mechanism: Mechanism
    line: str  # "file:lineno" of the line to edit, in whichever file of the program, or "" when none is known
    evidence: str
    fix: str

    def __str__(self):
        where = f" at {self.line}" if self.line else ""
        return f"[{self.mechanism.value}, unit {self.mechanism.unit}]{where}: {self.evidence}\n    fix: {self.fix}"
