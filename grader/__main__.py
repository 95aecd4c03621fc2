"""``python -m grader`` (and the ``grader`` command): every command where the course is installed whole; the learner's
commands alone in the student bundle, which ships no instructor's tools (``grader release``)."""

import sys


def main(argv: list[str] | None = None) -> int:
    try:
        from grader.instructor.cli import main as run
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("grader.instructor"):
            raise
        from grader.learner.commands import main as run
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
