"""What a statement's torch operations did, read as they ran: which of the program's parameters an
operation took as an input (through any function or module the statement called), and which cuts were
made on a tensor that requires grad (a detach or ``.data``, an operation run with grad disabled or in
inference mode, a value taken out with ``.item()``/``.tolist()``/``.numpy()``).

:class:`OpWatch` is a ``TorchFunctionMode``: it sees every torch function and tensor method, records,
and calls the function unchanged, so nothing computed differs. The audit uses it to find a path cut
inside a function or a module, where the statement's text names neither the parameter nor the cut.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree

from grader.probes import traces

_DETACH = frozenset({torch.Tensor.detach, torch.Tensor.detach_, torch.detach})
_TAKE_OUT = frozenset({torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.numpy})
_DATA = torch._C.TensorBase.__dict__["data"]


def _cut(func) -> str | None:
    if torch.is_inference_mode_enabled():
        return traces.INFERENCE
    if not torch.is_grad_enabled():
        return traces.NO_GRAD
    if func in _DETACH or getattr(func, "__self__", None) is _DATA:
        return traces.DETACHED
    if func in _TAKE_OUT:
        return traces.ITEM
    return None


class OpWatch(TorchFunctionMode):
    """Around one statement: ``touched`` the names (of ``params``, name -> tensor) an operation took as an
    input; ``cuts`` the kinds of cut made on a tensor that requires grad, in the order first made; ``made`` the
    nodes its operations recorded (what a value carried in a list or a dict, bound by no name, came from)."""

    def __init__(self, params: dict):
        super().__init__()
        self._names = {id(t): name for name, t in params.items() if isinstance(t, torch.Tensor)}
        self.touched: list[str] = []
        self.cuts: list[str] = []
        self.made: list = []  # the nodes its operations recorded, in order

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [t for t in _pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        for t in tensors:
            name = self._names.get(id(t))
            if name is not None and name not in self.touched:
                self.touched.append(name)
        if any(t.requires_grad for t in tensors):
            cut = _cut(func)
            if cut is not None and cut not in self.cuts:
                self.cuts.append(cut)
        result = func(*args, **kwargs)
        for out in _pytree.tree_leaves(result):
            node = getattr(out, "grad_fn", None) if isinstance(out, torch.Tensor) else None
            if node is not None and (not self.made or self.made[-1] is not node):
                self.made.append(node)
        return result
