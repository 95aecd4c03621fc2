"""Unit 04b's exercise cases: small traced programs in which a ``.grad`` is None for a planted cause
(``04b.why-grad-none``, :class:`WhyCase`). The cause is what the generator planted; the truth is diagnosed live."""

from __future__ import annotations

import functools
import random
import warnings
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
PARAMS = ("w", "weight", "theta", "enc", "p1", "scale", "gain", "W")
OTHERS = ("b", "bias", "v", "shift", "q")
CONSTANTS = ("c", "x", "data", "target")
INTERMEDIATES = ("h", "k", "z", "feat", "mid", "act", "s1", "y1", "hid", "out1")

# Each cause in several spellings, with {p} the parameter, {q} another leaf that requires grad, {c} a constant,
# {h} a value computed from {p}, {k} the name bound. A cut may sit on the parameter itself or further on.
CUTS = {
    traces.DETACHED: (
        "{k} = {h}.detach()",
        "{k} = {p}.detach() * {q}",
        "{k} = ({h} * {q}).detach().sin()",
        "{k} = {h}.detach().clone() + {q}",
    ),
    traces.NO_GRAD: (
        "with torch.no_grad():\n    {k} = {h} * 2",
        "with torch.no_grad():\n    {k} = {h}.exp() + {q}",
        "with torch.no_grad():\n    {k} = {p} * {c}",
        "with torch.no_grad():\n    {k} = ({h} + {p}).tanh()",
    ),
    traces.INFERENCE: (
        "with torch.inference_mode():\n    {k} = {h} * 2",
        "with torch.inference_mode():\n    {k} = {h}.relu()",
        "with torch.inference_mode():\n    {k} = {p} + 1",
    ),
    traces.ITEM: (
        "{k} = torch.tensor({h}.sum().item())",
        "{k} = torch.tensor({h}.tolist())",
        "{k} = {q} * {h}.mean().item()",
        "{k} = torch.tensor({p}.tolist(), requires_grad=True) * 2",
    ),
    traces.NON_DIFFERENTIABLE: (
        "{k} = ({h} > 0).float()",
        "{k} = {h}.to(torch.int64) + 1",
        "{k} = {h}.argmax().float()",
        "{k} = torch.where({h} > 0, {q}, {c})",
        "{k} = {q}[({h} < 0.5).nonzero()[:, 0]].sum() * {q}",
    ),
}
# the same words where they cut nothing on the way to the loss: a keyword on a branch the loss never reads, or on
# one operand while the other carries the parameter's history
DECOYS = (
    "log = {h}.detach()",
    "log = {h}.sum().item()",
    "log = {h}.tolist()",
    "with torch.no_grad():\n    err = {h}.abs().max()",
    "{k} = {h} * {h}.detach()",
    "{k} = {h} + torch.tensor({h}.mean().item())",
    "{k} = {h} * ({h} > 0).float()",
    "{k} = torch.where({h} > 0, {h}, {c})",
)
STARTS = ("{p} * 3", "{p}.sin()", "{p} ** 2", "{p} * {q}", "{p}.tanh()", "{p} + {q}", "{p} * {c}")
COMBINE = ("{k} * {q}", "{q} + {k}", "({k} * {q}).sin()", "{q} * {k} + {q}", "{k} + {q}")
NOT_A_LEAF = ("{p} * 3", "{p}.to(torch.float64)", "{p}.clone()", "{p}.view(-1)", "{p}.sin() + {q}", "{p}[:]")
NEVER = (
    "{p} = torch.tensor({vals})",
    "{p} = torch.tensor({vals}, requires_grad=False)",
    "{p} = torch.tensor({vals}, requires_grad=True).detach()",
    "{p} = torch.tensor({vals}) * 2",
)
ENTERED = (
    "{p} = torch.tensor({vals}, requires_grad=True)",
    "{p} = torch.tensor({vals})\n{p}.requires_grad_()",
    "{p} = torch.nn.Parameter(torch.tensor({vals}))",
    "{p} = torch.tensor({vals}).requires_grad_(True)",
)
REBINDS = (
    "with torch.no_grad():\n    {p} = {p} - 0.1 * {p}.grad",
    "{p} = torch.tensor({p}.tolist(), requires_grad=True)",
    "{p} = {p}.detach().requires_grad_()",
    "{p} = {p}.detach().clone()",
    "{p} = {p} * 1.0",
)
NOT_RUN = ("none", "{loss}.backward", "if {loss}.item() > 1000.0:\n    {loss}.backward()", "grads = [{loss}.backward]")
RUN = ("{loss}.backward()", "if {loss}.item() > -1000.0:\n    {loss}.backward()", "{loss}.backward(retain_graph=True)")
CLEARS = (
    "opt.zero_grad()",
    "opt.step()\nopt.zero_grad()",
    "{p}.grad = None",
    "for t in ({p}, {q}):\n    t.grad = None",
    "opt.zero_grad(set_to_none=True)",
)


def _split(text: str) -> list[str]:
    """Statements as the generated programs keep them: a with- or if-block and its body as one entry."""
    out: list[str] = []
    for line in text.split("\n"):
        if line.startswith("    ") and out:
            out[-1] += "\n" + line
        else:
            out.append(line)
    return out


def why_case(seed: int, cause: str) -> WhyCase:
    """One small program in which the asked name's .grad is None for the planted ``cause``, its names, spellings
    and decoys drawn per case; the variants of a cause come in turn (``seed``), not by luck."""
    rng = random.Random(seed)
    turn = seed // len(traces.CAUSES)
    n = rng.choice([2, 3])
    p, q, c = rng.choice(PARAMS), rng.choice(OTHERS), rng.choice(CONSTANTS)
    h, k, z, m = rng.sample(INTERMEDIATES, 4)
    names = {"p": p, "q": q, "c": c, "h": h, "k": k, "loss": "loss"}  # a trace's loss is the name loss

    def values():
        return "[" + ", ".join(f"{rng.choice([-1, 1]) * rng.randint(1, 15) / 10:.1f}" for _ in range(n)) + "]"

    def form(text: str, **extra) -> list[str]:
        return _split(text.format(**{**names, **extra}))

    lines = form((NEVER if cause == traces.NEVER_ENTERED else ENTERED)[turn % 4], vals=values())
    lines += [f"{q} = torch.tensor({values()}, requires_grad=True)", f"{c} = torch.tensor({values()})"]
    if cause not in (traces.NEVER_ENTERED, traces.REBOUND) and rng.random() < 0.3:
        lines += form(REBINDS[(seed + turn) % len(REBINDS)])  # a rebinding before anything uses the name: harmless
    zero_first = cause == traces.NO_BACKWARD and turn % 2 == 0 or rng.random() < 0.2
    if zero_first or cause == traces.CLEARED:
        lines.append(f"opt = torch.optim.SGD([{p}, {q}], lr=0.1)")
    start = NOT_A_LEAF[turn % len(NOT_A_LEAF)] if cause == traces.NOT_RETAINED else rng.choice(STARTS)
    lines += form(f"{h} = {start}")
    if rng.random() < 0.6:  # a decoy keyword, before or in place of the statement that follows h
        decoy = DECOYS[(seed * 7 + turn) % len(DECOYS)]
        lines += form(decoy)
        if decoy.startswith("{k}"):
            names["h"] = k
            names["k"] = m
    if cause in CUTS:
        lines += form(CUTS[cause][turn % len(CUTS[cause])])
    else:
        lines += form("{k} = " + rng.choice(_FILL).format(x="{h}"))
    combine = ("{q} + {k}", "{k} + {q}") if cause == traces.INFERENCE else COMBINE  # nothing may save it
    lines += form(f"{z} = " + rng.choice(combine).format(k="{k}", q="{q}"))
    lines += form("{loss} = " + rng.choice(["({z} ** 2).sum()", "{z}.sum()", "{z}.mean()"]).format(z=z))
    if zero_first:
        lines.append("opt.zero_grad()")
    if cause == traces.NO_BACKWARD:
        chosen = NOT_RUN[turn % len(NOT_RUN)]
        lines += [] if chosen == "none" else form(chosen)
    else:
        lines += form(rng.choice(RUN))
    if cause == traces.CLEARED:
        lines += form(CLEARS[turn % len(CLEARS)])
    if cause == traces.REBOUND:
        lines += form(REBINDS[turn % len(REBINDS)])
    asked = h if cause == traces.NOT_RETAINED else p
    return WhyCase(seed, lines, asked, cause)


@functools.cache
def _why_case_list():
    """Five programs per cause, each one kept only where torch's record gives the planted cause (a drawn spelling
    that happens to show another, or none, is drawn again)."""
    cases = []
    for i, cause in enumerate(traces.CAUSES * 5):
        for attempt in range(60):
            case = why_case(4400 + i + attempt * 1000, cause)
            if _diagnosed(case) == cause:
                break
        else:
            raise RuntimeError(f"no program for {cause!r} shows it")
        cases.append(case)
    return sorted(cases, key=lambda c: (c.size, c.seed))


def _diagnosed(case: WhyCase) -> str | None:
    try:
        with warnings.catch_warnings():  # diagnose reads a non-leaf's .grad, which warns
            warnings.simplefilter("ignore")
            return traces.diagnose(case.fresh()["trace"], case.name)
    except Exception:
        return None


def why_cases():
    return _why_case_list()
