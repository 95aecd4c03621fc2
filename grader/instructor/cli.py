"""python -m grader: status, questions, claims, reset, workspace, build, new-question, verify, grade, collect, class,
release, doctor."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def _status(args) -> int:
    from grader.engine import progress
    from grader.engine.course import UNITS
    from grader.engine.store import current

    states = progress.course_state(current())
    rows = []
    for uid, unit in UNITS.items():
        s = states[uid]
        rows.append(
            {
                "unit": uid,
                "title": unit.title,
                "status": s.status,
                "needs": list(unit.needs),
                "note": progress.prerequisites_note(uid, states) if not s.passed else "",
                **s.counts(),
                "missing": s.missing() if s.started and not s.passed else [],
            }
        )
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


def _reset_target(target: str):
    """(kind, id, what) for an exact unit id ('07') or question id ('07.exp-add'); ValueError otherwise."""
    from grader.engine.course import UNITS
    from grader.engine.moves import current_id
    from grader.engine.question import all_questions

    if target in UNITS:
        return "unit", target, f"unit {target} ({UNITS[target].title})"
    qids = {q.qid for q in all_questions()}
    if target in qids:
        return "question", target, f"question {target}"
    if current_id(target) in qids:  # an id from before its question moved (grader.engine.moves)
        return "question", current_id(target), f"question {current_id(target)} (once {target})"
    unit, dot, rest = target.partition(".")
    padded = unit.zfill(2) + dot + rest if unit.isdigit() else None
    hint = f" Did you mean {padded}?" if padded and (padded in UNITS or padded in qids) else ""
    raise ValueError(
        f"{target!r} is not a unit id or a question id.{hint} Units are written with two "
        f"digits ({', '.join(UNITS)}); question ids look like 07.exp-add "
        f"(`python -m grader questions --unit 07` lists them)."
    )


def _reset(args) -> int:
    from grader.learner.api import reset

    try:
        kind, target, what = _reset_target(args.target)
    except ValueError as exc:
        print(f"reset: {exc}", file=sys.stderr)
        return 2
    if not args.yes:
        if not sys.stdin.isatty():
            print(
                f"reset: not forgetting {what} without a yes: there is no terminal to ask at. "
                f"To forget it, run `python -m grader reset {target} --yes`.",
                file=sys.stderr,
            )
            return 2
        forgets = (
            "every prediction, reveal, check and pass of this unit"
            if kind == "unit"
            else "its prediction, reveal and checks"
        )
        try:
            answer = input(f"Forget your progress on {what}: {forgets}? It starts again from nothing. [y/N] ")
        except (EOFError, KeyboardInterrupt):
            answer = ""
            print()
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing forgotten")
            return 1
    result = reset(target)
    print(result)
    return 0 if result.verdict == "info" else 2


def _workspace(args) -> int:
    from grader.learner.workspace import WorkspaceError, check_location, default_dir, port_in_use, report, sync

    if args.port is not None:
        try:
            taken = port_in_use(args.port)
        except OSError as exc:
            print(
                f"cannot listen on 127.0.0.1:{args.port} ({exc.strerror}); choose another: make lab PORT=8899",
                file=sys.stderr,
            )
            return 3
        if taken:
            print(
                f"port {args.port} is taken: is `make lab` already running? Open the URL it printed, or stop it "
                f"(Ctrl-C in its terminal), or use another port: make lab PORT={args.port + 1}",
                file=sys.stderr,
            )
            return 3
    try:
        where = check_location(Path(args.dir) if args.dir else default_dir())
        changes = sync(where)
    except WorkspaceError as exc:
        print(f"workspace: {exc}", file=sys.stderr)
        return 2
    print(report(changes, where), file=sys.stderr if args.print_dir else sys.stdout)
    if args.print_dir:
        print(where)
    return 0


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


def _grade(args) -> int:
    out = Path(args.out)
    problems = []
    if out.is_dir() or str(args.out).endswith(("/", "\\")):
        problems.append(f"--out {args.out} is a folder; give the CSV file to write")
    elif not out.parent.is_dir():
        problems.append(f"--out {args.out}: the folder {out.parent} does not exist")
    if args.mastery is not None and args.mastery < 1:
        problems.append(f"--mastery must be 1 or more, not {args.mastery}")
    for flag in ("jobs", "cell_timeout", "notebook_timeout", "memory_mb"):
        if getattr(args, flag) <= 0:
            problems.append(f"--{flag.replace('_', '-')} must be a positive number, not {getattr(args, flag)}")
    if args.html and Path(args.html).exists() and not Path(args.html).is_dir():
        problems.append(f"--html {args.html} is a file; give a folder for the feedback pages")
    for flag in ("wide", "merge_into"):
        value = getattr(args, flag)
        if value and (Path(value).is_dir() or not Path(value).parent.is_dir()):
            problems.append(f"--{flag.replace('_', '-')} {value}: give a CSV file in a folder that exists")
    from grader.instructor.grading import overrides, roster, scores

    merging = args.paths[0] == "merge" and not Path("merge").exists()
    weights = ids = times = changes = None
    try:
        weights = scores.load(Path(args.weights) if args.weights else None)
        if args.count_absent:
            weights.count_absent = True
        ids = roster.read_roster(Path(args.roster)) if args.roster else None
        times = roster.read_times(Path(args.times)) if args.times else None
        changes = overrides.load(Path(args.overrides) if args.overrides else None, weights)
    except (scores.WeightsError, roster.RosterError, overrides.OverridesError) as exc:
        problems.append(str(exc))
    from grader.instructor.grading import late

    rule = None
    try:
        rule = late.parse(args.due, args.late_penalty, args.late_cutoff)
    except late.LateRuleError as exc:
        problems.append(str(exc))
    if rule and merging:
        problems.append("--due is applied when grading; `grade merge` joins partials graded with it")
    if args.overrides and merging:
        problems.append("--overrides is applied when grading; `grade merge` joins partials graded with them")
    if args.handed_out:
        from grader.instructor.grading import versions

        try:
            versions.check(args.handed_out)
        except versions.UnknownVersion as exc:
            problems.append(f"--handed-out: {exc}")
    pattern = None
    if args.name_pattern:
        from grader.instructor.grading.lms_names import PatternError, compile_pattern

        try:
            pattern = compile_pattern(args.name_pattern)
        except PatternError as exc:
            problems.append(str(exc))
    if args.lms_out and not args.lms:
        problems.append("--lms-out: say which LMS with --lms canvas or --lms moodle")
    if args.lms_out and (Path(args.lms_out).is_dir() or not Path(args.lms_out).parent.is_dir()):
        problems.append(f"--lms-out {args.lms_out}: give a CSV file in a folder that exists")
    report_to = Path(args.report) if args.report else None
    if report_to and (report_to.is_dir() or not report_to.parent.is_dir()):
        problems.append(f"--report {args.report}: give an HTML file to write in an existing folder")
    shard = None
    if args.shard and merging:
        problems.append("--shard is for grading; `grade merge` joins the partials of every shard")
    elif args.shard:
        from grader.instructor.grading.shards import parse_shard

        try:
            shard = parse_shard(args.shard)
        except ValueError as exc:
            problems.append(str(exc))
    if merging and len(args.paths) < 2:
        problems.append("grade merge: give the partial gradebooks (CSV) of every shard")
    if problems:
        for p in problems:
            print(f"grade: {p}", file=sys.stderr)
        return 2
    from grader.instructor.grading.pipeline import grade, merge

    if merging:
        from grader.instructor.grading.shards import MergeError

        try:
            rows = merge(
                [Path(p) for p in args.paths[1:]],
                out,
                html_dir=Path(args.html) if args.html else None,
                report_to=report_to,
                wide=Path(args.wide) if args.wide else None,
                weights=weights,
                ids=ids,
                lms=args.lms,
                lms_out=Path(args.lms_out) if args.lms_out else None,
            )
        except MergeError as exc:
            print(f"grade merge: refused: {exc}", file=sys.stderr)
            return 2
        print(f"merged {len(args.paths) - 1} partial gradebooks: {len(rows)} rows -> {out}", file=sys.stderr)
        return 0
    rows = grade(
        args.paths,
        out,
        jobs=args.jobs,
        cell_timeout=args.cell_timeout,
        notebook_timeout=args.notebook_timeout,
        memory_mb=args.memory_mb,
        html_dir=Path(args.html) if args.html else None,
        weights=weights,
        ids=ids,
        times=times,
        wide=Path(args.wide) if args.wide else None,
        merge_into=Path(args.merge_into) if args.merge_into else None,
        shard=shard,
        resume=args.resume,
        report_to=report_to,
        handed_out=args.handed_out,
        name_pattern=pattern,
        keep=args.keep,
        lms=args.lms,
        lms_out=Path(args.lms_out) if args.lms_out else None,
        overrides=changes,
        late_rule=rule,
        identity_from=args.identity,
        mastery=args.mastery,
        progress_to=sys.stderr,  # the stream as it is now (a caller may have redirected it), not at import
    )
    return 0 if rows or shard else 2


def _identity(args) -> int:
    """Show the learner's identity (the seed of their self-tests' programs), or keep a new one."""
    from grader.engine import identity

    if args.name:
        try:
            name = identity.set_identity(args.name)
        except (ValueError, OSError) as exc:
            print(f"identity: {exc}", file=sys.stderr)
            return 2
        print(f"your identity is now {name!r} (kept in {identity.path()})")
        if identity.key(os.environ.get(identity.ENV, "")) or identity.key(os.environ.get(identity.HUB_ENV, "")):
            print(f"note: {identity.source()} sets another one, and it comes first", file=sys.stderr)
        return 0
    print(f"{identity.current()}  (from {identity.source()})")
    return 0


def _review(args) -> int:
    """What is due for review, with each program; REVIEW QID ANSWER grades one, as review() does in a notebook."""
    import ast

    from grader.learner.review import review

    if args.qid is None:
        print(review())
        return 0
    if args.answer is None:
        print(review(args.qid))
        return 0
    try:
        answer = ast.literal_eval(args.answer)
    except (ValueError, SyntaxError):
        answer = args.answer  # a plain word: a name, a label
    result = review(args.qid, answer)
    print(result)
    return 0 if result.verdict in ("correct", "info") else 1


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


_DOCTOR_USAGE = (
    "usage: python -m grader doctor [--frozen NAME]... [--should-move NAME]... script.py [args...]\n"
    "       (or declare them in the script: # doctor: frozen=NAME,... should_move=NAME,...)"
)


def _doctor(argv: list[str]) -> int:
    """The doctor's own options come before the script; everything after the script is the script's."""
    from grader.learner.doctor import run_script

    declared: dict[str, list[str]] = {"--frozen": [], "--should-move": []}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        option, _, value = argv[i].partition("=")
        if option in ("-h", "--help"):
            print(_DOCTOR_USAGE)
            return 0
        if option not in declared:
            print(f"doctor: unknown option {option}\n{_DOCTOR_USAGE}", file=sys.stderr)
            return 2
        if not value:
            i += 1
            if i == len(argv):
                print(f"doctor: {option} needs a parameter name\n{_DOCTOR_USAGE}", file=sys.stderr)
                return 2
            value = argv[i]
        declared[option] += [v for v in value.split(",") if v]
        i += 1
    if i == len(argv):
        print(_DOCTOR_USAGE, file=sys.stderr)
        return 2
    script = argv[i]
    if not Path(script).is_file():
        print(f"doctor: no such script: {script}", file=sys.stderr)
        return 2
    return run_script(script, argv[i + 1 :], frozen=declared["--frozen"], should_move=declared["--should-move"])


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

    p = sub.add_parser("reset", help="forget progress on a unit (01) or one question (01.pow-node); asks first")
    p.add_argument("target", help="a unit id such as 07, or a question id such as 07.exp-add")
    p.add_argument("--yes", action="store_true", help="forget without asking (for scripts)")
    p.set_defaults(run=_reset)

    p = sub.add_parser("workspace", help="create or update your own copies of the notebooks (what `make lab` opens)")
    p.add_argument(
        "--dir", help="the workspace folder (default: $AUTOGRAD_LAB_WORKSPACE, else my-work/ in the repository)"
    )
    p.add_argument("--port", type=int, help="first check that this port on 127.0.0.1 is free (exit 3 if not)")
    p.add_argument(
        "--print-dir", action="store_true", help="print only the workspace's path on stdout (the report goes to stderr)"
    )
    p.set_defaults(run=_workspace)

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

    p = sub.add_parser("grade", help="run learner notebooks headless and write a gradebook")
    p.add_argument(
        "paths",
        nargs="+",
        help="notebooks, or folders of them (one sub-folder per learner); "
        "`grade merge PARTIAL.csv ... --out grades.csv` joins the partial "
        "gradebooks of every shard",
    )
    p.add_argument("--out", default="grades.csv", help="the CSV gradebook to write (default grades.csv)")
    p.add_argument("-j", "--jobs", type=int, default=1, help="notebooks graded at once")
    p.add_argument("--cell-timeout", type=int, default=60, help="seconds a cell may run (default 60)")
    p.add_argument("--notebook-timeout", type=int, default=600, help="seconds a notebook may run (default 600)")
    p.add_argument("--memory-mb", type=int, default=3072, help="memory limit per notebook (default 3072)")
    p.add_argument("--html", help="also write one feedback page per learner into this folder")
    p.add_argument(
        "--weights", help="a TOML file of points per role or question (see grader/instructor/grading/scores.py)"
    )
    p.add_argument(
        "--count-absent",
        action="store_true",
        help="with --handed-out: count the questions added since (0 points in a copy without them) instead of "
        "leaving them out",
    )
    p.add_argument(
        "--handed-out",
        metavar="VERSION",
        help="the course version the class was handed (e.g. 0.2.0): a copy may lack the questions added after it "
        '("not in this copy"); without it every question of today\'s course counts',
    )
    p.add_argument("--wide", help="also write one row per learner, every unit as columns, to this CSV")
    p.add_argument("--roster", help="a CSV mapping learner (folder or file) names to student IDs")
    p.add_argument("--times", help="a CSV of submission times from the LMS (file, time); default: file times")
    p.add_argument(
        "--merge-into",
        help="an existing gradebook CSV: replace the rows of the learners and units graded now, keep the rest",
    )
    p.add_argument(
        "--shard",
        metavar="I/N",
        help="grade only shard I of N (learners split by a hash of their "
        "name); writes a partial gradebook for `grade merge`",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run: notebooks already graded into OUT's journal and unchanged are not run again",
    )
    p.add_argument("--report", help="also write the class report (an offline HTML page) to this file")
    p.add_argument(
        "--name-pattern",
        metavar="REGEX",
        help="name learners by this regular expression, searched in each notebook's path below the folder given: "
        "a group (?P<learner>...), optionally (?P<id>...) and (?P<unit>...); Canvas's and Moodle's export names "
        "are understood without it",
    )
    p.add_argument(
        "--keep",
        choices=["latest", "best"],
        default="latest",
        help="two copies of one unit from one learner: keep the one handed in last (default) or the best",
    )
    p.add_argument(
        "--lms",
        choices=["canvas", "moodle"],
        help="also write the gradebook in that LMS's import shape (UTF-8 with a BOM) to --lms-out",
    )
    p.add_argument("--lms-out", help="the file --lms writes (default: beside --out, grades-canvas.csv)")
    p.add_argument(
        "--overrides",
        metavar="CSV",
        help="a teaching assistant's overrides (learner,question,points,accept,reason; see "
        "grader/instructor/grading/overrides.py): applied to the points and shown in every output",
    )
    p.add_argument(
        "--due",
        action="append",
        metavar="[NN=]DATE",
        help="when the units were due (ISO date or date and time, local unless it names a zone); NN=DATE for one "
        "unit, repeatable; late rows say so (see grader/instructor/grading/late.py)",
    )
    p.add_argument(
        "--late-penalty", type=float, metavar="PCT", help="with --due: percent of the points off per day late"
    )
    p.add_argument("--late-cutoff", type=float, metavar="DAYS", help="with --due: 0 points when more than DAYS late")
    p.add_argument(
        "--identity",
        choices=["learner", "student-id"],
        default="learner",
        help="whose programs a self-test is judged on: the learner's name as graded (default: on a hub, the Unix "
        "user) or the --roster's student id (where learners set it: python -m grader identity ID)",
    )
    p.add_argument(
        "--mastery",
        type=int,
        metavar="K",
        help="right answers in a row, each on a fresh program, that pass a self-test (default 1; set "
        "AUTOGRAD_LAB_MASTERY=K in the learners' kernels too)",
    )
    p.set_defaults(run=_grade)

    p = sub.add_parser(
        "identity", help="your identity, which your self-tests' programs are drawn from; identity NAME keeps one"
    )
    p.add_argument("name", nargs="?", help="the name to keep (the id on your course's roster)")
    p.set_defaults(run=_identity)

    p = sub.add_parser(
        "review",
        help="fresh programs of the self-tests you passed that are due again (1, 3, 7, 21 days); "
        "review QID ANSWER answers one",
    )
    p.add_argument("qid", nargs="?", help="a question due for review, e.g. 01.closed-book-walk")
    p.add_argument("answer", nargs="?", help="your answer, as a Python literal (['A', 'B'], 6.0, {'x'})")
    p.set_defaults(run=_review)

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

    sub.add_parser(
        "doctor",
        help="run a training script unchanged and name what goes wrong in its autograd use "
        "(python -m grader doctor [--frozen NAME] [--should-move NAME] train.py [args...]; or a "
        "'# doctor: frozen=NAME should_move=NAME' line in the script)",
        add_help=False,
    )

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

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["doctor"]:  # the script's own arguments, passed on whole
        return _doctor(argv[1:])
    if argv[:1] == ["collect"]:
        from grader.instructor.collect import main as collect

        return collect(argv[1:])
    if argv[:1] == ["class"]:  # its own options, passed on whole (argparse's REMAINDER drops a leading --opt)
        from grader.instructor.classview import main as classview

        return classview(argv[1:])
    args = parser.parse_args(argv)
    try:
        code = args.run(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # the reader left (`python -m grader status --json | head`): stop quietly, and keep Python's
        # own flush at exit from failing on the closed pipe again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
