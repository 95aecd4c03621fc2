"""A field's value as the kernel holds it, shown in the page, so that Lock in never reads a value behind the screen.

ipywidgets sends a field's new value to the kernel at most one message at a time: while one is on its way,
what the learner types next waits in the page until the kernel has answered. A button press goes at once.
So text typed and Lock in pressed straight after reached the kernel in the wrong order, and the press read
the value of a few keystrokes before (issue 27).

:func:`follow` makes a field say in the page what the kernel holds: each value the kernel receives becomes
the class ``agl-v-<fingerprint>`` on the field (:func:`fingerprint`, FNV-1a over the value's UTF-16 code
units, written the same way by the page's script in :mod:`grader.learner.a11y`). The script holds back a
press of a button marked :data:`WAITS` (Lock in, Check) while a followed field's text differs from what its
class says, and presses it again as soon as the class catches up, so the press always comes after the value.

Nothing here changes what is recorded; without a browser the class is only a class.
"""

from __future__ import annotations

FOLLOWED = "agl-synced"
PREFIX = "agl-v-"
WAITS = "agl-waits-for-fields"
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def fingerprint(text: str) -> str:
    """FNV-1a (32 bits) over ``text``'s UTF-16 code units, in base 36: what the page's script computes."""
    h = 0x811C9DC5
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h ^= data[i] | (data[i + 1] << 8)
        h = (h * 0x01000193) & 0xFFFFFFFF
    out = ""
    while True:
        h, digit = divmod(h, 36)
        out = _DIGITS[digit] + out
        if not h:
            return out


def _mark(field, value) -> None:
    classes = [c for c in field._dom_classes if not c.startswith(PREFIX)]
    field._dom_classes = (*classes, PREFIX + fingerprint(value if isinstance(value, str) else ""))


def follow(field):
    """Make a text field (Text, Combobox) carry the fingerprint of the value the kernel holds; returns it."""
    field.add_class(FOLLOWED)
    _mark(field, field.value)
    field.observe(lambda change: _mark(field, change["new"]), names="value")
    return field


def waits(*buttons):
    """Mark buttons whose press must come after every followed field's value (Lock in, Check)."""
    for button in buttons:
        button.add_class(WAITS)
    return buttons
