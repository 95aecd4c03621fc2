"""The doctor's report: one summary line of what it checked (the intent declared to it, the processes the
program started that it did not watch), then every finding (mechanism, unit, line, evidence, fix)."""

from __future__ import annotations

from grader.probes.doctor.base import DoctorState


def _declared(d: DoctorState) -> str:
    """What the doctor was told to prove (", declared frozen encoder; should_move head"), and any name that
    matched no parameter of a module the run called (a typo proves nothing)."""
    declared = [(kind, names) for kind, names in (("frozen", d.frozen), ("should_move", d.should_move)) if names]
    if not declared:
        return ""
    shown = "; ".join(f"{kind} {', '.join(names)}" for kind, names in declared)
    unmatched = [n for _, names in declared for n in names if not any(k == n or k.startswith(n + ".") for k in d.snap)]
    if unmatched:
        shown += f" (matching no parameter of a module the run called: {', '.join(unmatched)})"
    return f", declared {shown}"


def _processes(d: DoctorState) -> str:
    """The doctor watches this process only: a run whose training happened in processes it started says so."""
    if not d.processes:
        return ""
    if not d.backwards:
        return (
            f"; the training ran in {d.processes} process(es) the program started (torch.multiprocessing), "
            "which the doctor does not watch: it saw none of it"
        )
    return f"; {d.processes} process(es) the program started were not watched"


def text(d: DoctorState) -> str:
    head = (
        f"doctor: {d.backwards} backward call(s), {d.steps} optimizer step(s), {d.module_calls} module call(s) checked"
    )
    head += _declared(d)
    head += _processes(d)
    if d.internal_errors:
        head += f" ({d.internal_errors} observation(s) skipped: {d.first_error[:80]})"
    if not d.findings:
        return head + ": no finding"
    return head + f": {len(d.findings)} finding(s)\n" + "\n".join(str(f) for f in d.findings)
