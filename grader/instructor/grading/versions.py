"""The questions each released version of the course held, so that an older copy is judged by what it was given.

``versions.json`` beside this file maps a course version (``grader.__version__``) to the question ids
of each unit in that release. A class handed version V (``grade --handed-out V``) may lack the
questions added after V: those, and only those, can be "not in this copy". Without
``--handed-out`` every question of today's course counts. A test keeps the entry of the current
version equal to the registry, so adding a question means a new version and a new entry here
(``python -m grader.instructor.grading.versions`` prints the entry for the current registry).
"""

from __future__ import annotations

import json
import re
import sys
from functools import lru_cache
from pathlib import Path

from grader.engine.moves import SPLITS, current_id
from grader.engine.question import of_unit

FILE = Path(__file__).with_name("versions.json")


# The released versions whose error questions took (place, words) and graded the words on key terms. A class
# handed one of them keeps, for an answer in that form, what it earned then: its place (see
# ``engine.kinds.Error.read_recorded``). Versions released after the causes came are not listed.
BEFORE_CAUSES = frozenset({"0.2.0"})


def before_causes(version: str | None) -> bool:
    """Whether a class handed ``version`` answered error questions in 0.2.0's (place, words) form."""
    return version in BEFORE_CAUSES


# The released versions whose self-tests asked one program each, the same for everyone: a class handed one of them
# answered the canonical programs (every generator's first choices, grader.engine.variants), and is judged on them.
BEFORE_VARIANTS = frozenset({"0.2.0", "0.3.0", "0.4.0"})


def before_variants(version: str | None) -> bool:
    """Whether a class handed ``version`` answered its self-tests on the one program each then asked."""
    return version in BEFORE_VARIANTS


class UnknownVersion(ValueError):
    pass


@lru_cache(maxsize=1)
def released() -> dict[str, dict[str, list[str]]]:
    return json.loads(FILE.read_text(encoding="utf-8"))


def check(version: str) -> str:
    """``version`` if it is a released version; else UnknownVersion naming the ones there are."""
    if version not in released():
        raise UnknownVersion(f"no course version {version!r} was released; released: {', '.join(released())}")
    return version


def added_since(version: str, unit: str) -> list[str]:
    """The questions of ``unit`` today that version ``version`` did not have, in any unit: a question that moved
    (:mod:`grader.engine.moves`) was held under its old id."""
    held = {current_id(qid) for qids in released()[check(version)].values() for qid in qids}
    return [q.qid for q in of_unit(unit) if q.qid not in held]


def split_since(version: str, unit: str) -> list[str]:
    """The units made from part of ``unit`` after ``version`` was released (``['04b']`` for 04 and a version
    from before 04 was split): a copy of ``unit`` handed out then holds their questions too."""
    held, found = released()[check(version)], []
    while unit in SPLITS and SPLITS[unit] not in found:
        unit = SPLITS[unit]
        if unit not in held:
            found.append(unit)
    return found


def current_entry() -> dict[str, list[str]]:
    from grader.engine.course import UNITS

    return {unit: [q.qid for q in of_unit(unit)] for unit in UNITS}


class ReleaseError(ValueError):
    pass


def _parts(version: str) -> tuple[int, ...]:
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise ReleaseError(f"{version!r}: a version is three numbers, such as 0.7.0")
    return tuple(int(x) for x in version.split("."))


def release(version: str, course_file: Path) -> list[str]:
    """Make ``version`` the course's: its entry (the questions of every unit now) written into versions.json and
    ``VERSION`` in ``course_file`` (grader/engine/course.py, the one place the version is written; pyproject.toml
    reads it). Refused unless it is newer than every version released."""
    known = released()
    newest = max(known, key=_parts)
    if _parts(version) <= _parts(newest):
        raise ReleaseError(f"{version} is not newer than {newest}, the newest version in {FILE.name}")
    text = course_file.read_text(encoding="utf-8")
    written, n = re.subn(r'^VERSION = "[^"]*"$', f'VERSION = "{version}"', text, count=1, flags=re.M)
    if n != 1:
        raise ReleaseError(f'{course_file}: no line VERSION = "..." to change')
    known[version] = current_entry()
    FILE.write_text(json.dumps(known, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    course_file.write_text(written, encoding="utf-8")
    count = sum(len(qids) for qids in known[version].values())
    return [f"{FILE.name}: {version} holds {count} questions", f"{course_file.name}: VERSION = {version!r}"]


if __name__ == "__main__":
    json.dump(current_entry(), sys.stdout, indent=1)
    print()
