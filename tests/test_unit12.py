"""Unit 12: the live diagnosis agrees with every planted label, the tools report what the notebook says
they report, the setups a learner gets carry no label, and odd answers get a clear verdict."""

import collections
import warnings

import pytest
import torch

from grader import check
from grader.units.unit12 import cases as unit12_cases
from grader.units.unit12 import support as kit
from grader.units.unit12.kinds import FaultInModule
from grader.units.unit12.support import FROZEN, LEAK, NONFINITE, STALE, VERDICTS
from tests.reference import unit12 as ref

CASES = unit12_cases.setup_cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_the_live_diagnosis_agrees_with_the_planted_label(case):
    found = kit.find_fault(**case.fresh())
    assert found.kind == case.planted, (case.source, found)
    if case.planted in (NONFINITE, LEAK, STALE):
        assert case.special in found.where, (case.source, found)
    if case.planted == FROZEN:
        names = {name for name, _, _ in case.modules}
        assert found.where and all(w.split(".")[0] in names for w in found.where)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_the_reference_diagnosis_is_accepted_on_every_case(case):
    kind = FaultInModule()
    truth = kind.truth(kit.find_fault(**case.fresh()))
    assert kind.agrees(truth, kind.read(ref.reference_diagnose(**case.fresh())))
    for wrong in kind.wrong_answers(truth):
        assert not kind.agrees(truth, kind.read(wrong)), (truth, wrong)


def test_cases_cover_every_fault_and_module_and_are_seeded():
    counts = collections.Counter(c.planted for c in CASES)
    assert set(counts) == set(VERDICTS) and min(counts.values()) >= 4
    for kind, plants in unit12_cases.PLANTS.items():
        assert {p[0] for p in plants} <= {c.cls for c in CASES if c.planted == kind}, kind
    assert [c.source for c in unit12_cases.setup_cases()] == [c.source for c in CASES]


def test_the_same_class_is_a_fault_in_one_setup_and_none_in_another():
    """Issue 45: a lookup on the extra module's class name passed every case. Class names are drawn per case, the
    fault may sit in the encoder's or the head's own class, and every faulty class also appears where it does no
    harm (on the input, after a Sigmoid, or frozen on purpose)."""
    faulty = {c.cls for c in CASES if c.planted not in ("no fault",)}
    harmless = {c.cls for c in CASES if c.planted == "no fault"}
    assert set(unit12_cases.TWINS) <= faulty & harmless
    assert {c.special for c in CASES if c.planted != "no fault"} >= {"enc", "head"}
    drawn = collections.Counter(c.names[c.cls] for c in CASES)
    assert len(drawn) >= 8, "class names drawn"
    assert not any(plant.__name__ in c.source for c in CASES for plant in unit12_cases.TWINS), "no plant's own name"
    assert any(len([m for m in c.modules if m[1] is not None]) == 2 for c in CASES), "two extra modules"
    assert any(c.frozen for c in CASES) and any(m[0] != "enc" for c in CASES for m in c.modules[:1])


def test_what_a_learner_gets_carries_no_label():
    ns = CASES[0].fresh()
    assert set(ns) == {"model", "loss_fn", "batches"}
    text = repr(ns["model"]) + CASES[0].source
    assert not any(k in text for k in VERDICTS)


def test_every_fault_shows_in_the_record_it_is_named_by():
    for case in CASES:
        ns = case.fresh()
        readings = kit.readings(**ns)
        if case.planted == STALE:
            assert "backward raised" in readings
        elif case.planted == NONFINITE:
            assert f"made by: {case.special}" in readings
        elif case.planted == FROZEN:
            assert "no .grad after backward: none" not in readings.split("\n")[0]
        elif case.planted == LEAK:
            assert f"{case.special}." in readings.split("\n")[-1]
        else:
            assert "backward raised" not in readings and "made by: none" in readings


def test_anomaly_report_names_the_node_and_the_forward_line_without_paths():
    def run():
        x, loss = kit.masked_root()
        loss.backward()

    report = kit.anomaly_report(run)
    assert report.node == "SqrtBackward0" and report.forward_line == "y = x.sqrt()"
    assert "/" not in str(report)
    assert not torch.is_anomaly_enabled()
    assert kit.anomaly_report(run, check_nan=False).raised == ""


def test_backward_watch_removes_its_hooks_and_silences_only_its_own_warning():
    model, x = kit.hook_model()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with kit.BackwardWatch(model) as watch:
            model(x).sum().backward()
    assert watch.origin() == "gate" and not caught
    assert all(not m._backward_hooks for m in model.modules())


def test_module_bill_charges_a_shared_storage_to_the_first_saver():
    after, kept, bill, model = kit.leak_loop("list of val losses")
    held = bill.held(kept)
    assert held["1"] == 4 * 32 * 64 * 4, held  # four ReLU outputs, saved first by the ReLU
    assert sum(held.values()) == after[-1][0]


def test_gc_tensor_cycles_leaks_nothing():
    refs = []

    def make():
        refs.append(kit.make_cycle(kit.CYCLES[1]))
        return refs[-1]

    found, alive = kit.gc_tensor_cycles(make)
    assert alive and (1000,) not in found
    import gc

    gc.collect()
    assert refs[0]() is None  # this cycle's tensor is gone (other tests' tensors are not this test's business)


def test_quiet_profile_is_the_memory_profiler():
    with kit.quiet_profile() as prof:
        keep = torch.ones(1000)
    assert kit.net_allocated(prof) >= 4000 and keep.numel() == 1000


@pytest.mark.parametrize(
    "answer, words",
    [
        (lambda m, l, b: "frozen parameter", "also give the module"),
        (lambda m, l, b: ("frozen parameter", m.enc), "name"),
        (lambda m, l, b: ("gremlins", "enc"), "not a fault"),
        (lambda m, l, b: ("no fault", "enc"), "has no module"),
        (lambda m, l, b: None, "did you forget a return"),
    ],
)
def test_odd_diagnoses_get_a_clear_message(answer, words):
    result = check("12.diagnose", answer)
    assert result.verdict == "incorrect" and words in str(result), str(result)


def test_a_bug_that_leaves_anomaly_mode_on_is_told_so_and_the_state_is_restored():
    result = check("12.diagnose", ref.diagnose_leaves_anomaly_mode_on)
    assert "anomaly detection" in str(result) and not torch.is_anomaly_enabled()


def test_the_reference_passes_on_a_loaded_machine(busy_machine):
    """Within its per-case limits with two CPU-bound processes beside it (the speed figure: bench/run.py)."""
    check("12.diagnose", ref.REFERENCE["12.diagnose"])
    assert check("12.diagnose", ref.REFERENCE["12.diagnose"]).passed


def test_a_made_up_choice_is_named_as_not_a_choice():
    result = check("12.self-ema", "gremlins")
    assert result.verdict == "invalid" and "not a choice" in str(result)


def test_what_anomaly_mode_adds_is_stated_only_after_the_question_that_asks_it():
    import json
    from pathlib import Path

    nb = json.loads(Path("solutions/12_finding_the_fault.ipynb").read_text(encoding="utf-8"))
    sources = ["".join(c["source"]) for c in nb["cells"]]
    revealed = next(i for i, src in enumerate(sources) if 'reveal("12.anomaly-cost")' in src)
    stated = [i for i, src in enumerate(sources) if "records the Python stack" in src]
    assert stated and min(stated) > revealed


def test_held_bytes_leaves_out_the_numbers_an_op_wraps_as_the_self_ema_prompt_says():
    from grader import probes

    x = torch.randn(3, requires_grad=True)
    y = x * 0.9  # keeps the 0.9 as a wrapped 0-dim tensor, which no pack hook sees
    assert [s.wrapped for s in probes.saved_tensors(y)] == [True]
    assert kit.held_bytes(y) == 0
    assert kit.held_bytes(x * x) == x.untyped_storage().nbytes()


def test_not_in_optimizer_asks_what_unit_10_did_not_show():
    from grader.engine import question as registry

    q = registry.get("12.not-in-optimizer-after-double")
    truth = q.kind.truth(q.run())
    assert q.kind.agrees(truth, q.kind.read({"head.weight", "head.bias"}))
    assert not q.kind.agrees(truth, q.kind.read(set(kit.their_param_names())))  # double() taken for a copy


def test_the_anomaly_question_asks_what_unit_10_did_not_show():
    """Unit 10 names SqrtBackward0 under anomaly mode; 12.anomaly-node asked exactly that. Its replacement
    asks whether an inf (not a NaN) is caught, and torch's live answer is that it is not."""
    from grader.engine import question as registry

    assert registry.get("12.anomaly-node") is None
    q = registry.get("12.anomaly-inf")
    truth = q.kind.truth(q.run())
    assert q.kind.agrees(truth, q.kind.read("no error: x.grad holds inf"))
    assert not q.kind.agrees(truth, q.kind.read("raises, naming SqrtBackward0"))


def test_the_first_two_questions_ask_what_unit_10_did_not_show():
    """Unit 10's where-guard showed a masked sqrt's NaN gradient arriving silently, and anomaly mode raising at
    backward on it: 12.plain-nan and 12.anomaly-place asked exactly that. Their replacements ask what a mask made
    by multiplication does to the loss (NaN * 0 is NaN), and whether cleaning the forward value with nan_to_num
    protects the backward (it does not)."""
    from grader.engine import question as registry

    assert registry.get("12.plain-nan") is None and registry.get("12.anomaly-place") is None
    q = registry.get("12.masked-loss-nan")
    truth = q.kind.truth(q.run())
    assert q.kind.agrees(truth, q.kind.read("loss NaN, NaN in x.grad"))
    assert not q.kind.agrees(truth, q.kind.read("loss finite, NaN in x.grad"))  # what torch.where gives (unit 10)
    q = registry.get("12.anomaly-nan-to-num")
    truth = q.kind.truth(q.run())
    assert q.kind.agrees(truth, q.kind.read("raises at loss.backward(), naming SqrtBackward0"))
    assert not q.kind.agrees(truth, q.kind.read("no error: nan_to_num removed the NaN"))
    x = torch.tensor([4.0, -1.0, 9.0], requires_grad=True)
    assert x.sqrt().nan_to_num().sum().item() == 5.0  # the prompt's loss: finite


def _batches(n=3):
    torch.manual_seed(0)
    return [(torch.randn(5, 3), torch.randn(5, 1)) for _ in range(n)]


def _mlp(*middle):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), *middle, torch.nn.Linear(4, 1))


def test_find_fault_runs_a_healthy_model_with_an_in_place_relu():
    """It adds no module backward hooks (which make an in-place op after a module raise in forward)."""
    model = _mlp(torch.nn.ReLU(inplace=True))
    assert kit.find_fault(model, torch.nn.functional.mse_loss, _batches()).kind == kit.NO_FAULT


def test_find_fault_names_a_cut_path_behind_an_in_place_relu_without_crashing():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(inplace=True), unit12_cases.StopInput(4))
    found = kit.find_fault(model, lambda out, y: ((out.sum(1, keepdim=True) - y) ** 2).mean(), _batches())
    assert found.kind == FROZEN and "2" in found.where


def test_find_fault_calls_a_loss_without_graph_a_frozen_path_not_a_stale_graph():
    model = _mlp(torch.nn.Tanh())
    found = kit.find_fault(model, lambda out, y: ((out.detach() - y) ** 2).mean(), _batches())
    assert found.kind == FROZEN and found.where


def test_find_fault_calls_an_in_place_write_no_stale_graph():
    class Scale(torch.nn.Module):
        def forward(self, x):
            y = torch.sigmoid(x)
            y.mul_(2)  # sigmoid saved its output
            return y

    found = kit.find_fault(_mlp(Scale()), torch.nn.functional.mse_loss, _batches())
    assert found.kind == kit.RAISED and "inplace-on-saved" in found.evidence


def test_find_fault_leaves_a_parameter_frozen_on_purpose_alone():
    model = _mlp(torch.nn.Tanh())
    model[0].requires_grad_(False)
    assert kit.find_fault(model, torch.nn.functional.mse_loss, _batches()).kind == kit.NO_FAULT


def test_find_fault_uses_the_learners_optimizer():
    model = _mlp(torch.nn.Tanh())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model[2] = torch.nn.Linear(4, 1)  # a new head after the optimizer was made
    found = kit.find_fault(model, torch.nn.functional.mse_loss, _batches(), opt=opt)
    assert found.kind == FROZEN and found.where == {"2"}


class _Last(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.last = None

    def forward(self, x):
        self.last = x  # only this step's graph: replaced every step
        return x


def test_a_graph_kept_only_until_the_next_step_is_no_growing_memory():
    assert kit.find_fault(_mlp(_Last()), torch.nn.functional.mse_loss, _batches()).kind == kit.NO_FAULT


def test_a_growing_graph_in_a_buffer_is_found():
    class BufferTally(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("total", torch.zeros(()))

        def forward(self, x):
            self.total = self.total + x.abs().mean()  # a registered buffer, so not in vars(module)
            return x

    found = kit.find_fault(_mlp(BufferTally()), torch.nn.functional.mse_loss, _batches())
    assert found.kind == LEAK and found.where == {"1"}, found
