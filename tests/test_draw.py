"""draw(): nodes, leaf names, input slots, saved storages with versions, freed values, text fallback."""

import shutil

import pytest
import torch
from torch import nn

from grader import draw
from grader.learner import drawing


def mlp():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
    return model, torch.randn(256, 512)


def test_the_syllabus_mlp_shows_five_storages_and_their_bytes():
    model, x = mlp()
    d = draw(model(x).sum(), names=[model, {"input": x}])
    assert len(d.storages) == 5 and d.total_bytes == 2_623_488
    assert sorted(s.bytes for s in d.storages) == [2048, 524_288, 524_288, 524_288, 1_048_576]
    named = {s.name for s in d.storages}
    assert {"input", "2.weight", "4.weight"} <= named and "0.weight" not in named
    text = d.text()
    assert "5 saved storages, 2,623,488 bytes" in text.splitlines()[0]
    assert "  5 storages, 2,623,488 bytes" in text
    for figure in ("1,048,576 bytes", "524,288 bytes", "2,048 bytes"):
        assert figure in text
    # a ReLU's output is one storage, saved twice: by the ReLU and by the next layer's addmm
    shared = [s for s in d.storages if len(s.savers) == 2]
    assert len(shared) == 2 and all({a for _, a in s.savers} == {"_saved_result", "_saved_mat1"} for s in shared)
    for leaf in ("0.weight", "0.bias", "2.weight", "4.bias"):
        assert f"AccumulateGrad -> {leaf}" in text


def test_text_is_deterministic_and_free_of_addresses():
    texts = []
    for _ in range(2):
        model, x = mlp()
        texts.append(draw(model(x).sum(), names=[model, {"input": x}]).text())
    assert texts[0] == texts[1] and "0x" not in texts[0]


def test_nodes_leaf_names_slots_and_the_none_edge():
    w = torch.tensor(2.0, requires_grad=True)
    x = w * 3
    y = x**2
    d = draw(y, names={"w": w, "x": x, "y": y})
    assert [n.name for n in d.nodes] == ["PowBackward0", "MulBackward0", "AccumulateGrad"]
    mul = d.nodes[1]
    assert mul.edges == [(0, 2), (1, None)]
    lines = d.text().splitlines()
    assert lines[1] == "y (scalar):"  # a 0-dim tensor's shape in words, not ()
    assert "    [0] MulBackward0" in "\n".join(lines)
    assert "      [0] AccumulateGrad -> w (scalar)" in lines and "      [1] None (no gradient needed)" in lines
    pow_saves = d.nodes[0].saves
    assert [a for a, _ in pow_saves] == ["_saved_self"]
    assert d.storages[pow_saves[0][1] - 1].name == "x"
    source = d.dot()
    # the picture labels each edge [i], as the text and the prose do (next_functions[i])
    assert 'label="[1]", style=dotted' in source and 'n1 -> n2 [label="[0]"]' in source
    assert 'label="1"' not in source and "AccumulateGrad\\nw (scalar)" in source


def test_a_stale_saved_tensor_stands_out_before_backward():
    a = torch.ones(3, requires_grad=True)
    e = a.exp()
    out = e**2
    assert not draw(out).stale
    e.add_(1)
    d = draw(out, names={"a": a, "e": e})
    assert len(d.stale) == 1
    s = d.stale[0]
    assert (s.version_saved, s.version_now) == (0, 1) and s.name == "e"
    assert {a for _, a in s.savers} == {"_saved_self", "_saved_result"}
    assert "STALE: saved at version 0, now 1; backward will raise" in d.text()
    assert "1 STALE" in d.summary() and "#cf222e" in d.dot()
    with pytest.raises(RuntimeError, match="version"):
        out.sum().backward()


def test_what_backward_freed_is_shown():
    a = torch.ones(3, requires_grad=True)
    z = (a * 2).sin().sum()
    before = draw(z)
    assert len(before.storages) >= 1 and not before.freed
    z.backward()
    after = draw(z, names={"a": a})
    assert after.storages == [] and ("SinBackward0", "_saved_self") in after.freed
    assert "SinBackward0  saves _saved_self (freed)" in after.text()
    assert "freed by backward" in after.dot()


def test_several_outputs_share_their_nodes():
    w = torch.tensor(2.0, requires_grad=True)
    h = w * 3
    d = draw({"a": h.sin(), "b": h.cos()}, names={"w": w})
    assert [r[0] for r in d.roots] == ["a (scalar)", "b (scalar)"]
    assert [n.name for n in d.nodes].count("MulBackward0") == 1
    assert "(the same node as above)" in d.text()


def test_a_tensor_without_a_graph():
    d = draw(torch.ones(2))
    assert d.nodes == [] and "no grad_fn" in d.text()


def test_svg_where_dot_exists_and_text_where_it_does_not(monkeypatch):
    w = torch.tensor(2.0, requires_grad=True)
    y = (w * 3) ** 2
    if shutil.which("dot"):
        bundle = draw(y, names={"w": w})._repr_mimebundle_()
        assert "<svg" in bundle["image/svg+xml"] and bundle["text/plain"].startswith("graph: 3 nodes")
    monkeypatch.setattr(drawing.shutil, "which", lambda name: None)
    bundle = draw(y, names={"w": w})._repr_mimebundle_()
    assert set(bundle) == {"text/plain"} and "[0] MulBackward0" in bundle["text/plain"]


def test_bad_input_is_a_plain_type_error():
    with pytest.raises(TypeError, match="draw"):
        draw(3.0)


def test_a_wrapped_number_is_listed_apart_and_left_out_of_the_totals():
    h = torch.randn(1000, requires_grad=True) * 2
    d = draw(h[:10].sin())
    assert (len(d.storages), d.total_bytes) == (1, 4000)
    assert [(w.value, w.dtype, w.bytes) for w in d.wrapped] == [(2, "int64", 8)]
    text = d.text()
    assert "1 wrapped number outside the bill" in text.splitlines()[0]
    assert "MulBackward0  saves _saved_other -> W1" in text and "W1  2 " in text
    assert "not in the bill" in d.dot()


def test_a_custom_functions_saves_are_drawn():
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, grad):
            (a,) = ctx.saved_tensors
            return 2 * a * grad

    a = torch.randn(5, requires_grad=True)
    d = draw(Square.apply(a), names={"a": a})
    assert d.total_bytes == 20 and d.storages[0].name == "a"
    assert "SquareBackward  saves saved_tensors[0] -> S1" in d.text()


def test_a_wide_drawing_fits_the_notebook_column():
    from grader.learner.drawing import MAX_WIDTH_PX, fit_width

    wide = '<svg width="1200pt" height="300pt" viewBox="0 0 1200 300">'
    fitted = fit_width(wide)
    assert f'width="{MAX_WIDTH_PX}px"' in fitted and 'viewBox="0 0 1200 300"' in fitted
    assert fit_width('<svg width="300pt" height="100pt"') == '<svg width="300pt" height="100pt"'


def test_a_drawing_without_saved_tensors_claims_no_bill():
    import torch

    from grader import draw

    w = torch.tensor(2.0, requires_grad=True)
    text = draw((w * w).sin(), saved=False).text()
    assert "saved storage" not in text.splitlines()[0]


def test_shapes_read_as_tuples_and_a_scalar_as_scalar():
    from grader.learner.drawing import shape_words

    assert shape_words(torch.Size([2, 3])) == "(2, 3)" and shape_words((4,)) == "(4,)"
    assert shape_words(torch.Size([])) == "(scalar)"
    a = torch.ones(2, 3, requires_grad=True)
    text = draw((a * 2).sum(), names={"a": a}).text()
    assert "AccumulateGrad -> a (2, 3)" in text and "output (scalar):" in text and "()" not in text


def test_the_picture_has_the_text_form_as_its_alt_text(monkeypatch):
    """JupyterLab draws a bare SVG output as an image with no alt: the HTML form names the graph in words."""
    import base64
    import html

    w = torch.tensor(2.0, requires_grad=True)
    d = draw((w * 3) ** 2, names={"w": w})
    monkeypatch.setattr(d, "svg", lambda: '<svg width="10pt" height="10pt"><g id="graph0"></g></svg>')
    bundle = d._repr_mimebundle_()
    page = bundle["text/html"]
    assert page.startswith('<img class="agl-drawing" alt="')
    alt = html.unescape(page.split('alt="', 1)[1].split('"', 1)[0])
    assert alt == bundle["text/plain"] == d.text()
    data = page.split("base64,", 1)[1].split('"', 1)[0]
    assert base64.b64decode(data).decode() == bundle["image/svg+xml"]


def test_a_huge_graph_alt_text_is_cut_and_says_so():
    from grader.learner.drawing import ALT_CHARS, svg_with_alt

    text = "\n".join(f"line {i} " + "x" * 50 for i in range(500))
    page = svg_with_alt("<svg></svg>", text)
    assert len(page) < ALT_CHARS + 500 and "print(draw(...)) shows the whole text form" in page


def test_without_graphviz_no_picture_and_no_html(monkeypatch):
    w = torch.tensor(2.0, requires_grad=True)
    d = draw(w * 3, names={"w": w})
    monkeypatch.setattr(d, "svg", lambda: None)
    assert set(d._repr_mimebundle_()) == {"text/plain"}
