"""The observer: the doctor's hooks on torch's entry points, its per-run state, and the order in which
each mechanism's check (one module each, beside this one) runs on what it sees.

While active it wraps ``torch.autograd.backward`` (which ``Tensor.backward`` calls) and
``torch.autograd.grad``, adds global optimizer step pre- and post-hooks and global module forward pre- and
post-hooks, a ``.grad`` property on ``torch.Tensor`` (:mod:`.nonleaf`), ``warnings.warn`` /
``showwarning`` (:mod:`.hooks`), and what :mod:`.intent` reads the program's intent through
(``Tensor.__radd__``, ``nn.Module.__setattr__``, ``Optimizer.__init__``, ``inference_mode.__enter__``,
``Process.start``). Everything is removed on exit, exceptions included; a failure of the doctor's own is
counted and skipped (:meth:`Doctor.guarded`), never raised into the program. The program's own exception
reaches ``__exit__`` as ``with doctor()`` sees it, by every path (the command passes it through).
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections import defaultdict, deque
from typing import Any

import torch
import torch.optim.optimizer as _optim_module
from torch import nn

from grader import probes
from grader.probes.doctor import (
    accumulated,
    carried,
    freed,
    grad_mode,
    held,
    hooks,
    inert,
    inplace,
    intent,
    nan,
    nonleaf,
    optimizer,
    rebound,
    report,
    unregistered,
)
from grader.probes.doctor.findings import Finding, Mechanism
from grader.probes.doctor.frames import learner_line, traceback_line

_ACTIVE = threading.Lock()  # one doctor at a time: torch's entry points are global


class Doctor:
    """The observing harness; use :func:`grader.probes.doctor.doctor` to make one."""

    def __init__(self, frozen=(), should_move=(), script: str | None = None, report: bool = True, stream=None):
        self.frozen = tuple(frozen)
        self.should_move = tuple(should_move)
        self.script = os.path.realpath(script) if script else None
        self.report = report
        self.stream = stream
        self.findings: list[Finding] = []
        self.keys: set = set()
        self.backwards = 0
        self.steps = 0
        self.module_calls = 0
        self.internal_errors = 0  # the doctor's own failures (each one skipped an observation, nothing else)
        self.first_error = ""
        self._undo: list = []

    # -- finding bookkeeping --

    def line(self) -> str:
        return learner_line()

    def traceback_line(self, exc: BaseException) -> str:
        return traceback_line(exc)

    def guarded(self, fn, *args):
        """Run one of the doctor's own observations; a failure in it is counted, never the program's."""
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - the learner's program must run as it would without us
            self.internal_errors += 1
            self.first_error = self.first_error or f"{type(exc).__name__}: {exc}"
            return None

    def add(self, key, mechanism: Mechanism, line: str, evidence: str, fix: str):
        if key in self.keys:
            return
        self.keys.add(key)
        self.findings.append(Finding(mechanism, line, evidence, fix))

    def declared(self, name: str) -> str | None:
        for kind, names in (("frozen", self.frozen), ("should_move", self.should_move)):
            if any(name == n or name.startswith(n + ".") for n in names):
                return kind
        return None

    def declared_frozen(self, name: str | None) -> bool:
        return name is not None and self.declared(name) == "frozen"

    def text(self) -> str:
        return report.text(self)

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
            self.guarded(self._conclude, exc)
        finally:
            _ACTIVE.release()
        if self.report:
            print(self.text(), file=self.stream or sys.stderr)
        return False

    def _install(self):
        # per-run state
        self.epoch = 0  # optimizer steps so far
        self.site_calls: dict[str, int] = defaultdict(int)  # backward line -> its calls so far (the program's loop)
        self.recent: deque = deque(maxlen=8)  # (weakref of a root, backward number) of the latest backward calls
        self.step_log: deque = deque(maxlen=8)  # (backward calls so far, ids of what the optimizer held) per step
        self.step_line = ""  # where the first optimizer step was called
        self.sizes: dict[str, list[int]] = defaultdict(list)  # backward site -> graph size per call
        self.carried: dict[str, set] = defaultdict(set)  # backward site -> earlier epochs/sites reached
        self.optimizers = 0  # optimizer objects seen stepping
        self.optimizer_ids: set[int] = set()
        # parameters are kept (strongly: they live as long as the model anyway) so that the checks at the end
        # still see them after the program's own references are gone; other leaves weakly
        self.held: dict[int, torch.Tensor] = {}  # every parameter an optimizer held at a step
        self.reached: dict[int, Any] = {}  # every leaf a backward reached (a Parameter, or a weakref)
        # leaves that are no Parameter: id -> [weakref, first and last optimizer step count it was reached at, shape]
        self.leaf_seen: dict[int, list] = {}
        self.name_of: dict[int, str] = {}  # id(parameter) -> its name in a root module
        self.current: dict[str, torch.Tensor] = {}  # declared name -> the parameter under it now
        self.roots: weakref.WeakSet = weakref.WeakSet()  # every module called with no module forward active
        self.stack: list = []
        self.pairs_checked: set[tuple[int, int]] = set()  # (id(parent), id(child)) already looked at
        self.unregistered: dict[int, tuple] = {}  # id(module) -> (class, parent class, line)
        self.terms: dict[str, dict] = {}  # backward site -> the loss's summands still watched (inert.graph_terms)
        self.flagged: dict[int, tuple] = {}  # id(module) -> (module, its plain requires_grad, disagreeing, line, name)
        self.names_seen: dict[str, int] = {}  # "name" -> id of the parameter first seen under it
        self.root_index: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # top-level module -> n
        self.snap: dict[str, torch.Tensor] = {}
        self.nograd_calls: list[tuple[str, str]] = []  # (module class, line) run with grad off
        self.old_roots: dict[str, deque] = defaultdict(lambda: deque(maxlen=8))  # backward line -> its last roots
        # backward line -> the last groups of 3+ earlier loss graphs seen alive together, unwalked (carried.py)
        self.kept_roots: dict[str, deque] = defaultdict(lambda: deque(maxlen=4))
        self.in_backward = 0  # > 0 while a backward runs: a module called then is a checkpoint's recomputation
        self.recomputing: list = []  # (module, its buffers, versions and values, line) of calls inside backward
        self.recomputed: list = []  # the same, once the recomputation returned: judged when the backward ends
        self.full_hooked = ""  # the last module called with a full backward hook on it, and where
        self.saved_hooks_seen = False  # saved-tensor hooks (a checkpoint's) were active at a module call
        self.nan_origins: dict = {}  # backward site -> the node that last first made a gradient non-finite there
        self.replay: dict[str, str] = {}  # backward site -> the node kind to find again in the anomaly replay
        self.inert_replay: set[str] = set()  # backward lines whose next graph names a constant summand's line
        self.anomaly_armed = False
        self.anomaly_before = (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
        self._undo.append(lambda: torch.autograd.set_detect_anomaly(*self.anomaly_before))
        optimizer.install(self)
        accumulated.install(self)
        held.install(self)
        self._undo.extend(intent.install(self))

        real_backward, real_grad = torch.autograd.backward, torch.autograd.grad

        def backward(tensors, *args, **kwargs):
            roots = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
            flags = _flags(args[1:3], kwargs)
            self.guarded(intent.note_inputs, self, kwargs.get("inputs", args[4] if len(args) > 4 else None))
            return self._around(roots, lambda: real_backward(tensors, *args, **kwargs), flags)

        def grad(outputs, *args, **kwargs):
            roots = [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)
            flags = _flags(args[2:4], kwargs)
            self.guarded(intent.note_inputs, self, kwargs.get("inputs", args[0] if args else None))
            return self._around(roots, lambda: real_grad(outputs, *args, **kwargs), flags, from_grad=True)

        backward.__wrapped__ = real_backward  # type: ignore[attr-defined]
        grad.__wrapped__ = real_grad  # type: ignore[attr-defined]
        torch.autograd.backward, torch.autograd.grad = backward, grad
        self._undo.append(lambda: setattr(torch.autograd, "backward", real_backward))
        self._undo.append(lambda: setattr(torch.autograd, "grad", real_grad))

        handle = _optim_module.register_optimizer_step_pre_hook(self._on_step)
        self._undo.append(handle.remove)
        after = _optim_module.register_optimizer_step_post_hook(self._after_step)
        self._undo.append(after.remove)
        modules = torch.nn.modules.module
        pre = modules.register_module_forward_pre_hook(self._on_forward_pre)
        self._undo.append(pre.remove)
        post = modules.register_module_forward_hook(self._on_forward, always_call=True)
        self._undo.append(post.remove)
        self._undo.append(nonleaf.install(self, accumulated.note_read))
        self._undo.extend(hooks.install(self))

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
        self.guarded(self._observe_call, module)
        self.stack.append(module)

    def _observe_call(self, module):
        if torch._C._autograd._top_saved_tensors_default_hooks(False) is not None:
            self.saved_hooks_seen = True
        if self.in_backward:
            hooks.before_recomputation(self, module)
        if module._backward_hooks and getattr(module, "_is_full_backward_hook", None):
            self.full_hooked = f"{type(module).__name__} at {self.line() or '?'}"
        unregistered.observe_flag(self, module)
        if self.stack:
            unregistered.observe_pair(self, self.stack[-1], module)
        else:
            self.roots.add(module)
            optimizer.snapshot(self, module)
            held.on_top_call(self)
        grad_mode.observe_call(self, module)

    def _on_forward(self, module, args, output):
        if self.stack and self.stack[-1] is module:
            self.stack.pop()
        if self.in_backward and self.recomputing:
            self.guarded(hooks.after_recomputation, self, module)
        if not self.stack:
            self.guarded(held.after_top_call, self)
            self.guarded(optimizer.stamp_output, self, output)
        return None

    # -- optimizer steps --

    def _on_step(self, opt, args, kwargs):
        self.steps += 1
        self.epoch += 1
        self.guarded(optimizer.observe_step, self, opt)
        self.guarded(accumulated.before_step, self, opt)
        return None

    def _after_step(self, opt, args, kwargs):
        self.guarded(accumulated.after_step, self, opt)
        return None

    # -- backward --

    def _around(self, roots, run, flags, from_grad=False):
        self.backwards += 1
        seen = self.guarded(self._before_backward, roots, flags, from_grad)
        site, graph_roots, walked, leaves, earlier = seen if seen is not None else ("", [], [], [], set())
        watch = self.guarded(nan.watch, self, walked) if not from_grad else None
        self.in_backward += 1
        try:
            result = run()
        except RuntimeError as exc:
            self.guarded(self._on_backward_error, exc, graph_roots, walked, site, earlier)
            raise
        finally:
            self.in_backward -= 1
            if watch is not None:
                self.guarded(nan.unwatch, watch)
            if self.recomputed:
                self.guarded(hooks.check_recomputed, self)
        self.guarded(self._after_backward_ran, graph_roots, walked, leaves, site, from_grad, watch)
        return result

    def _before_backward(self, roots, flags, from_grad):
        site = self.line()
        self.site_calls[site] += 1
        graph_roots = [r for r in roots if isinstance(r, torch.Tensor) and r.grad_fn is not None]
        for r in roots:
            if isinstance(r, torch.Tensor) and r.grad_fn is None and not r.requires_grad:
                grad_mode.no_grad_root(self, r, site)
        carried.check_old_roots(self, site)
        walked = [fn for r in graph_roots for fn in probes.nodes(r)]
        leaves = [fn.variable for fn in walked if probes.node_name(fn) == "AccumulateGrad"]
        accumulated.before_backward(self, leaves, site)
        earlier = carried.stamp_and_check(self, walked, site, flags[0])
        optimizer.check_written_since_forward(self, graph_roots, walked, site)
        trains = not from_grad and any(inert.is_parameter(self, leaf) for leaf in leaves)
        for r in graph_roots if trains else ():  # (a training loss: a backward that reaches a parameter)
            if site in self.inert_replay:
                inert.replayed(self, r, site)
            inert.constant_terms(self, r, site)
        for r in roots:
            if isinstance(r, torch.Tensor) and r.grad_fn is None and r.requires_grad and not from_grad:
                inert.leaf_root(self, r, site)
        for r in graph_roots:
            self.recent.append((weakref.ref(r), self.backwards))
        return site, graph_roots, walked, leaves, earlier

    def _after_backward_ran(self, graph_roots, walked, leaves, site, from_grad, watch):
        carried.record_roots(self, graph_roots, site)
        accumulated.after_backward(self, leaves)
        for leaf in leaves:
            known = self.reached.get(id(leaf))  # (a dead leaf's id may be a new leaf's: a weakref tells them apart)
            if known is None or (isinstance(known, weakref.ref) and known() is not leaf):
                self.reached[id(leaf)] = leaf if isinstance(leaf, nn.Parameter) else weakref.ref(leaf)
            if not isinstance(leaf, nn.Parameter):
                seen = self.leaf_seen.get(id(leaf))
                if seen is None or seen[0]() is not leaf:
                    self.leaf_seen[id(leaf)] = [weakref.ref(leaf), self.epoch, self.epoch, list(leaf.shape)]
                else:
                    seen[2] = self.epoch
        if not from_grad:
            for r in graph_roots:
                inert.graph_terms(self, r, site, leaves)
            nan.check(self, graph_roots, leaves, site, watch)

    def _on_backward_error(self, exc, graph_roots, walked, site, earlier):
        if ("carried", site) in self.keys:
            return  # the carried-state finding already names the cause (an old graph, its saved values overwritten)
        if ("step-between", site) in self.keys:
            return  # the optimizer step between forward and backward already names it
        text = str(exc)
        if "modified by an inplace operation" in text:
            inplace.on_version_error(self, text, graph_roots, site)
        elif "backward through the graph a second time" in text or "already been freed" in text:
            freed.on_freed_error(self, graph_roots, walked, site, earlier)

    # -- the end --

    def _conclude(self, exc):
        if isinstance(exc, SystemExit) and exc.code in (None, 0):
            exc = None  # sys.exit() at the end of a program that ran through
        if exc is not None:
            grad_mode.inference_saved(self, exc)
            hooks.on_program_error(self, exc)
            nonleaf.on_program_error(self, exc)
            rebound.on_program_error(self, exc)
        carried.conclude(self, exc)
        unregistered.conclude(self)
        unregistered.conclude_flags(self)
        inert.conclude(self)
        explained = rebound.conclude(self)
        if self.optimizers:
            optimizer.conclude_held(self, exc, explained)
        optimizer.conclude_declared(self, exc)
        held.conclude(self, exc)


def _flags(positional, kwargs) -> tuple[bool, bool]:
    """(retain_graph, create_graph) of a backward or grad call, however they were passed."""
    retain = kwargs.get("retain_graph", positional[0] if len(positional) > 0 else None)
    create = bool(kwargs.get("create_graph", positional[1] if len(positional) > 1 else False))
    return (create if retain is None else bool(retain)), create


def doctor(frozen=(), should_move=(), script: str | None = None, report: bool = True, stream=None) -> Doctor:
    """``with doctor(): ...``: observe a training loop and report what went wrong, as the course names it.

    ``frozen`` and ``should_move`` declare intent (parameter names or module prefixes as in
    ``model.named_parameters()``); the doctor checks them by measurement. ``report=False`` keeps the
    report for the caller (``.findings``, ``.text()``) instead of printing it to stderr at the end.
    """
    return Doctor(frozen=frozen, should_move=should_move, script=script, report=report, stream=stream)


__all__ = ["Doctor", "doctor"]
