"""Shortcuts every exercise must refuse: implementations that pass without the mechanism the unit teaches.

Each ``unitNN.py`` defines ``SHORTCUTS = {qid: [function, ...]}``; every function's docstring opens with its
family in brackets:

* ``[text]``: reads only the strings a case hands over (a program's lines, a step's line, a class's source)
  and never asks torch;
* ``[lookup]``: a table keyed on names, class names or shapes the generator draws from;
* ``[wrapper]``: the reference op or API the exercise is about, or the course's own instrument, wrapped;
* ``[rerun]``: the program run again (its source executed anew, the write done on a copy);
* ``[heuristic]``: a rule of thumb the unit itself warns against, or a rule that holds on easy cases only;
* ``[switch]``: gets round a switch that ``check`` puts on (a name bound before the check, the module's attributes
  put back, the dispatch mode popped, another thread, autograd's engine called under the wrapped entry points);
* ``[stack]``: walks up the call stack into the grader's own objects (torch's answer, ``q.run(case)``);
* ``[measure]``: keeps what the check measures out of its sight (a full-precision copy held as a NumPy array or a
  Python list, which a count of torch's storages does not see).

tests/test_shortcuts.py checks that ``check`` refuses every one of them, and that every exercise has some.

A unit may also define ``OPEN = {qid: [function, ...]}``: shortcuts the independent attempt of issue 45 (item 4)
found that ``check`` does not refuse yet. tests/test_shortcuts.py runs each under ``xfail(strict=True)``: the day
one is refused the test says so, and the entry moves to ``SHORTCUTS``. ``_around.py`` holds the ways around the
check those entries share.
"""

import importlib
import pkgutil

SHORTCUTS: dict = {}
OPEN: dict = {}

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("unit"):
        _module = importlib.import_module(f"{__name__}.{_info.name}")
        for _qid, _fns in getattr(_module, "SHORTCUTS", {}).items():
            SHORTCUTS.setdefault(_qid, []).extend(_fns)
        for _qid, _fns in getattr(_module, "OPEN", {}).items():
            OPEN.setdefault(_qid, []).extend(_fns)
