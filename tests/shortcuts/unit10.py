"""Unit 10's shortcuts: a fault read off the program's lines, or borrowed from the grader's own audit."""

import re

from grader.units.unit10 import capstone
from tests.shortcuts._around import fresh_copy, graders_answer, restored


def _loop_start(lines):
    return next(i for i, line in enumerate(lines) if line.startswith("for step in"))


def by_regex(program):
    """[text] The reviewer's reader of program.lines, which never runs torch: a parameter assigned after the
    optimizer is rebound; no_grad with a matmul of a parameter on the next line is the encoder; a detach in the
    loop feeding more than a log is a detached stage; any .xxx_( call in the loop is an in-place write; a
    matmul of a parameter before the loop is a stale graph; `n = c * n + ...` with no later detach is carried
    state; no zero_grad is never cleared."""
    lines = program.lines
    params = program.params
    opt_at = next(i for i, line in enumerate(lines) if "optim." in line)
    loop_at = _loop_start(lines)
    for i, line in enumerate(lines[opt_at + 1 :], start=opt_at + 2):
        for p in params:
            if re.match(rf"\s*{p} = ", line):
                return ("rebound parameter", i)
    for i, line in enumerate(lines):
        if "no_grad" in line and i + 1 < len(lines) and any(f"@ {p}" in lines[i + 1] for p in params):
            return ("no_grad encoder", i + 1)
    step_at = next(i for i, line in enumerate(lines) if "opt.step()" in line)
    for i, line in enumerate(lines[loop_at:step_at], start=loop_at + 1):
        m = re.match(r"\s*(\w+) = .*\.detach\(\)", line)
        if m and any(re.search(rf"\b{m.group(1)}\b", later) and "log.append" not in later for later in lines[i:]):
            return ("detached stage", i)
    for i, line in enumerate(lines[loop_at:], start=loop_at + 1):
        if re.search(r"\.\w+_\(", line) and "zero_grad" not in line:
            return ("in-place on a saved tensor", i)
    for i, line in enumerate(lines[opt_at:loop_at], start=opt_at + 1):
        if any(f"@ {p}" in line for p in params):
            return ("stale graph", i)
    for i, line in enumerate(lines[loop_at:], start=loop_at + 1):
        m = re.match(r"\s*(\w+) = [\d.]+ \* (\w+) \+", line)
        if m and m.group(1) == m.group(2):
            name = m.group(1)
            if not any(re.match(rf"\s*{name} = {name}\.detach\(\)", later) for later in lines[i:]):
                loss_at = next(j for j, later in enumerate(lines) if later.strip().startswith("loss ="))
                last = max(j for j in range(i - 1, loss_at) if re.match(rf"\s*{name} = ", lines[j]))
                return ("carried state leak", last + 1)
    if not any("zero_grad" in line for line in lines):
        backward = next(i for i, line in enumerate(lines, start=1) if ".backward(" in line)
        return ("gradients never cleared", backward)
    return "no fault"


def course_audit(program):
    """[wrapper] The grader's own audit."""
    found = capstone.audit(program)
    return "no fault" if found.kind == "no fault" else (found.kind, found.line)


def by_the_checklist_text(program):
    """[wrapper] The grader's readings as text (checklist), parsed: which line step 2 reaches, which parameter the
    loss misses."""
    text = capstone.checklist(capstone.step_through(program, steps=2))
    m = re.search(r"as bound at line (\d+) (before the loop|at step 1)", text)
    if m:
        return ("stale graph" if m.group(2) == "before the loop" else "carried state leak", int(m.group(1)))
    return "no fault"


def depth_grows_means_carried(program):
    """[heuristic] Compares the depth of the two steps' losses: a deeper second loss is carried state, at the
    state's last assignment; otherwise the reference checklist without its step-2 question."""
    run = capstone.step_through(program, steps=2)
    depths = run.depths()
    if len(depths) == 2 and depths[1] > depths[0]:
        line = max(e.number for e in run.step(1) if e.name in ("state", "memory"))
        return ("carried state leak", line)
    return by_regex(program)


SHORTCUTS = {"10.diagnose": [by_regex, course_audit, by_the_checklist_text, depth_grows_means_carried]}


# --- the independent attempt of issue 45 (item 4) ------------------------------------------------------------


@restored("grader.units.unit10.capstone")
def course_audit_switched_back_on(program):
    """[switch] The grader's own audit, with grader.units.unit10.capstone's attributes put back for the call."""
    return course_audit(program)


@restored("grader.units.unit10.capstone")
def diagnosis_from_the_grader(program):
    """[stack] torch's answer, q.run(case), from the grader's frame up the call stack (the audit put back so that
    the grader's own run works inside the learner's function): (kind, line, ...) cut to (kind, line)."""
    found = graders_answer()
    return tuple(found[:2]) if isinstance(found, tuple) else found


def course_audit_from_a_fresh_copy(program):
    """[switch] The grader's own audit from a second copy of grader/units/unit10/capstone.py, loaded under another
    name: the switch replaced the module's attributes, not the copy's."""
    found = fresh_copy("grader.units.unit10.capstone").audit(program)
    return "no fault" if found.kind == "no fault" else (found.kind, found.line)


OPEN = {"10.diagnose": [course_audit_switched_back_on, course_audit_from_a_fresh_copy, diagnosis_from_the_grader]}
