"""The doctor: the course's diagnosis run on a training program's own code, observing rather than re-training.

``with doctor(): ...`` around a training loop (or ``python -m grader doctor train.py``, or the ``%%doctor``
cell magic, both in :mod:`grader.learner.doctor`) runs the program unchanged while the doctor watches
torch's entry points and reports each finding as a mechanism of a fixed vocabulary, the line in the
learner's file, the measured evidence and the smallest fix. It lives among the probes because the course's
own tools (unit 10's audit, unit 12's reference diagnosis) are built on it.

One module per job:

* :mod:`.findings`: the vocabulary (:class:`Mechanism`, each with the unit that teaches it) and :class:`Finding`;
* :mod:`.frames`: where in the program (one rule for every path);
* :mod:`.observer`: the hooks on torch's entry points, the per-run state every check reads, and the events it
  fires at the checks (:class:`Doctor`, :func:`doctor`);
* :mod:`.base`: what a check is (:class:`~.base.Check`: its own state, one method per event it needs), what it
  reads of the run (:class:`~.base.DoctorState`), and
  :mod:`.checks`: the list of them the observer walks, in order;
* :mod:`.intent`: what the program means, read from what it does (input gradients, ``sum``'s seed, where
  attributes were assigned, optimizers built, inference mode entered, processes started);
* one module per mechanism's check (a :class:`~.base.Check` class each, with the functions it uses):
  :mod:`.optimizer`, :mod:`.unregistered`, :mod:`.carried`,
  :mod:`.inplace`, :mod:`.nan`, :mod:`.grad_mode`, :mod:`.inert`, :mod:`.freed`, :mod:`.nonleaf`,
  :mod:`.hooks` (hooks, checkpointing and torch's own warnings), :mod:`.accumulated`, :mod:`.held`,
  :mod:`.rebound`;
* :mod:`.report`: the text the doctor prints.
"""

from grader.probes.doctor.findings import Finding, Mechanism
from grader.probes.doctor.observer import Doctor, doctor

__all__ = ["Doctor", "Finding", "Mechanism", "doctor"]
