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

from grader.probes.doctor.base import Check, DoctorState
from grader.probes.doctor.findings import Mechanism

_LATER = 16  # top-level module calls an output must stay alive through
_MIN = 8  # suspects of one line alive together that make a finding
_KEEP = 256  # suspects kept at most


class Suspect:
    """An output alive and unwalked through ``_LATER`` later top-level calls: when it became one and when its
    node died (None while alive), on the check's ``clock``; whether a backward walked it since."""

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


class Held(Check):
    def __init__(self, d):
        super().__init__(d)
        self.tokens: deque = (
            deque()
        )  # (the top-level call that made it, weakref of its token), oldest first, not yet judged
        self.suspects: list[Suspect] = []  # in the order they became one
        self.watched: dict = {}  # weakref of a suspect's token -> the Suspect (until the token dies)
        self.top_calls = 0
        self.clock = 0  # counts suspects made and suspects dead: the order of the two, exactly

    def on_top_call(self, module) -> None:
        self.top_calls += 1

    def on_top_return(self, nodes, line) -> None:
        """A top-level call returned: judge the outputs made ``_LATER`` top-level calls before it; give each of
        its new output nodes a token (in its metadata: the token lives exactly as long as the node)."""
        tokens = self.tokens
        while tokens and tokens[0][0] + _LATER <= self.top_calls:
            token = tokens.popleft()[1]()
            if token is not None and not token.walked:
                self._suspect(token)
        for fn in nodes:
            token = Token(line)
            fn.metadata["doctor_out"] = token
            tokens.append((self.top_calls, weakref.ref(token)))

    def _died(self, ref) -> None:
        suspect = self.watched.pop(ref, None)
        if suspect is not None:
            self.clock += 1
            suspect.died = self.clock

    def _suspect(self, token) -> None:
        if len(self.suspects) >= _KEEP:  # make room: those a backward walked since (an episode's) are no finding
            self.suspects = [s for s in self.suspects if not s.walked]
            if len(self.suspects) >= _KEEP:
                return
        self.clock += 1
        token.suspect = Suspect(token.line, self.clock, token.summed_at)
        self.suspects.append(token.suspect)
        self.watched[weakref.ref(token, self._died)] = token.suspect

    def conclude(self, exc) -> None:
        if exc is None:  # a run cut short may not have reached the backward that walks them
            conclude(self.d, self.suspects)


def _together(suspects) -> int:
    """The most of ``suspects`` alive at one moment (each from when it became one until its node died)."""
    events = sorted([(s.since, 1) for s in suspects] + [(s.died, -1) for s in suspects if s.died is not None])
    alive = most = 0
    for _, change in events:
        alive += change
        most = max(most, alive)
    return most


def conclude(d: DoctorState, suspects) -> None:
    unwalked = [s for s in suspects if not s.walked]
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
