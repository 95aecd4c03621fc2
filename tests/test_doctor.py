"""The doctor (grader/probes/doctor/, grader/learner/doctor/) on real reported bugs and on correct programs.

Every corpus module in tests/real_bugs is run twice under the doctor: ``bug()`` must be named with the
module's mechanism, ``fixed()`` must give no finding (only the summary line). The doctor must not change
what a program computes, must leave torch as it found it, and its command must run a script unchanged.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

from grader.learner.doctor import Mechanism, doctor
from tests.real_bugs import cases

ROOT = Path(__file__).resolve().parents[1]
CORPUS = cases()


def _diagnose(fn):
    """(mechanisms found, the error the program raised or None, the doctor) for one run of ``fn``."""
    error = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with doctor(report=False) as d:
                fn()
        except Exception as exc:  # noqa: BLE001 - a bug program may raise; that is its symptom
            error = exc
    return [f.mechanism for f in d.findings], error, d


def test_the_corpus_names_real_threads_and_known_mechanisms():
    assert len(CORPUS) >= 20
    for mod in CORPUS:
        assert mod.__doc__ and mod.THREAD in mod.__doc__, mod.__name__
        assert "Symptom:" in mod.__doc__ and "Mechanism:" in mod.__doc__ and "Fix:" in mod.__doc__
        assert Mechanism(mod.MECHANISM).value in mod.__doc__
    by_mechanism: dict[str, int] = {}
    for mod in CORPUS:
        by_mechanism[mod.MECHANISM] = by_mechanism.get(mod.MECHANISM, 0) + 1
    assert all(n >= 2 for n in by_mechanism.values()), by_mechanism


@pytest.mark.parametrize("mod", CORPUS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_bug_named_and_fix_silent(mod):
    found, _, d = _diagnose(mod.bug)
    assert Mechanism(mod.MECHANISM) in found, d.text()
    found, error, d = _diagnose(mod.fixed)
    assert error is None and found == [], d.text()
    assert "\n" not in d.text() and d.text().endswith("no finding")


def test_the_command_and_with_doctor_agree_on_every_report(tmp_path):
    """Each bug() and fixed() run by the command's own function (a script that calls it) gives the same
    findings as inside ``with doctor():`` (issue 47: one path)."""
    from grader.learner.doctor.runner import run

    for mod in CORPUS:
        for fn in ("bug", "fixed"):
            script = tmp_path / f"{mod.__name__.rsplit('.', 1)[-1]}_{fn}.py"
            script.write_text(f"from {mod.__name__} import {fn}\n{fn}()\n")
            found, _, d = _diagnose(getattr(mod, fn))
            with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):  # (the bugs' tracebacks)
                warnings.simplefilter("ignore")
                _, watched = run(str(script), stream=io.StringIO())
            assert [str(f) for f in watched.findings] == [str(f) for f in d.findings], f"{mod.__name__}.{fn}"


def test_corpus_counts(capsys):
    named = silent = 0
    for mod in CORPUS:
        named += Mechanism(mod.MECHANISM) in _diagnose(mod.bug)[0]
        found, error, _ = _diagnose(mod.fixed)
        silent += not found and error is None
    with capsys.disabled():
        print(
            f"\ndoctor on {len(CORPUS)} real bugs: named {named}/{len(CORPUS)}, silent on {silent}/{len(CORPUS)} fixes"
        )
    assert named == silent == len(CORPUS)


# --- results unchanged ----------------------------------------------------------------------------


def _train(steps=5):
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(5, 8), nn.ReLU(inplace=True), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = torch.randn(16, 5), torch.randn(16, 1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach().clone())
    return losses, {k: v.clone() for k, v in model.state_dict().items()}


def _rnn(steps=4):
    torch.manual_seed(4)
    cell, head = nn.GRUCell(3, 6), nn.Linear(6, 1)
    opt = torch.optim.SGD([*cell.parameters(), *head.parameters()], lr=0.1, momentum=0.9)
    h = torch.zeros(2, 6)
    losses = []
    for _ in range(steps):
        h = cell(torch.randn(2, 3), h.detach())
        loss = head(h).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach().clone())
    return losses, {k: v.clone() for k, v in {**cell.state_dict(), **head.state_dict()}.items()}


def _same(a, b):
    if isinstance(a, torch.Tensor):
        if not (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape):
            return False
        if a.is_floating_point():  # bit for bit, a nan where the other has a nan
            return torch.equal(torch.isnan(a), torch.isnan(b)) and torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0))
        return torch.equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("program", [_train, _rnn])
def test_losses_and_parameters_bit_for_bit(program):
    plain = program()
    with doctor(report=False) as d:
        watched = program()
    assert d.findings == [] and d.backwards > 0
    assert _same(plain, watched)


def test_a_failure_inside_the_doctor_never_reaches_the_program(monkeypatch):
    from grader import probes

    def broken(obj):
        raise ValueError("probe broke")

    plain = _train()
    monkeypatch.setattr(probes, "nodes", broken)
    with doctor(report=False) as d:
        watched = _train()
    assert _same(plain, watched)
    assert d.internal_errors == 5 and "5 observation(s) skipped: ValueError: probe broke" in d.text()


def test_corpus_programs_compute_the_same_with_and_without_the_doctor():
    """Every corpus program that runs to the end, bug or fix: the same returned losses, gradients or values."""
    compared = 0
    for mod in CORPUS:
        for fn in (mod.bug, mod.fixed):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    plain = fn()
                except Exception:  # noqa: BLE001 - a bug that raises has no result to compare
                    continue
                with doctor(report=False):
                    watched = fn()
            assert _same(plain, watched), f"{mod.__name__}.{fn.__name__}"
            compared += 1
    assert compared >= len(CORPUS) + 10


# --- torch left as found ----------------------------------------------------------------------------


def _torch_state():
    from torch.nn.modules import module
    from torch.optim import optimizer

    return (
        torch.autograd.backward,
        torch.autograd.grad,
        "grad" in torch.Tensor.__dict__,
        warnings.showwarning,
        warnings.warn,
        len(module._global_forward_hooks),
        len(module._global_forward_pre_hooks),
        len(optimizer._global_optimizer_pre_hooks),
    )


def test_everything_removed_on_exit_even_after_an_exception():
    before = _torch_state()
    with pytest.raises(RuntimeError):
        with doctor(report=False) as d:
            x = torch.ones(3, requires_grad=True)
            y = torch.sigmoid(x * 2)
            y.mul_(2)
            y.sum().backward()
    assert [f.mechanism for f in d.findings] == [Mechanism.INPLACE_ON_SAVED]
    assert _torch_state() == before


def test_findings_carry_the_learners_line_and_a_fix():
    found, _, d = _diagnose(__import__("tests.real_bugs.tsan_3_alias_written_in_place", fromlist=["bug"]).bug)
    finding = d.findings[0]
    assert finding.line.startswith("tsan_3_alias_written_in_place.py:")
    assert "version 0 -> 1" in finding.evidence and finding.fix
    assert str(finding).startswith("[inplace-on-saved, unit 07]")


# --- a plain requires_grad attribute, a summand that reaches no parameter ------------------------------


def _fit(model, loss_of, params=None, steps=3):
    opt = torch.optim.SGD(params if params is not None else model.parameters(), lr=0.1)
    x = torch.randn(6, 3)
    for _ in range(steps):
        opt.zero_grad()
        loss_of(model, x).backward()
        opt.step()


def _mechanisms(run):
    with doctor(report=False) as d:
        run()
    return [f.mechanism for f in d.findings], d


def test_a_plain_requires_grad_attribute_is_named_only_where_the_run_shows_it_froze_nothing():
    torch.manual_seed(0)
    mse = lambda m, x: m(x).pow(2).mean()  # noqa: E731

    def trained_anyway():
        model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))
        model[0].requires_grad = False
        _fit(model, mse)

    found, d = _mechanisms(trained_anyway)
    assert found == [Mechanism.UNREGISTERED_MODULE], d.text()
    assert "requires_grad=False on 0 (a Linear)" in d.findings[0].evidence and "0.weight version" in d.text()

    def frozen_by_other_means():  # the attribute is still wrong, but nothing trains the layer: no finding
        model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))
        model[0].requires_grad = False
        _fit(model, lambda m, x: m[1](m[0](x).detach()).pow(2).mean(), params=model[1].parameters())

    assert _mechanisms(frozen_by_other_means)[0] == []

    def unfrozen_by_attribute():
        model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))
        model[0].requires_grad_(False)
        model[0].requires_grad = True  # meant to unfreeze it
        _fit(model, mse)

    found, d = _mechanisms(unfrozen_by_attribute)
    assert found == [Mechanism.UNREGISTERED_MODULE] and "never get a gradient" in d.text(), d.text()

    class Scaled(nn.Module):  # a module's own attribute that agrees with its parameters is no finding
        def __init__(self, requires_grad):
            super().__init__()
            self.requires_grad = requires_grad
            self.scale = nn.Parameter(torch.ones(3), requires_grad=requires_grad)

        def forward(self, x):
            return x * self.scale

    assert _mechanisms(lambda: _fit(nn.Sequential(Scaled(True), nn.Linear(3, 1)), mse))[0] == []


def test_a_summand_that_reaches_no_parameter_is_named_and_one_that_reaches_one_later_is_not():
    torch.manual_seed(0)

    def logged_as_new_leaf():
        model = nn.Linear(3, 1)

        def loss_of(m, x):
            out = m(x)
            penalty = torch.tensor(out.detach().abs().mean().item(), requires_grad=True)  # rebuilt as a leaf
            return out.pow(2).mean() + 0.1 * penalty

        _fit(model, loss_of)

    found, d = _mechanisms(logged_as_new_leaf)
    assert found == [Mechanism.INERT_LOSS_TERM], d.text()
    assert "MulBackward0, 2 of 2" in d.findings[0].evidence and "reaches 2 parameter(s)" in d.findings[0].evidence

    def plain_leaves_in_the_optimizer():  # no module: the parameters are the optimizer's leaves
        w = torch.randn(3, requires_grad=True)
        b = torch.zeros(1, requires_grad=True)
        opt = torch.optim.SGD([w, b], lr=0.1)
        x = torch.randn(5, 3)
        for _ in range(3):
            opt.zero_grad()
            ((x @ w).pow(2).mean() + b.pow(2).sum()).backward()
            opt.step()

    assert _mechanisms(plain_leaves_in_the_optimizer)[0] == []

    def seeded_sum_reaching_a_parameter_from_step_two():  # a zero seed, and a term inert at step 1 only
        model = nn.Linear(3, 1)
        state = {"previous": None}

        def loss_of(m, x):
            out = m(x)
            aux = torch.tensor(0.0, requires_grad=True)
            if state["previous"] is not None:
                aux = aux + (out - state["previous"]).pow(2).mean()
            state["previous"] = out.detach()
            return out.pow(2).mean() + aux

        _fit(model, loss_of)

    assert _mechanisms(seeded_sum_reaching_a_parameter_from_step_two)[0] == []


# --- declared intent ----------------------------------------------------------------------------------


def _finetune(freeze: bool, lr_head: float = 0.1):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
    if freeze:
        for p in model[0].parameters():
            p.requires_grad_(False)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=lr_head)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    for _ in range(3):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def test_declared_frozen_and_should_move_are_proved():
    with doctor(frozen=["0"], should_move=["2"], report=False) as d:
        _finetune(freeze=True)
    assert d.findings == []
    with doctor(frozen=["0"], report=False) as d:
        _finetune(freeze=False)
    assert [f.mechanism for f in d.findings] == [Mechanism.OPTIMIZER_MISMATCH]
    assert "declared frozen, but moved: 0.weight" in d.findings[0].evidence and "0.bias" in d.findings[0].evidence
    with doctor(should_move=["2.weight"], report=False) as d:
        _finetune(freeze=True, lr_head=0.0)
    assert any("did not move" in f.evidence for f in d.findings)


def test_lazy_export():
    import grader

    assert grader.doctor is doctor


# --- the command ------------------------------------------------------------------------------------


def _cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "grader", "doctor", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )


def test_cli_runs_a_script_unchanged_and_keeps_its_exit_code(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import sys, torch\n"
        "m = torch.nn.Linear(2, 1)\n"
        "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
        "for _ in range(3):\n"
        "    opt.zero_grad(); loss = m(torch.ones(1, 2)).sum(); loss.backward(); opt.step()\n"
        "print('args', sys.argv[1:], __name__)\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    done = _cli(str(script), "3", "--lr", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert "args ['3', '--lr'] __main__" in done.stdout
    assert done.stderr.strip().splitlines()[-1].endswith("no finding")


def test_cli_names_the_bug_in_a_script_that_raises(tmp_path):
    script = tmp_path / "rnn.py"
    script.write_text(
        "import torch\n"
        "cell = torch.nn.RNNCell(3, 4)\n"
        "opt = torch.optim.SGD(cell.parameters(), lr=0.1)\n"
        "h = torch.zeros(1, 4)\n"
        "for _ in range(3):\n"
        "    h = cell(torch.randn(1, 3), h)\n"
        "    opt.zero_grad()\n"
        "    h.sum().backward()\n"
        "    opt.step()\n"
    )
    done = _cli(str(script))
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "RuntimeError" in done.stderr
    assert "[carried-state, unit 08] at rnn.py:6" in done.stderr  # where the state is made: h = cell(..., h)


_INFERENCE_SCRIPT = """import torch
features = torch.nn.Linear(4, 4)
head = torch.nn.Linear(4, 1)
with torch.inference_mode():
    x = features(torch.randn(8, 4))
head(x).sum().backward()
"""


def test_the_command_passes_the_scripts_exception_to_the_doctor_as_with_doctor_sees_it(tmp_path):
    """Issue 47: the command caught the script's error inside the doctor, whose checks of the program's error
    then never ran; now both paths name it, and the command still shows the traceback and fails."""
    import runpy

    script = tmp_path / "features.py"
    script.write_text(_INFERENCE_SCRIPT)
    done = _cli(str(script))
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "Inference tensors cannot be saved for backward" in done.stderr
    assert 'File "<frozen runpy>"' not in done.stderr  # the traceback starts at the script, as python's does
    assert "[no-grad-root, unit 04] at features.py:4" in done.stderr  # where inference mode was entered
    with pytest.raises(RuntimeError, match="Inference tensors"):
        with doctor(report=False) as d:
            runpy.run_path(str(script), run_name="__main__")
    assert str(d.findings[0]) in done.stderr
    shell = _shell()  # %%doctor: IPython catches the cell's error; the magic passes it to the doctor
    shell.run_cell("%%doctor\n" + _INFERENCE_SCRIPT)
    found = shell.user_ns["_doctor"].findings
    assert [f.mechanism for f in found] == [Mechanism.NO_GRAD_ROOT] and found[0].line.endswith(":4")


def test_cli_refuses_a_missing_script():
    done = _cli("no_such_train.py")
    assert done.returncode == 2 and "no such script" in done.stderr


_FINETUNE_SCRIPT = """import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
{freeze}opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
for _ in range(3):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
"""


def test_intent_declared_in_the_script_is_read_and_proved(tmp_path):
    """``# doctor: frozen=... should_move=...`` in the script declares what --frozen/--should-move do."""
    script = tmp_path / "train.py"
    script.write_text(
        "# doctor: frozen=0 should_move=2\n" + _FINETUNE_SCRIPT.format(freeze="model[0].requires_grad_(False)\n")
    )
    done = _cli(str(script))
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().endswith("declared frozen 0; should_move 2: no finding"), done.stderr
    script.write_text("# doctor: frozen=0\n" + _FINETUNE_SCRIPT.format(freeze=""))
    done = _cli("--should-move", "2", str(script))
    assert "declared frozen 0; should_move 2: 1 finding(s)" in done.stderr
    assert "declared frozen, but moved: 0.weight" in done.stderr
    script.write_text("#doctor: frozen=encodr\n" + _FINETUNE_SCRIPT.format(freeze=""))
    done = _cli(str(script))
    assert "(matching no parameter of a module the run called: encodr)" in done.stderr


def test_a_directive_that_does_not_read_is_refused_before_the_script_runs(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import pathlib\npathlib.Path('ran').touch()\n# doctor: frozn=encoder\n")
    done = _cli(str(script), cwd=tmp_path)
    assert done.returncode == 2 and not (tmp_path / "ran").exists()
    assert "train.py:3: cannot read 'frozn=encoder'" in done.stderr


# --- the anomaly replay, checkpoints, the cell magic ---------------------------------------------------


def test_nan_names_the_node_and_the_replay_its_forward_line():
    import inspect

    from tests.real_bugs import pytorch_156212_where_exp_unselected as mod

    _, _, d = _diagnose(mod.bug)
    (finding,) = d.findings
    assert "ExpBackward0" in finding.evidence and "from anomaly mode's record of the next step" in finding.evidence
    source, first = inspect.getsourcelines(mod._run)
    forward = first + next(i for i, text in enumerate(source) if "torch.exp(inner)" in text)
    assert finding.line == f"pytorch_156212_where_exp_unselected.py:{forward}"
    assert not torch.is_anomaly_enabled()  # the replay's anomaly mode is off again


def test_a_checkpoints_saved_tensors_are_never_opened_by_the_doctor():
    """A second backward through a checkpointed block with BatchNorm: reading its saved tensors would
    recompute the block and move num_batches_tracked; the doctor names the cause without reading them."""
    from torch.utils.checkpoint import checkpoint

    def run():
        torch.manual_seed(0)
        bn, lin = nn.BatchNorm1d(4), nn.Linear(4, 1)
        loss = checkpoint(lambda t: lin(bn(t)), torch.randn(3, 4, requires_grad=True), use_reentrant=False).sum()
        loss.backward()
        try:
            loss.backward()
        except RuntimeError:
            pass
        return bn.num_batches_tracked.item(), bn.running_mean.clone()

    plain = run()
    with doctor(report=False) as d:
        watched = run()
    assert _same(plain, watched)
    assert Mechanism.FREED_GRAPH in [f.mechanism for f in d.findings]


def _shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "grader.learner.doctor")
    return shell


def test_cell_magic_runs_the_cell_unchanged_under_the_doctor(capsys):
    shell = _shell()
    shell.run_cell(
        "%%doctor\n"
        "import torch\n"
        "cell = torch.nn.RNNCell(3, 4)\n"
        "opt = torch.optim.SGD(cell.parameters(), lr=0.1)\n"
        "h = torch.zeros(1, 4)\n"
        "ran = 0\n"
        "for _ in range(3):\n"
        "    h = cell(torch.randn(1, 3), h)\n"
        "    opt.zero_grad()\n"
        "    h.sum().backward()\n"
        "    opt.step()\n"
        "    ran += 1\n"
    )
    assert shell.user_ns["ran"] == 1  # the cell's own error stopped it, as it would without the doctor
    assert [f.mechanism for f in shell.user_ns["_doctor"].findings] == [Mechanism.CARRIED_STATE]
    err = capsys.readouterr().err
    assert "[carried-state, unit 08]" in err
    shell.run_cell("%%doctor\nimport torch\nm = torch.nn.Linear(2, 1)\nm(torch.ones(1, 2)).sum().backward()\n")
    assert shell.user_ns["_doctor"].findings == [] and capsys.readouterr().err.strip().endswith("no finding")


def test_cell_magic_reads_intent_declared_in_the_cell(capsys):
    shell = _shell()
    shell.run_cell("%%doctor\n# doctor: frozen=0\n" + _FINETUNE_SCRIPT.format(freeze=""))
    found = shell.user_ns["_doctor"].findings
    assert [f.mechanism for f in found] == [Mechanism.OPTIMIZER_MISMATCH] and "declared frozen" in found[0].evidence
    shell.user_ns.pop("touched", None)
    shell.run_cell("%%doctor\n# doctor: should_move\ntouched = True\n")
    assert "touched" not in shell.user_ns
    assert "this cell:1: cannot read 'should_move'" in capsys.readouterr().err


def test_cell_magic_refuses_unknown_options_without_running_the_cell(capsys):
    shell = _shell()
    shell.user_ns.pop("touched", None)
    shell.run_cell("%%doctor --frozn encoder\ntouched = True\n")
    assert "touched" not in shell.user_ns
    assert "unknown option --frozn" in capsys.readouterr().err


def test_import_grader_registers_the_cell_magic_in_ipython():
    from grader.learner.doctor import magic

    shell = _shell()
    shell.magics_manager.magics["cell"].pop("doctor", None)
    magic.register_in_running_shell()
    assert "doctor" in shell.magics_manager.magics["cell"]
