"""Generated cases: small, readable torch programs, seeded and reproducible.

A :class:`Program` is a few lines of plain torch code over leaves ``a``,
``b``, ``c`` (some requiring grad; a leaf no line uses is left out) ending in a scalar ``out``. The mix takes
in branches, shared leaves, views, and the cuts of unit 04 (``detach``,
``no_grad``, ``inference_mode``, values taken out with ``.item()`` or
``.tolist()`` and rebuilt). Each program is run once when generated and kept
only if it runs, so every case is a real graph torch built.

Exercises get their cases from :func:`programs`, smallest first, so the first
failure found is the smallest one and can be shown as code and as a graph.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from grader import probes
from grader.engine import torch_state
from grader.engine.cases import Case

# name -> (template, weight). {x} and {y} are operands; {n} the vector length.
BINARY = {"add": ("{x} + {y}", 3), "mul": ("{x} * {y}", 3), "sub": ("{x} - {y}", 1)}
UNARY = {
    "sin": ("{x}.sin()", 2),
    "exp": ("{x}.exp()", 1),
    "square": ("{x} ** 2", 2),
    "relu": ("{x}.relu()", 1),
    "tanh": ("{x}.tanh()", 1),
    "scale": ("{x} * 3", 2),
    "sigmoid": ("{x}.sigmoid()", 1),
}
VIEWS = {"view": ("{x}.view(-1)", 1), "slice": ("{x}[:]", 1), "flip": ("{x}.flip(0)", 1)}
CUTS = {
    "detach": ("{x}.detach()", 2),
    "tolist": ("torch.tensor({x}.tolist())", 1),
    "rebuilt": ("torch.tensor({x}.tolist(), requires_grad=True)", 1),
    "item": ("torch.tensor({x}.sum().item())", 1),
    "no_grad": ("with torch.no_grad():\n    {name} = {x} * {y}", 2),
    "inference": ("with torch.inference_mode():\n    {name} = {x} + 1", 1),
}
ENDINGS = ("{x}.sum()", "{x}.mean()", "({x} ** 2).sum()")


class LinesCase(Case):
    """A case whose program is its ``lines`` (a field or a property) and whose name is its ``seed``: its size
    is the number of lines, its source their text. Units 01-04 and 07 build their cases on it."""

    seed: int
    lines: list[str]

    @property
    def size(self) -> int:
        return len(self.lines)

    @property
    def source(self) -> str:
        return "\n".join(self.lines)

    @property
    def label(self) -> str:
        return f"program #{self.seed} ({self.size} lines)"


@dataclass
class Program(LinesCase):
    """One generated case. ``fresh()`` runs it and returns its namespace (new tensors each time)."""

    drawing_label = None  # a class attribute, not a field: drawing() is its graph

    seed: int
    lines: list[str]
    leaves: dict[str, bool] = field(default_factory=dict)  # leaf name -> requires_grad
    output: str = "out"
    features: set[str] = field(default_factory=set)

    def fresh(self) -> dict[str, Any]:
        ns: dict[str, Any] = {"torch": torch}
        with torch_state.clean_room():
            exec(compile(self.source, f"<generated program #{self.seed}>", "exec"), ns)
        ns.pop("__builtins__", None)
        return ns

    def tensors(self, ns: dict[str, Any]) -> dict[str, torch.Tensor]:
        return {k: v for k, v in ns.items() if isinstance(v, torch.Tensor)}

    def drawing(self, ns: dict[str, Any] | None = None) -> str:
        ns = ns if ns is not None else self.fresh()
        return probes.text_tree(ns[self.output], names=self.tensors(ns))

    def __repr__(self):
        return f"<{self.label}>"


def _pick(rng: random.Random, table: dict) -> str:
    names = list(table)
    return rng.choices(names, weights=[table[n][1] for n in names])[0]


def _value_list(rng: random.Random, n: int) -> str:
    return "[" + ", ".join(f"{rng.choice([-1, 1]) * rng.randint(1, 20) / 10:.1f}" for _ in range(n)) + "]"


def generate(
    seed: int, ops: int, cuts: Iterable[str] = (), views: bool = True, leaves: int | None = None, ending: bool = True
) -> Program:
    """One program with ``ops`` operations; ``cuts`` names the kinds of cut it may use."""
    rng = random.Random(seed)
    n = rng.choice([2, 3])
    count = leaves or rng.choice([2, 3, 3])
    names = "abc"[:count]
    flags = {name: (i == 0 or rng.random() < 0.7) for i, name in enumerate(names)}
    lines = [
        f"{name} = torch.tensor({_value_list(rng, n)}" + (", requires_grad=True)" if flags[name] else ")")
        for name in names
    ]
    live = list(names)
    features: set[str] = set()
    cut_table = {k: v for k, v in CUTS.items() if k in set(cuts)}

    picked: dict[str, int] = {}

    def operand():
        # prefer recent values so the program stays connected; leaves come back often (sharing)
        choice = rng.choice(live[-3:] if rng.random() < 0.7 else live)
        if choice in flags:
            picked[choice] = picked.get(choice, 0) + 1
        return choice

    for i in range(1, ops + 1):
        name = f"t{i}"
        roll = rng.random()
        if cut_table and roll < 0.22:
            kind = _pick(rng, cut_table)
            template = cut_table[kind][0]
            x, y = operand(), operand()
            text = template.format(x=x, y=y, name=name)
            lines.append(text if text.startswith("with") else f"{name} = {text}")
            features.add(kind)
        elif views and roll < 0.32:
            kind = _pick(rng, VIEWS)
            lines.append(f"{name} = " + VIEWS[kind][0].format(x=operand()))
            features.add("view")
        elif roll < 0.65:
            kind = _pick(rng, BINARY)
            x = operand()
            y = operand() if rng.random() < 0.8 else x
            features.add("branch" if x == y else "binary")
            lines.append(f"{name} = " + BINARY[kind][0].format(x=x, y=y))
        else:
            kind = _pick(rng, UNARY)
            lines.append(f"{name} = " + UNARY[kind][0].format(x=operand()))
        live.append(name)
    last = live[-1]
    if len(live) > count + 1 and rng.random() < 0.5:
        last = f"({last} + {rng.choice(live[:-1])})"
    if ending:
        lines.append("out = " + rng.choice(ENDINGS).format(x=last))
    else:
        lines.append(f"out = {last}")
    if any(v > 1 for v in picked.values()):
        features.add("shared leaf")
    body = "\n".join(lines[count:])
    unused = {name for name in names if not re.search(rf"\b{name}\b", body)}  # a case lists only what it uses
    lines = [line for name, line in zip(names, lines) if name not in unused] + lines[count:]
    flags = {name: flag for name, flag in flags.items() if name not in unused}
    return Program(seed=seed, lines=lines, leaves=flags, features=features)


def programs(
    count: int,
    seed: int,
    max_ops: int = 8,
    cuts: Iterable[str] = (),
    views: bool = True,
    need_graph: bool = False,
    need_backward: bool = False,
) -> list[Program]:
    """``count`` distinct programs that run, smallest first, from ``seed``.

    ``need_graph`` keeps only programs whose ``out`` has a grad_fn;
    ``need_backward`` only those where ``out.backward()`` also succeeds.
    """
    found: list[Program] = []
    sources: set[str] = set()
    i = 0
    while len(found) < count and i < count * 50:
        ops = 1 + (i % max_ops)
        prog = generate(seed * 100_003 + i, ops, cuts=cuts, views=views)
        i += 1
        if prog.source in sources:
            continue
        try:
            ns = prog.fresh()
            out = ns[prog.output]
            if need_graph and out.grad_fn is None:
                continue
            if need_backward:
                if out.grad_fn is None:
                    continue
                with torch_state.clean_room():
                    out.backward()
        except Exception:
            continue
        sources.add(prog.source)
        found.append(prog)
    found.sort(key=lambda p: (p.size, p.seed))
    return found
