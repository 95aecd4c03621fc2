"""Inert loss terms (unit 04): a summand of the loss (its top chain of additions) with no ``grad_fn``; a
summand with a graph that reaches no parameter, at every backward of its line, although the rest of the
loss does (a term rebuilt from a detached value as a new leaf that requires grad); backward on a leaf made
to require grad by hand.

Python's ``sum(...)`` starts at the int 0: ``0 + first`` (seen by :mod:`.intent`) is its seed, not a term.
A constant summand's line is found by a replay: the next backward at that line is recorded under anomaly
mode (``check_nan=False``: nothing raises, nothing computed changes), and the addition's own node then
names the line that added the constant to the loss."""

from __future__ import annotations

import weakref

import torch
from torch import nn

from grader import probes
from grader.probes.doctor import frames
from grader.probes.doctor.base import Backward, Check, DoctorState
from grader.probes.doctor.findings import Finding, Mechanism

_SUMS = ("AddBackward0", "SubBackward0")
_CHECKS = 8  # backward calls per line at which a summand still suspect is walked again


class Inert(Check):
    def __init__(self, d):
        super().__init__(d)
        self.terms: dict[str, dict] = {}  # backward site -> the loss's summands still watched (graph_terms)
        self.replay: set[str] = set()  # backward lines whose next graph names a constant summand's line

    def on_backward_start(self, bw: Backward) -> None:
        d, site = self.d, bw.site
        trains = not bw.from_grad and any(is_parameter(d, leaf) for leaf in bw.leaves)
        for r in bw.graph_roots if trains else ():  # (a training loss: a backward that reaches a parameter)
            if site in self.replay:
                self.replay.discard(site)
                d.replay_done(("inert", site))
                replayed(d, r, site)
            constant_terms(d, r, site, self.replay)
        for r in bw.roots:
            if isinstance(r, torch.Tensor) and r.grad_fn is None and r.requires_grad and not bw.from_grad:
                leaf_root(d, r, site)

    def on_backward_end(self, bw: Backward) -> None:
        if not bw.from_grad:
            for r in bw.graph_roots:
                graph_terms(self.d, r, bw.site, bw.leaves, self.terms)

    def conclude(self, exc) -> None:
        conclude(self.d, self.terms)


def constant_terms(d: DoctorState, root, site, replay: set):
    """A summand of the loss with no grad_fn: it adds to the value and to no gradient."""
    fn, chain = root.grad_fn, 0
    while fn is not None and probes.node_name(fn) in _SUMS and chain < 64:
        chain += 1
        nexts = fn.next_functions
        deeper = [n for n, _ in nexts if n is not None and probes.node_name(n) in _SUMS]
        none_slots = [i for i, (n, _) in enumerate(nexts) if n is None]
        seed = not deeper and none_slots == [0]  # loss = torch.tensor(0.) + term: the accumulation's seed
        seed = seed or (len(none_slots) == 1 and "doctor_seed" in fn.metadata)  # sum(...)'s 0 + first
        if none_slots and not seed:
            added = frames.anomaly_line(fn)
            if ("inert", site) not in d.keys and not added:
                replay.add(site)  # the next backward here names the line that added it
                d.replay_next(("inert", site))
            d.add(
                ("inert", site),
                Mechanism.INERT_LOSS_TERM,
                added or site,
                f"{probes.node_name(fn)} in the loss has {len(none_slots)} input(s) with no grad_fn: that summand "
                "changes the loss's value and no gradient",
                "compute that term from tensors that keep their graph (no .item(), .detach(), torch.tensor(...) "
                "or numpy round trip)",
            )
            return
        fn = deeper[0] if deeper else None


def replayed(d: DoctorState, root, site) -> None:
    """The backward after a constant summand was found at ``site``, its graph recorded under anomaly mode:
    the addition's line replaces the backward's line in the finding."""
    fn = root.grad_fn
    while fn is not None and probes.node_name(fn) in _SUMS:
        if any(n is None for n, _ in fn.next_functions) and "doctor_seed" not in fn.metadata:
            line = frames.anomaly_line(fn)
            for i, f in enumerate(d.findings):
                if line and f.mechanism is Mechanism.INERT_LOSS_TERM and f.line == site:
                    d.findings[i] = Finding(f.mechanism, line, f.evidence + f" (added to the loss at {line})", f.fix)
            return
        fn = next((n for n, _ in fn.next_functions if n is not None and probes.node_name(n) in _SUMS), None)


def leaf_root(d: DoctorState, root, site):
    d.add(
        ("leaf-root", site),
        Mechanism.INERT_LOSS_TERM,
        site,
        f"backward was called on a leaf tensor {list(root.shape)} (requires_grad set on it by hand, no grad_fn): "
        "the whole loss is cut from the model, so backward reaches no parameter",
        "remove the requires_grad=True on the loss and find where its graph was cut (.item(), .detach(), "
        "numpy, torch.tensor(...) or a no_grad block)",
    )


def _summands(root) -> list:
    """The loss's top chain of additions, flattened: every input of its Add/Sub nodes that is not the next
    link of the chain (None for a constant)."""
    out: list = []
    fn, chain = root.grad_fn, 0
    while fn is not None and probes.node_name(fn) in _SUMS and chain < 64:
        chain += 1
        nexts = [n for n, _ in fn.next_functions]
        deeper = next((n for n in nexts if n is not None and probes.node_name(n) in _SUMS), None)
        out.extend(n for n in nexts if n is not deeper)
        fn = deeper
    return out


def _zero_leaf(fn) -> bool:
    """A leaf summand that is all zeros (``torch.zeros(1, requires_grad=True)`` as an accumulation's seed):
    it changes neither the loss's value nor any gradient."""
    leaf = getattr(fn, "variable", None)
    return leaf is not None and leaf.numel() <= 64 and not bool(leaf.detach().any())


def is_parameter(d: DoctorState, t) -> bool:
    return isinstance(t, nn.Parameter) or d.params.get(id(t)) is t or d.held.get(id(t)) is t


def _leaves(fn, d) -> tuple[bool, list]:
    """(whether the graph under ``fn`` reaches a parameter, stopping at the first; the leaves it reached)."""
    leaves, seen, stack = [], set(), [fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        leaf = getattr(node, "variable", None) if probes.node_name(node) == "AccumulateGrad" else None
        if leaf is not None:
            if is_parameter(d, leaf):
                return True, []
            leaves.append(leaf)
        stack.extend(n for n, _ in node.next_functions)
    return False, leaves


def graph_terms(d: DoctorState, root, site, loss_leaves, terms):
    """At a backward: each summand position of the loss's top chain that has a graph is walked until it is seen
    to reach a parameter once; a position that never does (in the first calls of this line) is kept, with
    the leaves it reached, for :func:`conclude` to judge against every parameter the run saw."""
    state = terms.get(site)
    if state is None:
        state = terms[site] = {"calls": 0, "cleared": set(), "suspects": {}, "loss": []}
    if state["calls"] >= _CHECKS or ("inert", site) in d.keys:
        return
    summands = _summands(root)
    open_positions = [i for i in range(len(summands)) if i not in state["cleared"]]
    if not open_positions:
        state["calls"] = _CHECKS  # every position reached a parameter once: nothing left to watch here
        return
    state["calls"] += 1
    for i in open_positions:
        fn = summands[i]
        if fn is None or _zero_leaf(fn):
            continue
        reaches, leaves = _leaves(fn, d)
        if reaches:
            state["cleared"].add(i)
            state["suspects"].pop(i, None)
        else:
            shapes = [list(t.shape) for t in leaves[:3]]
            state["suspects"][i] = (probes.node_name(fn), len(summands), [weakref.ref(t) for t in leaves], shapes)
    if state["suspects"]:
        state["loss"] = [weakref.ref(t) for t in loss_leaves]


def conclude(d: DoctorState, terms):
    """A summand position that never reached a parameter, while the loss at the same line did."""
    for site, state in terms.items():
        loss_leaves = [t for t in (r() for r in state["loss"]) if t is not None]
        params = [t for t in loss_leaves if is_parameter(d, t)]
        if not params or ("inert", site) in d.keys:
            continue
        for i, (node, count, refs, shapes) in sorted(state["suspects"].items()):
            if i in state["cleared"]:
                continue
            # (a parameter is held by the doctor until the end: a leaf that died was none)
            if any(t is not None and is_parameter(d, t) for t in (r() for r in refs)):
                continue
            d.add(
                ("inert", site),
                Mechanism.INERT_LOSS_TERM,
                site,
                f"a summand of the loss ({node}, {i + 1} of {count} in its top chain of additions) has a graph "
                f"that reaches no parameter at any of {state['calls']} backward call(s), only {len(refs)} leaf "
                f"tensor(s) made to require grad ({', '.join(map(str, shapes))}), while the rest of the loss reaches {len(params)} "
                "parameter(s); that term changes the loss's value and no parameter's gradient",
                "compute that term from the model's output without cutting its graph (no .detach(), .data, "
                ".item(), numpy, or a new tensor made to require grad); if it should train nothing, log it "
                "instead of adding it",
            )
            break
