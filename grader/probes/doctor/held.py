"""Graphs held by tensors that no backward walks (unit 06): an evaluation loop without ``no_grad`` that
keeps a running total of loss tensors, a recurrent state carried through an inference loop, a running
mean of outputs: each keeps every step's graph alive, and memory grows with the loop.

Each top-level module call's output node carries a token (in its metadata: the token lives exactly as
long as the node). Every ``_PERIOD`` top-level calls the doctor looks at the tokens still alive that no
backward has walked: one already seen alive at the check before has outlived a whole period and becomes
a suspect. At the end, the suspects that no backward ever walked are counted per line; ``_MIN`` or more
from one line is a finding. Graphs that live a short while (a prediction over ten labels), and graphs
kept until a backward walks them (a reinforcement learning episode) are no finding.
"""

from __future__ import annotations

import weakref
from collections import Counter

from grader.probes.doctor.findings import Mechanism

_PERIOD = 16  # top-level module calls between two looks
_MIN = 8  # suspects from one line that make a finding
_KEEP = 256  # suspects kept at most


class Token:
    __slots__ = ("line", "walked", "seen", "suspect", "summed_at", "__weakref__")

    def __init__(self, line: str):
        self.line, self.walked, self.seen, self.suspect, self.summed_at = line, False, False, False, ""


def install(d) -> None:
    d.tokens = []  # weakrefs to the tokens of outputs not yet walked
    d.suspects = []  # tokens that outlived a period unwalked
    d.top_calls = 0


def stamp(d, fn, line: str) -> None:
    """A top-level module output's node: give it a token."""
    token = Token(line)
    fn.metadata["doctor_out"] = token
    d.tokens.append(weakref.ref(token))


def on_top_call(d) -> None:
    d.top_calls += 1
    if d.top_calls % _PERIOD == 0:
        look(d)


def look(d) -> None:
    keep = []
    for ref in d.tokens:
        token = ref()
        if token is None or token.walked:
            continue
        keep.append(ref)
        if not token.seen:
            token.seen = True
        elif not token.suspect and len(d.suspects) < _KEEP:
            token.suspect = True
            d.suspects.append(token)
    d.tokens = keep


def conclude(d, exc) -> None:
    if exc is not None:  # a run cut short may not have reached the backward that walks them
        return
    unwalked = [t for t in d.suspects if not t.walked]
    for line, count in Counter(t.line for t in unwalked).most_common():
        if count < _MIN:
            break
        summed = next((t.summed_at for t in unwalked if t.line == line and t.summed_at), "")
        held = f"a running total started at {summed} (`total += loss` keeps each graph)" if summed else "the program"
        d.add(
            ("held", line),
            Mechanism.HELD_GRAPH,
            summed or line,
            f"{count} outputs of the module call at {line or '?'}, each with its graph, stayed alive through "
            f"{_PERIOD} or more later module calls and no backward ever walked them: {held} holds them, so "
            "memory grows with the loop",
            "run evaluation and inference under torch.no_grad() (or inference_mode), keep numbers (loss.item()) "
            "in running totals, and detach a state carried from step to step",
        )
