"""`make drift`: torch's own deprecation warnings are silenced once grader is imported (and nothing
else is), and tools/drift.py notices a torch cap in pip's configuration."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def drift_tool():
    spec = importlib.util.spec_from_file_location("drift_tool", ROOT / "tools" / "drift.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stderr_of(code: str) -> str:
    """stderr of a fresh Python (Python's default warning filters, as in a kernel) running code."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_torch_deprecation_warnings_are_silenced_and_a_learners_own_stay_visible():
    err = stderr_of("""
        import warnings
        import torch
        import grader

        # A deprecation notice raised from inside a torch module, as torch 2.15's torch.jit.script
        # does (warnings.warn(..., FutureWarning) in torch/jit/_script.py, reached via torch.func.hessian)
        inside_torch = {"__name__": "torch.jit._script", "warnings": warnings}
        exec("def script():\\n    warnings.warn('torch.jit.script is deprecated', FutureWarning)\\n"
             "def old_api():\\n    warnings.warn('torch.old_api is deprecated', DeprecationWarning)", inside_torch)
        inside_torch["script"]()
        inside_torch["old_api"]()

        # the learner's own warnings, and torch's other warnings, still show
        warnings.warn("my own FutureWarning", FutureWarning)
        y = torch.ones(2, requires_grad=True) * 2
        y.sum().backward()
        y.grad                                   # torch's UserWarning: .grad of a non-leaf tensor
        exec("warnings.warn('a torch UserWarning', UserWarning)", inside_torch)
        """)
    assert "is deprecated" not in err
    assert "my own FutureWarning" in err
    assert "non-leaf" in err and "a torch UserWarning" in err


def test_without_grader_the_same_torch_warning_shows():
    """The control: the silencing comes from importing grader, not from Python's defaults."""
    err = stderr_of("""
        import warnings
        inside_torch = {"__name__": "torch.jit._script", "warnings": warnings}
        exec("warnings.warn('torch.jit.script is deprecated', FutureWarning)", inside_torch)
        """)
    assert "torch.jit.script is deprecated" in err


def test_a_module_that_only_starts_with_torch_is_not_torch():
    err = stderr_of("""
        import warnings
        import grader
        exec("warnings.warn('torchvision deprecation', FutureWarning)", {"__name__": "torchvision.io", "warnings": warnings})
        """)
    assert "torchvision deprecation" in err


@pytest.mark.parametrize(
    "spec, version, ok",
    [
        ("<=2.14.1", "2.15.0", False),
        ("<=2.14.1", "2.14.1", True),
        ("<=2.14.1", "2.4.1", True),
        ("<2.15", "2.15.0", False),
        (">=2.0,<2.15", "2.13.0", True),
        ("==2.13.*", "2.14.0", False),
        ("==2.13.*", "2.13.0", True),
        ("!=2.15.0", "2.15.0", False),
        ("~=2.13.0", "2.13.5", True),
        ("~=2.13.0", "2.14.0", False),
    ],
)
def test_version_specifiers(spec, version, ok):
    assert drift_tool().allows(spec, version) is ok


def test_a_cap_named_by_pips_configuration_is_found_and_explained(tmp_path):
    tool = drift_tool()
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("# To lift the cap here: rm -r /etc/xdg/pip\ntorch<=2.14.1\ntorchvision<=0.29.1\n")
    config = f":env:.find-links='/opt/wheels'\nglobal.constraint='{constraints}'\nglobal.find-links='/opt/wheels'\n"
    caps = tool.find_cap("2.15.0", config, {})
    assert [c["requirement"] for c in caps] == ["torch<=2.14.1"]
    message = tool.cap_message("2.15.0", caps)
    assert str(constraints) in message and "LIFT_CAP=1" in message and "rm -r /etc/xdg/pip" in message
    assert tool.find_cap("2.13.0", config, {}) == []
    # PIP_CONSTRAINT overrides the configuration, as it does for pip; an empty one is ignored, as by pip
    assert tool.find_cap("2.15.0", config, {"PIP_CONSTRAINT": "/dev/null"}) == []
    assert tool.find_cap("2.15.0", config, {"PIP_CONSTRAINT": ""}) == caps


def test_the_side_environment_gets_the_courses_dependencies_but_the_requested_torch():
    reqs = drift_tool().course_requirements("2.15.0")
    assert reqs[0] == "torch==2.15.0" and not any(r.startswith("torch=") for r in reqs[1:])
    assert "nbval>=0.10" in reqs and "numpy" in reqs and not any("playwright" in r for r in reqs)
    assert "numpy<2" in drift_tool().course_requirements("2.1.2")


def test_the_report_names_changed_answers_raising_experiments_and_failing_cells():
    tool = drift_tool()
    facts = {
        "venv": ".venv-torch-9.9.0",
        "reused": False,
        "install_s": 120.0,
        "cap": "/etc/c.txt: torch<=9.8",
        "lifted": True,
        "torch": "9.9.0",
        "python": "3.11.7",
        "size_gb": 5.4,
    }
    rows = [
        {"id": "01.pow-node", "ok": True, "answer": "PowBackward1", "error": ""},
        {"id": "07.bump", "ok": False, "answer": "", "error": "RuntimeError: gone"},
    ]
    ver = {
        "ok": True,
        "seconds": 30.0,
        "report": {
            "torch": "9.9.0",
            "built_with": "2.13.0+cpu",
            "rows": rows,
            "errors": ["07.bump"],
            "added": [],
            "removed": [],
            "changed": [{"id": "01.pow-node", "old": "PowBackward0", "new": "PowBackward1"}],
            "claims": [
                {
                    "id": "01.a-rule",
                    "ok": True,
                    "sentence": "a rule",
                    "result": "held on 4 of 6 programs",
                    "ops": 12,
                    "programs": 300,
                    "counterexamples": {"count": 2, "ops": ["where"], "examples": ["where float64 sample 0"]},
                    "broken": {"count": 0, "ops": [], "examples": []},
                },
                {"id": "13.b-rule", "ok": False, "sentence": "b rule", "result": "FAILS: broken on 1 program(s)"},
            ],
            "claims_failed": ["13.b-rule"],
        },
    }
    nb = {
        "passed": 10,
        "failed": 1,
        "skipped": 0,
        "seconds": 60.0,
        "cells": [{"notebook": "06_graph_lifetime", "cell": "Cell 45", "kind": "output changed", "detail": "- a\n+ b"}],
    }
    text = tool.report("9.9.0", facts, ver, nb, "make drift TORCH=9.9.0 LIFT_CAP=1", 300.0)
    assert "`01.pow-node`: PowBackward0 -> PowBackward1" in text
    assert "`07.bump`: RuntimeError: gone" in text
    assert "`06_graph_lifetime` Cell 45: output changed" in text and "10 passed, 1 failed" in text
    assert "does not hold" in text and "LIFT_CAP=1" in text
    assert "2 claims checked on this torch, 1 of them also over op_db (up to 12 operations, 300 programs)" in text
    assert ": 1 no longer hold" in text
    assert "counter-examples outside its condition on 1 op_db operation(s): where" in text
    assert "- `13.b-rule` (**no longer holds**): b rule — FAILS: broken on 1 program(s)" in text
    assert "- `01.a-rule` (holds): a rule" in text


def test_make_drift_and_the_workflow_matrix_cover_the_pinned_torch():
    import tomllib
    import yaml

    pinned = next(
        d.split("==")[1]
        for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
        if d.startswith("torch==")
    )
    make = (ROOT / "Makefile").read_text()
    target = make[make.index("\ndrift:") :]
    assert "tools/drift.py $(TORCH)" in target and "--lift-cap" in target
    assert "\ndrift:\n" in make, "drift needs no .venv: it builds its own side environment"
    job = yaml.safe_load((ROOT / ".github" / "workflows" / "test.yml").read_text())["jobs"]["drift"]
    versions = job["strategy"]["matrix"]["torch"]
    assert pinned in versions and len(versions) >= 2
    assert any("make drift TORCH=${{ matrix.torch }}" in step.get("run", "") for step in job["steps"])
