"""The instructor's tools: ``build`` (learner notebooks from solutions/), ``manifest`` (torch's answers,
recorded to notice drift), ``release``, ``classview`` (a class's progress), ``hub`` (the class on
JupyterHub), ``grading/`` (the gradebook pipeline) and ``cli`` (``python -m grader``)."""

import sys

# nbformat validates with jsonschema, which imports rfc3987_syntax wherever it is installed (jupyter-events asks
# for it), and that module compiles 38 Lark grammars as it is imported: 1.2 s of CPU in every process that reads a
# notebook (each grading run, each warm parent, build), for the "iri" string formats that no notebook schema
# uses. The instructor's processes go without it: jsonschema then skips those formats, as it does where the
# package is not installed. (A learner's kernel never imports this package; a JupyterLab server is not ours.)
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]
