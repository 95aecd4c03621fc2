"""Grading at class scale: warm workers, shards merged equal one run, an interrupted run resumed, the class report.

One small class of unit 00 copies is graded once unsharded (with the report) and once in three shards;
the rest reads those gradebooks or re-runs only what resume says must run.
"""

import csv
import json
import re
from pathlib import Path

import nbformat
import pytest

from grader.instructor.grading.shards import MergeError, read_partials, shard_of
from tests.cli import run as cli

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "00_start_here.ipynb"
UNTOUCHED = ROOT / "notebooks" / "00_start_here.ipynb"
VARIES = (
    "seconds",
    "submitted",
)  # what two runs of the same class may disagree on (a file edited between them has a new time)


def edited(old: str, new: str) -> nbformat.NotebookNode:
    nb = nbformat.read(SOLUTION, as_version=4)
    for cell in nb.cells:
        cell.source = cell.source.replace(old, new)
    return nb


CLASS = {
    "alice": lambda: nbformat.read(SOLUTION, as_version=4),
    "bob": lambda: nbformat.read(UNTOUCHED, as_version=4),
    "carol": lambda: edited('answer = program("00.warmup-square").run()["s"].grad.item()', "answer = 123456.0"),
    "dave": lambda: edited("answer = [2.0, 3.0]", "answer = [1.0, 2.0]"),
    "erin": lambda: edited("answer = [2.0, 3.0]", "answer = [1.0, 2.0]"),
    "fay": lambda: edited("answer = False", "answer = True"),
    "gus": lambda: nbformat.read(SOLUTION, as_version=4),
}


def grade(*args):
    return cli("grade", *args)


def read(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def same(rows: list[dict]) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k not in VARIES} for r in rows), key=lambda r: r["learner"])


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scale-class")
    for name, make in CLASS.items():
        (folder / name).mkdir()
        nbformat.write(make(), folder / name / "00_start_here.ipynb")
    return folder


@pytest.fixture(scope="module")
def full(klass, tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    result = grade(klass, "--out", out / "grades.csv", "-j", "2", "--report", out / "report.html")
    assert result.returncode == 0, result.stderr[-3000:]
    return out, read(out / "grades.csv"), result.stderr


@pytest.fixture(scope="module")
def sharded(klass, tmp_path_factory):
    out = tmp_path_factory.mktemp("shards")
    partials = []
    for i in (1, 2, 3):
        part = out / f"part{i}.csv"
        result = grade(klass, "--out", part, "--shard", f"{i}/3", "-j", "1")
        assert result.returncode == 0, result.stderr[-3000:]
        assert f"shard {i}/3:" in result.stderr
        partials.append(part)
    return out, partials


def test_the_class_is_graded_by_warm_workers(full):
    _, rows, stderr = full
    by = {r["learner"]: r for r in rows}
    assert set(by) == set(CLASS) and "7/7" in stderr
    assert by["alice"]["marked passed"] == "yes" and by["bob"]["marked passed"] == "no"
    assert by["carol"]["00.warmup-square"].startswith("incorrect")
    assert by["dave"]["00.warmup-add"] == "predicted, incorrect"
    assert all(r["run"] == "ok" for r in rows), [(r["learner"], r["run"], r["problems"]) for r in rows]


def test_three_shards_merged_equal_one_run_row_for_row(full, sharded):
    out, partials = sharded
    learners = [r["learner"] for p in partials for r in read(p)]
    assert sorted(learners) == sorted(CLASS)  # each learner in exactly one shard
    for i, p in enumerate(partials, 1):
        assert all(shard_of(r["learner"], 3) == i for r in read(p))
    merged = out / "merged.csv"
    result = grade("merge", *partials, "--out", merged, "--report", out / "merged.html")
    assert result.returncode == 0, result.stderr
    assert same(read(merged)) == same(full[1])
    assert (full[0] / "grades.csv").read_text().splitlines()[0] == merged.read_text().splitlines()[0]
    counts = lambda page: re.findall(r"data-qid='([^']+)' data-correct='(\d+)'", page.read_text())
    assert counts(out / "merged.html") == counts(full[0] / "report.html")


def test_merge_refuses_overlaps_and_gaps(sharded):
    _, (one, two, three) = sharded
    with pytest.raises(MergeError, match="gap: shard 2/3 missing"):
        read_partials([one, three])
    with pytest.raises(MergeError, match="overlap: shard 1/3 given twice"):
        read_partials([one, one, two, three])
    result = grade("merge", one, three, "--out", one.parent / "bad.csv")
    assert result.returncode == 2 and "refused: gap" in result.stderr
    assert not (one.parent / "bad.csv").exists()


def test_a_shard_is_fixed_by_the_learner_alone():
    before = {f"learner{i:03d}": shard_of(f"learner{i:03d}", 4) for i in range(100)}
    assert {shard_of(name, 4) for name in before} == {1, 2, 3, 4}
    assert all(shard_of(name, 4) == s for name, s in before.items())  # adding learners moves no one
    assert 15 <= min(list(before.values()).count(s) for s in (1, 2, 3, 4))


def test_an_interrupted_run_resumes_where_it_stopped(klass, full, tmp_path):
    out = tmp_path / "grades.csv"
    journal = (full[0] / "grades.csv.journal").read_text().splitlines()
    assert len(journal) == 1 + len(CLASS)
    # the run "stopped" after three notebooks, halfway through writing the fourth
    out.with_name("grades.csv.journal").write_text("\n".join(journal[:4] + [journal[4][:40]]))
    graded_before = {json.loads(line)["learner"] for line in journal[1:4]}
    changed = sorted(graded_before)[0]
    nb = nbformat.read(klass / changed / "00_start_here.ipynb", as_version=4)
    next(c for c in nb.cells if c.cell_type == "markdown").source += " "  # a changed file is graded again
    nbformat.write(nb, klass / changed / "00_start_here.ipynb")
    result = grade(klass, "--out", out, "--resume", "-j", "2")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"resuming: 2 notebook(s) already graded and unchanged, {len(CLASS) - 2} to grade" in result.stderr
    assert same(read(out)) == same(full[1])
    kept = set(journal[1:4])  # entries carried over from the interrupted run, whatever their order
    rerun = {
        json.loads(line)["learner"]
        for line in out.with_name("grades.csv.journal").read_text().splitlines()[1:]
        if line not in kept
    }
    assert changed in rerun and not (graded_before - {changed}) & rerun


def test_the_report_counts_what_the_csv_says(full):
    out, rows, _ = full
    page = (out / "report.html").read_text()
    assert (
        not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", page) and "<script" not in page and "@import" not in page
    )
    correct = dict(re.findall(r"data-qid='([^']+)' data-correct='(\d+)'", page))
    assert correct["00.warmup-add"] == str(sum(r["00.warmup-add"] == "predicted, correct" for r in rows)) == "4"
    assert correct["00.warmup-square"] == str(sum(r["00.warmup-square"].startswith("correct") for r in rows))
    row = page[page.index("data-qid='00.warmup-add'") :].split("</tr>")[0]
    assert "<code>[1.0, 2.0]</code> (2)" in row  # the class's most common wrong prediction
    assert "<svg" in page and "count-00.warmup-add" in page
