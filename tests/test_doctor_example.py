"""The script unit 12 and the README run the doctor on (examples/finetune.py, not part of the course): the
doctor names its fault, and the same script with the optimizer built after the new head is clean."""

import io
from pathlib import Path

from grader.learner.doctor.runner import run_script

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "finetune.py"


def _report(path, *args):
    stream = io.StringIO()
    assert run_script(str(path), args, stream=stream) == 0
    return stream.getvalue()


def test_the_example_script_gets_the_optimizer_finding_at_its_line():
    text = _report(SCRIPT, "--steps", "4")
    assert "[optimizer-mismatch, unit 12] at finetune.py:" in text and "head.weight" in text, text


def test_the_example_with_its_fix_is_clean(tmp_path):
    fixed = SCRIPT.read_text(encoding="utf-8").replace(
        "    second = train(", "    opt = torch.optim.Adam(model.parameters(), lr=1e-2)\n    second = train("
    )
    path = tmp_path / "finetune_fixed.py"
    path.write_text(fixed, encoding="utf-8")
    assert "no finding" in _report(path, "--steps", "4")
