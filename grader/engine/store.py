"""The progress store: one SQLite file holding an append-only log of what the learner did.

Status is derived from the log (see :mod:`grader.engine.progress`); nothing is
updated in place, so two kernels writing at once cannot overwrite each other.

* Location: ``$AUTOGRAD_LAB_HOME/progress.sqlite3``, else the user's data folder.
* A corrupt or truncated file is moved aside with a timestamp, with a warning
  naming the backup, and a fresh one is started.
* A data folder that cannot be written gives a warning and an in-memory store
  for this session.
* Old files are migrated forward step by step (``PRAGMA user_version``).
* When the environment names an event stream (``AGL_EVENT_FD``, set only by the grading worker), each event
  appended is also written there as one JSON line, as it happens: the gradebook takes its events from that
  stream, so a store rewritten or emptied later changes nothing (and is a finding).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from grader.engine import env_vars, moves
from grader.engine.verdicts import Action, Verdict, action_of, verdict_of

FILENAME = "progress.sqlite3"
EVENT_FD_VAR = env_vars.EVENT_FD

# Each step brings a file from version i to i + 1; never edit a step once shipped.
MIGRATIONS = [
    """CREATE TABLE IF NOT EXISTS events (
           id      INTEGER PRIMARY KEY AUTOINCREMENT,
           time    REAL NOT NULL,
           unit    TEXT NOT NULL,
           qid     TEXT,
           action  TEXT NOT NULL,
           answer  TEXT,
           verdict TEXT NOT NULL,
           torch   TEXT NOT NULL
       )""",
    """ALTER TABLE events ADD COLUMN session TEXT NOT NULL DEFAULT '';
       ALTER TABLE events ADD COLUMN detail TEXT NOT NULL DEFAULT '{}';
       CREATE INDEX IF NOT EXISTS events_unit ON events (unit, id)""",
]
SCHEMA_VERSION = len(MIGRATIONS)
SESSION = uuid.uuid4().hex[:12]
_T = TypeVar("_T")


class StoreWarning(UserWarning):
    """Progress could not be kept where expected; the text says what happened instead."""


@dataclass
class Event:
    """One entry of the log. ``action`` and ``verdict`` are stored as their plain names; a name this
    version does not know reads as ``"unknown"`` (see :mod:`grader.engine.verdicts`)."""

    id: int
    time: float
    unit: str
    qid: str | None
    action: Action
    answer: Any
    verdict: Verdict
    torch: str
    session: str = ""
    detail: dict | None = None


def home() -> Path:
    """Where progress lives: AUTOGRAD_LAB_HOME, else the platform's per-user data folder."""
    env = os.environ.get(env_vars.HOME)
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "autograd-lab"


def _torch_version() -> str:
    torch = sys.modules.get("torch")
    return getattr(torch, "__version__", "unknown") if torch else "unknown"


class NewerSchema(sqlite3.DatabaseError):
    """The file was written by a newer version of the course: read it, never move or migrate it."""


class Store:
    """The event log at ``path`` (a file), or in memory when the file cannot be used."""

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else home() / FILENAME
        self._memory: sqlite3.Connection | None = None
        self._ready = False
        self._lock = threading.Lock()
        self.notes: list[str] = []

    # -- opening ----------------------------------------------------------------
    def _warn(self, text: str) -> None:
        self.notes.append(text)
        warnings.warn(text, StoreWarning, stacklevel=4)

    def _connect_file(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        con.execute("PRAGMA busy_timeout = 30000")
        return con

    def _prepare(self, con: sqlite3.Connection) -> None:
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:  # before anything could write to it
            raise NewerSchema(f"written by a newer autograd-lab (schema {version}, this one knows {SCHEMA_VERSION})")
        if con.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal" and self._memory is None:
            con.execute("PRAGMA journal_mode = WAL")
        if con.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            raise sqlite3.DatabaseError("quick_check failed")
        self._migrate(con)

    def _migrate(self, con: sqlite3.Connection) -> None:
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise NewerSchema(f"written by a newer autograd-lab (schema {version}, this one knows {SCHEMA_VERSION})")
        if version == SCHEMA_VERSION:
            return
        con.execute("BEGIN IMMEDIATE")
        try:
            version = con.execute("PRAGMA user_version").fetchone()[0]
            for step in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[step].split(";"):
                    if statement.strip():
                        con.execute(statement)
            con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def _move_aside(self, reason: str) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S")
        backup = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while backup.exists():
            backup = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
            n += 1
        os.replace(self.path, backup)
        for suffix in ("-wal", "-shm"):
            side = Path(str(self.path) + suffix)
            if side.exists():
                os.replace(side, Path(str(backup) + suffix))
        self._warn(
            f"autograd-lab: the progress file {self.path} could not be read ({reason}); "
            f"it was moved to {backup} and a fresh one started"
        )

    def _use_memory(self, reason: str, newer: bool = False) -> sqlite3.Connection:
        """Keep progress in memory from now on; returns that in-memory connection."""
        memory = self._memory = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        try:  # start from what the file already holds, if it can be read at all
            if self.path.exists():
                source = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
                source.backup(memory)
                source.close()
        except sqlite3.Error:
            pass
        if newer:  # read it as it is; never migrate, move or write a file a newer version wrote
            self._warn(
                f"autograd-lab: the progress file {self.path} was {reason}; it is read as it is and "
                "left untouched: new progress is kept in memory for this session only. Update the course."
            )
            return memory
        self._migrate(memory)
        self._warn(
            f"autograd-lab: cannot keep progress in {self.path.parent} ({reason}); "
            "progress is kept in memory for this session only and is lost when the kernel stops"
        )
        return memory

    def _connection(self) -> sqlite3.Connection:
        if self._memory is not None:
            return self._memory
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = self._connect_file()
        except (OSError, sqlite3.OperationalError) as exc:
            return self._use_memory(str(exc))
        if self._ready:
            return con
        try:
            self._prepare(con)
        except sqlite3.OperationalError as exc:
            con.close()
            text = str(exc)
            if "readonly" in text or "unable to open" in text or "read-only" in text or "disk I/O" in text:
                return self._use_memory(text)
            raise
        except NewerSchema as exc:
            con.close()
            return self._use_memory(str(exc), newer=True)
        except sqlite3.DatabaseError as exc:
            con.close()
            self._move_aside(str(exc))
            con = self._connect_file()
            self._prepare(con)
        self._ready = True
        return con

    def _run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``work(con)`` with retries on a busy database; close file connections after."""
        with self._lock:
            for attempt in range(50):
                con = self._connection()
                try:
                    return work(con)
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) and "busy" not in str(exc):
                        if "readonly" in str(exc) and self._memory is None:
                            self._use_memory(str(exc))
                            continue
                        raise
                    time.sleep(0.02 * (attempt + 1))
                finally:
                    if con is not self._memory:
                        con.close()
            raise sqlite3.OperationalError("the progress file stayed locked for too long")

    # -- writing and reading --------------------------------------------------------
    def append(
        self,
        unit: str,
        qid: str | None,
        action: Action,
        verdict: Verdict,
        answer: Any = None,
        detail: dict | None = None,
    ) -> None:
        row = (
            time.time(),
            unit,
            qid,
            action,
            json.dumps(answer, default=str),
            verdict,
            _torch_version(),
            SESSION,
            json.dumps(detail or {}, default=str),
        )

        def work(con: sqlite3.Connection) -> None:
            con.execute("BEGIN IMMEDIATE")
            try:
                con.execute(
                    "INSERT INTO events (time, unit, qid, action, answer, verdict, torch, session, detail)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

        self._run(work)
        _stream(row)

    def events(self, unit: str | None = None) -> list[Event]:
        """The log as today's course reads it (:func:`grader.engine.moves.moved_events`: an id that moved reads
        as its new id); only ``unit``'s events when one is named, including those stored under a unit it was
        split from. The file itself is never rewritten."""
        wanted = sorted(moves.sources(unit)) if unit else []

        def work(con: sqlite3.Connection) -> list[Any]:
            sql = "SELECT id, time, unit, qid, action, answer, verdict, torch, session, detail FROM events"
            where = f" WHERE unit IN ({', '.join('?' * len(wanted))})" if wanted else ""
            return con.execute(sql + where + " ORDER BY id", wanted).fetchall()

        return moves.moved_events((event_of(r) for r in self._run(work)), unit or None)


def _stream(row: tuple) -> None:
    """Write one appended row to the grading worker's event stream, if there is one; never raises."""
    raw = os.environ.get(EVENT_FD_VAR)
    if not raw:
        return
    names = ("time", "unit", "qid", "action", "answer", "verdict", "torch", "session", "detail")
    try:
        fd = int(raw)
        view = memoryview((json.dumps(dict(zip(names, row))) + "\n").encode())
        while view:
            view = view[os.write(fd, view) :]
    except (ValueError, OSError):
        pass


def event_of(r: tuple) -> Event:
    """An event from a row of (id, time, unit, qid, action, answer, verdict, torch, session, detail)."""
    try:
        answer = json.loads(r[5]) if r[5] is not None else None
    except ValueError:
        answer = r[5]
    try:
        detail = json.loads(r[9]) if r[9] else {}
    except ValueError:
        detail = {}
    return Event(r[0], r[1], r[2], r[3], action_of(r[4]), answer, verdict_of(r[6]), r[7], r[8], detail)


_STORE: Store | None = None


def current() -> Store:
    """The store for this process, re-opened if AUTOGRAD_LAB_HOME has changed."""
    global _STORE
    path = home() / FILENAME
    if _STORE is None or _STORE.path != path:
        _STORE = Store(path)
    return _STORE
