"""The doctor, as the learner uses it: ``with doctor(): ...`` around a training loop, ``python -m grader
doctor train.py`` (:mod:`.runner`) and the ``%%doctor`` cell magic (:mod:`.magic`; loaded by ``import
grader`` in a notebook, or by ``%load_ext grader.learner.doctor``); both also read intent declared in the
program's text, ``# doctor: frozen=... should_move=...`` (:mod:`.directive`). The observer and every mechanism's
check live in :mod:`grader.probes.doctor` (the course's own tools are built on them); docs/doctor.md."""

import importlib

# loaded on first use: ``import grader`` registers the magic (this package's .magic), and the doctor's probes
# (about 30 ms of imports) wait until a cell or script asks for the doctor
_LAZY = {
    "run_script": "grader.learner.doctor.runner",
    "Doctor": "grader.probes.doctor",
    "Finding": "grader.probes.doctor",
    "Mechanism": "grader.probes.doctor",
    "doctor": "grader.probes.doctor",
}


def load_ipython_extension(ipython):
    """``%load_ext grader.learner.doctor``: register the ``%%doctor`` cell magic."""
    from grader.learner.doctor.magic import register

    register(ipython)


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = ["Doctor", "Finding", "Mechanism", "doctor", "load_ipython_extension", "run_script"]
