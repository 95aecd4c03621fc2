"""Every environment variable the code names is described in grader/engine/env_vars.py, and listed in the docs.

The course's own names (``AGL_...``, ``AUTOGRAD_LAB_...``) are found by scanning the code as text, so a switch read
anywhere (``os.environ.get``, a bwrap ``--setenv``, a test's ``monkeypatch.setenv``, the Makefile) is caught, not
only those read through the module's constants.
"""

from __future__ import annotations

import re
from pathlib import Path

from grader.engine import env_vars

ROOT = Path(__file__).resolve().parents[1]
# a whole name: a prefix, then letters, digits and underscores, not ending in one ("AGL_HUB_*" in prose is no name)
NAME = re.compile(r"\b(?:AGL|AUTOGRAD_LAB)_[A-Z0-9_]*[A-Z0-9]\b")
FOLDERS = ("grader", "hub", "bench", "tools", "tests")
MARK = "<!-- the list: env_vars.described() -->\n"
ENV_VARS = Path(env_vars.__file__).resolve()


def _code() -> dict[Path, str]:
    """Every file of the code the course runs, tests and build included, but the registry itself."""
    paths = [p for folder in FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))]
    paths += [ROOT / "conftest.py", ROOT / "Makefile"]
    return {p: p.read_text(encoding="utf-8") for p in paths if p.resolve() != ENV_VARS}


def unknown(texts: dict[Path, str]) -> dict[str, Path]:
    """Each course name the texts spell that the registry does not describe, with the first file that spells it."""
    found: dict[str, Path] = {}
    for path, text in texts.items():
        for name in NAME.findall(text):
            if name not in env_vars.SWITCHES:
                found.setdefault(name, path)
    return found


def test_every_name_the_code_spells_is_described():
    missing = unknown(_code())
    assert not missing, "described in no entry of grader/engine/env_vars.py: " + ", ".join(
        f"{name} ({path.relative_to(ROOT)})" for name, path in sorted(missing.items())
    )


def test_a_name_the_registry_lacks_is_caught():
    planted = "AGL" + "_NOT_A_SWITCH"  # spelled in two parts, so that this file does not hold it
    found = unknown({Path("planted.py"): f'os.environ.get("{planted}")\nos.environ["AUTOGRAD_LAB_HOME"]'})
    assert list(found) == [planted]


def test_every_switch_described_is_named_by_the_code():
    text = "\n".join(_code().values())
    stale = [name for name in env_vars.SWITCHES if not re.search(rf"\b{name}\b", text)]
    assert not stale, f"described in grader/engine/env_vars.py, read by nothing: {stale}"


def test_every_switch_has_who_and_what():
    for switch in env_vars.SWITCHES.values():
        assert switch.who in ("learner", "instructor", "grader", "platform"), switch
        assert len(switch.does.split()) >= 5, f"{switch.name}: say what it does"


def test_docs_list_every_switch_as_the_registry_describes_it():
    doc = (ROOT / "docs" / "environment.md").read_text(encoding="utf-8")
    assert MARK in doc, f"docs/environment.md lost its marker {MARK.strip()}"
    listed = doc.split(MARK, 1)[1]
    assert listed == env_vars.described(), (
        "docs/environment.md is out of date: paste the output of "
        "python -c \"from grader.engine import env_vars; print(env_vars.described(), end='')\" below its marker"
    )
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/environment.md" in readme
