"""`make lab`, read and not run: the terminal it opens finds the course's Python and a `grader` command."""

import importlib
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _lab_rule() -> tuple[list[str], str]:
    text = (ROOT / "Makefile").read_text()
    m = re.search(r"^lab:(.*)\n((?:\t.*\n)+)", text, re.M)
    assert m, "the Makefile has no lab rule"
    return m.group(1).split(), m.group(2)


def test_lab_installs_system_deps_first():
    prerequisites, _ = _lab_rule()
    assert "install" in prerequisites and "system-deps" in prerequisites


def test_lab_starts_the_server_with_the_venvs_bin_first_on_path():
    _, recipe = _lab_rule()
    path = recipe.index('PATH="$(abspath $(BIN)):$$PATH"; export PATH')
    assert path < recipe.index("jupyter lab")


def test_lab_prints_its_url_again_once_the_server_answers():
    _, recipe = _lab_rule()
    assert recipe.count("$$url") >= 2 and "is ready" in recipe
    assert recipe.index("is ready") < recipe.index("exec $(BIN)/jupyter lab")  # the waiter runs beside the server


def test_the_grader_console_script_resolves():
    scripts = (ROOT / "pyproject.toml").read_text().split("[project.scripts]")[1].split("\n[")[0]
    m = re.search(r'^grader = "([\w.]+):(\w+)"', scripts, re.M)  # Python 3.10 has no tomllib
    assert m, "no `grader` console script in pyproject.toml"
    module, name = m.groups()
    assert callable(getattr(importlib.import_module(module), name))


def test_jupyterlab_news_is_off():
    overrides = json.loads((ROOT / "jupyter" / "overrides.json").read_text())
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    assert notification["fetchNews"] == "false" and notification["checkForUpdates"] is False
