"""Unit 11's exercises: known-good Functions, written the way a learner would, and plausible buggy ones,
each refused by the report on its smallest failing input."""

import torch
from torch.autograd import Function
from torch.autograd.function import once_differentiable

# --- 11.stable-softplus ------------------------------------------------------------------------------


class StableSoftplus(Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(x)


class SoftplusSavesOutput(StableSoftplus):
    """Also right: the slope from the output, sigmoid(x) = 1 - exp(-y)."""

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * -torch.expm1(-y)


class NaiveSoftplus(StableSoftplus):
    """log(1 + exp(x)): inf once exp overflows."""

    @staticmethod
    def forward(x):
        return torch.log(1 + torch.exp(x))


class SoftplusOverflowingBackward(StableSoftplus):
    """A stable forward, but the slope as exp(x) / (1 + exp(x)): inf / inf = nan at large x."""

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.exp(x) / (1 + torch.exp(x))


class SoftplusWrongSign(StableSoftplus):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(-x)


class SoftplusIgnoresGrad(StableSoftplus):
    """Returns the slope itself, not the vector–Jacobian product."""

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return torch.sigmoid(x)


class SoftplusSavesBoth(StableSoftplus):
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output)

    @staticmethod
    def backward(ctx, grad):
        x, _ = ctx.saved_tensors
        return grad * torch.sigmoid(x)


class SoftplusStashes(StableSoftplus):
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.x = inputs[0]

    @staticmethod
    def backward(ctx, grad):
        return grad * torch.sigmoid(ctx.x)


class SoftplusOnce(StableSoftplus):
    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(x)


class SoftplusNoVmapRule(StableSoftplus):
    generate_vmap_rule = False


# --- 11.sigmoid-inplace -----------------------------------------------------------------------------


class SigmoidInPlace(Function):
    @staticmethod
    def forward(x):
        return x.sigmoid_()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_dirty(inputs[0])
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y * (1 - y)


class SigmoidForgetsMarkDirty(SigmoidInPlace):
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)


class SigmoidNotInPlace(SigmoidInPlace):
    @staticmethod
    def forward(x):
        return x.sigmoid()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)


class SigmoidSavesInput(SigmoidInPlace):
    """Saves 'the input' and takes it for x: it is the same tensor, already holding sigmoid(x)."""

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.mark_dirty(inputs[0])
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * s * (1 - s)


class SigmoidKeepsACopy(Function):
    """Right gradient, from a copy of the input taken before the write (old form, ctx in forward): a new
    tensor kept alive for backward where the output would do."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x.clone())
        ctx.mark_dirty(x)
        return x.sigmoid_()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * s * (1 - s)


class SigmoidWrongSlope(SigmoidInPlace):
    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


# --- 11.round-ste -------------------------------------------------------------------------------------


class RoundSTE(Function):
    @staticmethod
    def forward(x, step):
        return torch.round(x / step) * step

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class STEGradForStep(RoundSTE):
    @staticmethod
    def backward(ctx, grad):
        return grad, grad.sum()


class STETrueSlope(RoundSTE):
    """The true slope of rounding: zero."""

    @staticmethod
    def backward(ctx, grad):
        return torch.zeros_like(grad), None


class STESavesInput(RoundSTE):
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.ones_like(x), None


class STEIgnoresStep(RoundSTE):
    @staticmethod
    def forward(x, step):
        return torch.round(x)


class STEScalesByStep(RoundSTE):
    """Differentiates round(x / step) * step as if round were the identity inside: the chain rule done twice."""

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.step = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        return grad / ctx.step, None


class RoundSTEOldStyle(Function):
    """Also right: the old form with ctx in forward (no vmap here, and none is asked for)."""

    @staticmethod
    def forward(ctx, x, step):
        return torch.round(x / step) * step

    @staticmethod
    def backward(ctx, grad):
        return grad, None


REFERENCE = {
    "11.stable-softplus": StableSoftplus,
    "11.sigmoid-inplace": SigmoidInPlace,
    "11.round-ste": RoundSTE,
}

ALSO_RIGHT = {
    "11.stable-softplus": [SoftplusSavesOutput],
    "11.round-ste": [RoundSTEOldStyle],
}

BUGGY = {
    "11.stable-softplus": [
        NaiveSoftplus,
        SoftplusOverflowingBackward,
        SoftplusWrongSign,
        SoftplusIgnoresGrad,
        SoftplusSavesBoth,
        SoftplusStashes,
        SoftplusOnce,
        SoftplusNoVmapRule,
    ],
    "11.sigmoid-inplace": [
        SigmoidForgetsMarkDirty,
        SigmoidNotInPlace,
        SigmoidSavesInput,
        SigmoidKeepsACopy,
        SigmoidWrongSlope,
    ],
    "11.round-ste": [STEGradForStep, STETrueSlope, STESavesInput, STEIgnoresStep, STEScalesByStep],
}
