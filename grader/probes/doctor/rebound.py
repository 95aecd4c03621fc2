"""A name a module registered as a Parameter bound to another tensor (unit 04b):

* a plain tensor: ``module.weight = module.weight * 0.5`` raises "cannot assign 'torch.FloatTensor' as
  parameter" (read from the program's error, at the assignment);
* a new ``nn.Parameter`` after an optimizer was built on the old one (in ``forward``, or a
  re-initialisation): the model uses the new object, the optimizer steps the old one. Seen through the
  assignment (:mod:`.intent` keeps its line) and named when the new tensor is reached by a backward and
  held by no optimizer while the old one is held.

Weight tying (``decoder.weight = encoder.weight``, before any optimizer) is a Parameter bound to another
Parameter that the optimizer then holds: no finding.
"""

from __future__ import annotations

from grader.probes.doctor.base import Check, DoctorState
from grader.probes.doctor.findings import Mechanism


class Rebound(Check):
    def on_program_error(self, exc) -> None:
        on_program_error(self.d, exc)

    def conclude(self, exc) -> None:
        self.d.explained |= conclude(self.d)


def on_program_error(d: DoctorState, exc) -> None:
    text = str(exc)
    if isinstance(exc, TypeError) and "cannot assign" in text and "as parameter" in text:
        line = d.traceback_line(exc)
        d.add(
            ("rebound-plain", line),
            Mechanism.PARAMETER_REBOUND,
            line,
            f"a plain tensor was assigned to a name the module registered as a Parameter ({text.split(' (')[0]}): "
            "a Parameter's name takes only an nn.Parameter (or None)",
            "to change the values and keep the Parameter, write in place under torch.no_grad() (weight.mul_(...), "
            "weight.copy_(...)); to compute a weight from one, keep the result in a new name (or use "
            "torch.nn.utils.parametrize)",
        )


def conclude(d: DoctorState) -> set:
    """The rebound Parameters named; returns the ids of the new tensors it explained (the checks after it,
    the optimizer's and the unregistered leaves', leave them to this finding)."""
    explained = set()
    for label, old, new, line, _module in d.rebound:
        if id(new) in d.held or id(new) not in d.reached or id(old) not in d.held:
            continue
        explained.add(id(new))
        name = d.name_of.get(id(old)) or d.name_of.get(id(new)) or label
        d.add(
            ("rebound", line),
            Mechanism.PARAMETER_REBOUND,
            line,
            f"{name} was bound to a new nn.Parameter at {line or '?'} after an optimizer was built on the old one: "
            "the model computes with the new tensor, which no optimizer holds, and the optimizer steps the old "
            "one, which the loss no longer reaches",
            "write the new values into the existing Parameter (with torch.no_grad(): p.copy_(...)) instead of "
            "binding a new one, or build the optimizer after the assignment",
        )
    return explained
