"""The doctor reads intent from what a program does, never from a shape (issue 47): each correct use of
advanced autograd below gets no finding, and the mistake it is easily confused with is named.

Each case is a small training loop; ``_found`` runs it under ``with doctor()`` and returns the mechanisms.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from grader.probes.doctor import Mechanism, doctor


def _found(run) -> list[Mechanism]:
    with doctor(report=False) as d:
        run()
    return [f.mechanism for f in d.findings]


def _net(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))


# -- Python's sum of loss tensors -------------------------------------------------------------------------


def test_sum_of_loss_tensors_is_no_inert_term_and_a_number_added_is_one():
    def summed(extra):
        model = _net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        xs, y = torch.randn(4, 5, 3), torch.randint(0, 2, (5,))
        for _ in range(3):
            outputs = [model(x) for x in xs]
            loss = sum(F.cross_entropy(o, y) for o in outputs)  # sum() starts at the int 0
            loss = loss + sum(o.pow(2).mean() for o in outputs) * 0.1
            if extra:
                loss = loss + outputs[0].detach().abs().mean().item()
            opt.zero_grad()
            loss.backward()
            opt.step()

    assert _found(lambda: summed(extra=False)) == []
    assert _found(lambda: summed(extra=True)) == [Mechanism.INERT_LOSS_TERM]


def test_a_running_total_started_at_zero_inside_the_step_is_no_term():
    def step_total():
        model = _net()
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        x, y = torch.randn(6, 3), torch.randn(6, 2)
        for _ in range(3):
            total = 0.0
            for chunk_x, chunk_y in zip(x.split(2), y.split(2)):
                total += F.mse_loss(model(chunk_x), chunk_y)
            opt.zero_grad()
            total.backward()
            opt.step()

    assert _found(step_total) == []


# -- one graph walked several times on purpose ------------------------------------------------------------


def test_jacobian_rows_with_retain_graph_each_step_are_no_carried_state():
    def jacobian_regularised():
        model = _net()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(3):
            x = torch.randn(4, 3, requires_grad=True)
            y = model(x)
            rows = [torch.autograd.grad(y[:, i].sum(), x, retain_graph=True, create_graph=True)[0] for i in range(2)]
            loss = y.pow(2).mean() + 0.01 * sum(r.pow(2).sum() for r in rows)
            opt.zero_grad()
            loss.backward()
            opt.step()

    assert _found(jacobian_regularised) == []


def test_losses_sharing_a_trunk_backpropagated_one_by_one_are_no_carried_state():
    def multi_head():
        torch.manual_seed(0)
        trunk, heads = nn.Linear(3, 6), nn.ModuleList(nn.Linear(6, 1) for _ in range(3))
        opt = torch.optim.SGD([*trunk.parameters(), *heads.parameters()], lr=0.1)
        for _ in range(3):
            features = trunk(torch.randn(5, 3))
            opt.zero_grad()
            for head in heads:
                head(features).pow(2).mean().backward(retain_graph=True)
            opt.step()

    assert _found(multi_head) == []


def test_an_inner_loop_differentiated_through_is_no_carried_state():
    """MAML's inner steps: autograd.grad with create_graph=True at one line, the outer loss through them all."""

    def inner_loop():
        torch.manual_seed(0)
        w = nn.Parameter(torch.randn(3, 1))
        opt = torch.optim.SGD([w], lr=0.01)
        for _ in range(3):
            fast = w
            x, y = torch.randn(8, 3), torch.randn(8, 1)
            for _ in range(3):
                (g,) = torch.autograd.grad(F.mse_loss(x @ fast, y), fast, create_graph=True)
                fast = fast - 0.1 * g
            opt.zero_grad()
            F.mse_loss(x @ fast, y).backward()
            opt.step()

    assert _found(inner_loop) == []


def test_a_state_carried_across_steps_with_retain_graph_is_carried_state():
    def retained():
        torch.manual_seed(0)
        cell, head = nn.RNNCell(3, 4), nn.Linear(4, 1)
        opt = torch.optim.SGD([*cell.parameters(), *head.parameters()], lr=0.01)
        h = torch.zeros(1, 4)
        for _ in range(3):
            h = cell(torch.randn(1, 3), h)
            opt.zero_grad()
            head(h).pow(2).sum().backward(retain_graph=True)
            opt.step()

    try:
        found = _found(retained)
    except RuntimeError:  # the second backward finds weights the step overwrote: the finding is made first
        found = [Mechanism.CARRIED_STATE]
    assert Mechanism.CARRIED_STATE in found


# -- input gradients on purpose ---------------------------------------------------------------------------


def test_a_penalty_on_input_gradients_is_no_unregistered_parameter():
    def penalised():
        model = _net()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for _ in range(3):
            x = torch.randn(5, 3).requires_grad_(True)
            out = model(x)
            (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
            loss = out.pow(2).mean() + ((g.norm(dim=1) - 1) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    assert _found(penalised) == []


def test_a_leaf_nobody_reads_or_registers_is_named():
    def forgotten():
        torch.manual_seed(0)
        model, scale = nn.Linear(3, 1), torch.ones(1, requires_grad=True)  # meant to be learned
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            (model(torch.randn(4, 3)) * scale).pow(2).mean().backward()
            opt.step()

    assert _found(forgotten) == [Mechanism.UNREGISTERED_MODULE]


def test_an_adversarial_example_read_through_grad_is_an_input():
    def attack():
        model = _net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            x, y = torch.randn(4, 3), torch.randint(0, 2, (4,))
            x_adv = x.clone().requires_grad_(True)
            F.cross_entropy(model(x_adv), y).backward()
            x_adv = (x + 0.1 * x_adv.grad.sign()).detach()
            opt.zero_grad()
            F.cross_entropy(model(x_adv), y).backward()
            opt.step()

    assert _found(attack) == []


# -- checkpointing that restores state ---------------------------------------------------------------------


def _restoring_context():
    """checkpoint's context_fn: snapshot BatchNorm's buffers before the recomputation, restore them after."""
    import contextlib

    saved = {}

    @contextlib.contextmanager
    def forward_context():
        yield

    @contextlib.contextmanager
    def recompute_context():
        bn = saved["module"]
        before = {name: b.clone() for name, b in bn.named_buffers()}
        try:
            yield
        finally:
            with torch.no_grad():
                for name, b in bn.named_buffers():
                    b.copy_(before[name])

    return saved, lambda: (forward_context(), recompute_context())


def test_a_checkpoint_that_restores_batchnorm_buffers_is_no_double_update_and_one_that_does_not_is():
    def checkpointed(restore):
        torch.manual_seed(0)
        bn, lin = nn.BatchNorm1d(4), nn.Linear(4, 1)
        saved, context_fn = _restoring_context()
        saved["module"] = bn
        opt = torch.optim.SGD([*bn.parameters(), *lin.parameters()], lr=0.1)
        for _ in range(2):
            x = torch.randn(6, 4, requires_grad=True)
            kwargs = {"context_fn": context_fn} if restore else {}
            out = checkpoint(lambda t: lin(bn(t)), x, use_reentrant=False, **kwargs)
            opt.zero_grad()
            out.sum().backward()
            opt.step()

    assert _found(lambda: checkpointed(restore=True)) == []
    assert _found(lambda: checkpointed(restore=False)) == [Mechanism.HOOKS_CHECKPOINT]


# -- graphs no backward walks -----------------------------------------------------------------------------


def test_outputs_kept_with_their_graphs_are_named_and_the_same_loop_under_no_grad_is_not():
    def predictions(no_grad):
        model = _net()
        kept = []
        with torch.no_grad() if no_grad else torch.enable_grad():
            for _ in range(40):
                kept.append(model(torch.randn(2, 3)))
        return torch.cat(kept).argmax(1)

    assert _found(lambda: predictions(no_grad=True)) == []
    assert _found(lambda: predictions(no_grad=False)) == [Mechanism.HELD_GRAPH]


def test_a_running_mean_of_outputs_is_named():
    def running_mean():
        model = _net()
        mean = 0.0
        for _ in range(40):
            mean = 0.9 * mean + 0.1 * model(torch.randn(2, 3)).mean()
        return float(mean)

    assert _found(running_mean) == [Mechanism.HELD_GRAPH]


def test_an_episode_kept_until_its_backward_is_no_held_graph():
    def episode():
        model = _net()
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        for _ in range(2):
            log_probs = [F.log_softmax(model(torch.randn(1, 3)), 1)[0, 0] for _ in range(40)]
            opt.zero_grad()
            (-torch.stack(log_probs).sum()).backward()
            opt.step()

    assert _found(episode) == []


# -- gradients accumulated across steps -------------------------------------------------------------------


def test_accumulation_between_clears_is_silent_and_a_missing_clear_is_named():
    def accumulate(clear_after_step):
        model = _net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            for _ in range(2):  # two micro-batches, one step
                model(torch.randn(4, 3)).pow(2).mean().div(2).backward()
            opt.step()
            if clear_after_step:
                opt.zero_grad()

    assert _found(lambda: accumulate(clear_after_step=True)) == []
    assert _found(lambda: accumulate(clear_after_step=False)) == [Mechanism.ACCUMULATED_GRAD]


def test_a_gradient_cleared_in_place_is_cleared():
    def zeroed():
        model = _net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad(set_to_none=False)  # zero_() in place: the same tensor, a new version
            model(torch.randn(4, 3)).pow(2).mean().backward()
            opt.step()

    assert _found(zeroed) == []


# -- a Parameter's name bound to another tensor ------------------------------------------------------------


def test_tied_weights_are_no_rebinding():
    def tied():
        torch.manual_seed(0)
        embed, decode = nn.Embedding(10, 4), nn.Linear(4, 10)
        decode.weight = embed.weight  # one Parameter, two uses, before the optimizer
        opt = torch.optim.SGD([*embed.parameters(), decode.bias], lr=0.1)
        for _ in range(2):
            opt.zero_grad()
            F.cross_entropy(decode(embed(torch.tensor([1, 2, 3]))), torch.tensor([2, 3, 4])).backward()
            opt.step()

    assert _found(tied) == []
