"""Learners' homes on a hub, read as untrusted by root: which homes are learners', and files opened without links.

A learner shapes their home as they like, and can change it while root reads it: a folder swapped for a link to
another learner's folder between a check and an open wins a race against any ``lstat`` then ``open`` by path. So
nothing here opens a path by name from the top. A home is opened once (``O_DIRECTORY | O_NOFOLLOW``), and every
part below it is opened *relative to the folder opened before it* (``openat``), each with ``O_NOFOLLOW`` (a link
is refused, never followed, at every part, not only the last), each folder with ``O_DIRECTORY``, each file with
``O_NONBLOCK`` (a FIFO never blocks) and checked on the opened descriptor (``fstat``): a plain file, at most a cap,
and owned by the home's owner, as every folder on the way is. What a learner swaps after a part is opened changes
nothing: the descriptor is the folder that was checked.

Which homes are learners' (:func:`learners`): those named (``--users``, or the members of a Unix group with
``--group``), else every folder in ``--homes`` that holds the course: the workspace the hub's start command makes
(``~/autograd-lab``) or the progress folder (``~/.local/share/autograd-lab``). A home without either (a service
account, an administrator, a user of the machine who is not in the course) is not a learner; :func:`learners`
returns those too, for the summary to name them.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import stat
from dataclasses import dataclass, field
from pathlib import Path

WORKSPACE = "autograd-lab"  # grader.instructor.hub.WORKSPACE_NAME: a user's workspace in their home
PROGRESS = (".local", "share", "autograd-lab")  # where a learner's kernels keep their progress store
SKIPPED = ("lost+found",)


class Refused(Exception):
    """A part of a home that is not read: the text says why (a link, not a folder, someone else's, too large)."""


class Missing(Refused):
    """The part does not exist (a learner who has not started)."""


def _why(exc: OSError, name: str, dir_fd: int | None = None, part: str = "") -> Refused:
    if exc.errno == errno.ENOENT:
        return Missing(f"{name}: not there")
    if exc.errno in (errno.ELOOP, errno.EMLINK):
        return Refused(f"{name}: a link (not followed)")
    if exc.errno == errno.ENOTDIR:
        try:  # what it is, for the message only: the open above already refused it
            link = stat.S_ISLNK(os.stat(part, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except (OSError, TypeError, ValueError):
            link = False
        return Refused(f"{name}: {'a link (not followed)' if link else 'not a folder'}")
    if exc.errno == errno.EACCES:
        return Refused(f"{name}: permission denied (collect the class as root)")
    return Refused(f"{name}: {exc.strerror or exc}")


@dataclass
class Home:
    """One home, opened: its descriptor and its owner, whom every part read below it must belong to."""

    user: str
    path: Path
    fd: int = -1
    owner: int = -1

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Home:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_home(user: str, path: Path) -> Home:
    """Open ``path`` (the home of ``user``) without following a link; its owner must be ``user`` where the system
    knows that user (a home given to someone else is refused), else whoever owns the folder."""
    path = Path(path)
    try:
        parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise _why(exc, str(path.parent)) from None
    try:
        fd = os.open(path.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError as exc:
        raise _why(exc, "the home", parent, path.name) from None
    finally:
        os.close(parent)
    owner = os.fstat(fd).st_uid
    try:
        expected = pwd.getpwnam(user).pw_uid
    except KeyError:
        expected = owner
    if owner != expected:
        os.close(fd)
        raise Refused(f"the home {path} does not belong to the user {user}")
    return Home(user, path, fd, owner)


def open_folder(home: Home, parts: tuple[str, ...] | list[str]) -> int:
    """The descriptor of the folder ``home/parts[0]/parts[1]/...``, each part opened from the one before it with
    ``O_NOFOLLOW | O_DIRECTORY`` and owned by the home's owner; the caller closes it. Missing or Refused."""
    fd = os.dup(home.fd)
    shown = []
    try:
        for part in parts:
            if part in ("", ".", "..") or "/" in part:
                raise Refused(f"{part!r}: not a name of a folder")
            shown.append(part)
            try:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                raise _why(exc, "/".join(shown), fd, part) from None
            os.close(fd)
            fd = nxt
            if os.fstat(fd).st_uid != home.owner:
                raise Refused(f"{'/'.join(shown)}: does not belong to the owner of {home.path}")
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_file(folder_fd: int, name: str, cap: int, owner: int | None) -> tuple[bytes, os.stat_result]:
    """(the bytes, its fstat) of the plain file ``name`` in the folder ``folder_fd``: not a link, not a FIFO or
    device, owned by ``owner`` (any owner where None), at most ``cap`` bytes (counted while reading too). Missing
    or Refused."""
    if name in ("", ".", "..") or "/" in name:
        raise Refused(f"{name!r}: not a file name")
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
    except OSError as exc:
        raise _why(exc, name) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{name}: not a plain file")
        if owner is not None and info.st_uid != owner:
            raise Refused(f"{name}: does not belong to the learner")
        if info.st_size > cap:
            raise Refused(f"{name}: {info.st_size:,} bytes, over the {cap:,} read at most")
        chunks, total = [], 0
        while chunk := os.read(fd, min(1 << 20, cap + 1 - total)):
            total += len(chunk)
            if total > cap:
                raise Refused(f"{name}: over the {cap:,} bytes read at most")
            chunks.append(chunk)
        return b"".join(chunks), info
    finally:
        os.close(fd)


def exists_below(home: Home, parts: tuple[str, ...] | list[str]) -> bool:
    """Whether ``parts`` names something in the home (a link on the way counts: it is a trace, refused when read)."""
    try:
        fd = open_folder(home, parts[:-1])
    except Missing:
        return False
    except Refused:
        return True
    try:
        os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


# --- which homes are learners' -------------------------------------------------------------------------------


@dataclass
class Found:
    learners: list[tuple[str, Path]] = field(default_factory=list)  # (user, home)
    others: list[str] = field(default_factory=list)  # homes in --homes that hold nothing of the course


def group_members(name: str) -> list[str]:
    """The users of the Unix group ``name`` (listed members, and users whose primary group it is); KeyError."""
    group = grp.getgrnam(name)
    members = set(group.gr_mem)
    members.update(p.pw_name for p in pwd.getpwall() if p.pw_gid == group.gr_gid)
    return sorted(members)


def home_of(user: str, homes: list[Path]) -> Path:
    """A named user's home: the system's record where it has one, else ``<a --homes folder>/<user>``."""
    for base in homes:
        if (Path(base) / user).is_dir() and not (Path(base) / user).is_symlink():
            return Path(base) / user
    try:
        return Path(pwd.getpwnam(user).pw_dir)
    except KeyError:
        return Path(homes[0] if homes else "/home") / user


def holds_the_course(user: str, home: Path, workspace: str = WORKSPACE) -> bool:
    """Whether a home holds the course: its workspace, or its progress folder (a link there counts too)."""
    try:
        with open_home(user, home) as opened:
            return exists_below(opened, (workspace,)) or exists_below(opened, PROGRESS)
    except Refused:
        return True  # a home we may not enter, or not its user's: listed, with why, never dropped silently


def learners(homes: list[Path], users: list[str] | None = None, workspace: str = WORKSPACE) -> Found:
    """The learners: ``users`` where given (each with their home), else every home in ``homes`` that holds the
    course (:func:`holds_the_course`); the other homes are named in :attr:`Found.others`."""
    found = Found()
    if users:
        found.learners = [(user, home_of(user, homes)) for user in users]
        return found
    seen = set()
    for base in homes:
        try:
            entries = sorted(os.listdir(base))
        except OSError:
            continue
        for name in entries:
            path = Path(base) / name
            if name.startswith(".") or name in SKIPPED or name in seen:
                continue
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISDIR(info.st_mode):  # a link in /home is root's doing, not a learner's: not a home
                continue
            seen.add(name)
            if holds_the_course(name, path, workspace):
                found.learners.append((name, path))
            else:
                found.others.append(name)
    return found


def others_line(others: list[str], shown: int = 8) -> str:
    """The summary line naming the homes that are not learners (or '' when there are none)."""
    from grader.instructor.grading.printable import escape

    if not others:
        return ""
    names = ", ".join(escape(o) for o in others[:shown]) + (
        f" and {len(others) - shown} more" if len(others) > shown else ""
    )
    return (
        f"{len(others)} home(s) hold nothing of the course and are not counted as learners: {names} "
        "(name learners with --users or --group to list those who never started)"
    )
