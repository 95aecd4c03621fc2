"""Known-good and known-bad learner implementations of every exercise, one module per unit.

Each ``unitNN.py`` defines ``REFERENCE = {qid: good_function}`` and
``BUGGY = {qid: [plausible wrong implementations]}``; they are merged here.
tests/test_questions.py checks that every exercise has both, that the good
one passes and that every buggy one is refused.
"""

import importlib
import pkgutil

REFERENCE: dict = {}
BUGGY: dict = {}

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("unit"):
        _module = importlib.import_module(f"{__name__}.{_info.name}")
        REFERENCE.update(getattr(_module, "REFERENCE", {}))
        for _qid, _bugs in getattr(_module, "BUGGY", {}).items():
            BUGGY.setdefault(_qid, []).extend(_bugs)
