"""Grading beyond one run: shards a job runner can spread, partial gradebooks merged, interrupted runs resumed.

* ``shard_of(learner, n)``: a learner's shard is fixed by a hash of the name
  alone, so adding learners never moves another one.
* A sharded run writes its partial CSV and, beside it, ``PARTIAL.csv.shard.json``:
  which shard it is, the whole class as found (every learner, in every
  shard) and the report's facts for its learners. ``merge`` joins partials
  and refuses overlaps (a shard or a learner twice) and gaps (a shard or a
  learner missing).
* Every run keeps a journal, ``OUT.csv.journal``: one line per graded
  notebook (its path, the SHA-256 of the file, its rows and facts), written as
  soon as it is graded. ``--resume`` reuses every line whose notebook is
  unchanged, and grades only the rest.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from grader.instructor.grading import containment, csv_cells

JOURNAL_VERSION = 3  # 3: learners named by lms_names (Canvas, Moodle, --name-pattern); older journals are not reused


class MergeError(Exception):
    """Partials that cannot be joined into one gradebook; the text says why."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/3"`` -> (2, 3); raises ValueError with the reason."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text}: write it as i/n, e.g. 2/3") from None
    if not 1 <= i <= n:
        raise ValueError(f"--shard {text}: i must be between 1 and n")
    return i, n


def shard_of(learner: str, n: int) -> int:
    """The learner's shard, 1..n: a hash of the name alone (stable when learners are added)."""
    digest = hashlib.sha256(learner.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % n + 1


def file_hash(path: Path, cap: int) -> str:
    """SHA-256 of a submission, or "" when it cannot be read (then it is always graded again)."""
    try:
        return hashlib.sha256(containment.read_capped(path, cap)).hexdigest()
    except containment.UnsafeFile:
        return ""


def sidecar(out: Path) -> Path:
    return out.with_name(out.name + ".shard.json")


def journal_path(out: Path) -> Path:
    return out.with_name(out.name + ".journal")


# --- the journal (resume) ---------------------------------------------------------------------


class Journal:
    """Append-only record of graded notebooks; what ``--resume`` reads back."""

    def __init__(self, out: Path, options: dict, resume: bool):
        self.path = journal_path(out)
        self.options = options
        self.done: dict[tuple[str, str], dict] = {}
        self.note = ""
        if resume:
            self._read()
        keep = list(self.done.values())
        with open(self.path, "w", encoding="utf-8") as f:  # rewritten: only what is still valid
            f.write(json.dumps({"journal": JOURNAL_VERSION, "options": options}) + "\n")
            for entry in keep:
                f.write(json.dumps(entry) + "\n")
        self.file = open(self.path, "a", encoding="utf-8")

    def _read(self) -> None:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            self.note = "nothing to resume (no journal beside the gradebook)"
            return
        try:
            head = json.loads(lines[0])
        except (ValueError, IndexError):
            self.note = "the journal is unreadable; grading everything"
            return
        if head.get("journal") != JOURNAL_VERSION or head.get("options") != self.options:
            self.note = "the journal was written with other options; grading everything"
            return
        for line in lines[1:]:
            try:
                entry = json.loads(line)  # the last line may be cut short by the interruption
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("sha256") and isinstance(entry.get("rows"), list):
                self.done[(entry["path"], entry["sha256"])] = entry

    def reuse(self, path: Path, sha: str) -> dict | None:
        return self.done.get((str(path), sha)) if sha else None

    def add(self, path: Path, learner: str, sha: str, rows: list, facts: list) -> None:
        entry = {"path": str(path), "learner": learner, "sha256": sha, "rows": rows, "facts": facts}
        self.file.write(json.dumps(entry) + "\n")
        self.file.flush()
        os.fsync(self.file.fileno())

    def close(self) -> None:
        self.file.close()


# --- partial gradebooks -----------------------------------------------------------------------


def write_sidecar(out: Path, shard: tuple[int, int], everyone: list[str], mine: list[str], facts: list) -> Path:
    path = sidecar(out)
    path.write_text(
        json.dumps(
            {"shard": list(shard), "class": sorted(set(everyone)), "learners": sorted(set(mine)), "facts": facts}
        ),
        encoding="utf-8",
    )
    return path


def read_partials(paths: list[Path]) -> tuple[list[dict], list[dict]]:
    """Rows and facts of partial gradebooks that together make exactly one class; else MergeError."""
    metas = []
    for p in paths:
        side = sidecar(p)
        if not p.is_file():
            raise MergeError(f"{p}: no such gradebook")
        if not side.is_file():
            raise MergeError(f"{p}: no {side.name} beside it; it was not written by `grade --shard`")
        try:
            meta = json.loads(side.read_text(encoding="utf-8"))
            i, n = meta["shard"]
        except (ValueError, KeyError, TypeError):
            raise MergeError(f"{side}: unreadable") from None
        metas.append((p, meta, int(i), int(n)))
    if not metas:
        raise MergeError("no partial gradebooks given")
    sizes = {n for _, _, _, n in metas}
    if len(sizes) > 1:
        raise MergeError(
            "the partials were cut into different numbers of shards: "
            + ", ".join(f"{p.name} is {i}/{n}" for p, _, i, n in metas)
        )
    n = sizes.pop()
    seen: dict[int, Path] = {}
    for p, _, i, _ in metas:
        if i in seen:
            raise MergeError(f"overlap: shard {i}/{n} given twice ({seen[i]} and {p})")
        seen[i] = p
    missing = [i for i in range(1, n + 1) if i not in seen]
    if missing:
        raise MergeError("gap: " + ", ".join(f"shard {i}/{n}" for i in missing) + " missing")
    classes = {tuple(meta["class"]) for _, meta, _, _ in metas}
    if len(classes) > 1:
        raise MergeError("the partials were graded from different classes (the learners found differ)")
    everyone = set(classes.pop())
    rows, facts = [], []
    owner: dict[str, Path] = {}  # learner -> the partial that holds their rows
    for p, meta, i, _ in metas:
        part = csv_cells.read(p)  # cells as the grader had them (a learner named "=1+2" hashes as "=1+2")
        for r in part:
            learner = r.get("learner", "")
            if shard_of(learner, n) != i:
                raise MergeError(f"overlap: {learner} in {p} belongs to shard {shard_of(learner, n)}/{n}")
            if owner.setdefault(learner, p) != p:
                raise MergeError(f"overlap: {learner} is in {owner[learner]} and {p}")
        rows += part
        facts += [f for f in meta.get("facts", []) if isinstance(f, dict)]
    found = set(owner)
    lost = sorted(everyone - found)
    if lost:
        raise MergeError(f"gap: {len(lost)} learner(s) of the class have no row: " + ", ".join(lost[:10]))
    extra = sorted(found - everyone)
    if extra:
        raise MergeError("rows for learners outside the class: " + ", ".join(extra[:10]))
    return rows, facts
