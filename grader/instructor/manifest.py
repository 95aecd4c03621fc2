"""The drift manifest: every question's live answer on the torch the solutions were built with.

``record`` (run by ``python -m grader build``) writes solutions/manifest.json.
``compare`` runs every experiment on the installed torch and lists the
questions whose answer changed (old -> new), those that now error, and those
added or removed since the manifest was written, so an instructor upgrading
torch knows which prose to revisit. It also checks every claim (the general
rules the prose states, grader.engine.claims) on the installed torch, those
about what an operation records, saves, counts or versions also over torch's
operator database (grader.probes.sweep): a claim that no longer holds is a
change too.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import torch

from grader.engine import claims as claims_
from grader.engine.kinds import ErrorOutcome, Function
from grader.engine.question import Question, all_questions
from grader.probes import sweep

ROOT = Path(__file__).resolve().parents[2]
NAME = "manifest.json"


def plain(value: Any) -> Any:
    """A JSON form of a live answer that keeps everything torch said (raw names, whole messages)."""
    if isinstance(value, ErrorOutcome):
        return {"where": value.where, "error": value.error, "message": value.message}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if hasattr(value, "detach") and hasattr(value, "tolist"):  # a tensor
        return plain(value.detach().tolist())
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # 'nan', 'inf', '-inf': JSON has no such numbers
    if isinstance(value, float) and value == int(value) and abs(value) < 2**53:
        return int(value)
    if isinstance(value, float):
        return round(value, 6)
    return value


# Two CPUs (or two vector widths of one) can round a float32 reduction differently in its last bits: an
# answer that moved by less than this is the same answer, not a change for an instructor to revisit.
REL, ABS = 1e-4, 1e-5


def _numbers(value: Any, out: list) -> Any:
    """``value``'s skeleton, every number in it replaced by '#' and appended to ``out`` (bools stay)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        out.append(value)
        return "#"
    if isinstance(value, dict):
        return {k: _numbers(v, out) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v, out) for v in value]
    return value


def _close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= ABS + REL * max(abs(a), abs(b))


def same(old: Any, new: Any) -> bool:
    """Whether two JSON answers are the same: equal skeletons and every number within REL/ABS of the other.

    An exercise's answer is {'cases', 'digest' (of its skeleton), 'numbers'}; one recorded before the
    numbers were kept has only a digest of everything, and is compared exactly."""
    if isinstance(old, dict) and "digest" in old and "numbers" not in old:
        return isinstance(new, dict) and old == {k: v for k, v in new.items() if k != "numbers"}
    old_numbers: list = []
    new_numbers: list = []
    if _numbers(old, old_numbers) != _numbers(new, new_numbers) or len(old_numbers) != len(new_numbers):
        return False
    return all(_close(a, b) for a, b in zip(old_numbers, new_numbers))


def answer_of(q: Question) -> tuple[Any, str]:
    """(the JSON form, a short text) of a question's live answer. An exercise is summarised by its case
    count, a digest of its answers' skeleton (every number replaced by '#') and the numbers themselves,
    so that ``same`` can compare those within a tolerance."""
    if isinstance(q.kind, Function):
        numbers: list = []
        skeleton = [_numbers(plain(q.run(case)), numbers) for case in q.kind.cases()]
        digest = hashlib.sha256(json.dumps(skeleton, sort_keys=True).encode()).hexdigest()[:16]
        answer = {"cases": len(skeleton), "digest": digest, "numbers": numbers}
        return answer, f"{len(skeleton)} cases, digest {digest}"
    truth = q.run()
    return plain(truth), q.kind.show(truth)


def record(root: Path = ROOT) -> Path:
    data = {"torch": torch.__version__, "questions": {}}
    for q in all_questions():
        try:
            answer, text = answer_of(q)
        except Exception as exc:  # recorded, so that verify reports it as a change once it is fixed
            answer, text = {"error": f"{type(exc).__name__}: {exc}"}, f"ERROR {type(exc).__name__}"
        data["questions"][q.qid] = {"answer": answer, "text": text}
    path = root / "solutions" / NAME
    path.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def load(root: Path = ROOT) -> dict | None:
    path = root / "solutions" / NAME
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def claim_row(c: claims_.Claim) -> dict:
    """A claim as the reports list it: {'id', 'unit', 'sentence', 'holds_when', 'torch_range', 'swept',
    'not_swept', 'sweep_ops'} ('sweep_ops': the op_db operations its sweep is limited to, [] for all)."""
    return {
        "id": c.cid,
        "unit": c.unit,
        "sentence": c.sentence,
        "holds_when": c.holds_when,
        "torch_range": c.torch_range,
        "swept": c.swept,
        "not_swept": c.not_swept,
        "sweep_ops": list(c.sweep_ops),
    }


def claim_rows(units: list[str] | None = None, scope: sweep.Scope = "all") -> list[dict]:
    """Every claim (of ``units``) checked on the installed torch, its op-level ones swept over op_db in
    ``scope`` (grader.probes.sweep): claim_row's keys plus ClaimResult.report()'s ('status', 'ok', 'result',
    'ops', 'programs', 'held', 'counterexamples', 'broken', 'problem')."""
    return [{**claim_row(c), **sweep.check(c, scope).report()} for c in claims_.all_claims(units or None)]


def compare(root: Path = ROOT, units: list[str] | None = None, scope: sweep.Scope = "all") -> dict:
    """Live answers against the manifest, and every claim checked live: {'torch', 'built_with', 'rows',
    'changed', 'errors', 'added', 'removed', 'claims', 'claims_failed'}.

    ``units`` limits the comparison to those units' questions and claims; ``scope`` is the claims' sweep
    over op_db ("all" by default; "sample" or "none" for a quicker look).
    """
    old = load(root) or {"torch": None, "questions": {}}
    wanted = {u.zfill(2) for u in units} if units else None
    questions = [q for q in all_questions() if wanted is None or q.unit in wanted]
    rows, changed, errors, added = [], [], [], []
    current = {q.qid for q in questions}
    old_ids = {qid for qid in old["questions"] if wanted is None or qid.split(".")[0] in wanted}
    for q in questions:
        row = {"id": q.qid, "unit": q.unit, "role": q.role, "ok": True, "answer": "", "error": ""}
        try:
            answer, text = answer_of(q)
            row["answer"] = text
            before = old["questions"].get(q.qid)
            if before is None:
                added.append(q.qid)
            elif not same(before["answer"], answer):
                moved = " (the same shape, numbers moved beyond the tolerance)" if text == before["text"] else ""
                changed.append({"id": q.qid, "old": before["text"], "new": text + moved})
        except Exception as exc:
            row.update(ok=False, error=f"{type(exc).__name__}: {exc}")
            errors.append(q.qid)
        rows.append(row)
    removed = sorted(old_ids - current)
    claim_report = claim_rows(sorted(wanted) if wanted else None, scope)
    return {
        "torch": torch.__version__,
        "built_with": old["torch"],
        "rows": rows,
        "changed": changed,
        "errors": errors,
        "added": added,
        "removed": removed,
        "claims": claim_report,
        "claims_failed": [row["id"] for row in claim_report if not row["ok"]],
    }


def missing_from_manifest(root: Path = ROOT) -> list[str]:
    """Question ids the manifest does not list, or lists but the course no longer has (for build --check)."""
    old = load(root)
    if old is None:
        return ["solutions/manifest.json is missing"]
    ids = {q.qid for q in all_questions()}
    out = [f"manifest lacks {qid}" for qid in sorted(ids - set(old["questions"]))]
    out += [f"manifest lists {qid}, which no longer exists" for qid in sorted(set(old["questions"]) - ids)]
    return out
