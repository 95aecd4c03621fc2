"""The gradebook an LMS takes: points, the wide shape, a roster, merging a regrade, older copies, honest words.

One small class is graded once for the module (four notebooks, then one learner regraded and merged);
the rest are fast tests of the write step's parts on data made here.
"""

import csv
import html
from pathlib import Path

import nbformat
import pytest

from grader.engine.question import get
from grader.engine.store import Event
from grader.instructor.grading import gradebook, roster, scores
from grader.instructor.grading import verify as vs
from grader.instructor.grading.restore import _template, _what_the_copy_holds
from grader.instructor.grading.submission import GradedSubmission, Submission
from tests.cli import run as cli

ROOT = Path(__file__).resolve().parent.parent
SOLVED_00 = ROOT / "solutions" / "00_start_here.ipynb"
BLANK_00 = ROOT / "notebooks" / "00_start_here.ipynb"
SOLVED_01 = ROOT / "solutions" / "01_what_the_forward_pass_records.ipynb"
FLAG_CELLS = ("c010", "c011", "c012", "c013")  # unit 00's question 00.warmup-flag, every cell of it


def notebook(path, change=None):
    nb = nbformat.read(path, as_version=4)
    if change:
        change(nb)
    return nb


def set_source(nb, cell_id, old, new):
    cell = next(c for c in nb.cells if c.get("id") == cell_id)
    assert old in cell.source
    cell.source = cell.source.replace(old, new)


def older_copy(nb):  # handed out before 00.warmup-flag was added
    nb.cells = [c for c in nb.cells if c.get("id") not in FLAG_CELLS]


def _grade(*args):
    out = cli("grade", *args, "--cell-timeout", "60")
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    top = tmp_path_factory.mktemp("gradebook")
    folder = top / "class"
    for name in ("alice", "bob"):
        (folder / name).mkdir(parents=True)
    nbformat.write(
        notebook(SOLVED_00, lambda nb: set_source(nb, "c006", "[2.0, 3.0]", "[2.0, 4.0]")),
        folder / "alice" / "00_start_here.ipynb",
    )  # one prediction wrong
    nbformat.write(notebook(BLANK_00), folder / "bob" / "00_start_here.ipynb")  # untouched
    nbformat.write(notebook(SOLVED_00, older_copy), folder / "frank_00.ipynb")  # flat names, an older copy
    nbformat.write(
        notebook(SOLVED_01, lambda nb: set_source(nb, "c052", "    return found\n", "    return found[1:]\n")),
        folder / "frank_01.ipynb",
    )  # a buggy exercise
    # names are identities, matched exactly: the flat folder's frank is the learner class/frank
    (top / "roster.csv").write_text("Learner,Student ID\nalice,S-001\nbob,S-002\nclass/frank,S-003\nzoe,S-004\n")
    (top / "weights.toml").write_text(
        'correctness = 1  # this class pays it: points counted apart below\nexercise = 5\n[questions]\n"00.warmup-square" = 3\n'
    )
    (top / "times.csv").write_text("file,time\nfrank_01.ipynb,2026-03-02 23:59:00\n")
    common = ("--roster", top / "roster.csv", "--weights", top / "weights.toml", "--times", top / "times.csv")
    first = _grade(
        folder, "--out", top / "grades.csv", "--wide", top / "wide.csv", "--html", top / "feedback", "-j", "2", *common
    )
    # bob hands in a solved copy: regrade bob alone, by his folder, and merge
    regrade = top / "late" / "bob"
    regrade.mkdir(parents=True)
    nbformat.write(notebook(SOLVED_00), regrade / "00_start_here.ipynb")
    long_before = _rows(top / "grades.csv")
    second = _grade(
        regrade, "--out", top / "bob.csv", "--merge-into", top / "grades.csv", "--wide", top / "wide-after.csv", *common
    )
    return {
        "top": top,
        "before": long_before,
        "after": _rows(top / "grades.csv"),
        "bob": _rows(top / "bob.csv"),
        "wide": _rows(top / "wide.csv"),
        "wide_after": _rows(top / "wide-after.csv"),
        "stderr": first.stderr + second.stderr,
    }


def by(rows, learner, unit):
    return next(r for r in rows if r["learner"] == learner and r["unit"] == unit)


def test_points_count_participation_and_correctness_apart(graded):
    alice = by(graded["before"], "alice", "00")
    assert alice["00.warmup-add"] == "predicted, incorrect" and alice["marked passed"] == "yes"
    # predictions 1 + 1 each (00.warmup-add: participation only), self-test 3 (the weights file)
    assert (alice["points"], alice["max"], alice["percent"]) == ("6", "7", "85.7")
    assert (alice["done"], alice["correct"], alice["questions"]) == ("3", "2", "3")
    assert alice["student id"] == "S-001"


def test_an_untouched_copy_says_not_answered(graded):
    bob = by(graded["before"], "bob", "00")
    assert [bob[q] for q in ("00.warmup-add", "00.warmup-flag", "00.warmup-square")] == ["not answered"] * 3
    assert (bob["points"], bob["done"], bob["marked passed"]) == ("0", "0", "no")


def test_flat_file_names_are_one_learner_and_an_older_copy_grades(graded):
    frank = [r for r in graded["before"] if r["learner"] == "class/frank"]  # named by the folder and the file
    assert sorted(r["unit"] for r in frank) == ["00", "01"]
    assert {r["student id"] for r in frank} == {"S-003"}  # the roster's "class/frank"
    old = by(frank, "class/frank", "00")
    # no --handed-out: a copy without a question's cells is not excused, whatever its shape (test_grade_truth
    # grades the same copy with --handed-out naming a version that lacked the question)
    assert old["run"] == "missing cells" and "missing" in old["problems"] and old["marked passed"] == "no"
    assert old["00.warmup-flag"] != "not in this copy" and old["not in copy"] == ""
    assert (old["points"], old["max"], old["percent"]) == ("5", "7", "71.4")


def test_an_exercise_failure_costs_its_points_and_the_submission_time_is_a_column(graded):
    ex = by(graded["before"], "class/frank", "01")
    assert ex["01.graph-walk"].startswith("incorrect")
    assert ex["submitted"] == "2026-03-02 23:59:00"  # from the LMS's times file
    # no time for alice's copy: never the file's own time, which its owner can set
    assert by(graded["before"], "alice", "00")["submitted"] == ""


def test_the_wide_file_has_one_row_per_learner_in_numbers(graded):
    wide = {r["learner"]: r for r in graded["wide"]}
    assert set(wide) == {"alice", "bob", "class/frank", "zoe"}
    assert wide["zoe"]["student id"] == "S-004" and wide["zoe"]["00 passed"] == "not submitted"
    frank = wide["class/frank"]
    assert frank["student id"] == "S-003" and frank["00 percent"] == "71.4"
    for row in wide.values():  # every number a spreadsheet reads as a number, no "5/18"
        for key in ("points", "max", "percent", "00 points", "00 max"):
            float(row[key])
        assert float(row["points"]) == sum(float(row[f"{u} points"]) for u in ("00", "01"))
    assert float(frank["max"]) == float(frank["00 max"]) + float(frank["01 max"])


def test_a_regrade_of_one_learner_merges(graded):
    assert [r["learner"] for r in graded["bob"]] == ["bob"]  # named after the folder, not the file
    bob = [r for r in graded["after"] if r["learner"] == "bob"]
    assert len(bob) == 1 and bob[0]["marked passed"] == "yes" and bob[0]["percent"] == "100"
    others = lambda rows: [r for r in rows if r["learner"] != "bob"]  # noqa: E731
    assert others(graded["after"]) == others(graded["before"])
    assert {r["learner"]: r["00 percent"] for r in graded["wide_after"]}["bob"] == "100"


def test_the_feedback_page_shows_answers_explanation_and_the_failing_case(graded):
    page = (graded["top"] / "feedback" / gradebook.page_name("class/frank")).read_text()
    assert page.index("Unit 00") < page.index("Unit 01")
    assert "Smallest failing case" in page and "torch says" in page
    assert html.escape(get("01.graph-walk").prompt[:40]) in page and "Why:" in page
    assert "http://" not in page and "https://" not in page  # opens offline
    alice = (graded["top"] / "feedback" / gradebook.page_name("alice")).read_text()
    assert "[2, 4]" in alice and "[2, 3]" in alice  # her answer beside torch's
    assert "class='verdict partial'>predicted, incorrect" in alice


# --- the parts, on data made here ---------------------------------------------------------


@pytest.mark.parametrize(
    "given, notebook, learner",
    [
        ("class", "class/alice/01_what_the_forward_pass_records.ipynb", "alice"),
        ("class", "class/frank_01.ipynb", "class/frank"),
        ("class", "class/frank_02_backward_and_why_gradients_add.ipynb", "class/frank"),
        ("class/frank_01.ipynb", "class/frank_01.ipynb", "class/frank"),
        ("class", "class/frank/frank_01.ipynb", "frank"),
        ("class", "class/mallory/alice_00.ipynb", "mallory/alice"),
        ("class/mallory", "class/mallory/alice_00.ipynb", "mallory/alice"),
        ("class/mallory/alice_00.ipynb", "class/mallory/alice_00.ipynb", "mallory/alice"),
        ("class", "class/alice/week1/01_what_the_forward_pass_records.ipynb", "alice"),
        ("class/dave", "class/dave/00_start_here.ipynb", "dave"),
        ("class/dave/00_start_here.ipynb", "class/dave/00_start_here.ipynb", "dave"),
        ("class", "class/erin/scratch.ipynb", "erin"),
        ("class", "class/erin.ipynb", "class"),
        ("class", "class/h_99.ipynb", "class"),
    ],
)
def test_learner_names_are_found_the_same_way_whatever_is_graded(given, notebook, learner):
    assert roster.learner_of(Path(notebook), Path(given)) == learner


def test_weights_files_are_checked(tmp_path):
    bad = {
        "exercise = -1\n": "0 or more",
        "bogus = 1\n": "unknown setting",
        '[questions]\n"00.nope" = 1\n': "not a question",
        '[questions]\n"00.warmup-add" = 2\n': "participation",
        "exercise = [\n": "not TOML",
    }
    for text, words in bad.items():
        (tmp_path / "w.toml").write_text(text)
        with pytest.raises(scores.WeightsError, match=words):
            scores.load(tmp_path / "w.toml")
    (tmp_path / "w.toml").write_text('count-absent = true\n[questions]\n"00.warmup-add" = { correctness = 4 }\n')
    w = scores.load(tmp_path / "w.toml")
    assert w.count_absent and w.of("00.warmup-add", "predict") == {"participation": 1.0, "correctness": 4.0}


def test_a_copy_that_lost_other_cells_is_not_an_older_copy():
    template = _template("00")
    cells = notebook(SOLVED_00).cells
    dave = [c for c in cells if "00.warmup-flag" not in c.source]  # the question's experiment cell kept
    held = _what_the_copy_holds("00", template, dave)
    assert held.absent == [] and [cid for cid, _ in held.missing] == ["c010", "c011", "c013"]
    assert 'c013 reveal("00.warmup-flag")' in held.missing_words()
    gutted = [c for c in cells if c.get("id") not in FLAG_CELLS + ("c000",)]
    assert _what_the_copy_holds("00", template, gutted).absent == []
    assert _what_the_copy_holds("00", template, notebook(BLANK_00).cells).unanswered == [
        "00.warmup-add",
        "00.warmup-flag",
    ]


def test_every_verdict_has_a_colour():
    words = [
        "predicted, correct",
        "predicted, incorrect",
        "predicted after reveal, correct",
        "not answered",
        "revealed without prediction",
        "not attempted",
        "correct",
        "correct on attempt 3, 1 hint",
        "incorrect (2 attempts)",
        "invalid (1 attempt)",
        "not in this copy",
        "predicted, not revealed yet",
    ]
    assert {gradebook.verdict_class(w) for w in words} == {"good", "partial", "bad", "absent"}


def test_merge_replaces_only_what_was_graded():
    old = [
        {"learner": "a", "unit": "00", "x": 1},
        {"learner": "a", "unit": "01", "x": 1},
        {"learner": "a", "unit": "?", "x": 1},
        {"learner": "b", "unit": "00", "x": 1},
    ]
    new = [{"learner": "a", "unit": "00", "x": 2}]
    assert [(r["learner"], r["unit"], r["x"]) for r in gradebook.merge(old, new)] == [
        ("a", "01", 1),
        ("b", "00", 1),
        ("a", "00", 2),
    ]


def feedback_page(folder: Path) -> Path:
    """A feedback page for one learner, made from recomputed data without running a notebook: a wrong
    prediction in unit 01 and a graph walker that skips the root (its smallest failing case shown)."""
    q = get("01.graph-walk")
    case = q.kind.cases()[0]
    truth = vs.truth_of(q, case, key=0)
    exercises = {
        q.qid: vs.ExerciseVerdict(
            "incorrect",
            f"0 of {len(q.kind.cases())} cases passed; case 1 differs from torch",
            case=0,
            got=list(truth)[1:],
        )
    }
    events = [
        Event(1, 1.0, "01", "01.pow-node", "predict", "MulBackward0", "recorded", "", "s", {}),
        Event(2, 2.0, "01", "01.pow-node", "reveal", None, "incorrect", "", "s", {}),
        Event(3, 3.0, "01", q.qid, "check", None, "incorrect", "", "s", {}),
    ]
    recomputed = vs.recompute("01", events, exercises)
    out = GradedSubmission(
        Submission("frank", folder / "frank_01.ipynb"), units=[recomputed], isolation="none", unit="01"
    )
    rows = gradebook.rows_of(out, feedback=True)
    return gradebook.write_html(rows, folder / "feedback")[0]


def test_a_feedback_page_made_from_recomputed_data(tmp_path):
    page = feedback_page(tmp_path).read_text()
    pow_node = get("01.pow-node")
    assert "MulBackward0" in page and "PowBackward0" in page and html.escape(pow_node.explain[:40]) in page
    first_line = get("01.graph-walk").kind.cases()[0].source.splitlines()[0]
    assert "Smallest failing case" in page and html.escape(first_line) in page
