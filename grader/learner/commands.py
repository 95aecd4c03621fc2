"""The learner's commands: ``python -m grader status | reset | workspace | identity | review | doctor``.

They are the whole of ``python -m grader`` in the student bundle (``grader release`` ships no instructor's tools:
:mod:`grader.__main__` falls back to :func:`main` here where ``grader.instructor`` is not installed), and part of
it in the course's own checkout, where :mod:`grader.instructor.cli` adds the instructor's commands beside them
(:func:`add_to`).
"""

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
    from grader.learner.workspace import lab_settings

    settings = lab_settings()
    if settings:
        print(settings, file=sys.stderr if args.print_dir else sys.stdout)
    if args.print_dir:
        print(where)
    return 0


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


def add_to(sub) -> None:
    """Add the learner's commands to ``sub`` (an argparse subparsers object); each sets ``run``."""
    p = sub.add_parser("status", help="every unit: passed, in progress or not started")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_status)

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
        "doctor",
        help="run a training script unchanged and name what goes wrong in its autograd use "
        "(python -m grader doctor [--frozen NAME] [--should-move NAME] train.py [args...]; or a "
        "'# doctor: frozen=NAME should_move=NAME' line in the script)",
        add_help=False,
    )


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    """Parse ``argv`` with ``parser`` and run the command it names (``doctor`` takes the rest of the line whole)."""
    if argv[:1] == ["doctor"]:  # the script's own arguments, passed on whole
        return _doctor(argv[1:])
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


def main(argv: list[str] | None = None) -> int:
    """``python -m grader`` where only the learner's commands are installed (the student bundle)."""
    parser = argparse.ArgumentParser(prog="python -m grader", description="autograd-lab: your progress and tools")
    add_to(parser.add_subparsers(dest="command", required=True))
    return run(parser, sys.argv[1:] if argv is None else list(argv))
