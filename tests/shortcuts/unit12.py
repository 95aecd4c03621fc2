"""Unit 12's shortcuts: a fault read off the extra module's class (its name, its code), never trained for."""

from torch import nn

from grader.units.unit12 import support

BY_CLASS = {
    "RootGate": "non-finite gradient",
    "LogGate": "non-finite gradient",
    "InvGate": "non-finite gradient",
    "Recorder": "growing memory",
    "Tally": "growing memory",
    "CachedShift": "stale graph",
    "CachedScale": "stale graph",
    "Smoother": "stale graph",
    "Probe": "frozen parameter",
    "NoGradMix": "frozen parameter",
    "StopInput": "frozen parameter",
}


def _extra(model):
    return [(name, m) for name, m in model.named_children() if not isinstance(m, (nn.Linear, nn.ReLU, nn.Tanh))]


def by_class_name(model, loss_fn, batches):
    """[lookup] The reviewer's table: the verdict of the one module that is not enc, act or head, by its class
    (StopInput's fault shows at enc, the others' in the module or its lin)."""
    for name, m in _extra(model):
        kind = BY_CLASS.get(type(m).__name__)
        if kind is not None:
            if type(m).__name__ == "StopInput":
                return (kind, "enc")
            return (kind, f"{name}.lin" if kind == "frozen parameter" and hasattr(m, "lin") else name)
    return "no fault"


CODE = (
    (("sqrt", "log"), "non-finite gradient"),
    (("append",), "growing memory"),
    (("detach", "no_grad"), "frozen parameter"),
)


def by_the_code(model, loss_fn, batches):
    """[text] Reads each custom module's forward as code (the names it uses, the attributes it sets), never its
    run: sqrt or log under a where is non-finite, an append a leak, a detach or no_grad a cut, an attribute
    computed once and reused a stale graph."""
    for name, m in model.named_modules():
        if not name or isinstance(m, (nn.Linear, nn.ReLU, nn.Tanh, nn.Sigmoid)):
            continue
        code = type(m).forward.__code__
        used = set(code.co_names)
        for words, kind in CODE:
            if used & set(words):
                if kind == "growing memory" and "detach" in used:
                    break
                return (kind, f"{name}.lin" if kind == "frozen parameter" and hasattr(m, "lin") else name)
        if any(v is None for k, v in vars(m).items() if not k.startswith("_")) and "detach" not in used:
            return ("stale graph", name)
        if any(isinstance(v, float) for k, v in vars(m).items() if not k.startswith("_")) and "item" not in used:
            return ("growing memory", name)
    return "no fault"


def course_find_fault(model, loss_fn, batches):
    """[wrapper] The grader's own diagnosis."""
    found = support.find_fault(model, loss_fn, batches)
    return found.kind if found.kind == "no fault" else (found.kind, sorted(found.where)[0])


def frozen_by_any_missing_grad(model, loss_fn, batches):
    """[heuristic] Any parameter left without .grad is a frozen one, even one frozen on purpose: otherwise the
    reference checklist."""
    from tests.reference.unit12 import reference_diagnose

    found = reference_diagnose(model, loss_fn, batches)
    for name, p in model.named_parameters():
        if not p.requires_grad:
            return ("frozen parameter", name.rsplit(".", 1)[0])
    return found


SHORTCUTS = {"12.diagnose": [by_class_name, by_the_code, course_find_fault, frozen_by_any_missing_grad]}
