"""Unit 09's shortcuts: a float16 pair that compresses what the unit said not to, or leaves the check to torch."""

import torch

from tests.reference import unit09 as ref
from tests.reference.unit09 import Pair, unpack_half


def pack_save_on_cpu(t):
    """[wrapper] torch's own save_on_cpu pack, which on a CPU keeps t itself: no compression, no check."""
    return t


def unpack_save_on_cpu(t):
    return t


def pack_float16_everything(t):
    """[heuristic] The section's first pair, pack_float16: every tensor in float16, no version kept."""
    return t.dtype, t.detach().to(torch.float16)


def unpack_float16_everything(packed):
    dtype, small = packed
    return small.to(dtype)


def pack_parameters_too(t):
    """[heuristic] The old prompt's letter: parameters in float16 too, which section 3 showed adds memory."""
    return ref.pack_parameters_too(t)


def pack_indices_through_float16(t):
    """[heuristic] Every tensor through float16, indices too: exact only up to 2048."""
    return ref.pack_indices_through_float16(t)


SHORTCUTS = {
    "09.half-guard": [
        Pair(pack_save_on_cpu, unpack_save_on_cpu),
        Pair(pack_float16_everything, unpack_float16_everything),
        Pair(pack_parameters_too, unpack_half),
        Pair(pack_indices_through_float16, unpack_half),
    ]
}
