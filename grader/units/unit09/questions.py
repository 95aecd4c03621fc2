"""Unit 09, saved-tensor hooks in practice: measuring under them, offloading and compression, each measured
(checkpointing, the third way to make saved tensors cheaper, is unit 09b).

Memory is measured two ways. ``probes.bill`` counts what goes through a saved-tensor pack hook (it
installs its own pair, so it sees nothing under another pair: only the innermost pair runs).
:class:`~grader.units.unit09.support.MemoryWatch` counts what the allocator would: the bytes of every storage
created while it is active, how many are still alive now (``held()``) and the most alive at once (``peak``). On a
GPU the notebook also reads ``torch.cuda.max_memory_allocated``; nothing graded depends on a GPU or
on timing.

The instruments, models and pairs live in :mod:`grader.units.unit09.support`; the exercise's generated programs,
and how a learner's pair is run on them, in :mod:`grader.units.unit09.cases`; its answer kind in
:mod:`grader.units.unit09.kinds`; the self-tests' program generators in :mod:`grader.units.unit09.generators`.
"""

from __future__ import annotations

import torch

from grader import probes
from grader.engine.kinds import Choice, FunctionPair, Number
from grader.engine.question import exercise, predict_then_run, self_test
from grader.units.unit05.support import syllabus_mlp  # unit 05's very MLP: 09's prompts quote its bill
from grader.units.unit09.cases import call_half_guard, guard_truth, half_guard_cases
from grader.units.unit09.generators import bill_pair_program, saves_program, unpack_program
from grader.units.unit09.kinds import GuardVerdict
from grader.units.unit09.support import (
    ALIAS_PAIR,
    COPY_PAIR,
    SHARES,
    chain_held,
    gelu_mlp,
    half_error_on_chain,
    half_pack,
    half_pack_activations,
    half_unpack,
    half_unpack_activations,
    held_after,
    share,
    square_grad,
    under_hooks,
    write_after_save,
)

# =====================================================================================================
# 1. One pair at a time
# =====================================================================================================


@predict_then_run(
    "09.innermost-pair",
    Number(tol=0),
    prompt="a = torch.ones(4, requires_grad=True). Two pairs, outer and inner, each pack adding 1 to its own "
    "counter and returning t.detach(). with saved_tensors_hooks(*outer): with saved_tensors_hooks(*inner): "
    "b = a.exp(); c = b.sin(). How many times did each pack run? Answer [outer's count, inner's count].",
    explain="Pairs do not stack: the innermost pair in force receives every save, and the outer one is not "
    "called at all. exp kept its output and sin kept its input, the same b, so inner counted 2.",
    misconceptions=[
        (
            lambda truth: [truth[1], truth[1]],
            "Pairs do not stack: while the inner pair is in force, the outer pack is never called.",
        )
    ],
)
def innermost_pair():
    counts = {"outer": 0, "inner": 0}

    def counter(name):
        def pack(t):
            counts[name] += 1
            return t.detach()

        return pack

    a = torch.ones(4, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(counter("outer"), lambda t: t):
        with torch.autograd.graph.saved_tensors_hooks(counter("inner"), lambda t: t):
            b = a.exp()
            b.sin()
    return [counts["outer"], counts["inner"]]


_MLP = (
    "unit 05's MLP: torch.manual_seed(0); model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), "
    "nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1)); x = torch.randn(256, 512) (no grad)"
)


@predict_then_run(
    "09.held-vs-bill",
    Number(tol=0),
    prompt=f"{_MLP}. probes.bill says its forward pass keeps 5 storages, 2,623,488 bytes. with MemoryWatch() as "
    "watch: loss = model(x).sum(); then watch.held(): the bytes created inside the block that are still "
    "alive (the 4-byte loss included). What is it?",
    explain="The bill counts everything the graph keeps, x and the weights included; those existed before "
    "the forward pass and would exist without it. What the forward pass added and still holds is "
    "the two ReLU outputs, 256 x 512 x 4 bytes each, and the loss.",
    misconceptions=[
        (
            lambda truth: truth - 4,
            "4 bytes short: the loss itself, a 0-dim float32 made by sum() inside the block, is new memory too.",
        )
    ],
)
def held_vs_bill():
    model, x = syllabus_mlp()
    return held_after(lambda: model(x).sum())


# =====================================================================================================
# 2. Offloading
# =====================================================================================================


_MULTIPLES = (
    "about the same as the plain run",
    "between 1 and 2 times the plain run",
    "between 2 and 4 times the plain run",
    "more than 4 times the plain run",
)


def _multiple(ratio: float) -> str:
    """The band of _MULTIPLES that a held/plain ratio falls in ("about the same": within 5 %)."""
    if abs(ratio - 1) <= 0.05:
        return _MULTIPLES[0]
    return _MULTIPLES[1] if ratio < 2 else _MULTIPLES[2] if ratio <= 4 else _MULTIPLES[3]


@predict_then_run(
    "09.copy-pair-multiple",
    Choice(*_MULTIPLES),
    prompt=f"{_MLP}. Two pairs: alias, pack(t) = t.detach(); copy, pack(t) = t.detach().clone(); both unpack "
    "by returning what pack kept. Memory held after the forward pass (MemoryWatch, loss included) under the "
    "copy pair, compared with the plain run (1,048,580 bytes)? One of " + ", ".join(repr(s) for s in _MULTIPLES) + ".",
    explain="The copy pair allocates once per save: x, each ReLU output twice (kept by the ReLU and by the next "
    "Linear), 2.weight and 4.weight, about 3.5 times the plain run's two ReLU outputs, while the ReLU outputs "
    "themselves are freed once nothing but the copies needs them. (The alias pair keeps exactly what plain "
    "autograd keeps: detach() shares the memory.)",
    misconceptions=[
        (
            _MULTIPLES[0],
            "that is the alias pair: clone() allocates new memory at every save, and pack is handed tensors that "
            "existed before the forward pass too (x, the weights)",
        ),
        (
            _MULTIPLES[3],
            "the copies do not come on top of the ReLU outputs: once every node keeps a copy, nothing keeps the "
            "originals and they are freed",
        ),
    ],
)
def copy_pair_multiple():
    model, x = syllabus_mlp()
    plain, copied = (held_after(lambda: under_hooks(pair, lambda: model(x).sum())) for pair in (ALIAS_PAIR, COPY_PAIR))  # noqa: B023  (each is run at once, in its own iteration)
    return _multiple(copied / plain)


@predict_then_run(
    "09.offload-write-grad",
    Number(),
    prompt="On a machine without a GPU: p = torch.ones(3, requires_grad=True); under a pair: q = p.exp(); after "
    "the block q.add_(1); q.sum().backward(). Without hooks this raises at backward. What is p.grad[0] "
    "under torch.autograd.graph.save_on_cpu() (the default, pin_memory=False), and under the copy pair "
    "(pack(t) = t.detach().clone())? Answer [save_on_cpu, copy], 4 decimals.",
    explain="Under hooks nobody checks versions. save_on_cpu's pack returns tensor.cpu(), which for a tensor "
    "already on the CPU is q itself, so backward reads the written value exp(1) + 1; the copy pair kept a "
    "copy taken before the write, so backward reads exp(1). Neither raises.",
    misconceptions=[
        (
            lambda truth: [truth[1], truth[1]],
            "save_on_cpu's pack is tensor.cpu(), and on a CPU that is q itself, not a copy: the write reached "
            "what backward reads.",
        )
    ],
)
def offload_write_grad():
    return [write_after_save(torch.autograd.graph.save_on_cpu()), write_after_save(COPY_PAIR)]


# =====================================================================================================
# 3. Compression
# =====================================================================================================

_ERROR_BANDS = ("under 1e-5", "between 1e-5 and 1e-2", "over 1e-2")


def _error_band(error: float) -> str:
    return _ERROR_BANDS[0] if error < 1e-5 else _ERROR_BANDS[1] if error <= 1e-2 else _ERROR_BANDS[2]


_CHAIN = (
    "four Blocks (Linear(128, 512), GELU, Linear(512, 128)) in an nn.Sequential, torch.manual_seed(0), "
    "input x = torch.randn(64, 128) without grad"
)


@predict_then_run(
    "09.half-error-band",
    Choice(*_ERROR_BANDS),
    prompt=f"{_CHAIN}; loss = model(x).sum(). Under the pair pack(t) = (t.dtype, t.detach().to(torch.float16)), "
    "unpack((dtype, h)) = h.to(dtype), every saved tensor is kept in half precision. Over all parameters, "
    "the largest |gradient error| divided by the largest |exact gradient| of the same parameter: in which "
    "band is it? One of " + ", ".join(repr(s) for s in _ERROR_BANDS) + ".",
    explain="float16 keeps 11 significant bits, so each saved value comes back off by at most 2^-11, about 5e-4, "
    "of itself. The gradients are sums of products of such values, and their error is of the same order: "
    "far above float32's own rounding (about 1e-7), far below 1e-2.",
    misconceptions=[
        ("under 1e-5", "that is float32's own rounding; float16 keeps 11 significant bits, an error near 5e-4"),
        ("over 1e-2", "each saved value is off by at most 2^-11, about 5e-4, and the errors do not grow by 20 here"),
    ],
)
def half_error_band():
    return _error_band(half_error_on_chain())


@predict_then_run(
    "09.half-held",
    Choice(*SHARES),
    prompt=f"The same {_CHAIN}. Memory held after the forward pass (MemoryWatch) under that float16 pair, "
    "compared with the plain run: " + ", ".join(repr(s) for s in SHARES) + ".",
    explain="pack is also handed the parameters: each Linear keeps weight.t() (a view of the parameter) to "
    "send a gradient to its input. The parameter stays alive for the optimizer anyway, so its float16 "
    "copy is memory added, and with a batch of 64 the weights outweigh the activations.",
)
def half_held():
    return share(chain_held((half_pack, half_unpack)) / chain_held())


@predict_then_run(
    "09.gelu-mlp-share",
    Choice(*SHARES),
    prompt=f"{_MLP}, but with nn.GELU() in place of each nn.ReLU() (seed 0 as before). Memory held after the "
    "forward pass (MemoryWatch, loss included) under the float16 pair that leaves parameters (and views of "
    "them) alone and compresses everything else, compared with the plain run of this GELU model: "
    + ", ".join(repr(s) for s in SHARES)
    + ".",
    explain="GELU keeps its input (the Linear's output) and the next Linear keeps GELU's output: four "
    "activations, each saved once, so their float16 copies take half their bytes and the originals are "
    "freed. On top comes the float16 copy of x, which existed before and was not counted: more than half, "
    "less than all. (With ReLU, each output is saved twice and compression holds more than the plain run.)",
    misconceptions=[
        (
            SHARES[0],
            "the activations are halved, but pack is also handed x, kept by the first Linear: its float16 copy is "
            "memory added",
        ),
        (SHARES[2], "that is the ReLU model, whose outputs are saved twice; each GELU activation is saved once"),
    ],
)
def gelu_mlp_share():
    model, x = gelu_mlp()
    plain = held_after(lambda: model(x).sum())
    pair = (half_pack_activations, half_unpack_activations)
    return share(held_after(lambda: under_hooks(pair, lambda: model(x).sum())) / plain)


_SQUARE_OUTCOMES = ("600 to 3 digits", "inf", "nan", "0")


@predict_then_run(
    "09.half-overflow-saved",
    Choice(*_SQUARE_OUTCOMES),
    prompt="x = torch.tensor([300.0], requires_grad=True); under the float16 pair (pack(t) = (t.dtype, "
    "t.detach().to(torch.float16))), y = x ** 2, whose value 90,000 is beyond float16's largest finite "
    "value, 65504; then y.backward(). What is x.grad[0]? One of " + ", ".join(repr(s) for s in _SQUARE_OUTCOMES) + ".",
    explain="Only what a node saves goes through pack. x ** 2 saves its input x, 300, which float16 holds "
    "exactly, and its backward computes 2 * 300 in float32; its output, 90,000, is never saved, so it never "
    "overflows. exp, which saves its output, is the op for which a large result becomes inf.",
    misconceptions=[
        (
            "inf",
            "the output 90,000 would overflow, but x ** 2 does not save it: pack is handed x, 300, which fits",
        )
    ],
)
def half_overflow_saved():
    return square_grad(torch.float16)


# =====================================================================================================
# Self-test
# =====================================================================================================


def _bill_outside(p, inside_part: str) -> int:
    """The bill of the drawn model when the pair is entered around ``inside_part`` ("first": model[:cut], "rest":
    model[cut:]) instead: what the learner who puts the pair on the other side of the cut would count."""
    ns = p.run()
    model, x, cut = ns[p.facts["model"]], ns[p.facts["x"]], p.facts["cut"]

    def forward():
        if inside_part == "first":
            with torch.autograd.graph.save_on_cpu():
                h = model[:cut](x)
            return model[cut:](h).sum()
        h = model[:cut](x)
        with torch.autograd.graph.save_on_cpu():
            return model[cut:](h).sum()

    return probes.bill(forward).total


def _plain_bill(p) -> int:
    ns = p.run()
    return probes.bill(lambda: ns[p.facts["model"]](ns[p.facts["x"]]).sum()).total


def _other_side(truth, p):
    wrong = _bill_outside(p, "rest" if p.facts["inside first"] else "first")
    return wrong if wrong not in (truth, 0, _plain_bill(p)) else None


@self_test(
    "09.self-bill-half-offloaded",
    Number(tol=0),
    program=bill_pair_program,
    explain="probes.bill counts what its own pack receives, and only the innermost pair in force receives a save. "
    "While the pair entered inside forward() is in force (save_on_cpu's, or one of your own), it is the innermost "
    "and takes every save made there; bill's pair is the innermost only for the saves made outside that with. "
    "bill reports what those saves keep, each storage once at its full size: a Linear keeps its input when its "
    "weight trains and its weight when its input needs a gradient; ReLU and Tanh keep their output, GELU its input. "
    "A tensor counts where it is saved, not where it was made.",
    hints=(
        "Which pair is the innermost in force for each save: those made inside the with, and those made outside it?",
        "List what each layer run outside the with keeps (a Linear: its input, and its weight when its input needs a "
        "gradient; the activation: its output or its input), then count each storage once.",
    ),
    misconceptions=[
        (0, "bill's pair is the innermost for the saves made outside the with: those reach it"),
        (
            lambda truth, p: _plain_bill(p) if _plain_bill(p) != truth else None,
            "that is the plain bill; inside the with, the pair entered there receives the saves instead of bill's",
        ),
        (
            _other_side,
            "that counts the saves made inside the with; those go to the pair entered there, and bill sees the "
            "saves made outside it",
        ),
    ],
)
def self_bill_half_offloaded(p):
    return probes.bill(p.run()["forward"]).total


def _float16_made(forward) -> int:
    """Bytes of the float16 tensors the naive pack creates while ``forward()`` runs under it."""
    made = []

    def pack(t):
        small = t.detach().to(torch.float16)
        made.append(small.untyped_storage().nbytes())
        return t.dtype, small

    under_hooks((pack, half_unpack), forward)
    return sum(made)


def _per_storage(truth, p):
    wrong = [truth[0], probes.bill(p.run()["forward"]).count * p.facts["n"] * 2]
    return wrong if wrong != list(truth) else None


@self_test(
    "09.self-saved-three-times",
    Number(tol=0),
    program=saves_program,
    explain="The bill counts each storage that reaches its pack once, at its full size. pack runs once for each "
    "tensor a node saves: exp, tanh and sigmoid keep their output, sin and cos their input, a product keeps each "
    "factor that the other's gradient needs, a square its input. A storage saved several times is copied each "
    "time, at 2 bytes a value whatever its dtype. A Python number wrapped as a tensor (the 2 of * 2) is saved but "
    "never reaches a pack hook.",
    hints=(
        "List the saves: what does the first op keep, and what does the next keep for each of its operands?",
        "The bill counts storages once; pack is called once for each saved tensor, and each call makes its own copy "
        "at 2 bytes a value.",
    ),
    misconceptions=[
        (
            _per_storage,
            "pack runs once for each tensor a node saves, not once per storage: a tensor saved several times is "
            "copied several times",
        ),
        (
            lambda truth, p: (
                [truth[1] // 2 * p.facts["itemsize"], truth[1]]
                if truth[1] // 2 * p.facts["itemsize"] != truth[0]
                else None
            ),
            "the bill counts each storage once, however many nodes save it",
        ),
        (
            lambda truth, p: [truth[0], truth[1] + 2] if p.facts["wrapped"] else None,
            "the 2 of * 2 is saved as a wrapped number, which never reaches a pack hook: pack makes no copy of it",
        ),
        (
            lambda truth, p: [truth[0], 2 * truth[1]] if p.facts["itemsize"] == 8 else None,
            "float16 is 2 bytes a value whatever the dtype it comes from: a copy of a float64 tensor is a quarter of "
            "its bytes",
        ),
    ],
)
def self_saved_three_times(p):
    forward = p.run()["forward"]
    return [probes.bill(forward).total, _float16_made(forward)]


@self_test(
    "09.self-unpack-partial",
    Number(tol=0),
    program=unpack_program,
    explain="pack runs once for each tensor a node saves while the pair is in force (a Python number wrapped as a "
    "tensor never reaches it). unpack runs when a node that runs in backward reads what it saved: "
    "torch.autograd.grad(loss, t) runs only the nodes between loss and t, so what the nodes behind t saved is never "
    "unpacked; a gradient for the leaf, or loss.backward(), runs every node.",
    hints=(
        "Count the saves first: what does each op keep (its input, its output, a number, nothing)?",
        "unpack runs when a node that runs in backward reads its saved tensor. Which nodes does the gradient asked "
        "for run?",
    ),
    misconceptions=[
        (
            lambda truth: [truth[0], truth[0]] if truth[1] != truth[0] else None,
            "backward stops at the tensor asked for: the nodes behind it never run, so what they saved is never "
            "unpacked",
        ),
        (
            lambda truth, p: [truth[0] - 1, truth[1]] if p.facts["shared"] else None,
            "a tensor kept by two nodes, or twice by one, is packed once for each save",
        ),
        (
            lambda truth, p: [truth[0] + 1, truth[1]] if p.facts["number"] else None,
            "the number of * 3 is saved as a wrapped tensor, which never reaches a pack hook",
        ),
    ],
)
def self_unpack_partial(p):
    return list(p.run()["counts"])


# =====================================================================================================
# Exercise: a float16 pair that keeps the version check
# =====================================================================================================


@exercise(
    "09.half-guard",
    FunctionPair(returns=GuardVerdict(), cases=half_guard_cases, call=call_half_guard),
    prompt="Write pack(t) and unpack(packed) for torch.autograd.graph.saved_tensors_hooks that keep each saved "
    "floating-point activation in float16 (2 bytes a value, without keeping the original's memory alive) and "
    "give it back in its own dtype; keep a parameter (a leaf that requires grad, or a view of one) as "
    "t.detach(), since the program holds it anyway and a copy would only add to it; leave other tensors "
    "(indices, some past 2048, which float16 cannot hold exactly) exact; and bring back the check hooks "
    "switch off: unpack raises when the saved tensor was written in place after it was packed. "
    "check('09.half-guard', (pack, unpack)) runs generated programs under your pair: where torch's own "
    "check passes, it must be silent, with gradients within 1% of torch's (plus 1e-3, or three times "
    "the error float16 storage itself causes on that program, if larger), holding at most 2 bytes per "
    "saved activation value and nothing for a parameter once the forward pass is over; where torch's "
    "check fails, it must raise at backward.",
    explain="pack stores the float16 copy, the dtype, the version at save time and a weak reference to the "
    "tensor whose counter the write would move (the base of a view): the weak reference reads the "
    "counter later without keeping the memory. A dead reference means the tensor object is gone; only "
    "an alias that outlived it (a detach() made elsewhere) could still write the memory.",
    hints=(
        "Three jobs: store a float16 copy (t.detach().to(torch.float16)), remember the dtype, and remember "
        "enough to tell at unpack time whether t was written since. Leave non-floating tensors exact.",
        "The version counter lives on the tensor, so unpack must be able to read t._version later without "
        "keeping t's memory alive, and without holding t itself (a pack that returns t can make a "
        "reference cycle). weakref.ref reads a tensor while something else keeps it alive.",
        "Whose counter moves when a view is written? A temporary view (h[1:]) dies at once, while its base "
        "lives on and shares the counter: watch t._base when there is one. A dead reference is not a write.",
    ),
)
def half_guard(case):
    return guard_truth(case)[0]
