"""environment.yml wraps pyproject.toml's requirements, so the two cannot drift apart."""
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_environment_yml_wraps_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = env["dependencies"]
    assert "python=3.11" in deps and "pip" in deps
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    assert pip == ["-e .[test]"], "environment.yml must install this project, with its test extra"
    assert "test" in project["optional-dependencies"]
    assert project["requires-python"] == ">=3.10"


def test_torch_is_pinned_and_numpy_listed():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "torch==2.13.0" in project["dependencies"]
    assert "numpy" in project["dependencies"]


def test_ci_runs_make_test_and_nothing_else():
    lines = [l for l in (ROOT / ".ci" / "run").read_text().splitlines() if l.strip() and not l.startswith("#")]
    assert lines[-1] == "exec make test"


def test_make_lab_binds_localhost_with_a_token():
    text = (ROOT / "Makefile").read_text()
    lab = text[text.index("\nlab:"):text.index("\ntest:")]
    assert "--ServerApp.ip=127.0.0.1" in lab
    assert '--IdentityProvider.token="$$token"' in lab and "token_urlsafe" in lab
    assert "--allow-root" in lab and 'id -u)" = 0' in lab
