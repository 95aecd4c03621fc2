"""Unit 04's exercise cases: generated programs with cuts (``04.reachable-leaves``) and the same programs traced
with a parameter whose path is asked about (``04.first-broken-edge``, :class:`EdgeCase`); with the functions
that read a learner's answer on them. (``04b.why-grad-none``'s cases are in ``grader.units.unit04b.cases``.)"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass

import torch

from grader import probes
from grader.engine.kinds import BadAnswer, short, type_words
from grader.probes import traces
from grader.units import programs

ALL_CUTS = ("detach", "tolist", "rebuilt", "item", "no_grad", "inference")
INTACT = "None (the path is intact)"


@functools.cache
def _leaf_case_list():
    with_graph = programs.programs(30, seed=404, max_ops=8, cuts=ALL_CUTS, need_graph=True)
    without = programs.programs(6, seed=405, max_ops=5, cuts=ALL_CUTS)
    without = [p for p in without if p.fresh()[p.output].grad_fn is None][:4]
    return sorted(with_graph + without, key=lambda p: (p.size, p.seed))


def leaf_cases():
    return _leaf_case_list()


def as_leaf_names(raw, case, ns):
    """The learner's tensors, named by the variable that holds each in the program."""
    if isinstance(raw, torch.Tensor):
        raise BadAnswer("expected a list of tensors, got one tensor; put the leaves in a list")
    if isinstance(raw, (str, bytes, dict)) or not hasattr(raw, "__iter__"):
        raise BadAnswer(f"expected a list of tensors, got {type_words(raw)}")
    items = list(raw)
    by_id = {id(v): k for k, v in ns.items() if isinstance(v, torch.Tensor)}
    names = []
    for item in items:
        if not isinstance(item, torch.Tensor):
            hint = "; return the tensors themselves, not their names" if isinstance(item, str) else ""
            raise BadAnswer(f"every entry must be a tensor; {short(item)} is {type_words(item)}{hint}")
        names.append(by_id.get(id(item), "an unnamed tensor"))
    for name in names:
        if names.count(name) > 1 and name != "an unnamed tensor":
            raise BadAnswer(
                f"{name} is in the list {names.count(name)} times; list each leaf once "
                "(a shared leaf is one AccumulateGrad node reached twice)"
            )
    return names


def line_key(text: str) -> str:
    return " ".join(str(text).split())


@dataclass
class EdgeCase(programs.LinesCase):
    """A generated program, traced, and the parameter whose path to the loss is asked about."""

    drawing_label = None  # a class attribute, not a field: drawing() is the trace and the loss's graph

    seed: int
    lines: list
    name: str
    output: str = "loss"

    @property
    def source(self):
        return "\n".join(self.lines) + f"\n# asked: first_broken_edge(trace, {self.name!r})"

    @property
    def label(self):
        return f"program #{self.seed} ({self.size} lines), parameter {self.name}"

    def fresh(self):
        return {"trace": traces.trace("\n".join(self.lines)), "name": self.name}

    def drawing(self, ns=None):
        ns = ns if ns is not None else self.fresh()
        tr = ns["trace"]
        tensors = {k: v for k, v in tr.names.items() if isinstance(v, torch.Tensor)}
        return tr.table() + "\n\nthe loss's graph:\n" + probes.text_tree(tr.loss, names=tensors)


def _as_loss_program(prog):
    lines = list(prog.lines)
    assert lines[-1].startswith("out = ")
    lines[-1] = "loss = " + lines[-1][len("out = ") :]
    return lines


def _cut_label(line: str) -> str:
    if "tolist" in line:
        return "rebuilt" if "requires_grad=True" in line else "tolist"
    for word in ("item", "no_grad", "inference", "detach"):
        if word in line:
            return word
    return "other"


@functools.cache
def _edge_case_list():
    """Generated programs with a parameter whose value reaches the loss: some intact, most cut, by every cut."""
    quota = {"detach": 5, "no_grad": 5, "inference": 4, "item": 4, "tolist": 4, "rebuilt": 4, "intact": 14}
    chosen, sources = [], set()
    for round_, wanted in enumerate(quota):
        # programs that may use every cut, plus the one whose break is wanted, so each kind shows up
        rng = random.Random(round_)
        for i in range(400):
            cuts = ALL_CUTS if wanted == "intact" else (wanted, rng.choice(ALL_CUTS))
            if quota[wanted] == 0:
                break
            prog = programs.generate(414 * 100_003 + round_ * 1000 + i, 2 + i % 7, cuts=cuts)
            if prog.source in sources:
                continue
            sources.add(prog.source)
            lines = _as_loss_program(prog)
            try:
                tr = traces.trace("\n".join(lines))
            except Exception:  # an inference tensor saved for backward: not a program that runs
                continue
            names = [n for n, flag in prog.leaves.items() if flag]
            names = [n for n in names if traces._used_binding(tr, n) in traces.route(tr, n)]
            if not names:
                continue
            name = random.Random(prog.seed).choice(names)
            edge = traces.first_broken_edge(tr, name)
            label = "intact" if edge is None else _cut_label(edge.line)
            if quota.get(label, 0) > 0:
                quota[label] -= 1
                chosen.append(EdgeCase(prog.seed, lines, name))
    chosen += _off_route_cases(chosen)
    return sorted(chosen, key=lambda c: (c.size, c.seed))


# a cut on a branch the loss never reads, placed right after the parameter: first in program order
_SPARE = ("spare = {p}.detach() * 2", "spare = torch.tensor({p}.tolist())", "spare = {p}.item() * 3")


def _ignoring_the_route(tr, name):
    """The first step computed from the parameter whose record does not reach it, whether or not the loss uses it:
    the reading of 'first broken edge' that drops 'on a route to the loss'. Used only to choose cases that refute
    it."""
    param = tr.steps[traces._used_binding(tr, name)].tensor
    if traces.reaches(tr.loss, param):
        return None
    carries = {name}
    for step in tr.steps:
        if step.name is not None and carries & set(step.inputs):
            carries.add(step.name)
            if step.name != name and not traces.reaches(step.tensor, param):
                return step
    return None


def _off_route_cases(chosen, broken: int = 5, intact: int = 2):
    """Variants of chosen cases with a cut on a dead branch before the real break (or on an intact path): the truth
    is unchanged, and an answer that ignores "on a route to the loss" names the dead branch (or, when the loss is
    intact and it does not check the loss first, the dead branch too)."""
    wanted = {"broken": broken, "intact": intact}
    made = []
    for k, case in enumerate(chosen):
        tr = traces.trace("\n".join(case.lines))
        truth = traces.first_broken_edge(tr, case.name)
        kind = "intact" if truth is None else "broken"
        if wanted[kind] == 0:
            continue
        start = traces._used_binding(tr, case.name)
        binding = tr.steps[start].line
        if binding not in case.lines:  # a statement over several lines: leave it
            continue
        at = case.lines.index(binding) + 1
        lines = case.lines[:at] + [_SPARE[k % len(_SPARE)].format(p=case.name)] + case.lines[at:]
        try:
            new = traces.trace("\n".join(lines))
        except Exception:
            continue
        edge = traces.first_broken_edge(new, case.name)
        if (edge is None) != (truth is None) or (edge is not None and edge.line != truth.line):
            continue
        decoy = _ignoring_the_route(new, case.name) if kind == "broken" else None
        if kind == "broken" and (decoy is None or not decoy.line.startswith("spare = ")):
            continue
        wanted[kind] -= 1
        made.append(EdgeCase(case.seed * 10 + 7, lines, case.name))
    return made


# --- twins: the same spelling with and without a cut, and cuts no keyword marks ---------------------------------
#
# {h} is a value computed from the parameter, {q} another leaf that requires grad, {c} a constant. Each form is a
# statement or two on the route from the parameter to the loss; which of them cuts is measured by torch when the
# case is made (traces.first_broken_edge), never assumed from the form.
QUIET_CUTS = (  # no keyword of unit 04's list: an integer or boolean result, an index
    "{k} = ({h} > 0.5).float()",
    "{k} = ({h} >= {c}).to(torch.float32) * {q}",
    "{k} = {h}.long() * 2.0",
    "{k} = {h}.round().int() + {q}",
    "{k} = torch.where({h} > 0, {q}, {c})",
    "{k} = {q}[{h}.argmax()] * {q}",
    "{i} = {h}.argmin()\n{k} = {q}[{i}] + {c}",
    "{k} = {q}[({h} > 0).nonzero()[:, 0]].sum() * {q}",
)
MEETS_GRAD = (  # a cut operand meeting a tensor that requires grad: the result has a grad_fn, not the parameter
    "{k} = {h}.detach() * {q}",
    "{k} = {q} + torch.tensor({h}.tolist())",
    "{k} = {q} * {h}.sum().item()",
    "with torch.no_grad():\n    {s} = {h} * 2\n{k} = {s} + {q}",
)
INTACT_WITH_KEYWORD = (  # a keyword on the route, the path whole through the other operand
    "{k} = {h} * {h}.detach()",
    "{k} = {h} + torch.tensor({h}.sum().item())",
    "{k} = {h} * ({h} > 0).float()",
    "{k} = torch.where({h} > 0, {h}, {c})",
    "{k} = {h} / {h}.detach().abs().max()",
    "with torch.no_grad():\n    {s} = {h}.abs().max() + 1\n{k} = {h} / {s}",
    "{k} = {h} * {q}[{h}.argmax()]",
    "{k} = {h} - {h}.mean().item()",
)
_NAMES = ("h", "u", "feat", "z1", "act", "mid", "g", "r")
_STARTS = ("{p} * {c}", "{p}.sin()", "({p} * {q}).tanh()", "{p} ** 2 + {c}", "{p}.exp() - 1")
_ENDS = ("{k} * {q} + {c}", "({k} + {q}) ** 2", "{k} * {c} + {q}.sin()", "{k} + {q} * {c}")


def twin_case(seed: int, form: str, cut_later: str | None = None) -> EdgeCase:
    """A program whose route runs through ``form`` (then, with ``cut_later``, a second form after it), with names,
    values and the parameter's leaf drawn per case."""
    rng = random.Random(seed)
    leaves = ["a", "b", "c"]
    rng.shuffle(leaves)
    p, q, c = leaves
    names = rng.sample(_NAMES, 5)
    h, k, s, i, k2 = names

    def values():
        return "[" + ", ".join(f"{rng.choice([-1, 1]) * rng.randint(2, 19) / 10:.1f}" for _ in range(3)) + "]"

    lines = [f"{n} = torch.tensor({values()}" + (")" if n == c else ", requires_grad=True)") for n in sorted(leaves)]
    lines.append(f"{h} = " + rng.choice(_STARTS).format(p=p, q=q, c=c))
    lines += form.format(h=h, k=k, q=q, c=c, s=s, i=i).split("\n")
    last = k
    if cut_later is not None:
        lines += cut_later.format(h=k, k=k2, q=q, c=c, s=s + "2", i=i + "2").split("\n")
        last = k2
    lines.append(f"{last}_out = " + rng.choice(_ENDS).format(k=last, q=q, c=c))
    lines.append("loss = " + rng.choice(("{x}.sum()", "({x} ** 2).mean()", "{x}.mean()")).format(x=f"{last}_out"))
    body = "\n".join(lines[3:])
    lines = [line for line in lines[:3] if re.search(rf"\b{line[0]}\b", body)] + lines[3:]  # only leaves it uses
    return EdgeCase(seed, _joined(lines), p)


def _joined(lines: list[str]) -> list[str]:
    """A with-block and its body as one entry, as the generated programs keep them."""
    out: list[str] = []
    for line in lines:
        if line.startswith("    ") and out:
            out[-1] += "\n" + line
        else:
            out.append(line)
    return out


@functools.cache
def _twin_case_list() -> list[EdgeCase]:
    """Each form of QUIET_CUTS, MEETS_GRAD and INTACT_WITH_KEYWORD once, and a keyword that cuts nothing followed by
    a quiet cut, all measured: a case is kept only if torch's answer is what its form was chosen for."""
    wanted = (
        [(f, None, "cut") for f in QUIET_CUTS]
        + [(f, None, "cut") for f in MEETS_GRAD]
        + [(f, None, "intact") for f in INTACT_WITH_KEYWORD]
        + [(f, g, "later") for f, g in zip(INTACT_WITH_KEYWORD, QUIET_CUTS)]
    )
    found = []
    for n, (form, later, want) in enumerate(wanted):
        for attempt in range(40):
            case = twin_case(4140_000 + n * 100 + attempt, form, later)
            try:
                tr = traces.trace("\n".join(case.lines))
                edge = traces.first_broken_edge(tr, case.name)
            except Exception:
                continue
            if (edge is None) == (want == "intact"):
                break
        else:
            raise RuntimeError(f"no twin case for {form!r} came out {want}")
        found.append(case)
    return found


def edge_cases():
    return sorted(_edge_case_list() + _twin_case_list(), key=lambda c: (c.size, c.seed))


def as_edge_line(raw, case, ns):
    if raw is None:
        return INTACT
    if isinstance(raw, traces.Step):
        return raw.line
    if isinstance(raw, str):
        if not raw.strip():
            raise BadAnswer("it returned an empty string; return the step's line, or None")
        return raw
    if isinstance(raw, int) and not isinstance(raw, bool):
        raise BadAnswer("return the step itself or its line (step.line), not a number")
    raise BadAnswer(f"expected a step, its line, or None; got {type_words(raw)}")
