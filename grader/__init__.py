"""autograd-lab's grader: live-truth questions about PyTorch autograd.

In a notebook::

    from grader import predict, reveal, check, mark_passed

    predict("01.pow-node", "PowBackward0")   # lock in a prediction (or predict("01.pow-node") for an input)
    ...                                        # run the experiment yourself
    reveal("01.pow-node")                      # torch's live answer beside yours
    check("01.graph-walk", graph_nodes)        # exercises and self-test
    program(question_id)                       # a self-test's program: your own, a new one after a wrong answer
    review()                                   # fresh programs of what you passed, when they are due
    mark_passed("01")                          # or the "Mark passed" button of unit_panel("01")

The interactive layer: ``draw(y, names=...)`` (the graph with its saved tensors),
``stepper(y)`` / ``trace_backward(y)`` (backward node by node), ``unit_panel("01")``,
``course_map()``, the labs ``neuron_lab``, ``memory_bill_lab``, ``depth_lab``, and ``with doctor(): ...``
(the course's diagnosis on one's own training loop; ``%%doctor`` for a notebook cell, ``python -m grader
doctor train.py`` for a script).
"""

import importlib
import importlib.util
import os
import sys
import warnings


def _needs(names: tuple[str, ...]) -> None:
    """Say plainly which Python to use when this one lacks the course's packages (issue 44: JupyterLab's terminal,
    a login shell, found the system Python, and ``python -m grader status`` ended in a traceback from torch's
    import). ``python -m grader ...`` then exits with status 2 and that message alone; an import raises ImportError
    with it."""
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    if not missing:
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    venv = os.path.join(here, ".venv", "bin", "python")
    course = venv if os.path.exists(venv) else "the Python you installed the course into (pip install -e .)"
    message = (
        f"autograd-lab: this Python ({sys.executable}) has no {' and no '.join(missing)}, so the grader cannot run "
        f"here. Use the course's Python: {course} -m grader status (or `grader status` in a terminal of the "
        "JupyterLab that `make lab` starts, or `make lab` to start the course)."
    )
    if sys.argv[:1] == ["-m"]:  # `python -m grader ...`: the package is imported before __main__ runs
        print(message, file=sys.stderr)
        raise SystemExit(2)
    raise ImportError(message)


_needs(("torch",))

# Deprecation notices that torch raises from its own modules (torch 2.15's torch.func.hessian, via
# torch.jit.script, prints a FutureWarning) say nothing about autograd, yet land on stderr and fail
# strict nbval. Silence only those: FutureWarning and DeprecationWarning whose origin is a torch
# module. A learner's own warnings, and torch's other warnings (UserWarning...), stay visible; a cell
# that records warnings with simplefilter("always") still sees them.
for _category in (FutureWarning, DeprecationWarning):
    warnings.filterwarnings("ignore", category=_category, module=r"torch(\.|$)")
del _category

# imported after the filters above, so that torch's import is already quiet
from grader import _moved  # noqa: E402
from grader.engine import env_vars as _env_vars  # noqa: E402
from grader.engine.course import VERSION  # noqa: E402
from grader.learner.api import check, hint, mark_passed, predict, program, reset, reveal, status  # noqa: E402
from grader.learner.review import review  # noqa: E402

_moved.install()
# the widgets plug their inputs, reveal lock and action buttons into the API (ipywidgets loads on first use)
from grader.learner import widgets as _widgets  # noqa: E402,F401

# the %%doctor cell magic, where grader is imported in IPython (the doctor itself loads when a cell uses it)
from grader.learner.doctor.magic import register_in_running_shell as _register_magic  # noqa: E402

_register_magic()

# A grading run (grade's contained notebook run sets it): the answer key is sealed before any cell asks
if os.environ.get(_env_vars.SEAL) == "1":
    from grader.learner.api import seal_for_grading as _seal

    _seal()

# The interactive tools load on first use, so `import grader` costs little beyond `import torch`.
_LAZY = {
    "draw": "learner.drawing",
    "stepper": "learner.stepper",
    "trace_backward": "learner.stepper",
    "unit_panel": "learner.panels",
    "course_map": "learner.panels",
    "neuron_lab": "learner.labs",
    "memory_bill_lab": "learner.labs",
    "depth_lab": "learner.labs",
    "doctor": "learner.doctor",
}

__all__ = ["predict", "reveal", "check", "program", "review", "mark_passed", "reset", "hint", "status", *_LAZY]
__version__ = VERSION  # the course's version: grader/engine/course.py


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'grader' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value
