"""The drift report: verify lists every answer that changed since build recorded the manifest."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def verify(root, *flags):
    return subprocess.run(
        [sys.executable, "-m", "grader", "verify", "--root", str(root), *flags], capture_output=True, text=True
    )


def test_the_committed_manifest_matches_this_torch():
    result = verify(ROOT)
    assert result.returncode == 0, result.stdout[-2000:]
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
    result = subprocess.run(
        [sys.executable, "-m", "grader", "build", "--check", "--root", str(tmp_path)], capture_output=True, text=True
    )
    assert result.returncode == 1 and "manifest lacks 01.x-is-leaf" in result.stdout
