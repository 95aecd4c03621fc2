"""Unit 05's shortcuts: the model built from the spec and measured, instead of the rule reasoned out."""

import re

import torch
from torch import nn

from grader import probes
from tests.shortcuts._around import graders_answer, in_thread, ops_back_on


def _build(spec):
    parts = []
    for i, layer in enumerate(spec.layers):
        parts.append(nn.Linear(layer.in_features, layer.out_features, dtype=spec.dtype))
        if i < len(spec.layers) - 1:
            parts.append(nn.ReLU())
    model = nn.Sequential(*parts)
    for layer in spec.layers:
        if layer.frozen:
            model[layer.index].requires_grad_(False)
    x = torch.randn(spec.batch, spec.layers[0].in_features, dtype=spec.dtype, requires_grad=spec.input_requires_grad)
    return model, x


def bill_by_the_course_probe(spec):
    """[wrapper] Builds the model and asks the course's own bill."""
    model, x = _build(spec)
    bill = probes.bill(lambda: model(x).sum())
    return bill.count, bill.total


def bill_by_a_pack_hook(spec):
    """[wrapper] Builds the model and counts storages through a pack hook, as section 3 measured them."""
    model, x = _build(spec)
    kept = {}

    def pack(t):
        kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x).sum()
    return len(kept), sum(kept.values())


def bill_weight_or_input_rule(spec):
    """[heuristic] 'A Linear keeps its input if its weight trains OR its input needs grad', the rule the reviewer
    tried: right for the first layer, wrong once a ReLU between them is not recorded."""
    size = spec.dtype.itemsize
    storages, total, needs = 0, 0, spec.input_requires_grad
    for layer in spec.layers:
        if not layer.frozen or needs:
            storages += 1
            total += spec.batch * layer.in_features * size
        if needs:
            storages += 1
            total += layer.in_features * layer.out_features * size
        needs = needs or not layer.frozen
    return storages, total


def saved_by_building(spec):
    """[wrapper] Builds the model and reads which parameters the nodes kept (_saved_* attributes)."""
    model, x = _build(spec)
    loss = model(x).sum()
    params = {p.untyped_storage().data_ptr(): n for n, p in model.named_parameters()}
    found = set()
    for fn in probes.nodes(loss):
        for value in probes.saved_attributes(fn).values():
            if isinstance(value, torch.Tensor) and value.untyped_storage().data_ptr() in params:
                found.add(params[value.untyped_storage().data_ptr()])
    return found


def saved_the_trainable_weights(spec):
    """[heuristic] 'A weight is kept when it trains': freezing taken to stop the save."""
    return {f"{layer.index}.weight" for layer in spec.layers if not layer.frozen}


SHORTCUTS = {
    "05.predict-bill": [bill_by_the_course_probe, bill_by_a_pack_hook, bill_weight_or_input_rule],
    "05.saved-parameters": [saved_by_building, saved_the_trainable_weights],
}


# --- the independent attempt of issue 45 (item 4) ------------------------------------------------------------


def _measured(spec):
    """The model the spec describes, built from its own source (spec.source(), which section 7 prints), and the
    course's bill of model(x).sum()."""
    ns = {"torch": torch, "nn": nn}
    exec(spec.source(), ns)
    model, x = ns["model"], ns["x"]
    return probes.bill(lambda: model(x).sum(), names=model, inputs={"input": x})


def _params_in(bill):
    return {m.group(0) for e in bill.entries for m in [re.search(r"\d+\.(weight|bias)", e.what)] if m}


@ops_back_on
def bill_with_the_ops_back_on(spec):
    """[switch] Pops the dispatch mode that refuses torch's operations, builds the model and asks the bill."""
    bill = _measured(spec)
    return len(bill.entries), bill.total


@ops_back_on
def saved_with_the_ops_back_on(spec):
    """[switch] The same, reading the parameters' names off the bill."""
    return _params_in(_measured(spec))


@in_thread
def bill_in_a_thread(spec):
    """[switch] Builds and measures the model in another thread, which the (thread-local) switch does not reach."""
    bill = _measured(spec)
    return len(bill.entries), bill.total


@in_thread
def saved_in_a_thread(spec):
    """[switch] The same, reading the parameters' names off the bill."""
    return _params_in(_measured(spec))


def bill_from_the_grader(spec):
    """[stack] torch's answer, q.run(case), from the grader's frame up the call stack."""
    return graders_answer()


def saved_from_the_grader(spec):
    """[stack] torch's answer, q.run(case), from the grader's frame up the call stack."""
    return graders_answer()


@ops_back_on
def bill_by_a_pack_hook_with_the_ops_back_on(spec):
    """[switch] The model built from the spec's fields (no source compiled, no course tool), the dispatch mode
    refusing torch's operations popped, and the storages counted through a pack hook."""
    return bill_by_a_pack_hook(spec)


@ops_back_on
def saved_by_a_pack_hook_with_the_ops_back_on(spec):
    """[switch] The same, naming the parameters whose storage a pack hook sees."""
    model, x = _build(spec)
    names = {p.untyped_storage().data_ptr(): name for name, p in model.named_parameters()}
    seen = set()

    def pack(t):
        seen.add(t.untyped_storage().data_ptr())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x).sum()
    return {names[ptr] for ptr in seen if ptr in names}


OPEN = {
    "05.predict-bill": [
        bill_with_the_ops_back_on,
        bill_by_a_pack_hook_with_the_ops_back_on,
        bill_in_a_thread,
        bill_from_the_grader,
    ],
    "05.saved-parameters": [
        saved_with_the_ops_back_on,
        saved_by_a_pack_hook_with_the_ops_back_on,
        saved_in_a_thread,
        saved_from_the_grader,
    ],
}
