"""Unit 04b's shortcuts: why .grad is None, read from the program's text or from flags, never from the record."""

import re

from grader.probes import traces
from tests.shortcuts._around import graders_answer, restored

CUTS = (
    ("no_grad", "no_grad region"),
    ("inference_mode", "inference_mode region"),
    (".detach(", "detached"),
    (".item(", "left via .item()"),
    (".tolist(", "left via .item()"),
)
QUIET = re.compile(r"[<>]=?|==|!=|\.(argmax|argmin|long|int|bool|round|nonzero)\(|int64")


def _backward_at(trace):
    return next((i for i, s in enumerate(trace) if s.line.strip().endswith(".backward()")), None)


def why_by_text(trace, name):
    """[text] The reviewer's classifier, made to read any names: only step.line is read, never a tensor."""
    lines = [s.line for s in trace]
    first = next(i for i, s in enumerate(trace) if s.name == name)
    if "requires_grad=True" not in lines[first] and "requires_grad_(" not in "\n".join(lines[first : first + 2]):
        if "Parameter" not in lines[first]:
            return "never entered" if first == 0 or "torch.tensor" in lines[first] else "non-leaf not retained"
    backward = _backward_at(trace)
    if backward is None or lines[backward].startswith("if "):
        return "backward not run"
    after = lines[backward + 1 :]
    if any(re.match(rf"\s*{re.escape(name)} = ", a) or f"\n    {name} = " in a for a in after):
        return "rebound name"
    if any("zero_grad" in a or ".grad = None" in a for a in after):
        return "cleared after backward"
    for line in lines[first + 1 : backward]:
        if line.startswith("log = ") or "err = " in line:
            continue
        for word, cause in CUTS:
            if word in line:
                return cause
        if QUIET.search(line):
            return "non-differentiable op"
    return "backward not run"


def why_by_flags(trace, name):
    """[heuristic] requires_grad and is_leaf as the steps recorded them, then the first step after the name whose
    value has no grad_fn, its cause read from its line: the record never asked whether it leads back."""
    t = trace.names[name]
    if not t.requires_grad:
        return "never entered"
    if not t.is_leaf:
        return "non-leaf not retained"
    backward = _backward_at(trace)
    if backward is None:
        return "backward not run"
    if any(name in s.grad_names for s in trace):
        return "cleared after backward"
    first = next(i for i, s in enumerate(trace) if s.name == name)
    for s in list(trace)[first + 1 :]:
        if s.name not in (None, "log", "err") and s.grad_fn == "None" and s.requires_grad is False:
            return traces.cut_kind(s.line) or "non-differentiable op"
    return "rebound name"


def course_diagnose(trace, name):
    """[wrapper] The grader's own answer, grader.probes.traces.diagnose."""
    return traces.diagnose(trace, name)


SHORTCUTS = {"04b.why-grad-none": [why_by_text, why_by_flags, course_diagnose]}


# --- the independent attempt of issue 45 (item 4) ------------------------------------------------------------


def why_by_ordered_rules(trace, name):
    """[text] A classifier of the lines in the order a reader would ask: no backward line, a clear after it, the
    name bound twice, a name built from others, the name never read, then the first keyword anywhere (29 of 50)."""
    lines = [s.line for s in trace]
    text = "\n".join(lines)
    backward = [i for i, line in enumerate(lines) if "backward" in line]
    if not backward:
        return "backward not run"
    after = "\n".join(lines[backward[-1] + 1 :])
    if "zero_grad" in after or ".grad = None" in after or "grad.zero_" in after:
        return "cleared after backward"
    bound = [i for i, s in enumerate(trace) if s.name == name]
    if len(bound) > 1:
        return "rebound name"
    if bound and not re.search(r"requires_grad=True|Parameter|requires_grad_\(", lines[bound[0]]):
        return "non-leaf not retained"
    if not any(name in (s.inputs or ()) and s.name != name for s in trace):
        return "never entered"
    for word, cause in (
        ("inference_mode", "inference_mode region"),
        ("no_grad", "no_grad region"),
        (".item()", "left via .item()"),
        (".tolist()", "left via .item()"),
        ("detach", "detached"),
    ):
        if word in text:
            return cause
    if re.search(r"argmax|argmin|[<>]|==|\.long\(|\.int\(|round|sign|floor", text):
        return "non-differentiable op"
    return "never entered"


@restored("grader.probes", "grader.probes.traces")
def course_diagnose_switched_back_on(trace, name):
    """[switch] The grader's own diagnose, with the probes' attributes put back for the call."""
    return traces.diagnose(trace, name)


@restored("grader.probes", "grader.probes.traces")
def why_from_the_grader(trace, name):
    """[stack] torch's answer, q.run(case), from the grader's frame up the call stack."""
    return graders_answer()


SHORTCUTS["04b.why-grad-none"] += [why_by_ordered_rules]
OPEN = {"04b.why-grad-none": [course_diagnose_switched_back_on, why_from_the_grader]}
