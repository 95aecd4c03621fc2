"""Unit 12's tools: finding the fault with torch's own instruments, the programs its experiments run, and the
grader's own diagnosis of a training setup.

Tools a learner uses in the notebook (each a thin layer over a torch API, so the learner sees which):

* :func:`anomaly_report`: run a function under ``torch.autograd.detect_anomaly`` and return what anomaly
  mode said (the error, the node it named, the forward line it pointed at), with no file paths;
* :func:`step_ratio`: how much slower a step runs with anomaly mode on (measured, never stored);
* :class:`BackwardWatch`: ``register_full_backward_hook`` on every module, in firing order, with
  whether each module's incoming and outgoing gradients were finite; :meth:`BackwardWatch.origin`
  names the first module whose backward turned finite gradients into non-finite ones;
* :func:`held_bytes`, :func:`graphs_held`: what the objects a loop keeps hold for backward (attributes
  and buffers); :func:`graph_sizes_held`: how many nodes each holder's graph has, to tell a growing graph
  from one kept only until the next step;
* :class:`ModuleBill`: the saved-tensor bill per module (``saved_tensors_hooks`` plus module hooks);
* :func:`quiet_profile`: ``torch.profiler.profile(activities=[CPU], profile_memory=True)`` with the
  profiler's native start/stop log line kept out of the notebook;
* :func:`gc_tensor_cycles`: ``torch.utils.viz._cycles.observe_garbage``, reporting the tensors found
  in reference cycles that Python's collector freed.

:func:`find_fault` is the grader's own run of the checklist on a training setup, the answer of exercise
12.diagnose, built on the course's doctor (:mod:`grader.probes.doctor`); the exercise's generated setups
(small models with one planted fault among four kinds, or none) are in :mod:`grader.units.unit12.cases`.
"""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
import time
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from grader import probes

# =================================================================================================
# Anomaly mode
# =================================================================================================


@dataclass
class AnomalyReport:
    raised: str = ""  # the error's first line, or '' when nothing raised
    node: str = ""  # the node anomaly mode named ("Error detected in X")
    forward_line: str = ""  # the last source line of the forward traceback it printed
    warned: tuple = ()  # the first sentence of every warning it gave

    def __str__(self):
        rows = [f"raised:       {self.raised or 'nothing'}"]
        if self.node:
            rows.append(f"named node:   {self.node}")
            rows.append(f"forward line: {self.forward_line or '(not shown)'}")
        return "\n".join(rows)


_DETECTED = re.compile(r"Error detected in (\w+)\.")


def anomaly_report(fn: Callable[[], Any], check_nan: bool = True, anomaly: bool = True) -> AnomalyReport:
    """Run ``fn()`` under ``torch.autograd.detect_anomaly(check_nan=...)`` (or without anomaly mode when
    ``anomaly`` is False) and report what happened, without file paths or line numbers."""
    out = AnomalyReport()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        context = torch.autograd.detect_anomaly(check_nan=check_nan) if anomaly else contextlib.nullcontext()
        try:
            with context:
                fn()
        except RuntimeError as exc:
            out.raised = str(exc).strip().split("\n")[0]
    out.warned = tuple(str(w.message).split(". ")[0] for w in caught)
    for w in caught:
        text = str(w.message)
        found = _DETECTED.search(text)
        if found:
            out.node = found.group(1)
            code = [
                line.strip()
                for line in text.split("\n")
                if line.startswith("    ") and not line.strip().startswith("File ")
            ]
            out.forward_line = code[-1] if code else ""
    return out


def step_ratio(step: Callable[[], Any], repeats: int = 3, number: int = 10) -> float:
    """Best time of ``number`` calls of ``step`` with anomaly mode on, over the best time without it."""

    def best(anomaly):
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            with torch.autograd.set_detect_anomaly(anomaly):
                for _ in range(number):
                    step()
            times.append(time.perf_counter() - started)
        return min(times)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        step()  # warm up
        plain = best(False)
        slow = best(True)
    return slow / plain


def masked_root():
    x = torch.tensor([4.0, -1.0, 9.0], requires_grad=True)
    mask = torch.tensor([1.0, 0.0, 1.0])
    y = x.sqrt()
    loss = (y * mask).sum()
    return x, loss


COSTS = ("under 1.5x", "1.5x to 3x", "3x or more")


def cost_band(ratio: float) -> str:
    return COSTS[0] if ratio < 1.5 else COSTS[1] if ratio < 3 else COSTS[2]


# =================================================================================================
# Where a non-finite gradient starts
# =================================================================================================


def finite(t) -> bool:
    """True for None (no gradient is not a bad gradient) and for a tensor with only finite entries."""
    return t is None or bool(torch.isfinite(t).all())


@dataclass
class HookEvent:
    module: str
    grad_output_finite: bool
    grad_input_finite: bool

    def __repr__(self):
        ok = lambda b: "finite" if b else "NON-FINITE"
        return (
            f"{self.module or '(the whole model)'}: gradient in {ok(self.grad_output_finite)}, "
            f"out {ok(self.grad_input_finite)}"
        )


class BackwardWatch:
    """``register_full_backward_hook`` on every module of ``model``; ``events`` in the order they fired.

    Backward visits modules from the loss back to the input, so the first module whose hook sees a
    finite gradient coming in (``grad_output``) and a non-finite one going out (``grad_input``) is where
    the non-finite gradient started. Use as a context manager; the hooks are removed on exit.
    """

    def __init__(self, model: nn.Module):
        self.model = model
        self.events: list[HookEvent] = []
        self._handles = []

    def __enter__(self):
        for name, module in self.model.named_modules():
            self._handles.append(module.register_full_backward_hook(self._hook(name)))
        # torch warns that a hook on a module whose inputs need no gradient fires on its outputs' gradient
        # (grad_input is then all None): expected here, and its file path would vary from run to run
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles.clear()
        self._warnings.__exit__(*exc)
        return False

    def _hook(self, name):
        def hook(module, grad_input, grad_output):
            self.events.append(HookEvent(name, all(finite(g) for g in grad_output), all(finite(g) for g in grad_input)))

        return hook

    def origin(self) -> str | None:
        for e in self.events:
            if e.grad_output_finite and not e.grad_input_finite:
                return e.module
        return None

    def clear(self):
        self.events.clear()


class GradWatch:
    """``tensor.register_hook`` on named intermediates: each gradient as it passes, finite or not."""

    def __init__(self):
        self.seen: list[tuple[str, bool]] = []

    def watch(self, name: str, t: torch.Tensor) -> torch.Tensor:
        t.register_hook(lambda g: self.seen.append((name, finite(g))))
        return t

    def first_nonfinite(self) -> str | None:
        return next((n for n, ok in self.seen if not ok), None)


def where_trap(fixed: bool = False):
    x = torch.tensor([-4.0, 0.0, 4.0], requires_grad=True)
    if fixed:
        safe = torch.where(x > 0, x, 1.0)
        y = torch.where(x > 0, safe.sqrt(), 0.0)
    else:
        y = torch.where(x > 0, x.sqrt(), 0.0)
    y.sum().backward()
    return x


class _RootWhere(nn.Module):
    def forward(self, h):
        return torch.where(h > 0, h.sqrt(), 0.0)


def hook_model():
    torch.manual_seed(3)
    model = nn.Sequential(
        OrderedDict([("enc", nn.Linear(3, 4)), ("act", nn.Tanh()), ("gate", _RootWhere()), ("head", nn.Linear(4, 1))])
    )
    return model, torch.randn(6, 3)


# =================================================================================================
# Memory that grows
# =================================================================================================


def _tensors_in(obj, seen=None) -> list[torch.Tensor]:
    """Tensors held by ``obj``: itself, or inside lists, tuples, dicts, or a module's plain attributes."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        return [obj]
    out = []
    if isinstance(obj, (list, tuple, set)):
        for item in obj:
            out += _tensors_in(item, seen)
    elif isinstance(obj, dict):
        for item in obj.values():
            out += _tensors_in(item, seen)
    elif isinstance(obj, nn.Module):
        for module in obj.modules():
            for key, value in vars(module).items():
                if not key.startswith("_"):
                    out += _tensors_in(value, seen)
    return out


def held_bytes(*objs) -> int:
    """Bytes of the distinct storages that the graphs under the tensors in ``objs`` keep for backward
    (saved tensors not yet freed; unit 05's bill, read from the graph instead of the forward pass). A Python
    number an op keeps as a 0-dim tensor (``0.9 * ema`` keeps the 0.9) is left out, as it is from a pack hook."""
    storages = {}
    for t in (t for obj in objs for t in _tensors_in(obj)):
        if t.grad_fn is None:
            continue
        for s in probes.saved_tensors(t):
            if s.state == "ok" and not s.wrapped:
                storages[s.storage] = s.bytes
    return sum(storages.values())


def graphs_held(obj) -> list[str]:
    """Names of the plain attributes of ``obj``'s modules (``name.attr``) that hold a tensor with a graph,
    directly or in a list, tuple or dict: a graph that outlives the step that made it."""
    out = []
    modules = obj.named_modules() if isinstance(obj, nn.Module) else [("", obj)]
    for name, module in modules:
        held = {k: v for k, v in vars(module).items() if not k.startswith("_")}
        held.update(getattr(module, "_buffers", {}))  # a buffer assigned a tensor with a graph keeps it too
        for key, value in held.items():
            if any(t.grad_fn is not None for t in _tensors_in(value)):
                out.append(f"{name}.{key}" if name else key)
    return out


def graph_sizes_held(obj) -> dict[str, int]:
    """For each holder :func:`graphs_held` names, the number of distinct autograd nodes its tensors reach:
    a holder whose count rises step after step keeps a growing graph, one whose count stays put only
    this step's."""
    modules = dict(obj.named_modules()) if isinstance(obj, nn.Module) else {"": obj}
    sizes = {}
    for holder in graphs_held(obj):
        name, _, key = holder.rpartition(".")
        module = modules[name]
        value = getattr(module, "_buffers", {}).get(key, vars(module).get(key))
        seen: set = set()
        for t in _tensors_in(value):
            if t.grad_fn is not None:
                seen.update(probes.nodes(t))
        sizes[holder] = len(seen)
    return sizes


class ModuleBill:
    """The saved-tensor bill per module: every save made while a module's forward runs is charged to
    the innermost module running, by distinct storage, to the first module that saved it. Use as a context manager around forward passes;
    ``bytes`` maps module name to bytes saved, ``owner(storage)`` the module that saved a storage last."""

    def __init__(self, model: nn.Module):
        self.model = model
        self.bytes: dict[str, int] = {}
        self._owner: dict[int, tuple] = {}  # storage address -> (module that saved it first, bytes, tensor)
        self._stack: list[str] = []
        self._stack_ctx = contextlib.ExitStack()

    def __enter__(self):
        for name, module in self.model.named_modules():
            if not name:
                continue
            self._stack_ctx.callback(
                module.register_forward_pre_hook(lambda m, args, name=name: self._stack.append(name)).remove
            )
            self._stack_ctx.callback(
                module.register_forward_hook(lambda m, args, out: self._stack.pop() and None).remove
            )
        self._stack_ctx.enter_context(torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t))
        return self

    def __exit__(self, *exc):
        self._stack_ctx.close()
        return False

    def _pack(self, t):
        storage = t.untyped_storage()
        key = storage.data_ptr()
        before = self._owner.get(key)
        if before is None or before[2]() is None:  # a storage not seen yet (or its address reused)
            who = self._stack[-1] if self._stack else "(outside any module)"
            self._owner[key] = (who, storage.nbytes(), weakref.ref(t))
            self.bytes[who] = self.bytes.get(who, 0) + storage.nbytes()
        return t

    def held(self, *objs) -> dict[str, int]:
        """Bytes the graphs under ``objs`` still keep, per module that saved them."""
        out: dict[str, int] = {}
        storages = {}
        for t in (t for obj in objs for t in _tensors_in(obj)):
            if t.grad_fn is None:
                continue
            for s in probes.saved_tensors(t):
                if s.state == "ok" and not s.wrapped:
                    storages[s.storage] = s.bytes
        for key, nbytes in storages.items():
            who = self._owner.get(key, ("(not seen)",))[0]
            out[who] = out.get(who, 0) + nbytes
        return dict(sorted(out.items()))


@contextlib.contextmanager
def _quiet_fds():
    """Send the process's own stdout and stderr (file descriptors 1 and 2) to /dev/null for a block:
    the profiler's C++ side writes a timestamped line there that would otherwise reach the notebook."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved + [null]:
            os.close(fd)


@contextlib.contextmanager
def quiet_profile():
    """``torch.profiler.profile(activities=[ProfilerActivity.CPU], profile_memory=True)`` with the
    profiler's native log lines (written straight to file descriptors 1 and 2, with timestamps) kept out
    of the notebook for the whole window. Yields the profiler. Python's own print still shows in a notebook."""
    from torch.profiler import ProfilerActivity, profile

    with _quiet_fds(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        yield prof


def net_allocated(prof) -> int:
    """Bytes allocated and not freed inside the profiled window, summed over every operator's
    self CPU memory (allocations count positive, frees negative)."""
    return sum(e.self_cpu_memory_usage for e in prof.key_averages())


def gc_tensor_cycles(make: Callable[[], Any]) -> tuple[list[tuple], bool]:
    """Call ``make()`` (it builds objects and drops them), then run the collector with
    ``torch.utils.viz._cycles.observe_garbage`` watching. Returns the shapes of the tensors the
    collector found in reference cycles, and whether the object ``make`` returned a weak
    reference to is still alive afterwards. A tensor still alive has its ``.grad`` set to None and its
    attributes removed, which breaks a gradient's cycle, so the call leaks nothing."""
    from torch.utils.viz._cycles import observe_garbage

    gc.collect()
    found: list[tuple] = []

    def observer(garbage):
        found.extend(tuple(o.shape) for o in garbage if isinstance(o, torch.Tensor))

    ref = make()
    remove = observe_garbage(observer)
    try:
        gc.collect()
    finally:
        remove()
    gc.collect()
    alive = ref() is not None
    if alive:
        ref().grad = None
        getattr(ref(), "__dict__", {}).clear()
        gc.collect()
    return found, alive


def leak_model():
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(32, 16), torch.randn(32), torch.randn(32, 16)) for _ in range(4)]
    return model, opt, data


def leak_loop(kind: str, steps: int = 4, bill=None):
    """Train ``steps`` steps; each also computes a validation loss on ``xv`` and keeps it as ``kind``
    says. Returns what the loop keeps after each step."""
    model, opt, data = leak_model()
    kept = [] if kind != "running total" else None
    after = []
    ctx = ModuleBill(model) if bill is None else bill(model)
    with ctx:
        for x, y, xv in data[:steps]:
            loss = ((model(x).squeeze(-1) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            val = model(xv).pow(2).mean()  # no torch.no_grad() around it
            if kind == "list of val losses":
                kept.append(val)
            elif kind == "running total":
                kept = val if kept is None else kept + val
            else:
                kept.append(val.item())
            after.append(
                (
                    held_bytes(kept),
                    probes.depth(kept)
                    if isinstance(kept, torch.Tensor)
                    else max((probes.depth(v) for v in kept if isinstance(v, torch.Tensor)), default=0),
                )
            )
    return after, kept, ctx, model


CYCLES = ("tensor that names itself", "gradient set by hand", "gradient kept as an attribute")


def make_cycle(kind: str):
    """Build a reference cycle that holds a 1000-float tensor, drop every name, return a weak reference."""
    if kind == CYCLES[0]:
        t = torch.randn(1000)
        t.me = t
        return weakref.ref(t)
    w = torch.randn(1000, requires_grad=True)
    if kind == CYCLES[1]:
        w.grad = w * 2
        return weakref.ref(w)
    (w.kept,) = torch.autograd.grad((w.sin() ** 2).sum(), w, create_graph=True)
    return weakref.ref(w)


# =================================================================================================
# A loop someone else wrote (the checklist's subject; no course helper wraps it)
# =================================================================================================


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 6)
        self.gate = nn.Linear(4, 6)

    def forward(self, x):
        return torch.tanh(self.proj(x)) * torch.sigmoid(self.gate(x)).detach()


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(6, 1)
        self.history = []

    def forward(self, x):
        h = self.encoder(x)
        self.history.append(h.mean())
        return self.head(h).squeeze(-1)


def their_setup(seed: int = 12):
    """The model, optimizer and data of the checklist section, as their author wrote them."""
    torch.manual_seed(seed)
    model = Regressor()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    model.head = nn.Linear(6, 1)  # "a fresh head for the new task", after the optimizer was made
    batches = [(torch.randn(8, 4), torch.randn(8)) for _ in range(4)]
    return model, opt, batches


def their_step(model, opt, x, y):
    """Their training step."""
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def their_param_names():
    """Their model's parameter names: the seed, the optimizer and the fresh head change none of them (building no
    optimizer here keeps torch's compiler, which a first optimizer imports, out of loading the questions)."""
    return tuple(n for n, _ in Regressor().named_parameters())


# =================================================================================================
# The fault kinds, and the grader's own diagnosis (the exercise's answer)
# =================================================================================================

NONFINITE = "non-finite gradient"
LEAK = "growing memory"
FROZEN = "frozen parameter"
STALE = "stale graph"
NO_FAULT = "no fault"
RAISED = "backward raised"  # a backward error the doctor names as none of the four faults (an in-place write...)
FAULTS = (NONFINITE, LEAK, FROZEN, STALE)
VERDICTS = FAULTS + (NO_FAULT,)


@dataclass
class Finding:
    kind: str
    where: frozenset = frozenset()  # module names, any of which is accepted
    evidence: str = ""

    def __repr__(self):
        at = f" at {', '.join(sorted(self.where))}" if self.where else ""
        return f"<{self.kind}{at}: {self.evidence}>"


def _owner(model: nn.Module, pname: str) -> str:
    return pname.rsplit(".", 1)[0] if "." in pname else ""


def _graph_holders(model: nn.Module) -> frozenset:
    return frozenset(h.rsplit(".", 1)[0] for h in graphs_held(model))


def _reaches(out, args) -> bool:
    """Whether the graph of ``out`` reaches any of ``args`` (a tensor input's node, or a leaf input itself)."""
    inputs = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    nodes = {a.grad_fn for a in inputs if a.grad_fn is not None}
    leaves = {id(a) for a in inputs if a.grad_fn is None}
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        if not isinstance(o, torch.Tensor) or o.grad_fn is None:
            continue
        for fn in probes.nodes(o):
            if fn in nodes or id(getattr(fn, "variable", None)) in leaves:
                return True
    return False


def _cuts(model: nn.Module, loss_fn, x, y) -> set[str]:
    """Modules (and the modules around them) where the path stops: the input required grad, yet the output
    does not, or the output's graph does not reach the input (so backward sends it no gradient). Runs one
    more forward, with forward hooks only (a module backward hook would make an in-place op after a
    module raise)."""
    found, handles = set(), []
    for name, module in model.named_modules():
        if not name:
            continue

        def forward_hook(m, args, out, name=name):
            if not any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
                return
            if isinstance(out, torch.Tensor) and not out.requires_grad or not _reaches(out, args):
                found.add(name)

        handles.append(module.register_forward_hook(forward_hook))
    try:
        loss_fn(model(x), y)
    finally:
        for h in handles:
            h.remove()
    return found | {n.rsplit(".", 1)[0] for n in found if "." in n}


def _made_by(model: nn.Module) -> tuple[dict, list]:
    """Forward hooks (never backward ones) that map each node made inside a named module to the innermost
    module's name: the nodes reachable from its output and not through its inputs' nodes."""
    owner: dict = {}
    handles = []
    for name, module in model.named_modules():
        if not name:
            continue

        def hook(m, args, out, name=name):
            stop = {a.grad_fn for a in args if isinstance(a, torch.Tensor) and a.grad_fn is not None}
            outs = out if isinstance(out, (tuple, list)) else (out,)
            stack = [o.grad_fn for o in outs if isinstance(o, torch.Tensor) and o.grad_fn is not None]
            seen: set = set()
            while stack and len(seen) < 10_000:
                fn = stack.pop()
                if fn is None or fn in seen or fn in stop:
                    continue
                seen.add(fn)
                owner.setdefault(fn, name)  # children return first: the innermost module keeps the node
                stack.extend(n for n, _ in fn.next_functions)

        handles.append(module.register_forward_hook(hook))
    return owner, handles


def _growing(sizes: list[dict[str, int]]) -> frozenset:
    """Holders whose graph (its node count) rose from step to step, never shrinking: growing memory, not a
    graph kept only until the next step replaces it."""
    if len(sizes) < 2:
        return frozenset()
    out = set()
    for holder, last in sizes[-1].items():
        seq = [s[holder] for s in sizes if holder in s]
        if len(seq) >= 2 and last > seq[0] and all(b >= a for a, b in zip(seq, seq[1:])):
            out.add(holder.rsplit(".", 1)[0])
    return frozenset(out)


_STALE_MECHANISMS = frozenset({"freed-graph", "carried-state"})
_CUT_MECHANISMS = frozenset({"no-grad-root", "inert-loss-term"})


def find_fault(model: nn.Module, loss_fn, batches, opt: torch.optim.Optimizer | None = None) -> Finding:
    """The checklist, run step by step with the course's doctor watching (:mod:`grader.probes.doctor`), on
    ``opt`` (the learner's optimizer) or, without one, a fresh SGD over the model's parameters:

    * a backward that raises, named by the doctor's mechanism: a freed or carried graph is a stale graph, a
      loss cut from the model a frozen path; any other error is :data:`RAISED` (no fault of the four);
    * the module whose node first turned finite gradients non-finite (the doctor's node below a masking op,
      mapped to its module by forward hooks), even where a ReLU below zeroes the non-finite entries again;
    * a parameter that requires grad and that step 1's backward does not reach (one frozen on purpose,
      ``requires_grad=False``, is not a fault), or one it reaches that ``opt`` does not hold;
    * a module attribute or buffer whose graph grows from step to step (:func:`graph_sizes_held`).

    It adds no module backward hooks, so an in-place op after a module (``ReLU(inplace=True)``) runs as it
    would without it."""
    from grader.probes.doctor import doctor

    opt = opt if opt is not None else torch.optim.SGD(model.parameters(), lr=0.1)
    held = {id(p) for group in opt.param_groups for p in group["params"]}
    names = dict(model.named_parameters())
    depths: list[int] = []
    sizes: list[dict[str, int]] = []
    owner, handles = _made_by(model)
    watching = doctor(report=False)
    with contextlib.ExitStack() as stack:
        stack.callback(lambda: [h.remove() for h in handles])
        try:
            stack.enter_context(watching)
        except RuntimeError:  # a doctor the learner started is already watching: the checks run without ours
            watching = None
        for step, (x, y) in enumerate(batches, start=1):
            opt.zero_grad()
            owner.clear()  # this step's nodes only (the dict would keep every earlier step's graph alive)
            if watching is not None:
                watching.nan_origins.clear()
            loss = loss_fn(model(x), y)
            depths.append(probes.depth(loss))
            try:
                loss.backward()
            except RuntimeError as exc:
                said = {f.mechanism.value for f in watching.findings} if watching is not None else set()
                first = f"step {step}'s backward raised: {exc}".split("\n")[0]
                if said & _STALE_MECHANISMS:
                    return Finding(STALE, _graph_holders(model), first)
                if said & _CUT_MECHANISMS:
                    where = {_owner(model, n) for n in names} | _cuts(model, loss_fn, x, y)
                    return Finding(FROZEN, frozenset(where), first)
                return Finding(RAISED, frozenset(), f"{first} (the doctor: {', '.join(sorted(said)) or 'no finding'})")
            origins = [owner[fn] for fn in watching.nan_origins.values() if fn in owner] if watching else []
            bad = [n for n, p in names.items() if not finite(p.grad)]
            if origins or bad:
                where = {origins[0]} if origins else {_owner(model, n) for n in bad}
                return Finding(NONFINITE, frozenset(where), "a module's backward returned a non-finite gradient")
            if step == 1:
                frozen = [n for n, p in names.items() if p.requires_grad and p.grad is None]
                if frozen:
                    where = {_owner(model, n) for n in frozen} | _cuts(model, loss_fn, x, y)
                    return Finding(FROZEN, frozenset(where), f"no gradient reached {', '.join(frozen)}")
                missed = [n for n, p in names.items() if p.grad is not None and id(p) not in held]
                if missed:
                    where = frozenset(_owner(model, n) for n in missed)
                    return Finding(FROZEN, where, f"the optimizer does not hold {', '.join(missed)}")
            opt.step()
            sizes.append(graph_sizes_held(model))
    holders = _growing(sizes)
    if holders:
        return Finding(LEAK, holders, f"depth per step {depths}; graphs kept by {', '.join(sorted(holders))}")
    return Finding(NO_FAULT, frozenset(), f"every check came back clean; depth per step {depths}")


def readings(model: nn.Module, loss_fn, batches) -> str:
    """What the checklist reads on each step, as text (shown beside a failing case)."""
    rows = []
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    names = dict(model.named_parameters())
    for step, (x, y) in enumerate(batches, start=1):
        opt.zero_grad()
        with BackwardWatch(model) as watch:
            loss = loss_fn(model(x), y)
            row = f"step {step}: loss depth {probes.depth(loss)}"
            try:
                loss.backward()
            except RuntimeError as exc:
                rows.append(row + f"; backward raised: {str(exc).split('.')[0]}")
                break
        origin = watch.origin()
        row += f"; first non-finite gradient made by: {origin if origin is not None else 'none'}"
        row += (
            "; no .grad after backward: "
            + (", ".join(n for n, p in names.items() if p.requires_grad and p.grad is None) or "none")
            + (
                f" (frozen on purpose: {', '.join(n for n, p in names.items() if not p.requires_grad)})"
                if any(not p.requires_grad for p in names.values())
                else ""
            )
        )
        opt.step()
        row += f"; module attributes holding a graph: {', '.join(graphs_held(model)) or 'none'}"
        rows.append(row)
    return "\n".join(rows)
