"""Keep the learner's global torch state as it was, whatever the grader or a learner function does.

``clean_room()`` runs a block in a known state (grad mode on, inference mode
off, anomaly mode off, autocast off, no TorchFunctionMode or dispatch mode,
saved-tensor hooks neither pushed nor disabled, float32 default, a fixed
seed, warnings silenced) and afterwards puts back every piece of state that
``snapshot()`` records: the dispatch-mode and function-mode stacks (popping
any mode the block left pushed, and the dispatch flags torch.compile reads),
grad mode, anomaly mode, autocast on the CPU and CUDA (switch and dtype),
the saved-tensor hooks (the stack and its on/off switch), the default dtype
and device, deterministic algorithms, the thread count and the CPU RNG state.
So after any check, passed, failed, raised or stopped for time, torch is as
it was. One thing it can only report, not force back: inference mode left
entered by a learner's bare ``__enter__`` (torch offers no setter for it).

``snapshot()`` and ``differences()`` let the sandbox tell a learner which
piece of global state their function changed and left changed; the RNG is
in the snapshot (the clean room restores it) but not in ``differences()``:
drawing random numbers is no mistake.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _python_dispatch as dispatch

_hooks = torch._C._autograd
_DEVICES = ("cpu", "cuda")
_FLAGS = (
    "_is_in_torch_dispatch_mode",
    "_is_in_non_infra_torch_dispatch_mode",
    "_is_in_any_mode_without_ignore_compile_internals",
)


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
    saved_tensor_hooks_enabled: bool
    default_device: str
    dispatch_modes: tuple
    dispatch_flags: tuple
    function_modes: tuple
    autocast: tuple  # per device in _DEVICES: (enabled, dtype)
    rng: bytes


def _dispatch_flags() -> tuple:
    return tuple(getattr(dispatch, name) for name in _FLAGS)


def _set_dispatch_flags(flags: tuple) -> None:
    for name, value in zip(_FLAGS, flags):
        setattr(dispatch, name, value)
    dispatch.set_is_in_mode_without_ignore_compile_internals(flags[2])


def _autocast() -> tuple:
    return tuple((torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in _DEVICES)


def snapshot() -> TorchState:
    """The state now; read past any mode a learner left pushed (one could intercept the reads)."""
    with torch._C._DisableTorchDispatch(), torch._C.DisableTorchFunction():
        return _read()


def _read() -> TorchState:
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
        # there at run time, but missing from torch's stub torch/_C/_autograd.pyi (torch 2.13)
        saved_tensor_hooks_enabled=_hooks._saved_tensors_hooks_is_enabled(),  # type: ignore[attr-defined]
        default_device=str(torch.get_default_device()),
        dispatch_modes=tuple(dispatch._get_current_dispatch_mode_stack()),
        dispatch_flags=_dispatch_flags(),
        function_modes=tuple(torch.overrides._get_current_function_mode_stack()),
        autocast=_autocast(),
        rng=torch.get_rng_state().numpy().tobytes(),
    )


def _names(modes: tuple) -> str:
    return "[" + ", ".join(type(m).__name__ for m in modes) + "]"


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
    "saved_tensor_hooks_enabled": "saved-tensor hooks being allowed",
    "default_device": "the default device",
    "dispatch_modes": "the dispatch modes in force",
    "function_modes": "the TorchFunctionModes in force",
    "autocast": "autocast (enabled, dtype) on cpu and cuda",
}
_SHOWN = {"dispatch_modes": _names, "function_modes": _names}


def differences(before: TorchState, after: TorchState) -> list[str]:
    """Plain sentences naming what changed, e.g. 'grad mode was True, is now False' (the RNG left out)."""
    out = []
    for field, words in _WORDS.items():
        a, b = getattr(before, field), getattr(after, field)
        if a != b:
            show = _SHOWN.get(field, str)
            out.append(f"{words} was {show(a)}, is now {show(b)}")
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
    """Take every TorchFunctionMode and dispatch mode off torch's stacks (and clear the dispatch flags that
    torch.compile reads); afterwards pop whatever the block left pushed and put the originals back."""
    flags = _dispatch_flags()
    functions, dispatches = [], []
    while torch._C._len_torch_function_stack() > 0:
        functions.append(torch._C._pop_torch_function_stack())
    while torch._C._len_torch_dispatch_stack() > 0:
        dispatches.append(dispatch._pop_mode())
    _set_dispatch_flags((False, False, False))
    try:
        yield
    finally:
        while torch._C._len_torch_function_stack() > 0:
            torch._C._pop_torch_function_stack()
        while torch._C._len_torch_dispatch_stack() > 0:
            dispatch._pop_mode()
        for mode in reversed(functions):
            torch._C._push_on_torch_function_stack(mode)
        for mode in reversed(dispatches):
            dispatch._push_mode(mode)
        _set_dispatch_flags(flags)


@contextlib.contextmanager
def _no_autocast() -> Iterator[None]:
    """Autocast off on every device for the block; each device's switch and dtype put back afterwards."""
    state = _autocast()
    for device in _DEVICES:
        torch.set_autocast_enabled(device, False)
    try:
        yield
    finally:
        for device, (enabled, dtype) in zip(_DEVICES, state):
            torch.set_autocast_enabled(device, enabled)
            torch.set_autocast_dtype(device, dtype)


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


_FREEZE_LOCK = threading.Lock()
_freezes = 0  # clean rooms open now (in any thread) under the freeze the first of them made


@contextlib.contextmanager
def _collect_only_what_is_new() -> Iterator[None]:
    """While the block runs, ``gc.collect()`` looks only at objects made since it began: every object alive
    before is frozen (``gc.freeze``) and put back afterwards. An experiment that collects garbage to see what
    its own graph keeps alive (units 06, 07, 09, 12) then pays for its own objects, not for the whole process:
    a full collection in a kernel or a test process that imported torch takes 0.15 s or more, and one
    self-test collects eleven times. Garbage the block makes is found as before (it is all new); nothing
    made before the block is collected inside it, which no experiment asks for. A process that froze objects
    itself is left as it is. (Nested blocks and other threads' blocks share the outermost freeze: they are
    counted here, since ``gc.get_freeze_count()`` walks every frozen object.)"""
    global _freezes
    with _FREEZE_LOCK:
        mine = _freezes > 0 or not gc.get_freeze_count()
        if mine:
            if _freezes == 0:
                gc.freeze()
            _freezes += 1
    try:
        yield
    finally:
        if mine:
            with _FREEZE_LOCK:
                _freezes -= 1
                if _freezes == 0:
                    gc.unfreeze()


@contextlib.contextmanager
def clean_room(seed: int = 0, quiet: bool = True) -> Iterator[None]:
    """Run a block in torch's default state; leave the caller's state exactly as it was."""
    before = snapshot()
    with contextlib.ExitStack() as stack:
        stack.enter_context(restored(before))
        stack.enter_context(_collect_only_what_is_new())
        stack.enter_context(_no_modes())
        stack.enter_context(_hooks_enabled())
        stack.enter_context(_no_autocast())
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
