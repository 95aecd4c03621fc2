"""The doctor, as the learner uses it: ``with doctor(): ...`` around a training loop, ``python -m grader
doctor train.py`` (:mod:`.runner`) and the ``%%doctor`` cell magic (:mod:`.magic`; loaded by ``import
grader`` in a notebook, or by ``%load_ext grader.learner.doctor``); both also read intent declared in the
program's text, ``# doctor: frozen=... should_move=...`` (:mod:`.directive`). The observer and every mechanism's
check live in :mod:`grader.probes.doctor` (the course's own tools are built on them); docs/doctor.md."""

from grader.learner.doctor.runner import run_script
from grader.probes.doctor import Doctor, Finding, Mechanism, doctor


def load_ipython_extension(ipython):
    """``%load_ext grader.learner.doctor``: register the ``%%doctor`` cell magic."""
    from grader.learner.doctor.magic import register

    register(ipython)


__all__ = ["Doctor", "Finding", "Mechanism", "doctor", "load_ipython_extension", "run_script"]
