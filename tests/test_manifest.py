"""The drift report: verify lists every answer that changed since build recorded the manifest."""

import json
import shutil
from pathlib import Path

from grader.instructor.manifest import same
from tests.cli import run as cli

ROOT = Path(__file__).resolve().parent.parent


def verify(root, *flags):
    # the claims' sweep over op_db is tests/test_claims.py's (a fixed sample); the whole one is verify's default
    return cli("verify", "--root", str(root), "--sweep", "none", *flags)


def test_the_committed_manifest_matches_this_torch():
    result = verify(ROOT)
    # the changed answers are listed just before the claims: show those, not the claims' tail
    assert result.returncode == 0, result.stdout.split("\nclaims on")[0][-3000:] + result.stdout[-300:]
    manifest = json.loads((ROOT / "solutions" / "manifest.json").read_text())
    assert manifest["questions"]["01.pow-node"]["answer"] == "PowBackward0"


def test_a_changed_answer_is_listed_old_to_new(tmp_path):
    (tmp_path / "solutions").mkdir()
    manifest = json.loads((ROOT / "solutions" / "manifest.json").read_text())
    manifest["torch"] = "2.4.1"
    manifest["questions"]["01.pow-node"].update(answer="PowBackward1", text="PowBackward1")
    del manifest["questions"]["01.x-is-leaf"]
    manifest["questions"]["01.retired-question"] = {"answer": 1, "text": "1"}
    (tmp_path / "solutions" / "manifest.json").write_text(json.dumps(manifest))
    result = verify(tmp_path, "--unit", "01")
    assert result.returncode == 1
    assert "1 answer(s) changed" in result.stdout and "01.pow-node: PowBackward1  ->  PowBackward0" in result.stdout
    assert "added since the manifest: 01.x-is-leaf" in result.stdout
    assert "removed since the manifest: 01.retired-question" in result.stdout
    assert "built with torch 2.4.1" in result.stdout
    allowed = verify(tmp_path, "--unit", "01", "--json", "--allow-changes")
    assert allowed.returncode == 0
    report = json.loads(allowed.stdout)
    assert {r["unit"] for r in report["rows"]} == {"01"}
    assert report["changed"] == [{"id": "01.pow-node", "old": "PowBackward1", "new": "PowBackward0"}]


def test_build_check_notices_a_manifest_out_of_step(tmp_path):
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions")
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    path = tmp_path / "solutions" / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["questions"]["01.x-is-leaf"]
    path.write_text(json.dumps(manifest))
    result = cli("build", "--check", "--root", str(tmp_path))
    assert result.returncode == 1 and "manifest lacks 01.x-is-leaf" in result.stdout


def test_last_bit_rounding_is_not_a_change_but_a_moved_number_is():
    assert same(4, 4.000000476837158) and same([0.1, "nan", {"a": 2.5}], [0.1000001, "nan", {"a": 2.5000002}])
    assert not same(4, 4.01) and not same([1, 2], [1, 2, 3]) and not same({"a": 1}, {"b": 1})
    assert not same(True, 1) and not same("nan", 0.0) and not same(0.0, 1e-3) and same(0.008726, 0.008723)
    exercise = {"cases": 2, "digest": "abc", "numbers": [1.5, 2]}
    assert same(exercise, {"cases": 2, "digest": "abc", "numbers": [1.5000001, 2]})
    assert not same(exercise, {"cases": 2, "digest": "abc", "numbers": [1.6, 2]})
    assert not same(exercise, {"cases": 2, "digest": "abd", "numbers": [1.5, 2]})
    # a manifest written before exercises kept their numbers compares its digest exactly
    assert same({"cases": 2, "digest": "abc"}, exercise) and not same({"cases": 2, "digest": "x"}, exercise)


def test_verify_lists_an_exercise_whose_numbers_moved(tmp_path):
    (tmp_path / "solutions").mkdir()
    manifest = json.loads((ROOT / "solutions" / "manifest.json").read_text())
    entry = manifest["questions"]["02.grad-timeline"]
    nudged = dict(entry, answer=dict(entry["answer"], numbers=[n * 1.0000001 for n in entry["answer"]["numbers"]]))
    manifest["questions"]["02.grad-timeline"] = nudged
    (tmp_path / "solutions" / "manifest.json").write_text(json.dumps(manifest))
    assert verify(tmp_path, "--unit", "02").returncode == 0
    moved = [n + 1 for n in entry["answer"]["numbers"]]
    manifest["questions"]["02.grad-timeline"] = dict(entry, answer=dict(entry["answer"], numbers=moved))
    (tmp_path / "solutions" / "manifest.json").write_text(json.dumps(manifest))
    result = verify(tmp_path, "--unit", "02")
    assert result.returncode == 1 and "02.grad-timeline:" in result.stdout
    assert "numbers moved beyond the tolerance" in result.stdout
