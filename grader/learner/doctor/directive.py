"""Intent declared in the program's own text, for the command and the cell magic: a comment line

    # doctor: frozen=encoder should_move=head,norm

names parameters (or module prefixes, as in ``model.named_parameters()``) as ``doctor(frozen=[...],
should_move=[...])`` does; the doctor then proves each by measurement. A line may repeat a key, several
lines add up, and a key the doctor does not know is refused with the line it is on.
"""

from __future__ import annotations

import re

_LINE = re.compile(r"^\s*#\s*doctor:(.*)$")
_KEYS = {"frozen": "frozen", "should_move": "should_move", "should-move": "should_move"}


def read(text: str, where: str) -> tuple[dict[str, list[str]], str]:
    """(``{"frozen": [...], "should_move": [...]}`` from every directive line of ``text``, an error naming
    ``where`` and the line, or '')."""
    declared: dict[str, list[str]] = {"frozen": [], "should_move": []}
    for number, line in enumerate(text.splitlines(), start=1):
        found = _LINE.match(line)
        if found is None:
            continue
        words = found.group(1).split()
        if not words:
            return {}, f"{where}:{number}: '# doctor:' declares nothing (frozen=NAME,... should_move=NAME,...)"
        for word in words:
            key, sep, value = word.partition("=")
            names = [v for v in value.split(",") if v]
            if key not in _KEYS or not sep or not names:
                return (
                    {},
                    f"{where}:{number}: cannot read {word!r}; a directive reads frozen=NAME,... should_move=NAME,...",
                )
            declared[_KEYS[key]] += names
    return declared, ""


def merge(*sources: dict[str, list[str]]) -> dict[str, list[str]]:
    """The declarations of the command line or the magic's line and of the program's text, together."""
    out: dict[str, list[str]] = {"frozen": [], "should_move": []}
    for source in sources:
        for key in out:
            out[key] += [n for n in source.get(key, ()) if n not in out[key]]
    return out
