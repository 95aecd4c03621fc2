"""Unit 07's exercise cases: generated straight-line programs with one in-place write (``07.predict-inplace``,
whose learner function reads a :class:`WriteProgram`), and programs run under a learner's saved-tensor hooks
(``07.version-guard``); torch's own outcome for each, and how a learner's function or pair is run on one.
"""

from __future__ import annotations

import functools
import gc
import random
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch

from grader import probes
from grader.engine import torch_state
from grader.units.programs import LinesCase
from grader.units.switches import switched_off

# =====================================================================================================
# Exercise 1: predict where a program with one in-place write fails, and which node's save broke.
# =====================================================================================================


# --- the generated programs ----------------------------------------------------------------------

_BINARY = {"{x} * {y}": 3, "{x} + {y}": 2, "{x} - {y}": 1}
_UNARY = {
    "{x} ** 2": 2,
    "{x}.sin()": 1,
    "{x}.cos()": 1,  # keep their input
    "{x}.exp()": 2,
    "{x}.sigmoid()": 1,
    "{x}.tanh()": 1,
    "{x}.relu()": 1,  # keep their output
    "{x} + 1": 2,
    "{x} * 2": 1,
    "-{x}": 1,
}  # keep neither
_VIEWS = {"{x}[1:]": 2, "{x}.view(-1)": 1, "{x}[:]": 1, "{x}.detach()": 1}
_ENDINGS = ("{x}.sum()", "({x} ** 2).sum()", "({x} * {y}).sum()", "{x}.sum() + {y}.sum()")
WRITES = ("{x}.add_(1)", "{x}.mul_(2)", "{x} += 1", "{x} *= 3", "{x}[0] = 0.5", "{x}[-1:].mul_(3)", "{x}.zero_()")


def _values(rng: random.Random, n: int) -> str:
    return "[" + ", ".join(f"{rng.choice([-1, 1]) * rng.randint(2, 15) / 10:.1f}" for _ in range(n)) + "]"


def _pick(rng: random.Random, table: dict) -> str:
    keys = list(table)
    return rng.choices(keys, weights=[table[k] for k in keys])[0]


def forward_lines(seed: int, ops: int, early_write: bool = False) -> list[str]:
    """A straight-line forward pass over leaves a (requires grad), b (sometimes) and c (never),
    ending in a scalar ``out``; views and detach() share memory with what they came from."""
    rng = random.Random(seed)
    b_grad = rng.random() < 0.5
    lines = [
        f"a = torch.tensor({_values(rng, 3)}, requires_grad=True)",
        f"b = torch.tensor({_values(rng, 3)}" + (", requires_grad=True)" if b_grad else ")"),
        f"c = torch.tensor({_values(rng, 3)})",
    ]
    if early_write:
        lines.append("c += 0.5")
    length = {"a": 3, "b": 3, "c": 3}
    live = ["a", "b", "c"]

    def operand():
        return rng.choice(live[-3:] if rng.random() < 0.7 else live)

    for i in range(1, ops + 1):
        name = f"t{i}"
        x = operand()
        roll = rng.random()
        if roll < 0.2:
            template = _pick(rng, _VIEWS)
            if template == "{x}[1:]" and length[x] == 1:
                template = "{x}[:]"
            length[name] = length[x] - 1 if template == "{x}[1:]" else length[x]
            lines.append(f"{name} = " + template.format(x=x))
        elif roll < 0.55:
            same = [n for n in live if length[n] == length[x] and n != x]
            y = rng.choice(same) if same and rng.random() < 0.85 else x
            lines.append(f"{name} = " + _pick(rng, _BINARY).format(x=x, y=y))
            length[name] = length[x]
        else:
            lines.append(f"{name} = " + _pick(rng, _UNARY).format(x=x))
            length[name] = length[x]
        live.append(name)
    last = live[-1]
    ending = rng.choice(_ENDINGS)
    others = [n for n in live[:-1] if length[n] == length[last]]
    if "{y}" in ending and not others:
        ending = "{x}.sum()"
    y = rng.choice(others) if others else last
    lines.append("out = " + ending.format(x=last, y=y))
    return lines


def _run(lines: list[str]) -> dict[str, Any]:
    ns: dict[str, Any] = {"torch": torch}
    exec(compile("\n".join(lines), "<unit 07 program>", "exec"), ns)
    ns.pop("__builtins__", None)
    return ns


def _tensors(ns: dict[str, Any]) -> dict[str, torch.Tensor]:
    return {k: v for k, v in ns.items() if isinstance(v, torch.Tensor)}


def saves_drawing(ns: dict[str, Any], when: str = "before the write") -> str:
    """The graph under out, then each tensor a node kept and the program's names that share its memory."""
    tensors = _tensors(ns)
    lines = [probes.text_tree(ns["out"], names=tensors, saved=True), f"what each node kept ({when}):"]
    by_storage: dict[int, list[str]] = {}
    for name, t in tensors.items():
        by_storage.setdefault(t.untyped_storage().data_ptr(), []).append(name)
    kept = False
    for fn in probes.nodes(ns["out"]):
        for attr, value in probes.saved_attributes(fn).items():
            if isinstance(value, torch.Tensor):
                kept = True
                sharing = by_storage.get(value.untyped_storage().data_ptr(), [])
                lines.append(
                    f"  {probes.node_name(fn)}.{attr}: shape {tuple(value.shape)}, version "
                    f"{value._version}, memory shared with "
                    f"{', '.join(sharing) if sharing else 'no named tensor'}"
                )
    if not kept:
        lines.append("  nothing")
    return "\n".join(lines)


class WriteProgram:
    """What predict_inplace reads: a program already run up to just before its write, not its text.

    * ``write``: the one in-place line, e.g. ``"t2.add_(1)"``;
    * ``target``: the name of the tensor it writes into (through a view, for ``t2[0] = 0.5``);
    * ``ns``: a dict, name -> tensor, built up to just before the write (``ns["out"]`` has its graph).

    The forward pass's source is not part of it (issue 45: running it again in a fresh namespace, doing the
    write there and listing the saves that then failed to read passed every case): the graph under
    ``ns["out"]`` and what its nodes kept are the program as the exercise hands it over.
    """

    def __init__(self, write: str, target: str, ns: dict[str, torch.Tensor]):
        self.write, self.target, self.ns = write, target, ns

    def __repr__(self):
        return f"<a program run up to its write {self.write!r} into {self.target}; its tensors: {', '.join(self.ns)}>"


class ExampleProgram(WriteProgram):
    """A program built from a forward pass you wrote (:func:`write_program`): the same object, with your text kept
    as ``source`` for printing."""

    def __init__(self, source: str, write: str, target: str, ns: dict[str, torch.Tensor]):
        super().__init__(write, target, ns)
        self.source = source

    def __repr__(self):
        return f"<program writing {self.target}: {self.write!r}>\n{self.source}"


def write_program(forward: str, write: str, target: str) -> ExampleProgram:
    """A program as predict_inplace receives it, from a forward pass written out by hand (ending in out)."""
    lines = [line for line in forward.strip().splitlines() if line.strip()]
    with torch_state.clean_room():
        ns = _run(lines)
    source = "\n".join(lines + [write + "    # the write", "out.backward()"])
    return ExampleProgram(source, write, target, _tensors(ns))


@dataclass(eq=False)
class WriteCase(LinesCase):
    """A forward pass ending in ``out``, then exactly one in-place write, then ``out.backward()``."""

    seed: int
    forward: list[str]
    write: str
    target: str
    output: str = "out"
    kinds: set = field(default_factory=set)
    drawing_label = None  # a verdict heads drawing() "its graph"

    @property
    def lines(self) -> list[str]:
        return self.forward + [self.write + "    # the write", "out.backward()"]

    def fresh(self) -> dict[str, Any]:
        """The namespace just before the write (running the forward pass never raises)."""
        with torch_state.clean_room():
            return _run(self.forward)

    def program(self, ns: dict[str, Any]) -> WriteProgram:
        return WriteProgram(self.write, self.target, _tensors(ns))

    def drawing(self, ns: dict[str, Any] | None = None) -> str:
        return saves_drawing(self.fresh())

    def __repr__(self):
        return f"<{self.label}>"


def write_outcome(case: WriteCase) -> tuple[str, frozenset]:
    """Torch's answer: run the write and backward; for an error at backward, the nodes whose saves are
    stale, read before backward from the check torch performs (probes.saved_tensors)."""
    ns = _run(case.forward)
    try:
        exec(case.write, ns)
    except RuntimeError:
        return "at the write", frozenset()
    stale = frozenset(s.node for s in probes.saved_tensors(ns["out"]) if s.stale)
    try:
        ns["out"].backward()
    except RuntimeError as exc:
        if not stale:
            raise RuntimeError(f"{case.label}: backward raised but no saved tensor reads stale") from exc
        return "at backward", stale
    if stale:
        raise RuntimeError(f"{case.label}: a saved tensor reads stale but backward ran")
    return "no error", frozenset()


def _kinds_by_name(ns: dict[str, Any]) -> dict[str, set[str]]:
    """For each tensor of a forward pass, what a write into it should show, read from the graph once.

    Used only to choose which writes to try; every chosen case is then run under torch for its answer.
    """
    under_out = probes.nodes(ns["out"])
    seen = set(under_out)
    kept_on_path = [v for fn in under_out for v in probes.saved_attributes(fn).values() if isinstance(v, torch.Tensor)]
    kept_off_path = []
    for t in _tensors(ns).values():
        for fn in probes.nodes(t):
            if fn not in seen:
                seen.add(fn)
                kept_off_path += [v for v in probes.saved_attributes(fn).values() if isinstance(v, torch.Tensor)]
    out: dict[str, set[str]] = {}
    for name, t in _tensors(ns).items():
        if name == "out":
            continue
        storage = t.untyped_storage().data_ptr()
        base = t if t._base is None else t._base
        if t.requires_grad and base.is_leaf:
            out[name] = {"at the write"} | ({"view of a leaf"} if t is not base else set())
            continue
        hit = [v for v in kept_on_path if v.untyped_storage().data_ptr() == storage]
        if hit:
            out[name] = {"at backward"} | (
                {"offset alias"} if any(v.data_ptr() != t.data_ptr() for v in hit) else set()
            )
            continue
        off = any(v.untyped_storage().data_ptr() == storage for v in kept_off_path)
        out[name] = {"no error"} | ({"saved off the path"} if off else set())
    return out


# how many cases of each kind: the plain places, and the three ways a quick reading goes wrong
_QUOTA = {
    "view of a leaf": 4,
    "offset alias": 4,
    "saved off the path": 4,
    "at the write": 6,
    "at backward": 10,
    "no error": 8,
}


@functools.cache
def write_cases(seed: int = 7) -> tuple[WriteCase, ...]:
    """Cases filling _QUOTA, one per generated program, each filed under the rarest kind it shows."""
    rng = random.Random(seed)
    taken = {k: 0 for k in _QUOTA}
    found: list[WriteCase] = []
    with torch_state.clean_room():
        for attempt in range(1, 2000):
            if all(taken[k] >= n for k, n in _QUOTA.items()):
                break
            program_seed = seed * 10_007 + attempt
            forward = forward_lines(program_seed, ops=1 + attempt % 6)
            try:
                ns = _run(forward)
                if ns["out"].grad_fn is None:
                    continue
                kinds_of = _kinds_by_name(ns)
            except Exception:
                continue
            needed = [k for k in _QUOTA if taken[k] < _QUOTA[k]]
            names = sorted(
                kinds_of, key=lambda n: min((needed.index(k) for k in kinds_of[n] if k in needed), default=len(needed))
            )
            if not names or not kinds_of[names[0]] & set(needed):
                continue
            best = [n for n in names if kinds_of[n] & set(needed) == kinds_of[names[0]] & set(needed)]
            name = rng.choice(best)
            case = WriteCase(program_seed, forward, rng.choice(WRITES).format(x=name), name)
            try:
                place, _ = write_outcome(case)
            except Exception:
                continue
            kinds = kinds_of[name] if place in kinds_of[name] else {place}
            need = [k for k in needed if k in kinds]
            if need:
                taken[need[0]] += 1
                case.kinds = kinds
                found.append(case)
    found.sort(key=lambda c: (c.size, c.seed))
    return tuple(found)


# a write undone by hand: the counter set back after a trial write
NO_UNDO = {"torch._C._autograd._unsafe_set_version_counter": "torch._C._autograd._unsafe_set_version_counter"}


def call_predict(fn, case: WriteCase, ns: dict[str, Any]):
    program = case.program(ns)
    before = {name: t._version for name, t in program.ns.items()}
    with switched_off("predict from the graph and the saved tensors, without writing", NO_UNDO):
        value = fn(program)
    moved = [
        f"{name} went from version {v} to {program.ns[name]._version}"
        for name, v in before.items()
        if name in program.ns and program.ns[name]._version != v
    ]
    if moved:
        raise ValueError(
            "your function wrote into the program's tensors (" + "; ".join(moved) + "): predict by "
            "reading the graph and the saved tensors, without running the write"
        )
    return value


# =====================================================================================================
# Exercise 2: a pack/unpack pair that does the version check torch skips under hooks.
# =====================================================================================================


@dataclass(eq=False)
class VersionGuardCase(LinesCase):
    """A forward pass, at most one later in-place write, then out.backward(); run under the learner's hooks."""

    seed: int
    forward: list[str]
    write: str | None
    output: str = "out"
    dropped: bool = False  # no backward: every name is deleted; are the tensors freed?
    drawing_label = None  # a verdict heads drawing() "its graph"

    @property
    def lines(self) -> list[str]:
        if self.dropped:
            names = ", ".join(n for n in _assigned(self.forward) if n not in self.leaf_names)
            return self.forward + [f"del {names}    # no backward: is their memory freed (gc.collect())?"]
        return self.forward + ([self.write + "    # the write"] if self.write else []) + ["out.backward()"]

    @property
    def leaf_names(self) -> list[str]:
        return [line.split("=")[0].strip() for line in self.forward if "requires_grad=True" in line]

    def fresh(self) -> dict[str, Any]:
        with torch_state.clean_room():
            return _run(self.forward)

    def drawing(self, ns: dict[str, Any] | None = None) -> str:
        return saves_drawing(self.fresh(), "before the write" if self.write else "after the forward pass")

    def leaves(self, ns: dict[str, Any]) -> list[str]:
        """Names of the leaves that receive a gradient."""
        return [n for n, t in _tensors(ns).items() if t.is_leaf and t.requires_grad]

    def __repr__(self):
        return f"<{self.label}>"


def _assigned(lines: list[str]) -> list[str]:
    return [line.split("=")[0].strip() for line in lines if "=" in line and not line.startswith(" ")]


def _dropped_alive(ns: dict[str, Any], case: VersionGuardCase) -> bool:
    """Delete every name but the leaves; is any tensor the forward pass made still alive after gc.collect()?"""
    refs = [
        weakref.ref(ns[n])
        for n in _assigned(case.forward)
        if n not in case.leaf_names and isinstance(ns.get(n), torch.Tensor)
    ]
    for n in list(ns):
        if n not in case.leaf_names:
            del ns[n]
    gc.collect()
    return any(r() is not None for r in refs)


def guard_outcome(case: VersionGuardCase) -> str:
    """Torch's own check, without hooks: does backward refuse this program? (For a dropped case: is every
    tensor freed?)"""
    ns = _run(case.forward)
    if case.dropped:
        return "kept alive after del" if _dropped_alive(ns, case) else "freed without backward"
    if case.write:
        exec(case.write, ns)
    try:
        ns["out"].backward()
    except RuntimeError:
        return "raised at backward"
    return "no error"


def call_version_guard(pair, case: VersionGuardCase, ns: dict[str, Any]) -> str:
    pack, unpack = pair
    if case.dropped:
        run_ns: dict[str, Any] = {"torch": torch}
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            try:
                exec(compile("\n".join(case.forward), "<unit 07 program>", "exec"), run_ns)
            except NotImplementedError:
                raise
            except Exception:
                return "raised before backward"
        return "kept alive after del" if _dropped_alive(run_ns, case) else "freed without backward"
    reference = None
    if guard_outcome_cached(case) == "no error":
        reference_ns = _run(case.forward)
        if case.write:
            exec(case.write, reference_ns)
        reference_ns["out"].backward()
        reference = {n: reference_ns[n].grad for n in case.leaves(reference_ns)}
    run_ns: dict[str, Any] = {"torch": torch}
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        try:
            exec(
                compile("\n".join(case.forward + ([case.write] if case.write else [])), "<unit 07 program>", "exec"),
                run_ns,
            )
        except NotImplementedError:
            raise
        except Exception:
            return "raised before backward"
        try:
            run_ns["out"].backward()
        except NotImplementedError:
            raise
        except Exception:
            return "raised at backward"
    if reference is None:
        return "no error"
    for name, grad in reference.items():
        mine = run_ns[name].grad
        if grad is None and mine is None:
            continue
        if grad is None or mine is None or mine.shape != grad.shape or not torch.allclose(mine, grad, atol=1e-6):
            return "no error, wrong gradients"
    return "no error"


@functools.cache
def guard_outcome_cached(case: VersionGuardCase) -> str:
    with torch_state.clean_room():
        return guard_outcome(case)


_HANDMADE_GUARD = (
    VersionGuardCase(1, ["p = torch.ones(3, requires_grad=True)", "out = p.exp().sum()"], None),
    VersionGuardCase(2, ["p = torch.ones(3, requires_grad=True)", "q = p.exp()", "out = q.sum()"], "q.add_(1)"),
    VersionGuardCase(3, ["x = torch.ones(3, requires_grad=True)", "y = x * 2", "out = y.sum()"], "y.add_(1)"),
    VersionGuardCase(4, ["p = torch.ones(3, requires_grad=True)", "q = p.exp()", "out = q.sum()"], None, dropped=True),
)


def _saved_at_nonzero_version(case: VersionGuardCase) -> bool:
    with torch_state.clean_room():
        ns = _run(case.forward)
        return any(s.version_saved for s in probes.saved_tensors(ns["out"]))


@functools.cache
def version_guard_cases(count: int = 24, seed: int = 77) -> tuple[VersionGuardCase, ...]:
    rng = random.Random(seed)
    found: list[VersionGuardCase] = list(_HANDMADE_GUARD)
    wanted = ("raised at backward", "no error", "saved after a write", "raised at backward")
    attempt = 0
    with torch_state.clean_room():
        while len(found) < count and attempt < count * 40:
            want = wanted[len(found) % len(wanted)]
            attempt += 1
            program_seed = seed * 10_007 + attempt
            forward = forward_lines(program_seed, ops=1 + attempt % 6, early_write=want == "saved after a write")
            try:
                ns = _run(forward)
            except Exception:
                continue
            if ns["out"].grad_fn is None:
                continue
            if want == "saved after a write":
                case = VersionGuardCase(program_seed, forward, None)
                try:
                    if guard_outcome(case) == "no error" and _saved_at_nonzero_version(case):
                        found.append(case)
                except Exception:
                    pass
                continue
            names = [n for n in _tensors(ns) if n != "out"]
            options = [(n, w) for n in names for w in WRITES]
            rng.shuffle(options)
            for name, template in options[:12]:
                case = VersionGuardCase(program_seed, forward, template.format(x=name))
                try:
                    if write_outcome(WriteCase(program_seed, forward, case.write, name))[0] == "at the write":
                        continue
                    if guard_outcome(case) == want:
                        found.append(case)
                        break
                except Exception:
                    continue
    found.sort(key=lambda c: (c.size, c.seed))
    return tuple(found)
