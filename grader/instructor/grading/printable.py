"""Names a learner chose, made safe to print to the instructor's terminal and to show in a spreadsheet.

A learner names their folder, their hub account's files, their Canvas display name and what their store holds.
Printed raw, ``ESC ] 0 ; … BEL`` retitles the instructor's terminal and ``ESC [ 2 J`` clears it; a carriage
return rewrites the line before it (a progress line that says someone else's result). :func:`escape` writes every
control character (Unicode's ``Cc``: C0, DEL and C1) and every bidirectional control (which reorders what a line
shows, as "Trojan source" does) as a Python-style escape (``\\x1b``, ``\\u202e``), and a backslash as two, so an
escaped name never reads as another one. Everything else (``Müller``, ``李明``) is kept as it is.

Used wherever a name reaches a terminal (``grade``'s progress line and warnings, ``grader class``, ``collect``)
and for the names in the wide CSV and an LMS's import file, which people open and read. The long CSV keeps every
name exactly (``--merge-into`` matches on it); only its readers show it.
"""

from __future__ import annotations

import unicodedata

# the bidirectional controls: embeddings, overrides, isolates and the marks that steer them
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escaped(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text) -> str:
    """``text`` with every control and bidirectional character written as an escape, and ``\\`` as ``\\\\``."""
    text = "" if text is None else str(text)
    if text.isprintable() and "\\" not in text and not BIDI.intersection(text):
        return text
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch in BIDI or unicodedata.category(ch) == "Cc":
            out.append(_escaped(ch))
        else:
            out.append(ch)
    return "".join(out)
