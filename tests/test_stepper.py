"""The backward stepper: node hooks record what arrives at each node and what it passes on."""

import pytest
import torch

from grader import stepper, trace_backward


def chain():
    w = torch.tensor(2.0, requires_grad=True)
    return w, (w * 3) ** 2


def test_chain_rule_node_by_node_1_12_36():
    w, y = chain()
    t = trace_backward(y, names={"w": w, "y": y})
    assert t.nodes() == ["PowBackward0", "MulBackward0", "AccumulateGrad"]
    assert t.grads() == [1.0, 12.0, 36.0] and t.chain() == "1 -> 12 -> 36"
    pow_step, mul_step, acc_step = t.steps
    assert [(slot, to, g.item()) for slot, to, g in pow_step.passed] == [(0, "MulBackward0", 12.0)]
    assert mul_step.passed[1] == (1, "None", None)  # the constant 3 gets nothing
    assert acc_step.passed[0][1] == "w.grad" and acc_step.label == "AccumulateGrad (w)"
    assert w.grad.item() == 36.0  # it was a real backward
    assert t.text().splitlines()[1] == "   1. PowBackward0        receives 1; passes [0] 12 -> MulBackward0"


def test_two_routes_add_at_one_accumulate_grad():
    w = torch.tensor(2.0, requires_grad=True)
    t = trace_backward(3 * w + w**2, names={"w": w})
    acc = [s for s in t if s.node == "AccumulateGrad"]
    assert len(acc) == 1 and acc[0].grad == 7.0 == w.grad.item()


def test_an_explicit_seed_is_a_vector_jacobian_product():
    v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    t = trace_backward(v**2, gradient=torch.ones(3), names={"v": v})
    assert t.steps[0].grad.tolist() == [1.0, 1.0, 1.0]
    assert t.steps[1].grad.tolist() == [2.0, 4.0, 6.0]
    assert "receives [1, 1, 1]; passes [0] [2, 4, 6]" in t.text()


def test_an_error_stops_the_trace_where_backward_raised():
    a = torch.ones(3, requires_grad=True)
    e = a.exp()
    out = (e**2).sum()
    e.add_(1)
    t = trace_backward(out)
    assert "RuntimeError" in t.error and "version" in t.error
    assert t.steps[-1].node == "PowBackward0" and not t.steps[-1].finished
    assert "backward raised here" in t.text() and a.grad is None


def test_hooks_are_removed_afterwards():
    w, y = chain()
    first = trace_backward(y, retain_graph=True)
    second = trace_backward(y, retain_graph=True)
    assert len(first) == len(second) == 3 and w.grad.item() == 72.0
    y.backward()  # no hook of ours fires any more
    assert w.grad.item() == 108.0


def test_the_text_is_deterministic():
    texts = []
    for _ in range(2):
        torch.manual_seed(0)
        x = torch.randn(4, 3, requires_grad=True)
        texts.append(trace_backward((x @ torch.randn(3, 2)).relu().sum(), names={"x": x}).text())
    assert texts[0] == texts[1] and "0x" not in texts[0]


def test_next_and_back_walk_the_steps():
    w, y = chain()
    s = stepper(y, names={"w": w})
    assert s.widget is None and s.position == 1  # outside a kernel: text only
    assert s.next().node == "MulBackward0" and s.next().node == "AccumulateGrad"
    assert s.next().node == "AccumulateGrad" and s.position == 3  # stops at the end
    assert s.back().node == "MulBackward0"
    assert str(s) == s.trace.text()


def test_the_widget_buttons():
    pytest.importorskip("ipywidgets")
    from grader.learner.stepper import Stepper

    w, y = chain()
    s = Stepper(trace_backward(y, names={"w": w}), interactive=True)
    assert s.back_button.disabled and not s.next_button.disabled
    assert "step 1 of 3" in s.counter.value and "receives 1" in s.detail.value
    s.next_button.click()
    assert s.position == 2 and "receives 12" in s.detail.value
    assert "background:#fff8c5" in s.table.value
    s.next_button.click()
    assert s.next_button.disabled and "w.grad" in s.detail.value
    s.back_button.click()
    assert s.position == 2
    bundle = s._repr_mimebundle_()
    assert bundle["text/plain"] == s.trace.text() and "application/vnd.jupyter.widget-view+json" in bundle
    dot = s.trace.dot(2)
    assert "[0] 12" in dot and "receives 12" in dot
