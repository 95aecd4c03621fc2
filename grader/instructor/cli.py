"""python -m grader: the learner's commands (status, reset, workspace, identity, review, doctor:
:mod:`grader.learner.commands`) and the instructor's (questions, claims, build, new-question, verify, grade, collect,
class, release)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from grader.instructor import grade_command
from grader.learner import commands


def _known_units(units) -> list[str] | None:
    """The units asked for, zero-padded; None (after a message) when one is not a unit of the course."""
    from grader.engine.course import UNITS

    wanted = [u.strip().zfill(2) for u in (units or [])]
    unknown = [u for u in wanted if u not in UNITS]
    if unknown:
        print(f"no such unit: {', '.join(unknown)} (the course has {', '.join(UNITS)})", file=sys.stderr)
        return None
    return wanted


def _questions(args) -> int:
    from grader.engine.question import all_questions

    wanted = _known_units([args.unit] if args.unit else [])
    if wanted is None:
        return 2
    qs = [q for q in all_questions() if not wanted or q.unit in wanted]
    rows = [
        {
            "id": q.qid,
            "unit": q.unit,
            "role": q.role,
            "kind": type(q.kind).__name__,
            "answer": q.kind.describe(),
            "prompt": q.prompt,
        }
        for q in qs
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        print(f"{r['id']:<32} {r['role']:<9} {r['kind']:<9} {r['prompt']}")
    return 0


def _claims(args) -> int:
    from grader.engine.claims import all_claims
    from grader.instructor.citations import citations
    from grader.instructor.manifest import claim_row
    from grader.probes import sweep

    wanted = _known_units([args.unit] if args.unit else [])
    if wanted is None:
        return 2
    check = args.check or args.json  # the JSON report is the checked one: ops, programs, counter-examples
    cited = citations(Path(args.root))
    rows = []
    for c in all_claims(wanted or None):
        row = {**claim_row(c), "cited": [where.where for where in cited.get(c.cid, [])]}
        if check:
            row.update(sweep.check(c, args.sweep).report())
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"{r['id']}  (cited in {', '.join(r['cited']) or 'no notebook'})")
            print(f"    {r['sentence']}")
            if r["holds_when"]:
                print(f"    holds when: {r['holds_when']}")
            if r["torch_range"]:
                print(f"    torch: {r['torch_range']}")
            swept = "on op_db" + (f" ({', '.join(r['sweep_ops'])})" if r["sweep_ops"] else "")
            print(f"    swept {swept}" if r["swept"] else f"    not swept: {r['not_swept']}")
            if check:
                print(f"    {r['result']}")
                for kind in ("broken", "counterexamples"):
                    if r[kind]["ops"]:
                        print(f"    {kind} on {len(r[kind]['ops'])} operation(s): {', '.join(r[kind]['ops'][:12])}")
    return 1 if check and not all(r["ok"] for r in rows) else 0


def _build(args) -> int:
    from grader.instructor.build import BuildError, build, execute_solutions

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
        from grader.instructor.manifest import missing_from_manifest

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
    from grader.instructor.manifest import record

    print(f"recorded every live answer in {record(root).relative_to(root)}")
    return 0


def _verify(args) -> int:
    from grader.instructor.manifest import compare

    wanted = _known_units(args.unit)
    if wanted is None:
        return 2
    report = compare(Path(args.root), units=wanted or None, scope=args.sweep)
    changes = report["changed"] or report["added"] or report["removed"] or report["claims_failed"]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"torch {report['torch']}: {len(report['rows'])} experiments "
            f"(manifest built with torch {report['built_with'] or 'none: run `python -m grader build`'})"
        )
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
        print(f"\nclaims on torch {report['torch']} (op-level ones swept over op_db: {args.sweep}):")
        for row in report["claims"]:
            print(f"  {row['id']:<48} {row['result']}")
        if report["claims_failed"]:
            print(f"\n{len(report['claims_failed'])} claim(s) no longer hold (revisit their prose): ")
            for row in report["claims"]:
                if not row["ok"]:
                    print(f"  {row['id']}: {row['sentence']}\n    {row['result']}")
        print(summary_line(report))
    if report["errors"]:
        return 1
    if changes and not args.allow_changes:
        return 1
    return 0


def summary_line(report: dict) -> str:
    """verify's last line: '189 answers and 9 claims; none changed since the manifest built with torch 2.13.0'."""
    n, m = len(report["rows"]), len(report.get("claims", []))
    changed = [f"{len(report[k])} {k}" for k in ("changed", "added", "removed") if report[k]]
    if report.get("claims_failed"):
        changed.append(f"{len(report['claims_failed'])} claim(s) failed")
    base = (
        f"since the manifest built with torch {report['built_with']}"
        if report["built_with"]
        else "(no manifest: run `python -m grader build`)"
    )
    errors = f", {len(report['errors'])} raised" if report["errors"] else ""
    return f"{n} answers and {m} claim{'' if m == 1 else 's'}; {', '.join(changed) if changed else 'none changed'} {base}{errors}"


def _new_question(args) -> int:
    from grader.instructor.new_question import NewQuestionError, insert

    try:
        lines = insert(Path(args.root), args.unit, args.slug, args.kind, role=args.role, after=args.after)
    except NewQuestionError as exc:
        print(f"new-question: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


def _release(args) -> int:
    from grader.instructor.release import ReleaseError, release

    try:
        written = release(Path(args.out), root=Path(args.root), make_zip=args.zip)
    except ReleaseError as exc:
        print(f"release failed: {exc}", file=sys.stderr)
        return 2
    notebooks = [w for w in written if w.startswith("notebooks/")]
    others = [w for w in written if w not in notebooks]
    print(
        f"wrote the student bundle to {args.out}: {len(notebooks)} notebooks, "
        + ", ".join(others)
        + " (no solutions, no tests)"
    )
    return 0


def _add_course_commands(sub) -> None:
    """questions, claims, build, verify: what the course holds, and whether torch still agrees with it."""
    p = sub.add_parser("questions", help="every question with id, unit, kind and prompt")
    p.add_argument("--json", action="store_true")
    p.add_argument("--unit", help="only this unit, e.g. 01")
    p.set_defaults(run=_questions)

    p = sub.add_parser("claims", help="every claim (a rule the prose states) with its condition and where it is cited")
    p.add_argument("--json", action="store_true")
    p.add_argument("--unit", help="only this unit, e.g. 05")
    p.add_argument(
        "--check",
        action="store_true",
        help="also check each claim on the installed torch (exit 1 if one fails); --json always checks",
    )
    p.add_argument(
        "--sweep",
        choices=("all", "sample", "none"),
        default="all",
        help="the op-level claims' sweep over torch's operator database: every operation (default), the fixed "
        "sample make test uses, or none (generated programs only)",
    )
    p.add_argument("--root", default=str(Path(__file__).resolve().parents[2]), help=argparse.SUPPRESS)
    p.set_defaults(run=_claims)

    p = sub.add_parser("build", help="write notebooks/ from solutions/")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if notebooks/ differs")
    p.add_argument(
        "--execute", action="store_true", help="first re-run the solutions in strict mode and store their outputs"
    )
    p.add_argument("--unit", action="append", help="only these units (repeatable), e.g. --unit 03")
    p.add_argument("--root", default=str(Path(__file__).resolve().parents[2]), help=argparse.SUPPRESS)
    p.set_defaults(run=_build)

    p = sub.add_parser(
        "verify", help="run every live experiment and check every claim; report answers changed and claims that fail"
    )
    p.add_argument("--json", action="store_true")
    p.add_argument("--allow-changes", action="store_true", help="report changed answers but exit 0")
    p.add_argument("--unit", action="append", help="only these units (repeatable), e.g. --unit 07")
    p.add_argument(
        "--sweep",
        choices=("all", "sample", "none"),
        default="all",
        help="the op-level claims' sweep over torch's operator database (default: every operation)",
    )
    p.add_argument("--root", default=str(Path(__file__).resolve().parents[2]), help=argparse.SUPPRESS)
    p.set_defaults(run=_verify)


def _release_version(args) -> int:
    from grader.instructor.grading import versions

    course = Path(__file__).resolve().parents[1] / "engine" / "course.py"
    try:
        for line in versions.release(args.version, course):
            print(line)
    except versions.ReleaseError as exc:
        print(f"release-version: {exc}", file=sys.stderr)
        return 2
    return 0


def _add_authoring_commands(sub) -> None:
    """new-question, release-version and release: a question's skeleton, a course version, the student bundle."""
    p = sub.add_parser(
        "release-version",
        help="make X.Y.Z the course's version: grader/engine/course.py's VERSION and versions.json's entry of the "
        "questions it holds, together (a new, removed or renamed question needs one)",
    )
    p.add_argument("version", help="the new version, newer than every one released, e.g. 0.7.0")
    p.set_defaults(run=_release_version)

    p = sub.add_parser(
        "new-question",
        help="insert a new question's working skeleton: its declaration in questions.py and its cells in the "
        "solution notebook (build refuses it until its placeholders are filled in)",
    )
    p.add_argument("unit", help="the unit, e.g. 05")
    p.add_argument("slug", help="the question's short name: 05.SLUG")
    p.add_argument("--kind", required=True, choices=["number", "boolean", "name"], help="its answer kind")
    p.add_argument("--role", default="predict", choices=["predict", "self-test"], help="predict-then-run (default)")
    p.add_argument(
        "--after", metavar="CELL_ID", help="insert after this cell (default: before the completion criterion)"
    )
    p.add_argument("--root", default=str(Path(__file__).resolve().parents[2]), help=argparse.SUPPRESS)
    p.set_defaults(run=_new_question)

    p = sub.add_parser("release", help="write the student bundle (learner notebooks and the grader; no solutions)")
    p.add_argument("out", help="a new or empty folder")
    p.add_argument("--zip", action="store_true", help="also pack it as OUT.zip")
    p.add_argument("--root", default=str(Path(__file__).resolve().parents[2]), help=argparse.SUPPRESS)
    p.set_defaults(run=_release)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader", description="autograd-lab's grader")
    sub = parser.add_subparsers(dest="command", required=True)
    commands.add_to(sub)  # the learner's: status, reset, workspace, identity, review, doctor

    _add_course_commands(sub)
    grade_command.add_parser(sub)

    sub.add_parser(
        "collect",
        help="copy each learner's workspace notebooks out of their homes, a folder per user, ready for grade "
        "(python -m grader collect --homes /home OUT/)",
        add_help=False,
    )

    p = sub.add_parser(
        "class",
        help="the class's progress from every learner's own store (reads only; "
        "python -m grader class --homes /home --html class.html)",
        add_help=False,
    )
    p.add_argument("options", nargs="*", help="the options of python -m grader.instructor.classview")

    _add_authoring_commands(sub)

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["collect"]:
        from grader.instructor.collect import main as collect

        return collect(argv[1:])
    if argv[:1] == ["class"]:  # its own options, passed on whole (argparse's REMAINDER drops a leading --opt)
        from grader.instructor.classview import main as classview

        return classview(argv[1:])
    return commands.run(parser, argv)


if __name__ == "__main__":
    sys.exit(main())
