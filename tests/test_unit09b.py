"""Unit 09b: the checkpointing figures its cells show still hold on this torch, its questions are the ones that
moved from unit 09 (read under their old ids too), and its new self-test is not answered by a cell of the unit."""

import math
import warnings

import pytest
import torch
from torch.utils.checkpoint import checkpoint

from grader.engine import moves
from grader.engine import question as registry
from grader.engine.course import UNITS
from grader.engine.question import of_unit
from grader.units.unit09.support import block_chain, held_after
from grader.units.unit09b.support import PLAN_HIDDEN, checkpointed, plan_held


def truth(qid):
    return registry.get(qid).run()


def test_checkpointing_figures():
    assert truth("09b.checkpoint-recompute-reached") == (1, 1, 2, 2)
    model, x = block_chain(batch=256)
    plain = held_after(lambda: model(x).sum())
    model, x = block_chain(batch=256)
    ckpt = held_after(lambda: checkpointed(model, x).sum())
    assert ckpt == 3 * 256 * 128 * 4 + 4 and plain == 4 * 2 * 256 * 512 * 4 + ckpt
    assert truth("09b.checkpoint-held-fraction") == "under a fifth of the plain run"  # a twelfth
    assert truth("09b.reentrant-grads") == {"0.up.weight", "0.up.bias", "0.down.weight", "0.down.bias"}
    assert truth("09b.self-checkpoint-plan") == {"1", "3"}
    assert truth("09b.self-checkpoint-input-write").where == "at backward"
    assert truth("09b.self-pair-around-checkpoint") == (2, 4)


def test_the_plan_is_the_only_smallest_one():
    """The self-test's budget singles out one plan of two blocks: no single block fits, and only {1, 3} of the pairs."""
    fits = {
        (i, j) for i in range(len(PLAN_HIDDEN)) for j in range(i + 1, len(PLAN_HIDDEN)) if plan_held({i, j}) <= 700_000
    }
    assert fits == {(1, 3)}
    assert all(plan_held({i}) > 700_000 for i in range(len(PLAN_HIDDEN)))


def test_checkpoint_caveats_hold_on_this_torch():
    assert truth("09b.checkpoint-side-effect-count") == 3  # forward, and once per backward over the retained graph
    model, x = block_chain(batch=8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        h = checkpoint(model[0], x)  # no flag: still the reentrant variant on 2.13
    assert not h.requires_grad
    assert any("use_reentrant" in str(w.message) for w in caught)


def test_the_pair_around_checkpoint_counts_inputs_and_reruns():
    """The self-test's rule on neighbours of its program: pack sees each tensor input, needing grad or not, and
    each backward over the retained graph unpacks every input once more."""
    for inputs, passes in ((1, 1), (2, 1), (3, 2), (2, 3)):
        counts = [0, 0]

        def pack(t, counts=counts):
            counts[0] += 1
            return t.detach()

        def unpack(kept, counts=counts):
            counts[1] += 1
            return kept

        args = [torch.randn(4, requires_grad=i == 0) for i in range(inputs)]
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = checkpoint(lambda *a: math.prod(a).tanh(), *args, use_reentrant=False).sum()
        for i in range(passes):
            y.backward(retain_graph=i < passes - 1)
        assert counts == [inputs, inputs * passes], (inputs, passes, counts)


def test_09b_follows_09_and_holds_the_questions_that_moved():
    order = list(UNITS)
    assert order.index("09b") == order.index("09") + 1 and UNITS["09b"].needs == ("09",)
    assert moves.SPLITS["09"] == "09b"
    moved = {old: new for old, new in moves.QUESTIONS.items() if old.startswith("09.")}
    assert moved and all(new.startswith("09b.") for new in moved.values())
    here = {q.qid for q in of_unit("09b")}
    assert set(moved.values()) <= here
    for old, new in moved.items():
        assert registry.get(old).qid == new  # an old id still names its question
        assert old not in {q.qid for q in of_unit("09")}
    assert not any("checkpoint" in q.qid for q in of_unit("09"))


def _unit_minutes():
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "unit_minutes.py"
    spec = importlib.util.spec_from_file_location("unit_minutes", path)
    model = sys.modules.setdefault("unit_minutes", importlib.util.module_from_spec(spec))
    spec.loader.exec_module(model)
    return model


@pytest.mark.parametrize("uid", ["09", "09b"])
def test_each_half_states_its_measured_time_and_has_its_own_self_test(uid):
    work = _unit_minutes().work_of(uid)
    assert work.measured is not None and UNITS[uid].minutes == work.stated == work.measured
    assert work.self_tests >= 3


def test_every_unit_states_what_was_measured_for_it():
    """Issue 46: a unit's stated minutes are its reviewer's measured figure (tools/unit_minutes.py says whose), and
    the model the tool keeps for units not yet measured stays near the measurements it was fitted to."""
    model = _unit_minutes()
    assert set(model.MEASURED) == set(UNITS)
    for uid in UNITS:
        work = model.work_of(uid)
        assert UNITS[uid].minutes == work.stated == model.MEASURED[uid], uid
        assert abs(work.minutes - work.measured) < 40, (uid, work.minutes, work.measured)


def test_the_stored_timing_table_does_not_invert_the_lesson():
    """Issue 44 item 8: the stored output of 09b's timing cell once showed checkpointing faster than plain (load
    noise, plain timed first). Timed as CPU time on one thread, the variants in turns, every checkpointing row of
    the stored table costs more than plain."""
    import json
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    nb = json.loads((root / "solutions" / "09b_checkpointing.ipynb").read_text(encoding="utf-8"))
    (cell,) = [c for c in nb["cells"] if c.get("id") == "b065"]
    text = "".join("".join(o.get("text", "")) for o in cell["outputs"] if o.get("output_type") == "stream")
    ratios = {
        m[0].strip(): float(m[1])
        for m in re.findall(r"^(.+?)\s+[\d.]+ ms of CPU time per step \(([\d.]+) x plain\)", text, re.M)
    }
    assert ratios["plain"] == 1.0 and {"checkpoint every block", "selective: keep matmul outputs"} <= set(ratios)
    assert ratios["checkpoint every block"] > 1.0 and ratios["selective: keep matmul outputs"] > 1.0, ratios


# --- the exercise: checkpoint by hand ----------------------------------------------------------------------


def test_checkpoint_cases_cover_every_function_both_inputs_and_dropout():
    from grader.units.unit09b.cases import BLOCKS, checkpoint_cases

    cases = checkpoint_cases()
    assert [c.size for c in cases] == sorted(c.size for c in cases) and len(cases) >= 12
    assert {k for c in cases for k in c.kinds} == set(BLOCKS)
    assert any(c.x_grad for c in cases) and any(not c.x_grad for c in cases)
    assert sum("dropout" in c.kinds for c in cases) >= 4 and any(len(c.kinds) == 3 for c in cases)


def test_torchs_checkpoint_is_what_the_truth_reports_and_a_plain_run_is_not():
    from grader.units.unit09b import cases as ck

    for case in ck.checkpoint_cases():
        assert ck.report(case, ck.torch_checkpoint) == [ck.GRADS_OK, ck.CALLS_OK, ck.HELD_OK], case.label
        plain = ck.report(case, lambda f, *a: f(*a))
        assert plain[0] == ck.GRADS_OK and plain[1] != ck.CALLS_OK and plain[2] != ck.HELD_OK, case.label


def test_the_checkpoint_is_switched_off_and_put_back():
    from grader import check
    from tests.shortcuts.unit09b import torch_checkpoint_imported

    result = check("09b.checkpoint-by-hand", torch_checkpoint_imported)
    assert result.verdict == "incorrect" and "switched off" in str(result)
    a = torch.ones(3, requires_grad=True)
    checkpoint(torch.exp, a, use_reentrant=False).sum().backward()
    assert torch.allclose(a.grad, torch.exp(torch.ones(3)))
    assert "switched off" in registry.get("09b.checkpoint-by-hand").prompt
