"""The doctor's checks, in the order the observer calls them at each event (:mod:`.base` says what a check
is). Adding a check is writing one :class:`.base.Check` class in a module of its own and putting it here.

The order matters where two checks see one event and one's finding (or its absence) changes the other's, and
it is the order findings are reported in:

* at a backward's start, the carried-state check stamps the nodes the freed-graph check reads, and both
  the in-place and the freed-graph checks stay silent where carried state or a step between forward and
  backward already explains the error; the NaN check's node hooks go on last, once the others have looked;
* at the end, the rebound Parameters are named before the optimizer's and the unregistered leaves' checks,
  which leave the tensors they explain (``Doctor.explained``) to that finding; the unregistered leaves come
  after the unregistered modules, which explain them where there are any.
"""

from __future__ import annotations

from grader.probes.doctor.accumulated import Accumulated
from grader.probes.doctor.base import Check
from grader.probes.doctor.carried import Carried
from grader.probes.doctor.freed import Freed
from grader.probes.doctor.grad_mode import GradMode
from grader.probes.doctor.held import Held
from grader.probes.doctor.hooks import Hooks
from grader.probes.doctor.inert import Inert
from grader.probes.doctor.inplace import Inplace
from grader.probes.doctor.nan import Nan
from grader.probes.doctor.nonleaf import NonLeaf
from grader.probes.doctor.optimizer import Optimizer, StepBetween
from grader.probes.doctor.rebound import Rebound
from grader.probes.doctor.unregistered import Unregistered, UnregisteredLeaves

CHECKS: tuple[type[Check], ...] = (
    GradMode,
    Hooks,
    NonLeaf,
    Accumulated,
    Carried,
    StepBetween,
    Unregistered,
    Inert,
    Rebound,
    UnregisteredLeaves,
    Optimizer,
    Held,
    Inplace,
    Freed,
    Nan,
)
