"""The labs: their numbers come from autograd and match the syllabus figures; widgets respond."""

import pytest
import torch

from grader.learner import labs


def test_neuron_numbers_are_autograd_and_agree_with_the_formula():
    n = labs.neuron_numbers(1.0, 2.0)
    assert n["z"] == pytest.approx(1.5)
    assert n["s"] == pytest.approx(0.8176, abs=5e-5)
    assert n["ds_dx"] == pytest.approx(0.2983, abs=5e-5)
    x = torch.tensor(1.0, requires_grad=True)
    (dx,) = torch.autograd.grad(torch.sigmoid(2.0 * x - 0.5), x)
    assert n["ds_dx"] == dx.item()
    for x, w in ((0.5, 2.0), (-1.3, 0.7), (2.0, -3.0)):
        m = labs.neuron_numbers(x, w)
        assert m["ds_dx"] == pytest.approx(m["formula_ds_dx"], abs=1e-6)
        assert m["ds_dw"] == pytest.approx(m["formula_ds_dw"], abs=1e-6)


def test_the_neuron_lab_shows_what_the_local_rules_read():
    n = labs.neuron_numbers(1.0, 2.0)
    saved = {(node, attribute): (which, value) for node, attribute, which, value in n["saved"]}
    assert saved[("SigmoidBackward0", "_saved_result")] == ("s", pytest.approx(n["s"]))
    assert saved[("MulBackward0", "_saved_self")] == ("w", 2.0)
    assert saved[("MulBackward0", "_saved_other")] == ("x", 1.0)
    text = labs.NeuronLab(1.0, 2.0, interactive=False).text()
    assert "z = 1.5000   s = σ(z) = 0.8176" in text and "ds/dx: autograd 0.2983" in text
    assert "SigmoidBackward0._saved_result = 0.8176  (s)" in text


def test_the_neuron_lab_sliders():
    pytest.importorskip("ipywidgets")
    lab = labs.NeuronLab(1.0, 2.0, interactive=True)
    assert "0.2983" in lab.table.value and lab.image.value[:4] == b"\x89PNG"
    lab.x_slider.value = 0.5
    expected = labs.neuron_numbers(0.5, 2.0)["ds_dx"]
    assert lab.x == 0.5 and f"{expected:.4f}" in lab.table.value
    bundle = lab._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "x = 0.5" in bundle["text/plain"]


def test_the_labs_leave_the_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    labs.memory_bill_lab()
    labs.neuron_lab()
    assert torch.equal(torch.rand(3), expected)


def test_the_memory_bill_figures():
    assert labs.bill_for().total == 2_623_488 and labs.bill_for().count == 5
    assert labs.bill_for(input_grad=True).total == 3_672_064
    frozen = labs.bill_for(freeze_first=True)
    assert frozen.total == 1_050_624 and labs.bill_for().total / frozen.total == pytest.approx(2.497, abs=1e-3)
    model, x = labs.syllabus_mlp()
    labs.bill_for(model, x, freeze_first=True, input_grad=True)
    assert all(p.requires_grad for p in model.parameters()) and not x.requires_grad  # copies were used


def test_the_memory_bill_lab_switches():
    pytest.importorskip("ipywidgets")
    lab = labs.MemoryBillLab(interactive=True)
    assert "2,623,488 bytes" in lab.summary.value and lab.image.value[:4] == b"\x89PNG"
    lab.freeze_box.value = True
    assert "1,050,624 bytes" in lab.summary.value
    lab.freeze_box.value = False
    lab.input_box.value = True
    assert "3,672,064 bytes" in lab.summary.value
    text = labs.MemoryBillLab(interactive=False).text()
    assert text.splitlines()[0] == (
        "memory bill (all layers train, input does not require grad): 5 storages, 2,623,488 bytes"
    )
    assert "first layer frozen, input does not require grad    3 storages,  1,050,624 bytes" in text


def test_depth_and_gradient_carrying_versus_detaching():
    carried = labs.depth_series(5)
    detached = labs.depth_series(5, detach=True)
    assert [r.depth for r in carried] == [4, 6, 8, 10, 12]
    assert [r.depth for r in detached] == [4] * 5
    assert carried[-1].w_grad == pytest.approx(26.2882, abs=1e-4)
    assert detached[-1].w_grad == pytest.approx(10.0, abs=1e-4)
    growth = [b.saved_bytes - a.saved_bytes for a, b in zip(carried[1:], carried[2:])]
    assert len(set(growth)) == 1 and growth[0] > 0
    assert len({r.saved_bytes for r in detached}) == 1


def test_the_depth_lab():
    lab = labs.DepthLab(steps=50, interactive=False)
    assert lab.carried[-1].depth == 102 and lab.detached[-1].depth == 4
    text = lab.text()
    assert "     5     12" in text and "    50    102" in text
    assert lab.chart()[:4] == b"\x89PNG"
    pytest.importorskip("ipywidgets")
    lab = labs.DepthLab(steps=30, interactive=True)
    lab.slider.value = 5
    assert "depth <b>12</b>" in lab.summary.value and "26.2882" in lab.summary.value


def test_labs_are_deterministic_text_outside_a_kernel():
    for make in (lambda: labs.neuron_lab(), lambda: labs.memory_bill_lab(), lambda: labs.depth_lab(steps=20)):
        first, second = make(), make()
        assert first.widget is None
        a, b = first._repr_mimebundle_(), second._repr_mimebundle_()
        assert a["text/plain"] == b["text/plain"] and "0x" not in a["text/plain"]
        assert "image/png" in a
