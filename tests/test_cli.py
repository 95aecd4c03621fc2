"""python -m grader: status, questions, reset, build --check, verify."""

import io
import json
import subprocess
import sys

import pytest

from grader import predict, reveal
from grader.instructor.cli import main
from tests.cli import run  # no terminal on stdin, as in a script: reset must not wait for an answer


def test_questions_lists_every_question():
    out = run("questions", "--json")
    assert out.returncode == 0
    rows = json.loads(out.stdout)
    ids = {r["id"] for r in rows}
    assert {"01.pow-node", "01.graph-walk", "00.warmup-square"} <= ids
    assert {r["role"] for r in rows} == {"predict", "self-test", "exercise"}
    assert all(r["prompt"] and r["kind"] for r in rows)


def units_now(capsys):
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    return {u["unit"]: u for u in json.loads(capsys.readouterr().out)["units"]}


def test_status_and_reset_follow_the_store(capsys):
    predict("01.pow-node", "PowBackward0")
    reveal("01.pow-node")
    data = json.loads(run("status", "--json").stdout)
    units = {u["unit"]: u for u in data["units"]}
    assert units["01"]["status"] == "in progress" and units["01"]["done"] == 1
    assert units["00"]["status"] == "not started"
    assert units["02"]["note"] == "recommended after 01: not passed yet"
    refused = run("reset", "01")  # no terminal to ask at, no --yes: nothing forgotten
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert units_now(capsys)["01"]["status"] == "in progress"
    assert run("reset", "01", "--yes").returncode == 0
    assert units_now(capsys)["01"]["status"] == "not started"
    assert main(["reset", "nope", "--yes"]) == 2
    capsys.readouterr()
    assert main(["status"]) == 0 and "progress:" in capsys.readouterr().out


class Terminal(io.StringIO):
    """A stdin that says it is a terminal and holds what the learner types."""

    def isatty(self):
        return True


def unit01_status(capsys):
    return units_now(capsys)["01"]["status"]


@pytest.mark.parametrize(
    "typed, code, status",
    [("n\n", 1, "in progress"), ("\n", 1, "in progress"), ("", 1, "in progress"), ("y\n", 0, "not started")],
)
def test_reset_asks_before_forgetting(typed, code, status, monkeypatch, capsys):
    predict("01.pow-node", "PowBackward0")
    monkeypatch.setattr(sys, "stdin", Terminal(typed))
    assert main(["reset", "01"]) == code
    out = capsys.readouterr().out
    assert "Forget your progress on unit 01" in out and "[y/N]" in out
    assert ("nothing forgotten" in out) == (code == 1)
    assert unit01_status(capsys) == status


@pytest.mark.parametrize(
    "target, suggestion",
    [
        ("7", "07"),
        ("1", "01"),
        ("7.exp-add", "07.exp-add"),
        ("007", None),
        ("07.", None),
        ("07.exp", None),
        ("01_what_the_forward_pass_records", None),
        (" 07", None),
    ],
)
def test_reset_takes_only_exact_ids(target, suggestion, monkeypatch, capsys):
    predict("07.version-count", 2)
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    assert main(["reset", target, "--yes"]) == 2
    err = capsys.readouterr().err
    assert "is not a unit id or a question id" in err and "00, 01" in err
    assert ("Did you mean " + str(suggestion) in err) == (suggestion is not None)
    assert units_now(capsys)["07"]["status"] == "in progress"


def test_reset_of_one_question_by_its_exact_id(capsys):
    predict("01.pow-node", "PowBackward0")
    reveal("01.pow-node")
    assert units_now(capsys)["01"]["done"] == 1
    assert main(["reset", "01.pow-node", "--yes"]) == 0
    assert "01.pow-node" in capsys.readouterr().out
    assert units_now(capsys)["01"]["done"] == 0


def test_a_closed_pipe_ends_quietly():
    """`python -m grader status --json | head` ends without a BrokenPipeError traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader", "status", "--json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.close()  # the reader leaves before a byte is written
    err = proc.stderr.read()
    proc.wait(timeout=120)
    proc.stderr.close()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert proc.returncode == 1


def test_verify_one_unit():
    out = run("verify", "--json", "--unit", "00")
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert {r["id"] for r in report["rows"]} == {"00.warmup-add", "00.warmup-flag", "00.warmup-square"}
    assert not report["errors"] and not report["changed"]


def test_build_check_passes_on_the_committed_tree():
    out = run("build", "--check")
    assert out.returncode == 0, out.stdout + out.stderr


def test_claims_lists_each_claim_with_its_condition_and_where_it_is_cited(capsys):
    capsys.readouterr()
    assert main(["claims", "--unit", "05"]) == 0
    assert "not swept: about an optimizer's state" in capsys.readouterr().out  # listed, not checked
    assert main(["claims", "--unit", "05", "--json", "--sweep", "none"]) == 0  # the JSON report is checked
    rows = json.loads(capsys.readouterr().out)
    row = next(r for r in rows if r["id"] == "05.freeze-saves-nothing-when-kept")
    assert row["holds_when"] and row["cited"] == ["05_saved_tensors_and_what_they_cost.ipynb c056"]
    assert row["status"] == "holds" and row["swept"] and row["ops"] == 0  # swept, but not this time
    assert main(["claims", "--unit", "05", "--check", "--json", "--sweep", "none"]) == 0
    assert all(r["status"] == "holds" for r in json.loads(capsys.readouterr().out))


@pytest.fixture
def a_broken_claim(monkeypatch):
    from grader.engine import claims

    claims.load()
    broken = claims.Claim("00.broken", "00", "a rule", "", lambda: [claims.Trial("one program", True, False)])
    monkeypatch.setitem(claims.REGISTRY, broken.cid, broken)
    return broken


def test_verify_reports_a_claim_that_fails_as_a_change(a_broken_claim, capsys):
    capsys.readouterr()
    assert main(["verify", "--unit", "00"]) == 1
    out = capsys.readouterr().out
    assert "00.broken: a rule" in out
    assert out.strip().splitlines()[-1].startswith("3 answers and 1 claim; 1 claim(s) failed since the manifest")
    assert main(["verify", "--unit", "00", "--allow-changes", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["claims_failed"] == ["00.broken"] and report["claims"][0]["status"] == "fails"
    assert main(["claims", "--unit", "00", "--check"]) == 1
