"""Unit 12's exercise: a diagnosis written the way a learner would, and plausible bugs."""

import torch


def _finite(t):
    return t is None or bool(torch.isfinite(t).all())


def _holds_graph(value):
    if isinstance(value, torch.Tensor):
        return value.grad_fn is not None
    if isinstance(value, (list, tuple)):
        return any(_holds_graph(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_graph(v) for v in value.values())
    return False


def _graph_keepers(model):
    return [
        name
        for name, m in model.named_modules()
        if any(_holds_graph(v) for k, v in vars(m).items() if not k.startswith("_"))
    ]


def diagnose(model, loss_fn, batches, origin_rule="first", leak_rule="attributes", zero_before_check=False):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    depths = []
    for step, (x, y) in enumerate(batches, start=1):
        opt.zero_grad()
        seen = []
        handles = [
            m.register_full_backward_hook(
                lambda m, gin, gout, name=name, seen=seen: seen.append(
                    (name, all(map(_finite, gout)), all(map(_finite, gin)))
                )
            )
            for name, m in model.named_modules()
        ]
        try:
            loss = loss_fn(model(x), y)
            depths.append(_depth(loss))
            try:
                loss.backward()
            except RuntimeError:
                return ("stale graph", _graph_keepers(model)[0])
        finally:
            for h in handles:
                h.remove()
        if origin_rule == "first":
            origin = next((n for n, gout, gin in seen if gout and not gin), None)
        elif origin_rule == "last":
            origin = next((n for n, gout, gin in reversed(seen) if n and not gin), None)
        else:  # where the NaN lands: the first parameter with one
            origin = next((n.rsplit(".", 1)[0] for n, p in model.named_parameters() if not _finite(p.grad)), None)
        if origin is not None:
            return ("non-finite gradient", origin)
        if zero_before_check:
            opt.step()
            opt.zero_grad()
        if step == 1:
            for n, p in model.named_parameters():
                if p.requires_grad and p.grad is None:
                    return ("frozen parameter", n.rsplit(".", 1)[0])
        if not zero_before_check:
            opt.step()
    if leak_rule == "attributes":
        keepers = _graph_keepers(model)
        if keepers:
            return ("growing memory", keepers[0])
    elif depths[-1] > depths[0]:
        keepers = _graph_keepers(model)
        return ("growing memory", keepers[0] if keepers else "")
    return "no fault"


def _depth(t):
    memo = {}

    def d(fn):
        if fn is None:
            return 0
        if fn not in memo:
            memo[fn] = 1 + max((d(n) for n, _ in fn.next_functions), default=0)
        return memo[fn]

    return d(t.grad_fn)


def reference_diagnose(model, loss_fn, batches):
    return diagnose(model, loss_fn, batches)


def diagnose_blames_where_the_nan_lands(model, loss_fn, batches):
    """Names the module of the first parameter whose .grad is non-finite: where the NaN ends, not where
    it started."""
    return diagnose(model, loss_fn, batches, origin_rule="lands")


def diagnose_last_hook_with_a_nan(model, loss_fn, batches):
    """Takes the last module whose hook saw a non-finite gradient go out: the one nearest the input."""
    return diagnose(model, loss_fn, batches, origin_rule="last")


def diagnose_leaks_by_depth_only(model, loss_fn, batches):
    """Calls it a leak only when the loss's depth grows: a list of kept activations, one step deep each,
    passes as healthy."""
    return diagnose(model, loss_fn, batches, leak_rule="depth")


def diagnose_reads_grad_after_zero_grad(model, loss_fn, batches):
    """Looks for a .grad that is None after the optimizer step and zero_grad(), which set them all to None."""
    return diagnose(model, loss_fn, batches, zero_before_check=True)


def diagnose_leaves_anomaly_mode_on(model, loss_fn, batches):
    """Finds NaN with anomaly mode, switched on with set_detect_anomaly(True) and never off."""
    torch.autograd.set_detect_anomaly(True)
    return diagnose(model, loss_fn, batches)


REFERENCE = {"12.diagnose": reference_diagnose}
BUGGY = {
    "12.diagnose": [
        diagnose_blames_where_the_nan_lands,
        diagnose_last_hook_with_a_nan,
        diagnose_leaks_by_depth_only,
        diagnose_reads_grad_after_zero_grad,
        diagnose_leaves_anomaly_mode_on,
    ]
}
