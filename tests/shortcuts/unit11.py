"""Unit 11's shortcuts: a stable softplus that borrows torch's stable formula instead of writing one, and the
naive rules each exercise's prose warns against."""

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import _pop_mode_temporarily


def _softplus_function(name, doc, forward):
    class Borrowed(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return forward(x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * torch.sigmoid(x)

    Borrowed.__name__ = Borrowed.__qualname__ = name
    Borrowed.__doc__ = doc
    return Borrowed


# [wrapper] torch's own op, called the ways a learner would
FSoftplus = _softplus_function(
    "FSoftplus", "[wrapper] forward returns F.softplus(x): the reference op itself.", F.softplus
)
ModuleSoftplus = _softplus_function(
    "ModuleSoftplus", "[wrapper] forward runs nn.Softplus, which calls the same op.", lambda x: torch.nn.Softplus()(x)
)
AtenSoftplus = _softplus_function(
    "AtenSoftplus",
    "[wrapper] forward calls torch.ops.aten.softplus directly, past torch.nn.functional.",
    lambda x: torch.ops.aten.softplus(x, 1, 20),
)
LogAddExp = _softplus_function(
    "LogAddExp",
    "[wrapper] forward is torch.logaddexp(x, 0), the library's stable log(exp(x) + exp(0)).",
    lambda x: torch.logaddexp(x, torch.zeros_like(x)),
)
LogSumExp = _softplus_function(
    "LogSumExp",
    "[wrapper] forward is a logsumexp over (x, 0).",
    lambda x: torch.logsumexp(torch.stack([x, torch.zeros_like(x)]), 0),
)
Naive = _softplus_function(
    "Naive",
    "[heuristic] log(1 + exp(x)) as written: overflows past x = 709, the trap the section opens with.",
    lambda x: torch.log(1 + torch.exp(x)),
)
Clipped = _softplus_function(
    "Clipped",
    "[heuristic] clips x before exp: finite, but wrong wherever x > 700.",
    lambda x: torch.log1p(torch.exp(x.clamp(max=700))),
)

SHORTCUTS = {"11.stable-softplus": [FSoftplus, ModuleSoftplus, AtenSoftplus, LogAddExp, LogSumExp, Naive, Clipped]}


class TorchSigmoidInPlace(torch.autograd.Function):
    """[wrapper] A Function in name only: apply replaced by torch's own h.sigmoid_(), node and all."""

    apply = staticmethod(lambda h: h.sigmoid_())


class CopyThenSigmoid(torch.autograd.Function):
    """[heuristic] Out of place: returns a new tensor and leaves h as it was, the write the exercise is about
    never made."""

    @staticmethod
    def forward(x):
        return torch.sigmoid(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * (1 - y)


class TorchRoundTrick(torch.autograd.Function):
    """[wrapper] apply replaced by the detach trick the exercise is checked against: autograd's node, not a backward
    of its own."""

    apply = staticmethod(lambda x, step: x + (torch.round(x / step) * step - x).detach())


class RoundWithZeroSlope(torch.autograd.Function):
    """[heuristic] round's own slope, zero: the gradient a straight-through estimator exists to replace."""

    @staticmethod
    def forward(x, step):
        return torch.round(x / step) * step

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g * 0, None


SHORTCUTS["11.sigmoid-inplace"] = [TorchSigmoidInPlace, CopyThenSigmoid]
SHORTCUTS["11.round-ste"] = [TorchRoundTrick, RoundWithZeroSlope]


# --- the independent attempt of issue 45 (item 4) ------------------------------------------------------------


def _softplus_with_the_ops_back_on(x):
    with _pop_mode_temporarily():  # the innermost dispatch mode: the one refusing softplus and its kin
        return F.softplus(x)


SoftplusOpsBackOn = _softplus_function(
    "SoftplusOpsBackOn",
    "[switch] forward pops the dispatch mode that refuses the reference op, then returns F.softplus(x).",
    _softplus_with_the_ops_back_on,
)


class SigmoidWrittenWithoutMarkDirty(torch.autograd.Function):
    """[heuristic] Writes sigmoid into x and returns it, but never tells autograd (no ctx.mark_dirty): torch itself
    refuses to save an input returned as-is."""

    @staticmethod
    def forward(x):
        return x.sigmoid_()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * (1 - y)


class RoundClippedSTE(torch.autograd.Function):
    """[heuristic] The clipped straight-through estimator of the quantization papers: the gradient passes only
    where |x| <= 1 (hardtanh's slope), not everywhere as the prompt asks (refused on the gradient at x = 1.1,
    and for keeping x)."""

    @staticmethod
    def forward(x, step):
        return torch.round(x / step) * step

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x.abs() <= 1), None


SHORTCUTS["11.sigmoid-inplace"] += [SigmoidWrittenWithoutMarkDirty]
SHORTCUTS["11.round-ste"] += [RoundClippedSTE]
OPEN = {"11.stable-softplus": [SoftplusOpsBackOn]}
