"""The doctor's report: one summary line of what it checked, then every finding (mechanism, unit, line,
evidence, fix)."""

from __future__ import annotations


def text(d) -> str:
    head = (
        f"doctor: {d.backwards} backward call(s), {d.steps} optimizer step(s), "
        f"{d.module_calls} module call(s) checked: "
    )
    if d.internal_errors:
        head = head.replace(
            "checked: ", f"checked ({d.internal_errors} observation(s) skipped: {d.first_error[:80]}): "
        )
    if not d.findings:
        return head + "no finding"
    return head + f"{len(d.findings)} finding(s)\n" + "\n".join(str(f) for f in d.findings)
