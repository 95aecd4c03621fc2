"""Shortcuts every exercise must refuse: implementations that pass without the mechanism the unit teaches.

Each ``unitNN.py`` defines ``SHORTCUTS = {qid: [function, ...]}``; every function's docstring opens with its
family in brackets:

* ``[text]``: reads only the strings a case hands over (a program's lines, a step's line, a class's source)
  and never asks torch;
* ``[lookup]``: a table keyed on names, class names or shapes the generator draws from;
* ``[wrapper]``: the reference op or API the exercise is about, or the course's own instrument, wrapped;
* ``[rerun]``: the program run again (its source executed anew, the write done on a copy);
* ``[heuristic]``: a rule of thumb the unit itself warns against, or a rule that holds on easy cases only.

tests/test_shortcuts.py checks that ``check`` refuses every one of them, and that every exercise has some.
"""

import importlib
import pkgutil

SHORTCUTS: dict = {}

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("unit"):
        _module = importlib.import_module(f"{__name__}.{_info.name}")
        for _qid, _fns in getattr(_module, "SHORTCUTS", {}).items():
            SHORTCUTS.setdefault(_qid, []).extend(_fns)
