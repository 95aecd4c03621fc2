"""The observer: the doctor's hooks on torch's entry points, the per-run state every check reads, and the
events it fires at the checks (:mod:`.base` says what a check is; :data:`.checks.CHECKS` lists them, in order).

While active it wraps ``torch.autograd.backward`` (which ``Tensor.backward`` calls) and
``torch.autograd.grad``, adds global optimizer step pre- and post-hooks and global module forward pre- and
post-hooks, a ``.grad`` property on ``torch.Tensor`` (:mod:`.nonleaf`), ``warnings.warn`` /
``showwarning``, and what :mod:`.intent` reads the program's intent through
(``Tensor.__radd__``, ``nn.Module.__setattr__``, ``Optimizer.__init__``, ``inference_mode.__enter__``,
``Process.start``). Everything is removed on exit, exceptions included; a failure of the doctor's own is
counted and skipped (:meth:`Doctor.guarded`), never raised into the program. The program's own exception
reaches ``__exit__`` as ``with doctor()`` sees it, by every path (the command passes it through).

The events, and where they come from: a module call (``on_module_call``; ``on_top_call`` with no module
forward active; ``on_call_in_backward`` / ``on_return_in_backward`` while a backward runs) and a top-level
call's return (``on_top_return``) from the module hooks; ``on_step`` / ``on_step_end`` from the optimizer
hooks; ``on_backward_start``, ``on_backward_error``, ``on_backward_finally``, ``on_backward_end`` around
each ``backward`` and ``autograd.grad``; ``on_grad_read`` from the ``.grad`` property; ``on_warn`` /
``on_warning_shown`` from the warnings; ``on_program_error`` then ``conclude`` at the end.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
import weakref
from typing import Any

import torch
import torch.optim.optimizer as _optim_module
from torch import nn

from grader import probes
from grader.probes.doctor import intent, nonleaf, report
from grader.probes.doctor.base import Backward, Check, DoctorState, dispatch
from grader.probes.doctor.checks import CHECKS

_ACTIVE = threading.Lock()  # one doctor at a time: torch's entry points are global


class Doctor(DoctorState):
    """The observing harness; use :func:`grader.probes.doctor.doctor` to make one."""

    def __init__(self, frozen=(), should_move=(), script: str | None = None, report: bool = True, stream=None):
        super().__init__(frozen, should_move)
        self.script = os.path.realpath(script) if script else None
        self.report = report
        self.stream = stream
        self._undo: list = []

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
        self._start()
        self._undo.append(lambda: torch.autograd.set_detect_anomaly(*self.anomaly_before))
        self._undo.extend(intent.install(self))
        self.checks: list[Check] = [cls(self) for cls in CHECKS]
        self.on = dispatch(self.checks)  # event -> the checks' methods for it, built once
        self._module_calls, self._top_calls = self.on["on_module_call"], self.on["on_top_call"]
        self._wrap_backward()
        modules = torch.nn.modules.module
        for hook in (
            _optim_module.register_optimizer_step_pre_hook(self._on_step),
            _optim_module.register_optimizer_step_post_hook(self._after_step),
            modules.register_module_forward_pre_hook(self._on_forward_pre),
            modules.register_module_forward_hook(self._on_forward, always_call=True),
        ):
            self._undo.append(hook.remove)
        self._undo.append(nonleaf.install(self, self._on_grad_read))
        self._wrap_warnings()

    def _wrap_backward(self):
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

    def _wrap_warnings(self):
        """Wrap warnings.showwarning and warnings.warn (each warning passed on unchanged)."""
        shown, real_warn = warnings.showwarning, warnings.warn
        on_shown, on_warn = self.on["on_warning_shown"], self.on["on_warn"]

        def showwarning(message, category, filename, lineno, file=None, line=None):
            for check in on_shown:
                self.guarded(check, str(message))
            return shown(message, category, filename, lineno, file, line)

        def warn(message, category=None, stacklevel=1, source=None, **kwargs):
            for check in on_warn:
                self.guarded(check, str(message))
            return real_warn(message, category, stacklevel + 1, source, **kwargs)  # one frame more: ours

        warn.__wrapped__ = real_warn  # type: ignore[attr-defined]
        warnings.showwarning, warnings.warn = showwarning, warn
        self._undo.append(lambda: setattr(warnings, "showwarning", shown))
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
        self.guarded(self._observe_call, module)
        self.stack.append(module)

    def _observe_call(self, module):
        if torch._C._autograd._top_saved_tensors_default_hooks(False) is not None:
            self.saved_hooks_seen = True
        if self.in_backward:
            for check in self.on["on_call_in_backward"]:
                check(module)
        parent = self.stack[-1] if self.stack else None
        for check in self._module_calls:
            check(module, parent)
        if parent is None:
            self._name(module)
            for check in self._top_calls:
                check(module)

    def _on_forward(self, module, args, output):
        if self.stack and self.stack[-1] is module:
            self.stack.pop()
        if self.in_backward:
            for check in self.on["on_return_in_backward"]:
                self.guarded(check, module)
        if not self.stack:
            stamped = self.guarded(self._stamp_outputs, output)
            for check in self.on["on_top_return"]:
                self.guarded(check, *(stamped or ([], "")))
        return None

    def _name(self, module):
        """A top-level module call: the names of its parameters, and a copy of the declared ones (once)."""
        if module not in self.root_index:
            self.root_index[module] = len(self.root_index)
        index = self.root_index[module]
        prefix = "" if index == 0 else f"{type(module).__name__}[{index}]."
        for name, p in module.named_parameters():
            name = prefix + name
            self.name_of[id(p)] = name
            self.params[id(p)] = p
            if self.declared(name):
                self.current[name] = p
                if name not in self.snap:
                    with torch.no_grad():
                        self.snap[name] = p.detach().clone()

    def _stamp_outputs(self, output) -> tuple[list, str]:
        """A top-level module call returned: its outputs' nodes (a tensor, or those nested in tuples, lists and
        dicts) seen for the first time remember the optimizer step count and the call's line (``doctor_epoch``
        in their metadata); returns (those nodes, the line)."""
        line, nodes = None, []
        for out in _tensors(output):
            fn: Any = out.grad_fn  # (metadata: a dict, not the stub's method)
            if fn is not None and "doctor_epoch" not in fn.metadata:
                line = self.line() if line is None else line
                fn.metadata["doctor_epoch"] = (self.epoch, line)
                nodes.append(fn)
        return nodes, line or ""

    # -- optimizer steps --

    def _on_step(self, opt, args, kwargs):
        self.steps += 1
        self.epoch += 1
        self.guarded(self._note_step, opt)
        for check in self.on["on_step"]:
            self.guarded(check, opt)
        return None

    def _note_step(self, opt):
        if id(opt) not in self.optimizer_ids:
            self.optimizer_ids.add(id(opt))
            self.optimizers += 1
        for group in opt.param_groups:
            for p in group["params"]:
                self.held[id(p)] = p
        self.step_log.append((self.backwards, {id(p) for group in opt.param_groups for p in group["params"]}))
        line = self.line()
        self.step_lines[self.epoch] = line
        if not self.step_line:
            self.step_line = line

    def _after_step(self, opt, args, kwargs):
        for check in self.on["on_step_end"]:
            self.guarded(check, opt)
        return None

    # -- reads of .grad (the property nonleaf.py puts on torch.Tensor) --

    def _on_grad_read(self, leaf, grad):
        for check in self.on["on_grad_read"]:
            self.guarded(check, leaf, grad)

    # -- backward --

    def _around(self, roots, run, flags, from_grad=False):
        self.backwards += 1
        bw = self.guarded(self._backward_of, roots, flags, from_grad) or Backward(
            "", roots, [], [], [], False, from_grad
        )
        on = self.on
        for check in on["on_backward_start"]:
            self.guarded(check, bw)
        self.in_backward += 1
        try:
            result = run()
        except RuntimeError as exc:
            for check in on["on_backward_error"]:
                self.guarded(check, bw, exc)
            raise
        finally:
            self.in_backward -= 1
            for check in on["on_backward_finally"]:
                self.guarded(check, bw)
        self.guarded(self._note_reached, bw.leaves)
        for check in on["on_backward_end"]:
            self.guarded(check, bw)
        return result

    def _backward_of(self, roots, flags, from_grad) -> Backward:
        site = self.line()
        self.site_calls[site] += 1
        graph_roots = [r for r in roots if isinstance(r, torch.Tensor) and r.grad_fn is not None]
        walked = [fn for r in graph_roots for fn in probes.nodes(r)]
        leaves = [fn.variable for fn in walked if probes.node_name(fn) == "AccumulateGrad"]
        for r in graph_roots:
            self.recent.append((weakref.ref(r), self.backwards))
        return Backward(site, roots, graph_roots, walked, leaves, flags[0], from_grad)

    def _note_reached(self, leaves):
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

    # -- the end --

    def _conclude(self, exc):
        if isinstance(exc, SystemExit) and exc.code in (None, 0):
            exc = None  # sys.exit() at the end of a program that ran through
        if exc is not None:
            for check in self.on["on_program_error"]:
                self.guarded(check, exc)
        for check in self.on["conclude"]:
            self.guarded(check, exc)


def _tensors(output, depth=0):
    if isinstance(output, torch.Tensor):
        yield output
    elif depth < 3 and isinstance(output, (tuple, list, dict)):
        for item in output.values() if isinstance(output, dict) else output:
            yield from _tensors(item, depth + 1)


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
