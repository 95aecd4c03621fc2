"""The doctor on the corpus of real reports (tests/real_bugs): the counts and the table docs/doctor.md shows.

    python tools/doctor_table.py            # print the counts, the per-mechanism counts and the table
    python tools/doctor_table.py --write    # and put them in docs/doctor.md, between its corpus markers

Each program's ``bug()`` and ``fixed()`` run under the doctor, as tests/test_doctor.py runs them; the table
gives, for each bug, the finding with the mechanism its module names (the first such finding).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "doctor.md"
START, END = "<!-- corpus: tools/doctor_table.py -->", "<!-- /corpus -->"


def _run(fn):
    from grader.learner.doctor import doctor

    error = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with doctor(report=False) as d:
                fn()
        except Exception as exc:  # noqa: BLE001 - a bug program may raise; that is its symptom
            error = exc
    return d.findings, error


def section() -> str:
    from grader.learner.doctor import Mechanism
    from tests.real_bugs import cases

    rows, named, silent = [], {}, {}
    corpus = cases()
    for mod in corpus:
        mechanism = Mechanism(mod.MECHANISM)
        found, _ = _run(mod.bug)
        right = next((f for f in found if f.mechanism is mechanism), None)
        fixed, error = _run(mod.fixed)
        named[mechanism.value] = named.get(mechanism.value, 0) + (right is not None)
        silent[mechanism.value] = silent.get(mechanism.value, 0) + (not fixed and error is None)
        said = (
            right.evidence if right is not None else "(not named: " + "; ".join(f.mechanism.value for f in found) + ")"
        )
        name = mod.__name__.rsplit(".", 1)[-1]
        rows.append(
            (
                mechanism.value,
                mod.THREAD,
                f"| {mod.THREAD} | `{name}` | {mechanism.value} (unit {mechanism.unit}) | {said} |",
            )
        )
    total = {m: sum(1 for mod in corpus if mod.MECHANISM == m) for m in named}
    order = sorted(total, key=lambda m: (-total[m], m))
    lines = [
        f"**The right mechanism named on {sum(named.values())} of {len(corpus)} bugs, no finding on "
        f"{sum(silent.values())} of {len(corpus)} fixes.** Per mechanism (bugs named / fixes silent, of n):",
        "",
        "| mechanism | unit | reports | bugs named | fixes silent |",
        "|---|---|---|---|---|",
    ]
    for m in order:
        lines.append(f"| {m} | {Mechanism(m).unit} | {total[m]} | {named[m]} | {silent[m]} |")
    lines += ["", "| report | program | mechanism | what the doctor said |", "|---|---|---|---|"]
    lines += [row for _, _, row in sorted(rows)]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))  # this checkout's grader and its tests/real_bugs
    text = section()
    print(text)
    if "--write" in argv:
        doc = DOC.read_text(encoding="utf-8")
        head, rest = doc.split(START, 1)
        _, tail = rest.split(END, 1)
        DOC.write_text(f"{head}{START}\n{text}\n{END}{tail}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
