"""Unit 04b's exercise cases: small traced programs in which a ``.grad`` is None for a planted cause
(``04b.why-grad-none``, :class:`WhyCase`). The cause is what the generator planted; the truth is diagnosed live."""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field

from grader.probes import traces
from grader.units import programs


@dataclass
class WhyCase(programs.LinesCase):
    drawing_label = None  # a class attribute, not a field: drawing() is the trace's table

    seed: int
    lines: list
    name: str
    cause: str = field(repr=False)  # what the generator planted; the truth is diagnosed live
    output: str = "loss"

    @property
    def source(self):
        return "\n".join(self.lines) + f"\n# asked: why is {self.name}.grad None?"

    @property
    def label(self):
        return f"program #{self.seed} ({self.size} statements), asking about {self.name}.grad"

    def fresh(self):
        return {"trace": traces.trace("\n".join(self.lines)), "name": self.name}

    def drawing(self, ns=None):
        ns = ns if ns is not None else self.fresh()
        return ns["trace"].table(grads=True)


_FILL = ("{x} * 3", "{x}.sin()", "{x} ** 2", "{x}.tanh()", "{x} * 0.5", "{x} + 1")


def why_case(seed: int, cause: str) -> WhyCase:
    """One small program in which ``name``.grad is None for the planted ``cause``."""
    rng = random.Random(seed)
    turn = seed // len(traces.CAUSES)  # the variants of a cause come in turn, not by luck
    n = rng.choice([2, 3])

    def values():
        return "[" + ", ".join(f"{rng.choice([-1, 1]) * rng.randint(1, 15) / 10:.1f}" for _ in range(n)) + "]"

    fill = lambda x: rng.choice(_FILL).format(x=x)  # noqa: E731
    lines = [
        "w = torch.tensor(" + values() + (")" if cause == traces.NEVER_ENTERED else ", requires_grad=True)"),
        "b = torch.tensor(" + values() + ", requires_grad=True)",
    ]
    # an optimizer whose zero_grad() runs before backward (harmless) or after it (the cause)
    zero_first = cause == traces.NO_BACKWARD and turn % 2 == 0
    if zero_first or cause == traces.CLEARED:
        lines.append("opt = torch.optim.SGD([w, b], lr=0.1)")
    if rng.random() < 0.5:
        lines.append("c = torch.tensor(" + values() + ")")
        other = "c"
    else:
        other = "b"
    h = rng.choice(["w * 3", "w.sin()", "w ** 2", "w * b", "w.tanh()", "w + b", f"w * {other}"])
    if cause == traces.NOT_RETAINED and rng.random() < 0.4:
        h = "w.to(torch.float64)"
    lines.append(f"h = {h}")
    if rng.random() < 0.4:
        lines.append("log = " + rng.choice(["h.detach()", "h.sum().item()", "h.tolist()", "h.detach().clone()"]))
    combine = ["k * b", "b + k", "(k * b).sin()", "b * k + b"]
    if cause == traces.DETACHED:
        lines.append("k = " + rng.choice(["h.detach()", "h.detach() * 2", "w.detach() * 3", "h.detach().sin()"]))
    elif cause == traces.NO_GRAD:
        lines.append("with torch.no_grad():\n    k = " + rng.choice(["h * 2", "h.exp()", f"h * {other}", "h + w"]))
    elif cause == traces.INFERENCE:
        lines.append("with torch.inference_mode():\n    k = " + rng.choice(["h * 2", "h.exp()", "h + 1", "h.relu()"]))
        combine = ["b + k", "k + b", "(k + b).sin()", "(b + k) ** 2"]  # nothing may save an inference tensor
    elif cause == traces.ITEM:
        lines.append(
            "k = "
            + rng.choice(
                [
                    "torch.tensor(h.sum().item())",
                    "torch.tensor(h.tolist())",
                    "torch.tensor(h.tolist(), requires_grad=True)",
                    "torch.tensor(h.mean().item()) * 2",
                ]
            )
        )
    elif cause == traces.NON_DIFFERENTIABLE:
        forms = [
            "(h > 0).float()",
            "h.to(torch.int64) + 1",
            "h.argmax().float()",
            "two steps",
            "h.long() * 2",
            "(h < 0.5).float() * 2",
        ]
        form = forms[turn % len(forms)]
        if form == "two steps":
            lines.append("m = " + rng.choice(["h > 0", "h.argmax()", "h.round().long()"]))
            lines.append("k = m.float()")
        else:
            lines.append("k = " + form)
    else:
        lines.append("k = " + fill("h"))
    lines.append("z = " + rng.choice(combine))
    if rng.random() < 0.4:
        lines.append("z = " + fill("z"))
    lines.append("loss = " + rng.choice(["(z ** 2).sum()", "z.sum()", "z.mean()"]))
    if zero_first:
        lines.append("opt.zero_grad()")
    if cause == traces.NO_BACKWARD:
        choice = ("none", "attribute", "guard")[turn % 3]
        if choice == "attribute":
            lines.append("loss.backward")
        elif choice == "guard":
            lines.append("if loss.item() > 1000.0:\n    loss.backward()")
    else:
        lines.append("loss.backward()")
    if cause == traces.CLEARED:
        lines.append(
            ("opt.zero_grad()", "opt.step()\nopt.zero_grad()", "w.grad = None", "for p in (w, b):\n    p.grad = None")[
                turn % 4
            ]
        )
    if cause == traces.REBOUND:
        lines.append(
            (
                "with torch.no_grad():\n    w = w - 0.1 * w.grad",
                "w = torch.tensor(w.tolist(), requires_grad=True)",
                "w = w.detach().requires_grad_()",
                "w = w.detach().clone()",
            )[turn % 4]
        )
    name = "h" if cause == traces.NOT_RETAINED else "w"
    return WhyCase(seed, lines, name, cause)


@functools.cache
def _why_case_list():
    cases = []
    for i, cause in enumerate(traces.CAUSES * 4):
        cases.append(why_case(4400 + i, cause))
    return sorted(cases, key=lambda c: (c.size, c.seed))


def why_cases():
    return _why_case_list()
