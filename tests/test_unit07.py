"""Unit 07: the syllabus figures still hold on this torch, the generated cases cover what they must,
and odd learner answers to the two exercises get one clear line."""

import json
from pathlib import Path

import pytest
import torch

from grader import check, probes
from grader.engine import question as registry
from grader.units.unit07.cases import _QUOTA, _saved_at_nonzero_version, guard_outcome, version_guard_cases, write_cases
from grader.units.unit07.support import gan_reference, gan_round
from tests.reference.unit07 import (
    REFERENCE,
    Pair,
    pack_keeps_the_tensor,
    pack_with_version,
    predict_inplace,
    unpack_checked,
)


def truth(qid):
    return registry.get(qid).run()


# --- the figures the syllabus gives for this unit -------------------------------------------------


def test_syllabus_figures():
    assert truth("07.mul-add-node") == "AddBackward0"
    exp = truth("07.exp-add")
    assert exp.where == "at backward" and "is at version 1; expected version 0" in exp.message
    assert truth("07.consumer-pow-message") == "u.add_(10)"
    assert truth("07.pow-broken-node") == "PowBackward0"
    assert truth("07.consumer-add").where == "no error"
    assert truth("07.leaf-write").where == "at the write"
    with_hooks, without = truth("07.hooks-grad")
    assert abs(with_hooks - 3.7183) < 1e-4 and abs(without - 2.7183) < 1e-4


def test_the_confusions_still_behave_as_the_notebook_says():
    assert truth("07.gan-step").where == "at backward"
    assert truth("07.relu-inplace-off").where == "at backward"
    assert truth("07.reciprocal-write").where == "at backward"
    version, grad = truth("07.data-write")
    assert version == 0 and abs(grad - 2 * torch.e) < 1e-4


def _graded_right(qid, answer):
    q = registry.get(qid)
    return q.kind.agrees(q.kind.truth(q.run()), q.kind.read(answer))


def test_the_self_tests_that_repeated_a_cell_ask_new_programs():
    # a view and a reshape move b's counter, a clone has its own
    assert truth("07.self-alias-or-copy") == (2.0, 1.0)
    assert not _graded_right("07.self-alias-or-copy", [1, 1])  # reshape taken for a copy
    assert not _graded_right("07.self-alias-or-copy", [3, 1])  # clone taken for a view
    # relu_'s own write is safe for relu_, not for exp, which kept h before it
    assert truth("07.self-inplace-after-exp") == "ExpBackward0"
    assert not _graded_right("07.self-inplace-after-exp", "neither: backward runs")
    assert not _graded_right("07.self-inplace-after-exp", "the in-place ReLU's node")


def test_the_reciprocal_question_replaces_one_unit_05_asked():
    """07.handmade-sigmoid repeated 05.handmade-write (the same 1 / (1 + exp(-a)) after a write: no error); its
    replacement spells the reciprocal as a method, whose node keeps s itself."""
    assert registry.get("07.handmade-sigmoid") is None
    assert not _graded_right("07.reciprocal-write", "no error")  # the answer unit 05 taught for 1 / t
    a = torch.tensor([0.5, -1.0], requires_grad=True)
    s = 1 / (1 + torch.exp(-a))  # the prompt's aside: written as a division, the same write is harmless
    s.mul_(2)
    s.sum().backward()
    assert torch.isfinite(a.grad).all()


def test_the_mechanism_of_section_10_is_stated_only_after_its_reveals():
    nb = json.loads(Path("solutions/07_version_counters_and_in_place_writes.ipynb").read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in nb["cells"]]
    section = next(i for i, src in enumerate(sources) if src.startswith("## 10."))
    for qid, mechanism in (("07.data-write", "counter of its own"), ("07.hooks-grad", "skips the check")):
        asked = next(i for i, src in enumerate(sources) if f"**Question `{qid}`" in src)
        revealed = next(i for i, src in enumerate(sources) if f'reveal("{qid}")' in src)
        assert not any(mechanism in src for src in sources[section : asked + 1]), qid
        assert any(mechanism in src for src in sources[revealed:]), qid


# --- the generated cases ----------------------------------------------------------------------------


def test_write_cases_cover_every_kind_and_start_small():
    cases = write_cases()
    kinds = [k for case in cases for k in case.kinds]
    for kind, wanted in _QUOTA.items():
        assert kinds.count(kind) >= wanted, kind
    assert [c.size for c in cases] == sorted(c.size for c in cases)
    assert all(c.source.count("# the write") == 1 for c in cases)


def test_guard_cases_start_with_the_exp_program_and_include_an_early_write():
    cases = version_guard_cases()
    assert "q = p.exp()" in "\n".join(c.source for c in cases[:3])
    outcomes = [guard_outcome(c) for c in cases]
    assert outcomes.count("raised at backward") >= 8 and outcomes.count("no error") >= 8
    assert any(_saved_at_nonzero_version(c) for c in cases if c.write is None)


@pytest.mark.parametrize("qid", ["07.predict-inplace", "07.version-guard"])
def test_the_reference_passes_on_a_loaded_machine(qid, busy_machine):
    """Within its per-case limits with two CPU-bound processes beside it (the speed figure: bench/run.py)."""
    check(qid, REFERENCE[qid])  # first run pays for generating the cases
    assert check(qid, REFERENCE[qid]).passed


# --- odd answers to predict_inplace -----------------------------------------------------------------


def _first_row(result, label):
    return dict(result.rows).get(label, "")


def test_a_bare_at_backward_asks_for_the_node():
    result = check("07.predict-inplace", lambda program: "at backward")
    assert result.verdict == "incorrect"
    assert "also name the node" in _first_row(result, "your function")


def test_node_objects_are_read_as_their_class_names():
    def returns_nodes(program):
        answer = predict_inplace(program)
        if isinstance(answer, str):
            return answer
        out = program.ns["out"]
        nodes = {fn for fn in probes.nodes(out) if type(fn).__name__ in answer[1]}
        return ("at backward", nodes)

    assert check("07.predict-inplace", returns_nodes).passed


@pytest.mark.parametrize(
    "returned, words",
    [
        (42, "expected"),
        (("at the write", {"PowBackward0"}), "names no node"),
        (("somewhere", set()), "is not a place"),
        (("at backward", {3}), "class name"),
    ],
)
def test_odd_returns_get_one_line(returned, words):
    result = check("07.predict-inplace", lambda program: returned)
    assert result.verdict == "incorrect"
    assert words in _first_row(result, "your function")


def test_a_predictor_that_runs_the_write_is_told_so():
    def runs_it(program):
        try:
            exec(program.write, dict(program.ns))
        except RuntimeError:
            return "at the write"
        return "no error"

    result = check("07.predict-inplace", runs_it)
    assert result.verdict == "incorrect"
    assert "without running the write" in _first_row(result, "your function")


# --- odd answers to the guard --------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer, words",
    [
        (unpack_checked, "pass both functions as a pair"),
        ((pack_with_version,), "a pair of functions"),
        ((pack_with_version, unpack_checked, unpack_checked), "a pair of functions"),
        ((pack_with_version, (1, 2)), "must be a function"),
        ((pack_with_version, Pair), "must be a function"),
    ],
)
def test_guard_answers_that_are_not_a_pair(answer, words):
    result = check("07.version-guard", answer)
    assert result.verdict == "invalid" and words in result.message


def test_guard_that_changes_values_is_caught_by_the_gradients():
    def unpack_doubled(packed):
        t, _ = packed
        return t * 2

    result = check("07.version-guard", (pack_with_version, unpack_doubled))
    assert result.verdict == "incorrect"
    assert _first_row(result, "your function returned") == "no error, wrong gradients"


def test_guard_placeholders_are_unanswered():
    def pack(t):
        raise NotImplementedError()

    def unpack(p):
        raise NotImplementedError()

    assert check("07.version-guard", (pack, unpack)).verdict == "unanswered"
    assert check("07.version-guard", ...).verdict == "unanswered"


# --- the GAN repair the notebook teaches, proven as unit 10 proves repairs --------------------------


def _equal(a, b):
    return a is not None and b is not None and torch.allclose(a, b, atol=1e-6)


def test_both_backward_passes_before_either_step_is_not_a_repair():
    """g_loss.backward() writes into D's .grad too, and there it cancels d_loss's gradient."""
    result = gan_round("both backward first")
    reference = gan_reference()
    assert not _equal(result["grads"]["D.weight"], reference["D.weight"])
    assert torch.count_nonzero(result["grads"]["D.weight"]) == 0 and torch.count_nonzero(result["grads"]["D.bias"]) == 0
    assert not result["moved"]["D.weight"] and not result["moved"]["D.bias"]


@pytest.mark.parametrize("order", ["inputs=", "autograd.grad"])
def test_the_gan_repair_moves_every_parameter_with_the_reference_gradients(order):
    result = gan_round(order)
    reference = gan_reference()
    assert all(result["moved"].values()), result["moved"]
    for name, grad in reference.items():
        assert _equal(result["grads"][name], grad), name


# --- a pack that keeps the tensor itself leaks the op's output ---------------------------------------


def test_keeping_the_tensor_in_pack_leaks_and_detach_does_not_lose_the_check():
    import gc
    import weakref

    def run(pack):
        p = torch.ones(3, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack_checked):
            q = p.exp()
        ref = weakref.ref(q)
        del q
        gc.collect()
        return ref() is not None

    assert run(pack_keeps_the_tensor) is True
    assert run(pack_with_version) is False
    p = torch.ones(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack_with_version, unpack_checked):
        q = p.exp()
        q.add_(1)
        with pytest.raises(RuntimeError, match="written in place"):
            q.sum().backward()


def test_the_leaking_pack_is_refused_on_the_dropped_program():
    result = check("07.version-guard", Pair(pack_keeps_the_tensor, unpack_checked))
    assert result.verdict == "incorrect"
    assert "del q, out" in dict(result.rows)["smallest failing case"]
    assert dict(result.rows)["your function returned"] == "kept alive after del"
