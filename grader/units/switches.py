"""What an exercise rules out, switched off while the learner's function runs.

An exercise about a mechanism is passed by wrapping the tool that already does the job (``F.softplus`` for a
stable softplus, a loop of ``torch.autograd.grad`` for ``torch.func``'s per-sample gradients,
``torch.utils.checkpoint`` for a checkpoint written by hand). :func:`switched_off` runs a call with such
tools refusing, and says which were tried:

* ``attributes``: module attributes, named ``"torch.utils.checkpoint.checkpoint"``, replaced by a stub that
  raises :class:`SwitchedOff`. Replacing the attribute also catches an alias made earlier
  (``from torch.utils.checkpoint import checkpoint``) where the library reaches its own internals through
  module attributes, which is why the exercises name those internals too;
* ``ops``: ATen operators (``torch.ops.aten.softplus``), or :data:`EVERY_OP` for all of them, refused through a
  ``TorchDispatchMode``: every way of calling the operator reaches it (``F.softplus``, ``nn.Softplus``,
  ``torch.ops.aten.softplus``), inside an autograd Function, ``gradcheck`` and ``vmap`` included;
* ``backward``: a backward pass started by ``.backward()`` or ``torch.autograd.grad`` (however they are named)
  raises, except one started by a ``torch.func`` transform, which is how ``torch.func.grad`` computes.

Every backward pass started outside a ``torch.func`` transform is counted either way (:class:`Watch`), so
an exercise can ask for exactly one. The grader's own answers are computed outside the call, with nothing
switched off; threads that were already running when the call began (the kernel's own) are let through.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.autograd as _autograd
from torch.utils._python_dispatch import TorchDispatchMode

EVERY_OP = "every op"
_MISSING = object()


class SwitchedOff(RuntimeError):
    """Raised by a tool an exercise switches off, while the learner's function runs."""


@dataclass
class Watch:
    """What a call did with the tools around it: the switched-off ones it tried (in order), and the backward
    passes it started outside ``torch.func`` transforms (``.backward()`` and ``torch.autograd.grad``)."""

    refused: list = field(default_factory=list)
    backward_calls: int = 0
    grad_calls: int = 0

    @property
    def passes(self) -> int:
        return self.backward_calls + self.grad_calls


def _resolve(path: str) -> tuple[Any, str]:
    """("torch.nn.functional.softplus") -> (the module torch.nn.functional, "softplus"); the owner may be a class
    inside a module ("torch.utils.checkpoint.CheckpointFunction.apply")."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:-1]:
            owner = getattr(owner, part)
        return owner, parts[-1]
    raise ImportError(f"no module in {path!r}")


class _RefuseOps(TorchDispatchMode):
    def __init__(self, ops, watch: Watch, why: str):
        super().__init__()
        self.ops, self.watch, self.why = ops, watch, why

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.ops == EVERY_OP or func.overloadpacket in self.ops:
            name = (
                "torch's tensor operations are"
                if self.ops == EVERY_OP
                else f"torch's {func.overloadpacket.__name__} is"
            )
            self.watch.refused.append(str(func.overloadpacket))
            raise SwitchedOff(f"{name} switched off while your function runs: {self.why}")
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def switched_off(
    why: str,
    attributes: Iterable[str] | Mapping[str, str] = (),
    ops: Iterable[Any] | str = (),
    backward: bool = False,
) -> Iterator[Watch]:
    """While the block runs, in this thread and any thread it starts: ``attributes`` and ``ops`` raise
    :class:`SwitchedOff` with ``why`` (what to do instead), and so does a backward pass outside ``torch.func``
    when ``backward`` is set; backward passes are counted in the :class:`Watch` it yields. ``attributes`` may map
    each path to the name a message gives it (a library's internals, named by the tool a learner calls).
    Everything is put back on the way out, whatever happened inside."""
    watch = Watch()
    others = frozenset(threading.enumerate()) - {threading.current_thread()}
    saved: list[tuple[Any, str, Any]] = []
    named = dict(attributes) if isinstance(attributes, Mapping) else {path: path for path in attributes}

    def stub(label: str, original: Any):
        def refused(*args, **kwargs):
            if threading.current_thread() in others:
                return original(*args, **kwargs)
            watch.refused.append(label)
            raise SwitchedOff(f"{label} is switched off while your function runs: {why}")

        refused.__name__ = getattr(original, "__name__", label.rsplit(".", 1)[-1])
        return refused

    for path, label in named.items():
        owner, name = _resolve(path)
        if not hasattr(owner, name):
            continue
        # what the owner itself holds (a class's classmethod object, not the bound method), or _MISSING where
        # the name is inherited: put back exactly that
        raw = vars(owner).get(name, _MISSING) if isinstance(owner, type) else getattr(owner, name)
        saved.append((owner, name, raw))
        setattr(owner, name, stub(label, getattr(owner, name)))
    engine = getattr(_autograd, "_engine_run_backward", None)
    if engine is not None:

        def counted(*args, **kwargs):
            if torch._C._functorch.maybe_current_level() is None and threading.current_thread() not in others:
                if backward:
                    watch.refused.append("backward")
                    raise SwitchedOff(
                        "backward passes (.backward() and torch.autograd.grad) are switched off while your "
                        f"function runs: {why}"
                    )
                if kwargs.get("accumulate_grad", True):
                    watch.backward_calls += 1
                else:
                    watch.grad_calls += 1
            return engine(*args, **kwargs)

        saved.append((_autograd, "_engine_run_backward", engine))
        _autograd._engine_run_backward = counted
    ops = ops if ops == EVERY_OP else frozenset(ops)
    try:
        if ops:
            with _RefuseOps(ops, watch, why):
                yield watch
        else:
            yield watch
    finally:
        for owner, name, original in reversed(saved):
            if original is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, original)


# The course's own answers, which a learner can import: the graph walker every probe goes through, and unit 04's
# reference answers built on it. An exercise that asks for one of them switches it off.
COURSE_WALKER = {"grader.probes.nodes": "grader.probes' graph walk (nodes, node_names, reachable_leaves, size)"}
COURSE_PATHS = {
    **COURSE_WALKER,
    "grader.probes.traces.reaches": "grader.probes.traces.reaches",
    "grader.probes.traces.first_broken_edge": "grader.probes.traces.first_broken_edge",
    "grader.probes.traces.diagnose": "grader.probes.traces.diagnose",
}


def guarded(
    why: str,
    attributes: Iterable[str] | Mapping[str, str] = (),
    ops: Iterable[Any] | str = (),
    backward: bool = False,
    call: Callable | None = None,
) -> Callable:
    """An exercise's ``call`` (by default the learner's function on ``ns[case.output]``), run under
    :func:`switched_off` with these arguments."""
    inner = call or (lambda fn, case, ns: fn(ns[case.output]))

    def run(fn, case, ns):
        with switched_off(why, attributes, ops, backward):
            return inner(fn, case, ns)

    return run
