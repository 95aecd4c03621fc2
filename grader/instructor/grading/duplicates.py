"""Two copies of one unit from one learner (a resubmission, a file renamed and handed in again): say so, keep one.

``grade --keep latest`` (the default) keeps the copy handed in last: by its ``submitted`` time where that reads as
a date (the LMS's own, from ``--times``, or collect's record), else by Canvas's attachment id (Canvas numbers the
files handed in in order), else by the files' own modification times, which their owner can set (the note says
which: a learner choosing between their own copies); ``--keep best`` keeps the one with the most points (the
latest of those tied). The gradebook, the feedback pages and the class
report then hold only the kept copy; its row's findings name the others, and :func:`keep` returns one line per
learner and unit for the run to print. Rows whose unit is unknown (``?``) are never merged.
"""

from __future__ import annotations

import datetime
import os
from collections import defaultdict
from pathlib import Path

from grader.instructor.grading.lms_names import CANVAS

CHOICES = ("latest", "best")


BASIS = {2: "by the submission times", 1: "by Canvas's attachment ids", 0: "by the files' own times"}


def _time(row: dict) -> tuple[int, float]:
    """(what the order rests on: 2 a submission time, 1 Canvas's attachment id, 0 the file's own time; the value)."""
    text = str(row.get("submitted") or "").strip()
    if text:
        try:
            return 2, datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    m = CANVAS.match(Path(str(row.get("notebook", ""))).name)
    if m:
        return 1, float(m["attachment"])
    try:
        return 0, os.lstat(row["notebook"]).st_mtime
    except (OSError, KeyError):
        return 0, 0.0


def _points(row: dict) -> float:
    try:
        return float(row.get("points") or 0)
    except (TypeError, ValueError):
        return 0.0


def keep(rows: list[dict], facts: list[dict], how: str = "latest") -> tuple[list[dict], list[dict], list[str]]:
    """(the rows kept, the report's facts of the kept notebooks, one note per learner and unit with copies)."""
    if how not in CHOICES:
        raise ValueError(f"--keep {how}: choose {' or '.join(CHOICES)}")
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        if row.get("unit") not in ("", "?", None):
            groups[(row["learner"], row["unit"])].append(row)
    dropped: set[tuple[str, str]] = set()  # (notebook, unit)
    notes = []
    for (learner, unit), mine in sorted(groups.items()):
        if len({r["notebook"] for r in mine}) < 2:
            continue
        key = (lambda r: (_points(r), _time(r))) if how == "best" else _time
        kept = max(mine, key=key)
        others = sorted({r["notebook"] for r in mine} - {kept["notebook"]})
        dropped.update((other, unit) for other in others)
        basis = min(_time(r)[0] for r in mine)
        how_said = how if how == "best" else f"latest {BASIS[basis]}"
        note = f"{len(others) + 1} copies of unit {unit} handed in; kept the {how_said} ({kept['notebook']}), not " + (
            ", ".join(others)
        )
        kept["findings"] = "; ".join(x for x in (kept.get("findings"), note) if x)
        notes.append(f"{learner}: {note}")
    kept_rows = [r for r in rows if (r["notebook"], r.get("unit")) not in dropped]
    kept_facts = [f for f in facts if (f.get("notebook"), f.get("unit")) not in dropped]
    return kept_rows, kept_facts, notes
