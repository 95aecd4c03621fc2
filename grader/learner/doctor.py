"""The doctor: the course's diagnosis run on the learner's own training code.

``python -m grader doctor train.py [args...]`` runs a script unchanged with the doctor around it; in a
notebook, ``with doctor(): ...`` around a training loop does the same. The doctor observes and never
re-trains: it wraps torch's entry points (``torch.autograd.backward``, which ``Tensor.backward`` calls,
and ``torch.autograd.grad``), adds a global optimizer step pre-hook and global module forward hooks,
reads the graph at each backward with the course's probes, watches reads of ``.grad``, and sees
torch's warnings as torch gives them (``warnings.warn`` and ``showwarning`` wrapped, every warning
passed on unchanged). Everything is removed on exit, exceptions included; nothing it does changes a
value the program computes, and a failure of its own is counted and skipped, never raised.

Each finding is typed: a :class:`Mechanism` from a fixed vocabulary (each names the unit that teaches
it), the line in the learner's file (the innermost frame outside torch, the grader and the standard
library), the measured evidence in words with numbers, and the smallest fix. On a correct program the
doctor prints one summary line. Intent it cannot guess is declared: ``doctor(frozen=[...],
should_move=[...])`` names parameters (or module prefixes) and the doctor proves by measurement that
the frozen ones did not move and the others did.
"""

from __future__ import annotations

import enum
import functools
import os
import re
import sys
import sysconfig
import threading
import warnings
import weakref
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import torch
import torch.optim.optimizer as _optim_module
from torch import nn

from grader import probes


class Mechanism(str, enum.Enum):
    """What went wrong, named as the course teaches it; ``unit`` is where."""

    OPTIMIZER_MISMATCH = "optimizer-mismatch"
    UNREGISTERED_MODULE = "unregistered-module"
    CARRIED_STATE = "carried-state"
    INPLACE_ON_SAVED = "inplace-on-saved"
    NAN_MASKED_BRANCH = "nan-masked-branch"
    NO_GRAD_ROOT = "no-grad-root"
    INERT_LOSS_TERM = "inert-loss-term"
    FREED_GRAPH = "freed-graph"
    NONLEAF_GRAD = "nonleaf-grad"
    HOOKS_CHECKPOINT = "hooks-checkpoint"

    @property
    def unit(self) -> str:
        return _UNITS[self]


_UNITS = {
    Mechanism.OPTIMIZER_MISMATCH: "12",
    Mechanism.UNREGISTERED_MODULE: "12",
    Mechanism.CARRIED_STATE: "08",
    Mechanism.INPLACE_ON_SAVED: "07",
    Mechanism.NAN_MASKED_BRANCH: "03/12",
    Mechanism.NO_GRAD_ROOT: "04",
    Mechanism.INERT_LOSS_TERM: "04",
    Mechanism.FREED_GRAPH: "06",
    Mechanism.NONLEAF_GRAD: "03",
    Mechanism.HOOKS_CHECKPOINT: "09",
}

# torch's own warnings about these mechanisms: (a phrase of torch's message, the mechanism, what it means, fix).
# The doctor sees them as torch gives them (Python's warnings.warn, wrapped while the doctor is active), before
# any filter of the program's or the grader's: a silenced warning is still reported.
_TORCH_WARNINGS = (
    (
        "non-full backward hook",
        Mechanism.HOOKS_CHECKPOINT,
        "a module backward hook registered with register_backward_hook sees only the last autograd node "
        "of the module's forward, so its grad_input is not the module's input gradient",
        "register_full_backward_hook (and no in-place op on the module's output or input)",
    ),
    (
        "None of the inputs have requires_grad=True",
        Mechanism.HOOKS_CHECKPOINT,
        "a reentrant checkpoint got inputs none of which requires grad: its output has no graph, so the "
        "parameters inside the checkpointed block get no gradient",
        "checkpoint(..., use_reentrant=False), or give the block an input that requires grad",
    ),
)


@dataclass(frozen=True)
class Finding:
    mechanism: Mechanism
    line: str  # "file:lineno" in the learner's file, or "" when no frame of theirs was on the stack
    evidence: str
    fix: str

    def __str__(self):
        where = f" at {self.line}" if self.line else ""
        return f"[{self.mechanism.value}, unit {self.mechanism.unit}]{where}: {self.evidence}\n    fix: {self.fix}"


# --- where in the learner's file ------------------------------------------------------------------

_NOT_THEIRS = tuple(
    os.path.realpath(p) + os.sep
    for p in {
        os.path.dirname(torch.__file__),
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # the grader package
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
    }
)


@functools.lru_cache(maxsize=4096)
def _theirs(filename: str, script: str | None) -> bool:
    """Whether a frame's file is the learner's: the script under the command, else any file outside
    torch, the grader and the standard library (a notebook cell's file included). Cached: realpath is slow."""
    if script is not None:
        return os.path.realpath(filename) == script
    if filename.startswith("<frozen"):
        return False
    return not os.path.realpath(filename).startswith(_NOT_THEIRS)


# --- the doctor ----------------------------------------------------------------------------------

_ACTIVE = threading.Lock()  # one doctor at a time: torch's entry points are global


class _Token:
    """Put in a node's metadata; a weak reference to it says whether the node is still alive."""


def _stamp(fn) -> dict:
    return fn.metadata


class Doctor:
    """The observing harness; use :func:`doctor` to make one."""

    def __init__(
        self,
        frozen=(),
        should_move=(),
        script: str | None = None,
        report: bool = True,
        stream=None,
    ):
        self.frozen = tuple(frozen)
        self.should_move = tuple(should_move)
        self.script = os.path.realpath(script) if script else None
        self.report = report
        self.stream = stream
        self.findings: list[Finding] = []
        self._keys: set = set()
        self.backwards = 0
        self.steps = 0
        self.module_calls = 0
        self.internal_errors = 0  # the doctor's own failures (each one skipped an observation, nothing else)
        self._first_error = ""
        self._undo: list = []

    # -- finding bookkeeping --

    def _line(self) -> str:
        frame = sys._getframe(1)
        while frame is not None:
            if _theirs(frame.f_code.co_filename, self.script):
                return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
            frame = frame.f_back
        return ""

    def _where(self) -> tuple[str, int, dict | None]:
        """(filename, lineno, its module's warning registry) of the innermost frame outside the doctor, for
        a warning given again as from there (shown once per line under the default filter, as before)."""
        frame = sys._getframe(1)
        here = os.path.abspath(__file__)
        while frame is not None and os.path.abspath(frame.f_code.co_filename) == here:
            frame = frame.f_back
        if frame is None:
            return "<unknown>", 0, None
        return frame.f_code.co_filename, frame.f_lineno, frame.f_globals.setdefault("__warningregistry__", {})

    def _guarded(self, fn, *args):
        """Run one of the doctor's own observations; a failure in it is counted, never the program's."""
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - the learner's program must run as it would without us
            self.internal_errors += 1
            self._first_error = self._first_error or f"{type(exc).__name__}: {exc}"
            return None

    def _add(self, key, mechanism: Mechanism, line: str, evidence: str, fix: str):
        if key in self._keys:
            return
        self._keys.add(key)
        self.findings.append(Finding(mechanism, line, evidence, fix))

    # -- entering and leaving --

    def __enter__(self):
        if not _ACTIVE.acquire(blocking=False):
            raise RuntimeError("a doctor is already active in this process")
        try:
            self._install()
        except BaseException:
            self._uninstall()
            _ACTIVE.release()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self._uninstall()
            self._guarded(self._conclude, exc)
        finally:
            _ACTIVE.release()
        if self.report:
            print(self.text(), file=self.stream or sys.stderr)
        return False

    def _install(self):
        # per-run state
        self._epoch = 0  # optimizer steps so far
        # forward rounds: a new one starts at the first top-level module call after a backward; a graph that
        # reaches nodes a backward of an earlier round already went through carries state across steps
        self._round = 0
        self._after_backward = False
        self._step_line = ""  # where the first optimizer step was called
        self._sizes: dict[str, list[int]] = defaultdict(list)  # backward site -> graph size per call
        self._carried: dict[str, set] = defaultdict(set)  # backward site -> earlier epochs/sites reached
        self._optimizers = 0  # optimizer objects seen stepping
        self._optimizer_ids: set[int] = set()
        # parameters are kept (strongly: they live as long as the model anyway) so that the checks at the end
        # still see them after the program's own references are gone; other leaves weakly
        self._held: dict[int, torch.Tensor] = {}  # every parameter an optimizer held at a step
        self._reached: dict[int, Any] = {}  # every leaf a backward reached (a Parameter, or a weakref)
        self._name_of: dict[int, str] = {}  # id(parameter) -> its name in a root module
        self._current: dict[str, torch.Tensor] = {}  # declared name -> the parameter under it now
        self._roots = weakref.WeakSet()  # every module called with no module forward active
        self._stack: list = []
        self._pairs_checked: set[tuple[int, int]] = set()  # (id(parent), id(child)) already looked at
        self._unregistered: dict[int, tuple] = {}  # id(module) -> (class, parent class, line)
        self._names_seen: dict[str, int] = {}  # "name" -> id of the parameter first seen under it
        self._root_index: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # top-level module -> n
        self._snap: dict[str, torch.Tensor] = {}
        self._nograd_calls: list[tuple[str, str]] = []  # (module class, line) run with grad off
        self._old_roots: list = []  # weakrefs to the roots of earlier epochs' backward calls

        real_backward, real_grad = torch.autograd.backward, torch.autograd.grad

        def backward(tensors, *args, **kwargs):
            roots = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
            return self._around(roots, lambda: real_backward(tensors, *args, **kwargs), kwargs)

        def grad(outputs, *args, **kwargs):
            roots = [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)
            return self._around(roots, lambda: real_grad(outputs, *args, **kwargs), kwargs, from_grad=True)

        backward.__wrapped__, grad.__wrapped__ = real_backward, real_grad
        torch.autograd.backward, torch.autograd.grad = backward, grad
        self._undo.append(lambda: setattr(torch.autograd, "backward", real_backward))
        self._undo.append(lambda: setattr(torch.autograd, "grad", real_grad))

        handle = _optim_module.register_optimizer_step_pre_hook(self._on_step)
        self._undo.append(handle.remove)
        modules = torch.nn.modules.module
        handle = modules.register_module_forward_pre_hook(self._on_forward_pre)
        self._undo.append(handle.remove)
        handle = modules.register_module_forward_hook(self._on_forward, always_call=True)
        self._undo.append(handle.remove)

        # .grad of a non-leaf: read directly (torch's warning may be silenced by the program)
        base = torch._C.TensorBase.__dict__["grad"]
        doctor = self

        def read(t):
            if t.is_leaf or t.retains_grad or not t.requires_grad:
                return base.__get__(t)
            # torch warns here, from inside this frame; take its warning and give it again from the
            # learner's line, where it would have pointed without the doctor
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                value = base.__get__(t)
            if value is None:
                doctor._guarded(
                    doctor._add,
                    ("nonleaf", doctor._line()),
                    Mechanism.NONLEAF_GRAD,
                    doctor._line(),
                    f".grad was read on a non-leaf tensor (made by {probes.node_name(t.grad_fn)}); backward "
                    "fills .grad only on leaves, so it reads None",
                    "read .grad on the leaf (the parameter or input you created), or call .retain_grad() on "
                    "this tensor before backward",
                )
            for w in caught:
                filename, lineno, registry = doctor._where()
                warnings.warn_explicit(w.message, w.category, filename, lineno, registry=registry)
            return value

        torch.Tensor.grad = property(read, base.__set__, base.__delete__, base.__doc__)  # type: ignore[misc]
        self._undo.append(lambda: delattr(torch.Tensor, "grad"))

        # torch's own warnings, recorded (and shown as before)
        shown = warnings.showwarning

        def showwarning(message, category, filename, lineno, file=None, line=None):
            self._guarded(self._on_warning, str(message))
            return shown(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning
        self._undo.append(lambda: setattr(warnings, "showwarning", shown))

        real_warn = warnings.warn

        def warn(message, category=None, stacklevel=1, source=None, **kwargs):
            self._guarded(self._on_torch_warning, str(message))
            return real_warn(message, category, stacklevel + 1, source, **kwargs)  # one frame more: ours

        warn.__wrapped__ = real_warn  # type: ignore[attr-defined]
        warnings.warn = warn
        self._undo.append(lambda: setattr(warnings, "warn", real_warn))

    def _uninstall(self):
        while self._undo:
            undo = self._undo.pop()
            try:
                undo()
            except Exception:  # noqa: BLE001 - every other undo still runs
                pass

    # -- module forward hooks --

    def _on_forward_pre(self, module, args):
        self.module_calls += 1
        self._guarded(self._observe_call, module)
        self._stack.append(module)

    def _observe_call(self, module):
        if self._stack:
            parent = self._stack[-1]
            pair = (id(parent), id(module))
            if pair not in self._pairs_checked:
                self._pairs_checked.add(pair)
                registered = any(m is module for m in parent.modules())
                if not registered and any(p.requires_grad for p in module.parameters()):
                    self._unregistered.setdefault(
                        id(module), (type(module).__name__, type(parent).__name__, self._line())
                    )
        else:
            self._roots.add(module)
            self._snapshot(module)
            if self._after_backward:
                self._round += 1
                self._after_backward = False
        if not torch.is_grad_enabled() or torch.is_inference_mode_enabled():
            if any(p.requires_grad for p in module.parameters()):
                self._nograd_calls.append((type(module).__name__, self._line()))
                del self._nograd_calls[:-50]

    def _on_forward(self, module, args, output):
        if self._stack and self._stack[-1] is module:
            self._stack.pop()
        return None

    def _snapshot(self, module):
        if module not in self._root_index:
            self._root_index[module] = len(self._root_index)
        index = self._root_index[module]
        prefix = "" if index == 0 else f"{type(module).__name__}[{index}]."
        for name, p in module.named_parameters():
            name = prefix + name
            self._names_seen.setdefault(name, id(p))
            self._name_of[id(p)] = name
            if self._declared(name):
                self._current[name] = p
                if name not in self._snap:
                    with torch.no_grad():
                        self._snap[name] = p.detach().clone()

    def _declared(self, name: str) -> str | None:
        for kind, names in (("frozen", self.frozen), ("should_move", self.should_move)):
            if any(name == n or name.startswith(n + ".") for n in names):
                return kind
        return None

    # -- optimizer steps --

    def _on_step(self, optimizer, args, kwargs):
        self.steps += 1
        self._epoch += 1
        self._guarded(self._observe_step, optimizer)
        return None

    def _observe_step(self, optimizer):
        if id(optimizer) not in self._optimizer_ids:
            self._optimizer_ids.add(id(optimizer))
            self._optimizers += 1
        for group in optimizer.param_groups:
            for p in group["params"]:
                self._held[id(p)] = p
        if not self._step_line:
            self._step_line = self._line()
        self._check_old_roots()

    def _check_old_roots(self):
        """Roots of earlier steps' backward calls still alive: something keeps every step's graph."""
        alive = [r for r in self._old_roots if any(t() is not None for t in r[0])]
        self._old_roots = alive[-200:]
        epochs = {e for _, e, _ in alive if e < self._epoch - 1}
        if len(epochs) >= 3:
            site = alive[0][2]
            self._add(
                ("kept-roots", site),
                Mechanism.CARRIED_STATE,
                site,
                f"the loss graphs of {len(epochs)} earlier steps are still alive after their backward (more "
                "every step): something accumulates the loss tensor itself",
                "keep a number, not the tensor: total += loss.item() (or loss.detach())",
            )

    # -- backward --

    def _around(self, roots, run, kwargs, from_grad=False):
        self.backwards += 1
        seen = self._guarded(self._before_backward, roots, from_grad)
        site, graph_roots, walked = seen if seen is not None else ("", [], [])
        try:
            result = run()
        except RuntimeError as exc:
            self._guarded(self._on_backward_error, exc, graph_roots, walked, site)
            raise
        finally:
            self._after_backward = True
        self._guarded(self._after_backward_ran, graph_roots, walked, site, from_grad)
        return result

    def _before_backward(self, roots, from_grad):
        site = self._line()
        graph_roots = [r for r in roots if isinstance(r, torch.Tensor) and r.grad_fn is not None]
        for r in roots:
            if isinstance(r, torch.Tensor) and r.grad_fn is None and not r.requires_grad:
                self._no_grad_root(r, site)
        walked = [fn for r in graph_roots for fn in probes.nodes(r)]
        self._stamp_and_check(walked, site)
        for r in graph_roots:
            self._inert_terms(r, site)
        for r in roots:
            if isinstance(r, torch.Tensor) and r.grad_fn is None and r.requires_grad and not from_grad:
                self._leaf_root(r, site)
        return site, graph_roots, walked

    def _after_backward_ran(self, graph_roots, walked, site, from_grad):
        for r in graph_roots:  # a token in a node's metadata lives exactly as long as the node
            tokens = []
            for fn in [r.grad_fn, *(n for n, _ in r.grad_fn.next_functions if n is not None)]:
                token = _Token()
                _stamp(fn)["doctor_alive"] = token
                tokens.append(weakref.ref(token))
            self._old_roots.append((tokens, self._epoch, site))
        leaves = [fn.variable for fn in walked if probes.node_name(fn) == "AccumulateGrad"]
        for leaf in leaves:
            if id(leaf) not in self._reached:
                self._reached[id(leaf)] = leaf if isinstance(leaf, nn.Parameter) else weakref.ref(leaf)
        if not from_grad:
            self._nan_check(graph_roots, leaves, site)

    def _stamp_and_check(self, walked, site):
        """Stamp every node with the round (and backward call) that first walked it; a node stamped in an
        earlier round, or by an earlier call of this same backward line, is a graph carried across steps."""
        earlier, old, size = set(), 0, 0
        for fn in walked:
            if probes.node_name(fn) == "AccumulateGrad":  # one per leaf, shared by every step: not state
                continue
            size += 1
            meta = _stamp(fn)
            seen = meta.get("doctor")
            if seen is None:
                meta["doctor"] = (self._round, site, self.backwards)
                continue
            made, where, _ = seen
            if made < self._round or where == site:
                earlier.add(seen)
                old += 1
        self._sizes[site].append(size)
        if earlier:
            self._carried[site] |= earlier
            steps = sorted({e[0] for e in self._carried[site]})
            self._add(
                ("carried", site),
                Mechanism.CARRIED_STATE,
                site,
                f"this step's graph ({size} nodes) reaches {old} nodes that the backward of an earlier step "
                f"already went through (made in step(s) {steps[:6]}, this is step {self._round}); the graph's "
                f"size at this line per call: {self._sizes[site][-4:]}",
                "detach the state you carry from one step to the next (h = h.detach()) at the step boundary, and "
                "build every tensor with a graph inside the step that backpropagates through it",
            )
        return earlier

    def _no_grad_root(self, root, site):
        if root.is_inference():
            why = "it is an inference tensor: it was made under torch.inference_mode()"
        elif self._nograd_calls:
            cls, line = self._nograd_calls[-1]
            why = f"{len(self._nograd_calls)} module call(s) ran with grad disabled, the last {cls} at {line or '?'}"
        else:
            why = "no tensor it was computed from required grad (a torch.no_grad block, .detach() or .item() cut it)"
        self._add(
            ("nograd", site),
            Mechanism.NO_GRAD_ROOT,
            site,
            f"backward was called on a tensor with no grad_fn and requires_grad=False: {why}",
            "compute the loss with grad enabled: move it out of torch.no_grad()/inference_mode() (or model.eval "
            "wrappers that disable grad) and keep .detach()/.item() for logging only",
        )

    def _leaf_root(self, root, site):
        self._add(
            ("leaf-root", site),
            Mechanism.INERT_LOSS_TERM,
            site,
            f"backward was called on a leaf tensor {list(root.shape)} (requires_grad set on it by hand, no grad_fn): "
            "the whole loss is cut from the model, so backward reaches no parameter",
            "remove the requires_grad=True on the loss and find where its graph was cut (.item(), .detach(), "
            "numpy, torch.tensor(...) or a no_grad block)",
        )

    def _inert_terms(self, root, site):
        """A summand of the loss with no grad_fn: it adds to the value and to no gradient."""
        fn, chain = root.grad_fn, 0
        while fn is not None and probes.node_name(fn) in ("AddBackward0", "SubBackward0") and chain < 64:
            chain += 1
            nexts = fn.next_functions
            deeper = [n for n, _ in nexts if n is not None and probes.node_name(n) in ("AddBackward0", "SubBackward0")]
            none_slots = [i for i, (n, _) in enumerate(nexts) if n is None]
            seed = not deeper and none_slots == [0]  # loss = torch.tensor(0.) + term: the accumulation's seed
            if none_slots and not seed:
                self._add(
                    ("inert", site),
                    Mechanism.INERT_LOSS_TERM,
                    site,
                    f"{probes.node_name(fn)} in the loss has {len(none_slots)} input(s) with no grad_fn: that summand "
                    "changes the loss's value and no gradient",
                    "compute that term from tensors that keep their graph (no .item(), .detach(), torch.tensor(...) "
                    "or numpy round trip)",
                )
                return
            fn = deeper[0] if deeper else None

    def _on_backward_error(self, exc, graph_roots, walked, site):
        text = str(exc)
        if ("carried", site) in self._keys:
            return  # the carried-state finding already names the cause (an old graph, its saved values overwritten)
        if "modified by an inplace operation" in text:
            stale = [s for r in graph_roots for s in probes.saved_tensors(r) if s.stale]
            found = re.search(r"output (\d+) of (\w+), is at version (\d+); expected version (\d+)", text)
            stepped = {p.untyped_storage().data_ptr(): p for p in self._held.values()}
            if stale:
                s = stale[0]
                what = f"the tensor {s.node} saved as {s.attribute} {list(s.shape)}"
                versions = f"version {s.version_saved} -> {s.version_now}"
                owner = stepped.get(s.storage)
                if owner is not None:
                    name = self._name_of.get(id(owner), f"a parameter {list(owner.shape)}")
                    what += f" (the storage of {name}, which optimizer.step() at {self._step_line or '?'} updates)"
            elif found:
                what = f"output {found.group(1)} of {found.group(2)}, saved for backward,"
                versions = f"version {found.group(4)} -> {found.group(3)}"
            else:
                what, versions = "a tensor saved for backward", "its version moved"
            self._add(
                ("inplace", site),
                Mechanism.INPLACE_ON_SAVED,
                site,
                f"{what} was written in place between the forward and this backward ({versions}); "
                f"{len(stale)} stale saved tensor(s) in the graph",
                "make the write out of place (x = x + ..., inplace=False, clone() before writing), or call every "
                "backward that needs the old values before optimizer.step() (or recompute the forward after it)",
            )
        elif "backward through the graph a second time" in text or "already been freed" in text:
            freed = sum(1 for fn in walked for v in probes.saved_attributes(fn).values() if v == probes.FREED)
            earlier = {_stamp(fn).get("doctor") for fn in walked} - {None}
            previous = [e for e in earlier if e[2] != self.backwards]
            where = previous[0][1] if previous else ""
            self._add(
                ("freed", site),
                Mechanism.FREED_GRAPH,
                site,
                f"this backward goes through {freed} saved value(s) that the earlier backward"
                f"{' at ' + where if where else ''} already freed",
                "do one backward on the sum of the losses, or pass retain_graph=True to the first of two backward "
                "calls that share a graph",
            )

    def _nan_check(self, graph_roots, leaves, site):
        if not all(bool(torch.isfinite(r.detach()).all()) for r in graph_roots):
            return
        bad = []
        for leaf in leaves:
            g = torch._C.TensorBase.__dict__["grad"].__get__(leaf)
            if g is not None and g.is_floating_point() and not bool(torch.isfinite(g).all()):
                bad.append((leaf, int((~torch.isfinite(g)).sum())))
        if bad:
            names = self._names()
            leaf, count = bad[0]
            self._add(
                ("nan", site),
                Mechanism.NAN_MASKED_BRANCH,
                site,
                f"the loss is finite but the gradient of {names.get(id(leaf), 'a leaf ' + str(list(leaf.shape)))} "
                f"has {count} non-finite entries ({len(bad)} leaf/leaves in all): a branch masked out in forward "
                "(torch.where, indexing) still sends 0 * inf = nan back",
                "make the unselected branch safe before the op: torch.where(mask, x, safe_value) inside, then the op",
            )

    def _on_torch_warning(self, message: str):
        for phrase, mechanism, meaning, fix in _TORCH_WARNINGS:
            if phrase in message:
                line = self._line()
                first = message.split(". ")[0].strip()
                self._add((mechanism, phrase), mechanism, line, f'torch warned "{first}": {meaning}', fix)

    def _on_warning(self, message: str):
        if "not a leaf Tensor is being accessed" in message:
            line = self._line()
            self._add(
                ("nonleaf", line),
                Mechanism.NONLEAF_GRAD,
                line,
                "torch warned: the .grad attribute of a non-leaf tensor was accessed (it stays None)",
                "read .grad on the leaf, or call .retain_grad() on this tensor before backward",
            )

    # -- the end --

    def _names(self) -> dict[int, str]:
        return self._name_of

    def _conclude(self, exc):
        if isinstance(exc, RuntimeError) and "Inference tensors cannot be saved for backward" in str(exc):
            line = self._traceback_line(exc)
            self._add(
                ("inference-saved", line),
                Mechanism.NO_GRAD_ROOT,
                line,
                "an operation that records a graph was given a tensor made under torch.inference_mode() (an "
                "inference tensor cannot be saved for backward)",
                "make the tensors you train on outside inference_mode (torch.no_grad() for frozen features, or "
                ".clone() the inference tensor first)",
            )
        names = self._names()
        registered = set(names)
        held = self._held
        reached = {i: (r if isinstance(r, torch.Tensor) else r()) for i, r in self._reached.items()}
        reached = {i: t for i, t in reached.items() if t is not None}
        # modules run inside another one that does not register them
        for cls, parent, line in self._unregistered.values():
            self._add(
                ("unregistered", cls, parent),
                Mechanism.UNREGISTERED_MODULE,
                line,
                f"a {cls} with parameters ran inside {parent}.forward, but {parent} does not register it: its "
                "parameters are missing from model.parameters(), state_dict() and the optimizer",
                "hold submodules in nn.ModuleList / nn.ModuleDict / attributes, and tensors to learn as nn.Parameter",
            )
        if self._optimizers:
            unheld = [t for i, t in reached.items() if i not in held and not self._is_declared_frozen(names.get(i))]
            if unheld and exc is None:  # a run cut short may not have reached every optimizer step
                unnamed = [t for t in unheld if id(t) not in registered]
                named = [t for t in unheld if id(t) in registered]
                if unnamed and not self._unregistered:
                    self._add(
                        ("unregistered-leaf",),
                        Mechanism.UNREGISTERED_MODULE,
                        "",
                        f"the loss reaches {len(unnamed)} leaf tensor(s) that require grad ({_shapes(unnamed)}) that no "
                        "module registers and no optimizer holds: they get gradients and are never updated",
                        "make them nn.Parameter attributes of a module (or pass them to the optimizer)",
                    )
                if named:
                    orphans = [t for i, t in held.items() if i not in reached and t.requires_grad]
                    replaced = [
                        names[id(t)]
                        for t in named
                        if self._names_seen.get(names[id(t)], id(t)) != id(t)
                        or any(o.shape == t.shape for o in orphans)
                    ]
                    how = (
                        f"; {', '.join(replaced[:4])} was replaced by a new object after the optimizer was built (it holds the old one)"
                        if replaced
                        else ""
                    )
                    total = len(set(reached) & (set(held) | {id(t) for t in named}))
                    self._add(
                        ("unheld",),
                        Mechanism.OPTIMIZER_MISMATCH,
                        self._step_line,
                        f"the optimizer holds {total - len(named)} of the {total} parameters the loss reaches; "
                        f"not held: {', '.join(names[id(t)] for t in named[:5])}{how}",
                        "build the optimizer after the model is final (after .to(), replacing layers, loading), from "
                        "model.parameters()",
                    )
            # (one cause, one finding: a cut loss already explains the parameters it leaves without gradient)
            causes = (Mechanism.INERT_LOSS_TERM, Mechanism.NO_GRAD_ROOT, Mechanism.HOOKS_CHECKPOINT)
            explained = any(f.mechanism in causes for f in self.findings)
            if self.steps >= 2 and ("unheld",) not in self._keys and not explained:
                never = [
                    t
                    for i, t in held.items()
                    if i not in reached and t.requires_grad and not self._is_declared_frozen(names.get(i))
                ]
                if never and exc is None:
                    label = ", ".join(names.get(id(t), f"a tensor {list(t.shape)}") for t in never[:5])
                    self._add(
                        ("never",),
                        Mechanism.OPTIMIZER_MISMATCH,
                        self._step_line,
                        f"{len(never)} of the {len(held)} parameters the optimizer holds never got a gradient in "
                        f"{self.steps} steps: {label}",
                        "make sure the loss is computed from the model the optimizer was built on (or declare them "
                        "frozen=[...] and set requires_grad=False)",
                    )
        # declared intent, proved: one finding for the frozen ones that moved, one for the others that did not
        moved_frozen, still = [], []
        for name, before in self._snap.items():
            p = self._current.get(name)
            if p is None:
                continue
            moved = float((p.detach() - before).abs().max()) if p.shape == before.shape else float("inf")
            kind = self._declared(name)
            if kind == "frozen" and moved > 0:
                moved_frozen.append(f"{name} (by up to {moved:.3g})")
            elif kind == "should_move" and moved == 0 and exc is None:
                still.append(name)
        if moved_frozen:
            self._add(
                ("frozen",),
                Mechanism.OPTIMIZER_MISMATCH,
                self._step_line,
                f"declared frozen, but moved: {', '.join(moved_frozen[:6])}",
                "set requires_grad=False on them and build the optimizer from the parameters that require grad",
            )
        if still:
            self._add(
                ("still",),
                Mechanism.OPTIMIZER_MISMATCH,
                self._step_line,
                f"declared should_move, but did not move in {self.steps} steps: {', '.join(still[:6])}",
                "check that the optimizer holds them and that the loss reaches them (requires_grad, no detach)",
            )

    def _traceback_line(self, exc) -> str:
        line, tb = "", exc.__traceback__
        while tb is not None:
            if _theirs(tb.tb_frame.f_code.co_filename, self.script):
                line = f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
            tb = tb.tb_next
        return line

    def _is_declared_frozen(self, name: str | None) -> bool:
        return name is not None and self._declared(name) == "frozen"

    def text(self) -> str:
        head = (
            f"doctor: {self.backwards} backward call(s), {self.steps} optimizer step(s), "
            f"{self.module_calls} module call(s) checked: "
        )
        if self.internal_errors:
            head = head.replace(
                "checked: ", f"checked ({self.internal_errors} observation(s) skipped: {self._first_error[:80]}): "
            )
        if not self.findings:
            return head + "no finding"
        return head + f"{len(self.findings)} finding(s)\n" + "\n".join(str(f) for f in self.findings)


def _shapes(tensors) -> str:
    return ", ".join(str(list(t.shape)) for t in tensors[:4])


def doctor(frozen=(), should_move=(), script: str | None = None, report: bool = True, stream=None) -> Doctor:
    """``with doctor(): ...``: observe a training loop and report what went wrong, as the course names it.

    ``frozen`` and ``should_move`` declare intent (parameter names or module prefixes as in
    ``model.named_parameters()``); the doctor checks them by measurement. ``report=False`` keeps the
    report for the caller (``.findings``, ``.text()``) instead of printing it to stderr at the end.
    """
    return Doctor(frozen=frozen, should_move=should_move, script=script, report=report, stream=stream)


def run_script(path: str, args=(), frozen=(), should_move=(), stream=None) -> int:
    """Run the script at ``path`` as ``__main__`` (``sys.argv`` = [path, *args]) with the doctor around it;
    the script's own exit status (1 after an uncaught exception, whose traceback is printed as Python would)."""
    import runpy
    import traceback

    path = os.path.abspath(path)
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [path, *args]
    if sys.path:
        sys.path[0] = os.path.dirname(path)
    code = 0
    try:
        with doctor(frozen=frozen, should_move=should_move, script=path, stream=stream):
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as exc:
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    code = 1
            except BaseException as exc:  # noqa: BLE001 - the script's own error, shown as Python shows it
                traceback.print_exception(exc)
                code = 1
                if isinstance(exc, KeyboardInterrupt):
                    code = 130
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0
    return code


__all__ = ["Doctor", "Finding", "Mechanism", "doctor", "run_script"]
