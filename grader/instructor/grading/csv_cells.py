"""CSV files a spreadsheet and an LMS can open safely, and read back as they were written.

A cell of a gradebook can hold text a learner chose: their folder's name (``=HYPERLINK(...)``), a
notebook's path, a finding that quotes what their store held. A spreadsheet runs a cell that begins
with ``=``, ``+``, ``-`` or ``@`` as a formula (and tab or carriage return can hide one), so every
cell is written by OWASP's rule for CSV injection:

* every field is quoted;
* a text cell that begins with ``=``, ``+``, ``-``, ``@``, tab or carriage return is written with a
  single quote in front (``'=1+2``), which a spreadsheet shows as text and never runs; a text cell
  that begins with a single quote gets one more, so that reading strips exactly one back;
* a number stays a number: a Python int or float (the grader's points, max, percent, counts and
  seconds), or text that is nothing but a plain decimal number (``-1``, ``2.5``, ``1e3``: a
  spreadsheet reads it as that number and runs nothing) is written as it is, and so is a lone ``-`` (Moodle's
  "no grade", which runs nothing either).

:func:`read` undoes the quote, so a gradebook merged with ``--merge-into`` (or joined from shards)
names a learner called ``=1+2`` as ``=1+2`` again and finds the same learner's rows.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"
NO_GRADE = "-"  # Moodle's "no grade" (its export writes it, its import reads it so): a lone dash runs nothing
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def safe(value):
    """The cell as written: numbers as they are, text neutralised where a spreadsheet would run it."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = "" if value is None else str(value)
    if _PLAIN_NUMBER.fullmatch(text) or text == NO_GRADE:
        return text
    if text.startswith(FORMULA_STARTS + (QUOTE,)):
        return QUOTE + text
    return text


def restore(text: str) -> str:
    """The cell as it was before :func:`safe` (one leading quote taken off)."""
    return text[1:] if text.startswith(QUOTE) else text


def write(path: Path, fieldnames: list[str], rows, encoding: str = "utf-8") -> None:
    """Write rows (dicts; keys outside ``fieldnames`` ignored, missing ones empty), every cell safe
    (``encoding="utf-8-sig"``: with a byte-order mark, which Excel needs to read UTF-8 names)."""
    with open(path, "w", newline="", encoding=encoding) as f:
        writer = csv.writer(f, quoting=csv.QUOTE_ALL)
        writer.writerow([safe(name) for name in fieldnames])
        for row in rows:
            writer.writerow([safe(row.get(name, "")) for name in fieldnames])


def read(path: Path) -> list[dict]:
    """The rows of a CSV written by :func:`write` (or by an older grader), each cell as it was given."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [{restore(k) if k else k: restore(v) if isinstance(v, str) else v for k, v in r.items()} for r in rows]


def text_of(path: Path | str) -> str:
    """A CSV an instructor made (a roster, overrides, submission times) as text: UTF-8, with or without Excel's
    byte-order mark, or UTF-16 with its mark (Excel's "Unicode Text"). Anything else raises UnicodeError with the
    way out: no guess at an encoding, which could read a name wrongly without a word."""
    raw = Path(path).read_bytes()
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnicodeError(
            f"it is not UTF-8 text (byte {exc.start + 1} is {raw[exc.start : exc.start + 1]!r}, as Excel's plain "
            "'CSV' writes Windows-1252): save it as 'CSV UTF-8' and try again"
        ) from None
