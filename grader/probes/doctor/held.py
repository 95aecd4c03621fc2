"""Graphs held by tensors that no backward walks (unit 06): an evaluation loop without ``no_grad`` that
keeps a running total of loss tensors, a recurrent state carried through an inference loop, a running
mean of outputs: each keeps every step's graph alive, and memory grows with the loop.

Each top-level module call's output node carries a token (in its metadata: the token lives exactly as
long as the node), queued with the number of that call. When the ``_LATER``-th top-level call after it has
returned, the token is judged: still alive and walked by no backward, it becomes a suspect, watched until
it dies (a weak reference's callback notes when). At the end, the suspects that no backward ever walked
are counted per line, as many as were alive together at one moment; ``_MIN`` or more from one line is a
finding. Graphs that live a short while (a prediction over ten labels, each label's outputs kept until the
last label's), and graphs kept until a backward walks them (a reinforcement learning episode) are no
finding.
"""

from __future__ import annotations

import weakref
from collections import deque

from grader.probes.doctor.findings import Mechanism

_LATER = 16  # top-level module calls an output must stay alive through
_MIN = 8  # suspects of one line alive together that make a finding
_KEEP = 256  # suspects kept at most


class Suspect:
    """An output alive and unwalked through ``_LATER`` later top-level calls: when it became one and when its
    node died (None while alive), on the doctor's ``held_clock``; whether a backward walked it since."""

    __slots__ = ("line", "since", "died", "walked", "summed_at")

    def __init__(self, line: str, since: int, summed_at: str):
        self.line, self.since, self.died, self.walked, self.summed_at = line, since, None, False, summed_at


class Token:
    __slots__ = ("line", "walked", "summed_at", "suspect", "__weakref__")

    def __init__(self, line: str):
        self.line, self.walked, self.summed_at, self.suspect = line, False, "", None

    def walk(self) -> None:
        """A backward went through the node."""
        self.walked = True
        if self.suspect is not None:
            self.suspect.walked = True

    def summed(self, line: str) -> None:
        """A running total started at ``line`` took the output in."""
        if not self.summed_at:
            self.summed_at = line
            if self.suspect is not None:
                self.suspect.summed_at = line


def install(d) -> None:
    d.tokens = deque()  # (the top-level call that made it, weakref of its token), oldest first, not yet judged
    d.suspects = []  # Suspect, in the order they became one
    d.watched = {}  # weakref of a suspect's token -> the Suspect (until the token dies)
    d.top_calls = 0
    d.held_clock = 0  # counts suspects made and suspects dead: the order of the two, exactly

    def died(ref) -> None:
        suspect = d.watched.pop(ref, None)
        if suspect is not None:
            d.held_clock += 1
            suspect.died = d.held_clock

    d.on_suspect_death = died


def stamp(d, fn, line: str) -> None:
    """A top-level module output's node: give it a token."""
    token = Token(line)
    fn.metadata["doctor_out"] = token
    d.tokens.append((d.top_calls, weakref.ref(token)))


def on_top_call(d) -> None:
    d.top_calls += 1


def after_top_call(d) -> None:
    """A top-level call returned: judge the outputs made ``_LATER`` top-level calls before it."""
    tokens = d.tokens
    while tokens and tokens[0][0] + _LATER <= d.top_calls:
        token = tokens.popleft()[1]()
        if token is not None and not token.walked:
            _suspect(d, token)


def _suspect(d, token) -> None:
    if len(d.suspects) >= _KEEP:  # make room: those a backward walked since (an episode's) are no finding
        d.suspects = [s for s in d.suspects if not s.walked]
        if len(d.suspects) >= _KEEP:
            return
    d.held_clock += 1
    token.suspect = Suspect(token.line, d.held_clock, token.summed_at)
    d.suspects.append(token.suspect)
    d.watched[weakref.ref(token, d.on_suspect_death)] = token.suspect


def _together(suspects) -> int:
    """The most of ``suspects`` alive at one moment (each from when it became one until its node died)."""
    events = sorted([(s.since, 1) for s in suspects] + [(s.died, -1) for s in suspects if s.died is not None])
    alive = most = 0
    for _, change in events:
        alive += change
        most = max(most, alive)
    return most


def conclude(d, exc) -> None:
    if exc is not None:  # a run cut short may not have reached the backward that walks them
        return
    unwalked = [s for s in d.suspects if not s.walked]
    for line in dict.fromkeys(s.line for s in unwalked):
        mine = [s for s in unwalked if s.line == line]
        count = _together(mine)
        if count < _MIN:
            continue
        summed = next((s.summed_at for s in mine if s.summed_at), "")
        held = f"a running total started at {summed} (`total += loss` keeps each graph)" if summed else "the program"
        d.add(
            ("held", line),
            Mechanism.HELD_GRAPH,
            summed or line,
            f"{count} outputs of the module call at {line or '?'}, each with its graph, were alive together, each "
            f"through {_LATER} or more later top-level module calls, and no backward ever walked them: {held} holds "
            "them, so memory grows with the loop",
            "run evaluation and inference under torch.no_grad() (or inference_mode), keep numbers (loss.item()) "
            "in running totals, and detach a state carried from step to step",
        )
