"""Unit 12's shortcuts: a fault read off the extra module's class (its name, its code), never trained for."""

from torch import nn

from grader.units.unit12 import support
from tests.shortcuts._around import fresh_copy, graders_answer, restored

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


# --- the independent attempt of issue 45 (item 4) ------------------------------------------------------------


@restored("grader.units.unit12.support")
def course_find_fault_switched_back_on(model, loss_fn, batches):
    """[switch] The grader's own diagnosis, with grader.units.unit12.support's attributes put back for the call."""
    return course_find_fault(model, loss_fn, batches)


@restored("grader.units.unit12.support")
def diagnosis_from_the_grader(model, loss_fn, batches):
    """[stack] torch's answer, q.run(case), from the grader's frame up the call stack (the diagnosis put back so
    that the grader's own run works inside the learner's function), one of its modules named."""
    found = graders_answer()
    if isinstance(found, tuple) and len(found) > 1 and not isinstance(found[1], str):
        return (found[0], sorted(found[1])[0]) if found[1] else found[0]
    return found


def course_find_fault_from_a_fresh_copy(model, loss_fn, batches):
    """[switch] The grader's own diagnosis from a second copy of grader/units/unit12/support.py, loaded under
    another name: the switch replaced the module's attributes, not the copy's."""
    found = fresh_copy("grader.units.unit12.support").find_fault(model, loss_fn, batches)
    return found.kind if found.kind == "no fault" else (found.kind, sorted(found.where)[0])


OPEN = {
    "12.diagnose": [
        course_find_fault_switched_back_on,
        course_find_fault_from_a_fresh_copy,
        diagnosis_from_the_grader,
    ]
}
