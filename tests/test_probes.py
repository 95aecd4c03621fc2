"""Live probes against the figures the syllabus states for torch 2.13 (computed, never typed into the course)."""

import torch
from torch import nn

from grader import probes


def mlp():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    return model, torch.randn(256, 512)


def test_bill_of_the_syllabus_mlp():
    model, x = mlp()
    bill = probes.bill(lambda: model(x).sum(), names=model, inputs={"input": x})
    assert (bill.count, bill.total) == (5, 2_623_488)
    assert "2.weight" in bill.names() and "0.weight" not in bill.names() and "input" in bill.names()
    xg = x.clone().requires_grad_()
    with_input = probes.bill(lambda: model(xg).sum(), names=model, inputs={"input": xg})
    assert with_input.total == 3_672_064 and "0.weight" in with_input.names()
    model[0].requires_grad_(False)
    frozen = probes.bill(lambda: model(x).sum(), names=model)
    assert frozen.total == 1_050_624


def test_a_saved_view_is_billed_at_its_whole_storage():
    base = torch.randn(1000, requires_grad=True) * 1
    bill = probes.bill(lambda: base[:10].sin())
    assert bill.total == 4000 and bill.entries[0].shape == (10,)


def test_versions_show_a_stale_saved_tensor_before_backward():
    a = torch.ones(3, requires_grad=True)
    e = a.exp()
    out = e**2
    assert all(s.state == "ok" for s in probes.saved_tensors(out))
    e.add_(1)
    stale = [s for s in probes.saved_tensors(out) if s.stale]
    assert {(s.node, s.version_saved, s.version_now) for s in stale} == {("PowBackward0", 0, 1), ("ExpBackward0", 0, 1)}


def test_freed_after_backward_but_structure_remains():
    a = torch.ones(3, requires_grad=True)
    out = a.exp().sum()
    out.backward()
    assert [s.state for s in probes.saved_tensors(out)] == ["freed"]
    assert probes.node_names(out) == ["SumBackward0", "ExpBackward0", "AccumulateGrad"]


def test_depth_and_size_of_a_carried_state_loop():
    w = torch.tensor(0.9, requires_grad=True)
    hidden = torch.tensor(1.0)
    depths = []
    for _ in range(5):
        hidden = hidden * w + 0.1
        depths.append(probes.depth(hidden**2))
    assert depths == [4, 6, 8, 10, 12]
    for _ in range(195):
        hidden = hidden * w + 0.1
    assert probes.depth(hidden**2) == 402  # deep graphs are walked without recursion


def test_reachable_leaves_and_text_tree():
    w = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(1.0, requires_grad=True)
    loss = (w.detach() * 3 + b * w) ** 2
    assert {id(t) for t in probes.reachable_leaves(loss)} == {id(w), id(b)}
    assert probes.leaf_names(loss, {"w": w, "b": b}) == {"w", "b"}
    tree = probes.text_tree(loss, names={"w": w, "b": b})
    assert "AccumulateGrad -> b ()" in tree and "(the same node as above)" not in tree
    assert probes.text_tree(torch.ones(2)) == "(no graph: this tensor has no grad_fn)"


def test_wrapped_numbers_are_told_from_tensors_and_left_out_of_the_bill():
    x = torch.randn(3, requires_grad=True)
    for number in (3, 2.5, 1j):
        kept = (x * number).grad_fn._saved_other
        assert kept.dim() == 0 and probes.is_wrapped_number(kept), number
    for tensor in (torch.tensor(3), torch.tensor(2.5, dtype=torch.float64), torch.tensor(2.5), torch.ones(1)):
        assert not probes.is_wrapped_number((x * tensor).grad_fn._saved_other), tensor
    bill = probes.bill(lambda: (x * 3).sin())
    assert bill.count == 1 and bill.total == 12
    entries = probes.saved_tensors(bill.output)
    assert [(e.node, e.wrapped, e.value) for e in entries] == [("SinBackward0", False, None), ("MulBackward0", True, 3)]
    assert "_saved_other (wrapped number 3)" in probes.text_tree(bill.output, saved=True)


def test_lists_of_saved_tensors_are_read_too():
    class KeepsBoth(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, grad * a

    a, b = torch.randn(4, requires_grad=True), torch.randn(4)
    out = KeepsBoth.apply(a, b)
    assert [e.attribute for e in probes.saved_tensors(out)] == ["saved_tensors[0]", "saved_tensors[1]"]
    b.add_(1)
    assert [e.stale for e in probes.saved_tensors(out)] == [False, True]
    picked = a[torch.tensor([0, 2])]
    assert [e.attribute for e in probes.saved_tensors(picked)] == ["_saved_indices[0]"]
