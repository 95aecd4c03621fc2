"""python -m grader: status, questions, reset, build --check, verify."""
import json
import subprocess
import sys

from grader import predict, reveal


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, env=env)


def test_questions_lists_every_question():
    out = run("questions", "--json")
    assert out.returncode == 0
    rows = json.loads(out.stdout)
    ids = {r["id"] for r in rows}
    assert {"01.pow-node", "01.graph-walk", "00.warmup-square"} <= ids
    assert {r["role"] for r in rows} == {"predict", "self-test", "exercise"}
    assert all(r["prompt"] and r["kind"] for r in rows)


def test_status_and_reset_follow_the_store():
    predict("01.pow-node", "PowBackward0")
    reveal("01.pow-node")
    data = json.loads(run("status", "--json").stdout)
    units = {u["unit"]: u for u in data["units"]}
    assert units["01"]["status"] == "in progress" and units["01"]["done"] == 1
    assert units["00"]["status"] == "not started"
    assert units["02"]["note"] == "needs 01 passed first"
    assert run("reset", "01").returncode == 0
    units = {u["unit"]: u for u in json.loads(run("status", "--json").stdout)["units"]}
    assert units["01"]["status"] == "not started"
    assert run("reset", "nope").returncode == 2
    assert "progress:" in run("status").stdout


def test_verify_one_unit():
    out = run("verify", "--json", "--unit", "00")
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    assert {r["id"] for r in report["rows"]} == {"00.warmup-add", "00.warmup-flag", "00.warmup-square"}
    assert not report["errors"] and not report["changed"]


def test_build_check_passes_on_the_committed_tree():
    out = run("build", "--check")
    assert out.returncode == 0, out.stdout + out.stderr
