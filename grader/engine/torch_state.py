"""Keep the learner's global torch state as it was, whatever the grader or a learner function does.

``clean_room()`` runs a block in a known state (grad mode on, inference mode
off, anomaly mode off, autocast off, no TorchFunctionMode or dispatch mode,
saved-tensor hooks neither pushed nor disabled, float32 default, a fixed
seed, warnings silenced) and restores every one of those afterwards.
``snapshot()`` and ``differences()`` let the sandbox tell a learner which
piece of global state their function changed and left changed.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

_hooks = torch._C._autograd


@dataclass(frozen=True)
class TorchState:
    grad_enabled: bool
    inference_mode: bool
    anomaly: bool
    anomaly_check_nan: bool
    default_dtype: Any
    deterministic: bool
    deterministic_warn_only: bool
    num_threads: int
    saved_tensor_hooks: int
    default_device: str


def snapshot() -> TorchState:
    return TorchState(
        grad_enabled=torch.is_grad_enabled(),
        inference_mode=torch.is_inference_mode_enabled(),
        anomaly=torch.is_anomaly_enabled(),
        anomaly_check_nan=torch.is_anomaly_check_nan_enabled(),
        default_dtype=torch.get_default_dtype(),
        deterministic=torch.are_deterministic_algorithms_enabled(),
        deterministic_warn_only=torch.is_deterministic_algorithms_warn_only_enabled(),
        num_threads=torch.get_num_threads(),
        saved_tensor_hooks=len(_peek_hooks()),
        default_device=str(torch.get_default_device()),
    )


_WORDS = {
    "grad_enabled": "grad mode",
    "inference_mode": "inference mode",
    "anomaly": "anomaly detection",
    "anomaly_check_nan": "anomaly detection's NaN check",
    "default_dtype": "the default dtype",
    "deterministic": "deterministic algorithms",
    "deterministic_warn_only": "deterministic algorithms' warn_only",
    "num_threads": "the number of threads",
    "saved_tensor_hooks": "the saved-tensor hooks in force",
    "default_device": "the default device",
}


def differences(before: TorchState, after: TorchState) -> list[str]:
    """Plain sentences naming what changed, e.g. 'grad mode was True, is now False'."""
    out = []
    for field, words in _WORDS.items():
        a, b = getattr(before, field), getattr(after, field)
        if a != b:
            out.append(f"{words} was {a}, is now {b}")
    return out


def _pop_all_hooks() -> list:
    """Take every saved-tensor hook pair off torch's stack; innermost first."""
    stack = []
    while True:
        top = _hooks._top_saved_tensors_default_hooks(False)
        if top is None:
            return stack
        stack.append(top)
        _hooks._pop_saved_tensors_default_hooks()


def _push_all_hooks(stack: list) -> None:
    for pack, unpack in reversed(stack):
        _hooks._push_saved_tensors_default_hooks(pack, unpack)


def _peek_hooks() -> list:
    """The saved-tensor hook pairs in force, innermost last (popped and pushed back)."""
    stack = _pop_all_hooks()
    _push_all_hooks(stack)
    return list(reversed(stack))


@contextlib.contextmanager
def _no_saved_tensor_hooks() -> Iterator[None]:
    stack = _pop_all_hooks()
    try:
        yield
    finally:
        _pop_all_hooks()  # drop whatever the block left pushed, then put the learner's hooks back
        _push_all_hooks(stack)


@contextlib.contextmanager
def restored(state: TorchState) -> Iterator[None]:
    """Put the simple global switches back to ``state`` when the block ends."""
    try:
        yield
    finally:
        torch.set_grad_enabled(state.grad_enabled)
        torch.set_anomaly_enabled(state.anomaly, state.anomaly_check_nan)
        torch.set_default_dtype(state.default_dtype)
        if (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()) != (
            state.deterministic,
            state.deterministic_warn_only,
        ):  # slow the first time: only when needed
            torch.use_deterministic_algorithms(state.deterministic, warn_only=state.deterministic_warn_only)
        if torch.get_num_threads() != state.num_threads:
            torch.set_num_threads(state.num_threads)
        if str(torch.get_default_device()) != state.default_device:
            torch.set_default_device(None if state.default_device == "cpu" else state.default_device)


@contextlib.contextmanager
def _no_modes() -> Iterator[None]:
    """Take every TorchFunctionMode and dispatch mode off torch's stacks; put them back afterwards."""
    from torch.utils import _python_dispatch as dispatch

    functions, dispatches = [], []
    while torch._C._len_torch_function_stack() > 0:
        functions.append(torch._C._pop_torch_function_stack())
    while torch._C._len_torch_dispatch_stack() > 0:
        dispatches.append(dispatch._pop_mode())
    try:
        yield
    finally:
        while torch._C._len_torch_function_stack() > 0:
            torch._C._pop_torch_function_stack()
        for mode in reversed(functions):
            torch._C._push_on_torch_function_stack(mode)
        for mode in reversed(dispatches):
            dispatch._push_mode(mode)


@contextlib.contextmanager
def _hooks_enabled() -> Iterator[None]:
    """Saved-tensor hooks switched back on if the learner disabled them; their switch put back afterwards."""
    # there at run time, but missing from torch's stub torch/_C/_autograd.pyi (torch 2.13)
    if _hooks._saved_tensors_hooks_is_enabled():  # type: ignore[attr-defined]
        yield
        return
    message = _hooks._saved_tensors_hooks_get_disabled_error_message()
    _hooks._saved_tensors_hooks_enable()
    try:
        yield
    finally:
        _hooks._saved_tensors_hooks_disable(message or "saved tensors hooks are disabled")


@contextlib.contextmanager
def clean_room(seed: int = 0, quiet: bool = True) -> Iterator[None]:
    """Run a block in torch's default state; leave the caller's state exactly as it was."""
    before = snapshot()
    with contextlib.ExitStack() as stack:
        stack.enter_context(restored(before))
        stack.enter_context(_no_modes())
        stack.enter_context(_hooks_enabled())
        stack.enter_context(torch.autocast("cpu", enabled=False))
        if torch.cuda.is_available():
            stack.enter_context(torch.autocast("cuda", enabled=False))
        stack.enter_context(_no_saved_tensor_hooks())
        stack.enter_context(torch.inference_mode(False))
        stack.enter_context(torch.random.fork_rng(devices=[]))
        if quiet:
            stack.enter_context(warnings.catch_warnings())
            warnings.simplefilter("ignore")
        torch.set_grad_enabled(True)
        torch.set_anomaly_enabled(False)
        torch.set_default_dtype(torch.float32)
        if torch.are_deterministic_algorithms_enabled():
            torch.use_deterministic_algorithms(False)
        if str(torch.get_default_device()) != "cpu":
            torch.set_default_device(None)
        torch.manual_seed(seed)
        yield
