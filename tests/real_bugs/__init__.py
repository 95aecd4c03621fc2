"""Real reported autograd bugs, each reduced to a small CPU program beside its fixed twin.

Every module names the public thread it was reduced from (``THREAD``), the mechanism the doctor must
name on ``bug()`` (``MECHANISM``, a value of ``grader.learner.doctor.Mechanism``) and, in its
docstring, the symptom, the mechanism and the fix. ``fixed()`` must run without any finding.
The programs are written for this course; no code is copied from the threads.
"""

import importlib
import pkgutil


def cases():
    """Every corpus module, in name order."""
    return [
        importlib.import_module(f"{__name__}.{info.name}")
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
        if not info.name.startswith("_")
    ]
