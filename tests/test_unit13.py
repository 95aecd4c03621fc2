"""Unit 13: the facts the notebook states still hold on this torch, the instruments measure what they claim,
the generated cases cover what they must, each exercise's other way is switched off, and odd answers to the two
exercises get one clear line."""

import torch

from grader import check
from grader.engine import question as registry
from grader.units.unit13 import cases as unit13_cases
from grader.units.unit13 import support
from tests.reference import unit13 as ref


def truth(qid):
    return registry.get(qid).run()


# --- the facts the notebook states ----------------------------------------------------------------------


def test_the_notebooks_facts():
    assert truth("13.func-grad-no-grad") == "None"
    assert truth("13.per-sample-shape") == (5.0, 2.0, 3.0)
    assert abs(truth("13.dual-tangent") - 6.0) < 1e-5
    assert truth("13.item-graphs") == 2.0
    assert truth("13.hook-side-effects") == "only double"
    assert truth("13.compile-version").where == "at backward"
    assert truth("13.self-accumulate") == (4.0, 12.0)
    assert abs(truth("13.self-dual") - 6.0) < 1e-5
    assert truth("13.self-branch-graphs") == 2.0


def test_the_partitioner_choices_the_notebook_explains():
    """torch 2.13's min-cut partitioner: it recomputes sin from the matmul, and keeps exp's own output.
    A torch release that chooses otherwise fails here and in `grader verify`: rewrite the prose then."""
    assert truth("13.compile-saves") == (2.0, 1.0)
    assert truth("13.self-compiled-keeps") == "exp's result"
    x, w = torch.randn(4, 3), torch.randn(3, 5, requires_grad=True)
    assert support.kept_by_compile(lambda a, b: (a @ b).sin().cos().sum(), x, w) == ["input", "mm"]


def test_the_hook_question_asks_about_side_effects_and_refuses_the_old_rule():
    """The old question taught 'a hook is a graph break'; the new one shows both hooks, and the answers the
    old rule gives (neither traced) or the opposite one gives are refused."""
    q = registry.get("13.hook-side-effects")
    truth = q.run()
    for wrong in ("neither", "both", "only record"):
        assert not q.kind.agrees(truth, q.kind.read(wrong))
    assert q.kind.agrees(truth, q.kind.read("only double"))


def test_the_partitioner_keeps_the_output_exp_reads_even_beside_the_matmul():
    x, w = torch.randn(4, 3), torch.randn(3, 5, requires_grad=True)
    assert support.kept_by_compile(lambda a, b: (a @ b).sin().exp().sum(), x, w) == ["exp", "input", "mm"]


def test_retain_grad_after_two_ops_compiles_them():
    graphs, h_grad = support.graphs_with_retain_grad("x.sin() * 2", torch.ones(3, requires_grad=True))
    assert graphs == 1 and h_grad is not None


def test_graph_breaks_leave_no_warning_on_stderr(capfd):
    support.graphs_made(lambda x: x.sin() * x.sum().item(), torch.randn(3, requires_grad=True))
    assert "Graph break" not in capfd.readouterr().err


def test_retain_grad_inside_a_compiled_function_runs_eagerly():
    def f(x):
        h = x * 2
        h.retain_grad()
        return (h * h).sum(), h

    import torch._dynamo

    graphs = []
    torch._dynamo.reset()
    total, h = torch.compile(f, backend=support.counting_backend(graphs))(torch.ones(3, requires_grad=True))
    total.backward()
    torch._dynamo.reset()
    assert graphs == [] and torch.equal(h.grad, torch.full((3,), 4.0))


# --- the instruments ----------------------------------------------------------------------------------


def test_the_bill_of_a_compiled_run_counts_a_transpose_as_its_input():
    import torch._dynamo

    from grader import probes

    x, w = torch.randn(4, 3), torch.randn(3, 5, requires_grad=True)
    f = lambda a, b: (a @ b).sin().cos().sum()  # noqa: E731
    eager = probes.bill(lambda: f(x, w)).total
    torch._dynamo.reset()
    with support.quiet_dynamo():
        compiled = torch.compile(f, backend="aot_eager")
        compiled(x, w)
        kept = probes.bill(lambda: compiled(x, w)).total
    torch._dynamo.reset()
    assert eager == 48 + 80 + 80 and kept == 48 + 80


def test_the_loop_agrees_with_vmap_grad():
    case = unit13_cases.per_sample_cases()[-1]
    ns = case.fresh()
    mine = ref.per_sample_grads(ns["model"], ns["x"], ns["y"])
    loop = support.loop_grads(ns["model"], ns["x"], ns["y"])
    assert all(torch.allclose(mine[k], loop[k], atol=1e-5) for k in loop)


# --- the generated cases ------------------------------------------------------------------------------


def test_model_cases_start_small_are_seeded_and_vary():
    cases = unit13_cases.per_sample_cases()
    assert [c.size for c in cases] == sorted(c.size for c in cases) and len(cases) >= 6
    assert cases[0].batch >= 2 and cases[0].d_out == 1, "the smallest case must catch a batch gradient copied"
    assert any(c.d_out > 1 for c in cases) and any(not c.bias for c in cases)
    a, b = cases[0].fresh(), cases[0].fresh()
    assert torch.equal(a["x"], b["x"]) and torch.equal(a["model"][0].weight, b["model"][0].weight)


def test_hooks_cases_cover_depths_activations_and_biases():
    cases = unit13_cases.hooks_cases()
    assert [c.size for c in cases] == sorted(c.size for c in cases) and len(cases) >= 10
    assert {len(c.widths) - 1 for c in cases} >= {2, 3, 4}, "two, three and four Linears"
    assert {a for c in cases for a in c.acts} == set(unit13_cases.ACTS)
    assert any(not all(c.bias) for c in cases) and any(all(c.bias) for c in cases)
    assert min(c.batch for c in cases) == 2


def test_every_case_shows_runnable_code():
    ns = {"torch": torch, "per_sample_grads": ref.per_sample_grads}
    exec(unit13_cases.per_sample_cases()[0].source, ns)
    ns = {"torch": torch, "per_sample_by_hooks": ref.per_sample_by_hooks}
    exec(unit13_cases.hooks_cases()[0].source, ns)


def test_the_other_way_is_switched_off_and_the_prompt_says_so():
    """Issue 45: a loop of torch.autograd.grad passed 13.per-sample-grads; torch.func (or batched seeds) would pass
    13.per-sample-by-hooks. Each check runs the learner's function with the other way raising, and says so."""
    from tests.shortcuts.unit13 import autograd_grad_loop, batched_seeds, func_grad_loop, vmap_grad

    result = check("13.per-sample-grads", autograd_grad_loop)
    assert result.verdict == "incorrect" and "switched off" in str(result)
    assert "model 3 times for 3 samples" in str(check("13.per-sample-grads", func_grad_loop))
    for fn in (vmap_grad, batched_seeds):
        result = check("13.per-sample-by-hooks", fn)
        assert result.verdict == "incorrect" and "switched off" in str(result), fn.__name__
    assert "ran 2 backward passes" in str(check("13.per-sample-by-hooks", autograd_grad_loop))
    assert "switched off" in registry.get("13.per-sample-grads").prompt
    assert "switched off" in registry.get("13.per-sample-by-hooks").prompt
    # the switch is put back: torch.func and autograd.grad work again after the checks
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    assert torch.func.grad(lambda t: (t**2).sum())(x.detach()).tolist() == [2.0, 4.0]
    assert torch.autograd.grad((x**2).sum(), x)[0].tolist() == [2.0, 4.0]


# --- odd answers ------------------------------------------------------------------------------------


def test_a_list_instead_of_a_dict_is_told_so():
    result = check("13.per-sample-grads", lambda model, x, y: [p for p in model.parameters()])
    assert result.verdict in ("invalid", "incorrect") and "dict" in str(result), str(result)


def test_wrong_keys_are_named():
    result = check(
        "13.per-sample-grads", lambda model, x, y: {k.upper(): v for k, v in ref.per_sample_grads(model, x, y).items()}
    )
    assert result.verdict in ("invalid", "incorrect") and "named_parameters" in str(result), str(result)


def test_the_learner_skeleton_is_unanswered():
    def per_sample_grads(model, x, y):
        raise NotImplementedError()

    assert check("13.per-sample-grads", per_sample_grads).verdict == "unanswered"
    assert check("13.per-sample-by-hooks", ...).verdict == "unanswered"


def test_the_practitioner_tools_issue_30_names_each_have_a_cell_that_runs_them():
    """vmap's randomness and chunk_size, multi-grad and node hooks, compiled autograd, checkpointing under
    compile and GPU memory snapshots: each is called in a code cell, and the GPU cell says when there is none."""
    import json
    from pathlib import Path

    nb = json.loads(Path("solutions/13_autograd_beyond_eager.ipynb").read_text(encoding="utf-8"))
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    for call in (
        'randomness": mode',
        "chunk_size=4",
        "register_multi_grad_hook(",
        "register_prehook(",
        "compiled_autograd._enable(",
        "checkpoint(pointwise",
        "_record_memory_history(",
    ):
        assert any(call in src for src in code), call
    gpu = next(src for src in code if "_record_memory_history(" in src)
    assert "torch.cuda.is_available()" in gpu and "No GPU here" in gpu
