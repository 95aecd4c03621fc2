"""`python -m grader grade ...`: the command line read into one GradeOptions, every refusal said before anything runs.

Each reader below takes the parsed arguments and returns what it read and the problems it found; :func:`run`
refuses the whole command (exit 2) when any reader found one, grades (exit 0), or says the grading itself failed
(exit 1: workers that could not start, or a run whose grader failed most notebooks).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from grader.instructor.grading.options import GradeOptions


def add_parser(sub) -> None:
    """`grade`'s options, on the command line's subparsers, in the groups its --help shows."""
    p = sub.add_parser("grade", help="run learner notebooks headless and write a gradebook")
    p.add_argument(
        "paths",
        nargs="+",
        help="notebooks, or folders of them (one sub-folder per learner); "
        "`grade merge PARTIAL.csv ... --out grades.csv` joins the partial "
        "gradebooks of every shard",
    )
    _outputs(p.add_argument_group("what it writes"))
    _runs(p.add_argument_group("how it runs"))
    _learners(p.add_argument_group("who handed in what, and when"))
    _points(p.add_argument_group("what earns points"))
    p.set_defaults(run=run)


def _outputs(g) -> None:
    g.add_argument("--out", default="grades.csv", help="the CSV gradebook to write (default grades.csv)")
    g.add_argument("--html", help="also write one feedback page per learner into this folder")
    g.add_argument("--wide", help="also write one row per learner, every unit as columns, to this CSV")
    g.add_argument("--report", help="also write the class report (an offline HTML page) to this file")
    g.add_argument(
        "--lms",
        choices=["canvas", "moodle"],
        help="also write the gradebook in that LMS's import shape (UTF-8 with a BOM) to --lms-out",
    )
    g.add_argument(
        "--lms-out",
        help="the file --lms writes (default: beside --out, grades-canvas.csv; with --merge-into, beside that)",
    )
    g.add_argument(
        "--lms-columns",
        metavar="CSV",
        help="the LMS's own columns for the units (unit,column[,points]: an assignment's name, or a Canvas "
        "assignment id, and its maximum); see grader/instructor/grading/lms_gradebook.py",
    )
    g.add_argument(
        "--merge-into",
        help="an existing gradebook CSV: replace the rows of the learners and units graded now, keep the rest",
    )


def _runs(g) -> None:
    g.add_argument("-j", "--jobs", type=int, default=1, help="notebooks graded at once")
    g.add_argument("--cell-timeout", type=int, default=60, help="seconds a cell may run (default 60)")
    g.add_argument("--notebook-timeout", type=int, default=600, help="seconds a notebook may run (default 600)")
    g.add_argument("--memory-mb", type=int, default=3072, help="memory limit per notebook (default 3072)")
    g.add_argument(
        "--shard",
        metavar="I/N",
        help="grade only shard I of N (learners split by a hash of their "
        "name); writes a partial gradebook for `grade merge`",
    )
    g.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run: notebooks already graded into OUT's journal and unchanged are not run again",
    )


def _learners(g) -> None:
    g.add_argument(
        "--name-pattern",
        metavar="REGEX",
        help="name learners by this regular expression, searched in each notebook's path below the folder given: "
        "a group (?P<learner>...), optionally (?P<id>...) and (?P<unit>...); Canvas's and Moodle's export names "
        "are understood without it",
    )
    g.add_argument("--roster", help="a CSV mapping learner (folder or file) names to student IDs")
    g.add_argument(
        "--identity",
        choices=["learner", "student-id"],
        default="learner",
        help="whose programs a self-test is judged on: the learner's name as graded (default: on a hub, the Unix "
        "user) or the --roster's student id (where learners set it: python -m grader identity ID)",
    )
    g.add_argument(
        "--times",
        help="a CSV of submission times (file, time): the LMS's, or collect's collect-times.csv (read by itself from "
        "the folder given); `--times mtime` takes the files' own times, which their owners can set",
    )
    g.add_argument(
        "--keep",
        choices=["latest", "best"],
        default="latest",
        help="two copies of one unit from one learner: keep the one handed in last (default) or the best",
    )
    g.add_argument(
        "--due",
        action="append",
        metavar="[NN=]DATE",
        help="when the units were due (ISO date or date and time, local unless it names a zone); NN=DATE for one "
        "unit, repeatable; late rows say so (see grader/instructor/grading/late.py)",
    )
    g.add_argument(
        "--late-penalty", type=float, metavar="PCT", help="with --due: percent of the points off per day late"
    )
    g.add_argument("--late-cutoff", type=float, metavar="DAYS", help="with --due: 0 points when more than DAYS late")


def _points(g) -> None:
    g.add_argument(
        "--weights", help="a TOML file of points per role or question (see grader/instructor/grading/scores.py)"
    )
    g.add_argument(
        "--handed-out",
        metavar="VERSION",
        help="the course version the class was handed (e.g. 0.2.0): a copy may lack the questions added after it "
        '("not in this copy"); without it every question of today\'s course counts',
    )
    g.add_argument(
        "--count-absent",
        action="store_true",
        help="with --handed-out: count the questions added since (0 points in a copy without them) instead of "
        "leaving them out",
    )
    g.add_argument(
        "--mastery",
        type=int,
        metavar="K",
        help="right answers in a row, each on a fresh program, that pass a self-test (default 1; set "
        "AUTOGRAD_LAB_MASTERY=K in the learners' kernels too)",
    )
    g.add_argument(
        "--overrides",
        metavar="CSV",
        help="a teaching assistant's overrides (learner,question,points,accept,reason; see "
        "grader/instructor/grading/overrides.py): applied to the points and shown in every output",
    )


def _say(text: str) -> None:
    print(text, file=sys.stderr)


def _paths(args) -> list[str]:
    """The output paths: files in folders that exist, a folder for the pages."""
    out, problems = Path(args.out), []
    if out.is_dir() or str(args.out).endswith(("/", "\\")):
        problems.append(f"--out {args.out} is a folder; give the CSV file to write")
    elif not out.parent.is_dir():
        problems.append(f"--out {args.out}: the folder {out.parent} does not exist")
    if args.html and Path(args.html).exists() and not Path(args.html).is_dir():
        problems.append(f"--html {args.html} is a file; give a folder for the feedback pages")
    for flag in ("wide", "merge_into"):
        value = getattr(args, flag)
        if value and (Path(value).is_dir() or not Path(value).parent.is_dir()):
            problems.append(f"--{flag.replace('_', '-')} {value}: give a CSV file in a folder that exists")
    if args.lms_out and (Path(args.lms_out).is_dir() or not Path(args.lms_out).parent.is_dir()):
        problems.append(f"--lms-out {args.lms_out}: give a CSV file in a folder that exists")
    if args.report and (Path(args.report).is_dir() or not Path(args.report).parent.is_dir()):
        problems.append(f"--report {args.report}: give an HTML file to write in an existing folder")
    return problems


def _numbers(args) -> list[str]:
    problems = []
    if args.mastery is not None and args.mastery < 1:
        problems.append(f"--mastery must be 1 or more, not {args.mastery}")
    for flag in ("jobs", "cell_timeout", "notebook_timeout", "memory_mb"):
        if getattr(args, flag) <= 0:
            problems.append(f"--{flag.replace('_', '-')} must be a positive number, not {getattr(args, flag)}")
    return problems


def _files(args, merging: bool) -> tuple[dict, list[str]]:
    """The weights, the roster, the submission times (--times, else collect's record beside the notebooks, never
    the files' own times unasked) and the overrides."""
    from grader.instructor.grading import overrides, roster, scores

    read: dict[str, Any] = {"weights": None, "ids": None, "times": None, "overrides": None}
    try:
        read["weights"] = scores.load(Path(args.weights) if args.weights else None)
        if args.count_absent:
            read["weights"].count_absent = True
        read["ids"] = roster.read_roster(Path(args.roster)) if args.roster else None
        record = None if args.times or merging else roster.collect_record(args.paths)
        read["times"] = roster.read_times(args.times if args.times else record) if (args.times or record) else None
        if record is not None:
            _say(f"grade: submission times from collect's record {record}")
        overrides_file = Path(args.overrides) if args.overrides else None
        read["overrides"] = overrides.load(overrides_file, read["weights"], read["ids"])
    except (scores.WeightsError, roster.RosterError, overrides.OverridesError) as exc:
        return read, [str(exc)]
    return read, []


def _rules(args, merging: bool) -> tuple[dict, list[str]]:
    """The late rule, the course version handed out, the name pattern, the LMS columns and the shard."""
    from grader.instructor.grading import late, lms_gradebook, lms_names, shards, versions

    read: dict[str, Any] = {"late_rule": None, "name_pattern": None, "lms_columns": None, "shard": None}
    problems = []
    try:
        read["late_rule"] = late.parse(args.due, args.late_penalty, args.late_cutoff)
    except late.LateRuleError as exc:
        problems.append(str(exc))
    if args.handed_out:
        try:
            versions.check(args.handed_out)
        except versions.UnknownVersion as exc:
            problems.append(f"--handed-out: {exc}")
    if args.name_pattern:
        try:
            read["name_pattern"] = lms_names.compile_pattern(args.name_pattern)
        except lms_names.PatternError as exc:
            problems.append(str(exc))
    for flag in ("lms_out", "lms_columns"):
        if getattr(args, flag) and not args.lms:
            problems.append(f"--{flag.replace('_', '-')}: say which LMS with --lms canvas or --lms moodle")
    if args.lms_columns and args.lms:
        try:
            read["lms_columns"] = lms_gradebook.read_columns(Path(args.lms_columns))
        except lms_gradebook.ColumnsError as exc:
            problems.append(str(exc))
    if args.shard and not merging:
        try:
            read["shard"] = shards.parse_shard(args.shard)
        except ValueError as exc:
            problems.append(str(exc))
    return read, problems


def _merging(args, read: dict) -> list[str]:
    """What `grade merge` (joining the partials of `--shard` runs) refuses, and a regrade's overrides left pending."""
    merging = args.paths[0] == "merge" and not Path("merge").exists()
    problems = []
    if merging:
        for flag, what in (("due", "--due is applied"), ("overrides", "--overrides is applied")):
            if getattr(args, flag):
                problems.append(f"{what} when grading; `grade merge` joins partials graded with it")
        if args.shard:
            problems.append("--shard is for grading; `grade merge` joins the partials of every shard")
        if len(args.paths) < 2:
            problems.append("grade merge: give the partial gradebooks (CSV) of every shard")
    elif read["overrides"] and args.merge_into and Path(args.merge_into).is_file():
        from grader.instructor.grading import gradebook
        from grader.instructor.grading.submission import find

        graded_now = {s.learner for s in find(args.paths, read["name_pattern"])}
        problems += read["overrides"].pending(gradebook.read_csv(Path(args.merge_into)), graded_now)
    return problems


def options_of(args, read: dict) -> GradeOptions:
    path = lambda value: Path(value) if value else None  # noqa: E731
    return GradeOptions(
        jobs=args.jobs,
        cell_timeout=args.cell_timeout,
        notebook_timeout=args.notebook_timeout,
        memory_mb=args.memory_mb,
        html_dir=path(args.html),
        wide=path(args.wide),
        merge_into=path(args.merge_into),
        resume=args.resume,
        report_to=path(args.report),
        handed_out=args.handed_out,
        keep=args.keep,
        lms=args.lms,
        lms_out=path(args.lms_out),
        identity_from=args.identity,
        mastery=args.mastery,
        progress_to=sys.stderr,  # the stream as it is now (a caller may have redirected it), not at import
        **read,
    )


def run(args) -> int:
    merging = args.paths[0] == "merge" and not Path("merge").exists()
    files, problems = _files(args, merging)
    rules, more = _rules(args, merging)
    read = {**files, **rules}
    problems = _paths(args) + _numbers(args) + problems + more + _merging(args, read)
    if problems:
        for p in problems:
            _say(f"grade: {p}")
        return 2
    options = options_of(args, read)
    return _merge(args, options) if merging else _grade(args, options)


def _merge(args, options: GradeOptions) -> int:
    from grader.instructor.grading.pipeline import merge
    from grader.instructor.grading.shards import MergeError

    try:
        rows = merge(
            [Path(p) for p in args.paths[1:]],
            Path(args.out),
            html_dir=options.html_dir,
            report_to=options.report_to,
            wide=options.wide,
            weights=options.weights,
            ids=options.ids,
            lms=options.lms,
            lms_out=options.lms_out,
            lms_columns=options.lms_columns,
        )
    except MergeError as exc:
        _say(f"grade merge: refused: {exc}")
        return 2
    _say(f"merged {len(args.paths) - 1} partial gradebooks: {len(rows)} rows -> {args.out}")
    return 0


def _grade(args, options: GradeOptions) -> int:
    from grader.instructor.grading.pipeline import grade, grading_failed
    from grader.instructor.grading.workers import NoWorker

    try:
        rows = grade(args.paths, Path(args.out), options)
    except NoWorker as exc:
        _say(f"grade: {exc}; nothing was graded")
        return 1
    failed = grading_failed(rows)
    if failed:
        _say(f"grade: {failed}. Look at the rows' problems before you use this gradebook.")
        return 1
    return 0 if rows or options.shard else 2
