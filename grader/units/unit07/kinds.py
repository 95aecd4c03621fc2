"""Unit 07's own answer kind: where a program with one in-place write fails and, at backward, which nodes'
saved tensors the write made stale (the answer of ``07.predict-inplace``).
"""

from __future__ import annotations

from typing import Any

from grader.engine.kinds import BadAnswer, Kind, node_key, reject_common, short, type_words

PLACES = ("no error", "at the write", "at backward")


def _node_label(item: Any) -> Any:
    """A node given as an object is read as its class name; anything else is left for read() to judge."""
    if not isinstance(item, str) and hasattr(item, "next_functions"):
        return type(item).__name__
    return item


class WriteVerdict(Kind):
    """Where a program with one in-place write fails and, for 'at backward', which nodes' saves broke.

    Answers: 'no error', 'at the write', or ('at backward', names) where names is a node
    class name or a set of them; names are compared on their stable part (node_key).
    """

    label = "a place, with the broken nodes for 'at backward'"

    def describe(self):
        return (
            "'no error', 'at the write', or ('at backward', {'PowBackward0', ...}): the place and, for "
            "an error at backward, the class names of the nodes whose saved tensors the write made stale"
        )

    def read(self, answer):
        reject_common(answer, self.describe())
        if isinstance(answer, str):
            place, names = self._place(answer), None
        elif isinstance(answer, (tuple, list)) and len(answer) == 2:
            place, names = self._place(answer[0]), answer[1]
        else:
            raise BadAnswer(f"expected {self.describe()}; got {type_words(answer)} {short(answer)}")
        if place == "at backward":
            if names is None:
                raise BadAnswer(
                    "for 'at backward', also name the node(s) whose saved tensor broke, as in "
                    "('at backward', {'PowBackward0'})"
                )
            return place, self._names(names)
        if names is not None and names != "" and not (isinstance(names, (set, frozenset, list, tuple)) and not names):
            raise BadAnswer(f"'{place}' names no node: return just '{place}'")
        return place, frozenset()

    def _place(self, text):
        if not isinstance(text, str):
            raise BadAnswer(f"the place must be one of {', '.join(map(repr, PLACES))}, got {type_words(text)}")
        for p in PLACES:
            if text.strip().lower() == p:
                return p
        raise BadAnswer(f"{short(text)} is not a place; use one of {', '.join(map(repr, PLACES))}")

    def _names(self, names):
        if isinstance(names, str) or hasattr(names, "next_functions"):
            names = [names]
        if isinstance(names, dict) or not isinstance(names, (set, frozenset, list, tuple)):
            raise BadAnswer(f"the nodes must be a name or a set of names, got {type_words(names)}")
        out = []
        for item in names:
            item = _node_label(item)
            if not isinstance(item, str) or not item.strip():
                raise BadAnswer(f"every node must be a class name such as 'PowBackward0'; got {short(item)}")
            out.append(item.strip())
        return frozenset(out)

    def agrees(self, truth, value):
        return truth[0] == value[0] and {node_key(n) for n in truth[1]} == {node_key(n) for n in value[1]}

    def verdict_note(self, truth, value):
        if truth[0] != value[0]:
            return ""
        t, v = {node_key(n) for n in truth[1]}, {node_key(n) for n in value[1]}
        parts = []
        if v - t:
            parts.append(
                "these nodes kept nothing the write touched: "
                + ", ".join(sorted(n for n in value[1] if node_key(n) in v - t))
            )
        if t - v:
            parts.append(f"{len(t - v)} node(s) whose saved tensor went stale are missing")
        return "; ".join(parts)

    def show(self, value):
        place, names = value
        return place if place != "at backward" else f"at backward, stale saves in {', '.join(sorted(names))}"

    def encode(self, value):
        place, names = value
        return place if place != "at backward" else [place, sorted(names)]

    def wrong_answers(self, truth):
        out = [p for p in PLACES if p not in ("at backward", truth[0])]
        if truth[0] != "at backward":
            out.append(("at backward", {"PowBackward0"}))
        else:
            out.append((truth[0], set(truth[1]) | {"NotARealBackward0"}))
        return out
