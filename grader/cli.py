"""python -m grader: status, questions, reset, build, verify, grade."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _status(args) -> int:
    from . import progress
    from .course import UNITS
    from .store import current

    states = progress.course_state(current())
    rows = []
    for uid, unit in UNITS.items():
        s = states[uid]
        rows.append({"unit": uid, "title": unit.title, "status": s.status,
                     "needs": list(unit.needs), "note": progress.prerequisites_note(uid, states) if not s.passed else "",
                     **s.counts(), "missing": s.missing() if s.started and not s.passed else []})
    if args.json:
        print(json.dumps({"store": str(current().path), "units": rows}, indent=2))
        return 0
    print(f"progress: {current().path}")
    for r in rows:
        extra = f"  ({r['note']})" if r["note"] else ""
        done = f"{r['done']}/{r['questions']}" if r["questions"] else "-"
        print(f"  {r['unit']}  {r['status']:<12} {done:>6}  {r['title']}{extra}")
    return 0


def _known_units(units) -> list[str] | None:
    """The units asked for, zero-padded; None (after a message) when one is not a unit of the course."""
    from .course import UNITS

    wanted = [u.strip().zfill(2) for u in (units or [])]
    unknown = [u for u in wanted if u not in UNITS]
    if unknown:
        print(f"no such unit: {', '.join(unknown)} (the course has {', '.join(UNITS)})", file=sys.stderr)
        return None
    return wanted


def _questions(args) -> int:
    from .question import all_questions

    wanted = _known_units([args.unit] if args.unit else [])
    if wanted is None:
        return 2
    qs = [q for q in all_questions() if not wanted or q.unit in wanted]
    rows = [{"id": q.qid, "unit": q.unit, "role": q.role, "kind": type(q.kind).__name__,
             "answer": q.kind.describe(), "prompt": q.prompt} for q in qs]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        print(f"{r['id']:<32} {r['role']:<9} {r['kind']:<9} {r['prompt']}")
    return 0


def _reset(args) -> int:
    from .learner import reset

    result = reset(args.target)
    print(result)
    return 0 if result.verdict == "info" else 2


def _build(args) -> int:
    from .notebooks import BuildError, build, execute_solutions

    root = Path(args.root).resolve()
    try:
        if args.execute:
            for name in execute_solutions(root, only=args.unit or None):
                print(f"executed solutions/{name}")
        differences = build(root, check=args.check, only=args.unit or None)
    except BuildError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 2
    if args.check:
        from .manifest import missing_from_manifest
        differences += missing_from_manifest(root)
        for d in differences:
            print(d)
        if differences:
            print("run `python -m grader build` to regenerate notebooks/ from solutions/", file=sys.stderr)
            return 1
        print("notebooks/ matches solutions/")
        return 0
    for d in differences:
        print("wrote " + d.split(" ")[0])
    if not differences:
        print("notebooks/ already matches solutions/")
    if args.unit:
        print("solutions/manifest.json not updated (a partial build); run `python -m grader build` to record it")
        return 0
    from .manifest import record
    print(f"recorded every live answer in {record(root).relative_to(root)}")
    return 0


def _verify(args) -> int:
    from .manifest import compare

    wanted = _known_units(args.unit)
    if wanted is None:
        return 2
    report = compare(Path(args.root), units=wanted or None)
    changes = report["changed"] or report["added"] or report["removed"]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"torch {report['torch']}: {len(report['rows'])} experiments "
              f"(manifest built with torch {report['built_with'] or 'none: run `python -m grader build`'})")
        for row in report["rows"]:
            print(f"  {row['id']:<32} {row['answer'] if row['ok'] else 'ERROR ' + row['error']}")
        if report["changed"]:
            print(f"\n{len(report['changed'])} answer(s) changed since the manifest (revisit their prose):")
            for c in report["changed"]:
                print(f"  {c['id']}: {c['old']}  ->  {c['new']}")
        for label in ("added", "removed"):
            if report[label]:
                print(f"\n{label} since the manifest: " + ", ".join(report[label]))
        if report["errors"]:
            print(f"\n{len(report['errors'])} experiment(s) raised: " + ", ".join(report["errors"]))
    if report["errors"]:
        return 1
    if changes and not args.allow_changes:
        return 1
    return 0


def _grade(args) -> int:
    out = Path(args.out)
    problems = []
    if out.is_dir() or str(args.out).endswith(("/", "\\")):
        problems.append(f"--out {args.out} is a folder; give the CSV file to write")
    elif not out.parent.is_dir():
        problems.append(f"--out {args.out}: the folder {out.parent} does not exist")
    for flag in ("jobs", "cell_timeout", "notebook_timeout", "memory_mb"):
        if getattr(args, flag) <= 0:
            problems.append(f"--{flag.replace('_', '-')} must be a positive number, not {getattr(args, flag)}")
    if args.html and Path(args.html).exists() and not Path(args.html).is_dir():
        problems.append(f"--html {args.html} is a file; give a folder for the feedback pages")
    if problems:
        for p in problems:
            print(f"grade: {p}", file=sys.stderr)
        return 2
    from .grade import grade

    rows = grade(args.paths, Path(args.out), jobs=args.jobs, cell_timeout=args.cell_timeout,
                 notebook_timeout=args.notebook_timeout, memory_mb=args.memory_mb,
                 html_dir=Path(args.html) if args.html else None)
    return 0 if rows else 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader", description="autograd-lab's grader")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("status", help="every unit: passed, in progress or not started")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_status)

    p = sub.add_parser("questions", help="every question with id, unit, kind and prompt")
    p.add_argument("--json", action="store_true")
    p.add_argument("--unit", help="only this unit, e.g. 01")
    p.set_defaults(run=_questions)

    p = sub.add_parser("reset", help="forget progress on a unit (01) or one question (01.pow-node)")
    p.add_argument("target")
    p.set_defaults(run=_reset)

    p = sub.add_parser("build", help="write notebooks/ from solutions/")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if notebooks/ differs")
    p.add_argument("--execute", action="store_true",
                   help="first re-run the solutions in strict mode and store their outputs")
    p.add_argument("--unit", action="append", help="only these units (repeatable), e.g. --unit 03")
    p.add_argument("--root", default=str(Path(__file__).resolve().parent.parent), help=argparse.SUPPRESS)
    p.set_defaults(run=_build)

    p = sub.add_parser("verify", help="run every live experiment; report answers that changed since the manifest")
    p.add_argument("--json", action="store_true")
    p.add_argument("--allow-changes", action="store_true", help="report changed answers but exit 0")
    p.add_argument("--unit", action="append", help="only these units (repeatable), e.g. --unit 07")
    p.add_argument("--root", default=str(Path(__file__).resolve().parent.parent), help=argparse.SUPPRESS)
    p.set_defaults(run=_verify)

    p = sub.add_parser("grade", help="run learner notebooks headless and write a gradebook")
    p.add_argument("paths", nargs="+", help="notebooks, or folders of them (one sub-folder per learner)")
    p.add_argument("--out", default="grades.csv", help="the CSV gradebook to write (default grades.csv)")
    p.add_argument("-j", "--jobs", type=int, default=1, help="notebooks graded at once")
    p.add_argument("--cell-timeout", type=int, default=60, help="seconds a cell may run (default 60)")
    p.add_argument("--notebook-timeout", type=int, default=600, help="seconds a notebook may run (default 600)")
    p.add_argument("--memory-mb", type=int, default=3072, help="memory limit per notebook (default 3072)")
    p.add_argument("--html", help="also write one feedback page per learner into this folder")
    p.set_defaults(run=_grade)

    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
