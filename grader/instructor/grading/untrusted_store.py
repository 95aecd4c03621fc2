"""Read a progress store someone else wrote (a submission's, a learner's) as untrusted data.

A store is a SQLite file, and SQLite runs what a file's schema says: a VIEW named ``events`` that recurses
without end, a trigger, a generated column, a virtual table. So a store is read only when:

* it is at most ``STORE_CAP`` bytes (and its write-ahead log too);
* ``events`` in ``sqlite_master`` is a plain table (``CREATE TABLE``, not a view, not virtual) with the
  columns the course writes; any other table, view or trigger is ignored, never queried;
* ``PRAGMA trusted_schema=OFF``: no function with side effects runs from the schema;
* a progress handler aborts any statement past ``OPS_BUDGET`` virtual-machine steps;
* at most ``EVENTS_CAP`` rows are read, and each is checked field by field (:func:`event_of_fields`) exactly
  as the lines a grading kernel streams out (:func:`events_of_stream`).

``read(path)`` raises :class:`Refused` (an ``sqlite3.DatabaseError``) with a reason, never anything else
from SQLite; callers turn it into a finding or a "store not readable" line.

SQLite opens a file by its path, and follows a link to do so, so it is never given a path a learner shapes:
:func:`read_bytes` reads a store from bytes its caller took through descriptors opened without links (the class
view, :mod:`grader.instructor.homes`; ``grade``, :func:`grader.instructor.grading.containment.read_capped`), from a
private copy in a fresh 0700 folder.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.parse
from pathlib import Path

from grader.engine import moves
from grader.engine.store import SCHEMA_VERSION, Event
from grader.engine.verdicts import action_of, verdict_of

STORE_CAP = 64 * 2**20  # bytes of a progress store (and of its WAL) read at most
EVENTS_CAP = 100_000  # events read at most
ANSWER_CAP = 100_000  # characters of one recorded answer (and of its detail)
LINE_CAP = 2 * ANSWER_CAP + 4096  # bytes of one streamed event line
OPS_BUDGET = 200_000_000  # SQLite virtual-machine steps one read may take (reading 100,000 rows takes ~10^7)
_STEP = 1000  # the progress handler is called every _STEP steps
REQUIRED = ("id", "time", "unit", "qid", "action", "answer", "verdict", "torch")
OPTIONAL = ("session", "detail")


class Refused(sqlite3.DatabaseError):
    """The store is not read: the text says why."""


def connect(path: Path, *, live: bool = False, copy: bool = False) -> sqlite3.Connection:
    """A query-only connection to ``path`` that runs nothing the schema asks for and aborts a runaway query.

    ``live``: a store a kernel may be writing now (read through its WAL when both side files exist);
    ``copy``: a private copy (with its WAL beside it, if any), opened so that SQLite may recover the WAL there;
    otherwise the file is opened immutable, which creates and touches nothing beside it."""
    for suffix in ("", "-wal"):
        try:
            size = os.lstat(f"{path}{suffix}").st_size
        except FileNotFoundError:
            if suffix:
                continue
            raise Refused("missing") from None
        except OSError as exc:
            raise Refused(f"unreadable ({exc.strerror})") from None
        if size > STORE_CAP:
            raise Refused(f"larger than {STORE_CAP:,} bytes")
    quoted = urllib.parse.quote(str(path))
    both = Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
    query = "mode=rw" if copy else "mode=ro" if live and both else "mode=ro&immutable=1"
    con = sqlite3.connect(f"file:{quoted}?{query}", uri=True, timeout=5)
    steps = [0]

    def budget() -> int:
        steps[0] += 1
        return 1 if steps[0] * _STEP > OPS_BUDGET else 0  # non-zero: SQLite interrupts the statement

    con.set_progress_handler(budget, _STEP)
    con.execute("PRAGMA trusted_schema = OFF")
    con.execute("PRAGMA query_only = ON")
    return con


def _columns(con: sqlite3.Connection) -> list[str]:
    """The columns of ``events`` when it is a plain table holding the course's columns; else Refused."""
    rows = con.execute("SELECT type, sql FROM sqlite_master WHERE name = 'events'").fetchall()
    kinds = [(t, str(s or "")) for t, s in rows]
    if not kinds:
        raise Refused("it has no events table")
    if len(kinds) != 1 or kinds[0][0] != "table" or not kinds[0][1].lstrip().upper().startswith("CREATE TABLE"):
        raise Refused(f"its events is a {kinds[0][0]}, not a plain table" if len(kinds) == 1 else "two events")
    columns = [str(r[1]) for r in con.execute("PRAGMA table_info(events)")]
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise Refused(f"its events table lacks {', '.join(missing)}")
    return columns


def read(path: Path, *, live: bool = False, copy: bool = False) -> tuple[list[Event], list[str]]:
    """The events of the store at ``path`` and what was found reading them; Refused when it cannot be read."""
    try:
        con = connect(path, live=live, copy=copy)
    except sqlite3.DatabaseError as exc:
        raise exc if isinstance(exc, Refused) else Refused(str(exc)[:100]) from None
    findings: list[str] = []
    try:
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if isinstance(version, int) and version > SCHEMA_VERSION:
            findings.append(f"store written by a newer schema ({version}); read as far as it is understood")
        columns = _columns(con)
        wanted = [*REQUIRED, *(c if c in columns else f"'' AS {c}" for c in OPTIONAL)]
        rows = con.execute(f"SELECT {', '.join(wanted)} FROM events ORDER BY id LIMIT ?", (EVENTS_CAP + 1,)).fetchall()
    except Refused:
        raise
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc):
            raise Refused(f"reading it took more than {OPS_BUDGET:,} SQLite steps") from None
        raise Refused(str(exc)[:100]) from None
    except sqlite3.Error as exc:
        raise Refused(str(exc)[:100]) from None
    finally:
        con.close()
    if len(rows) > EVENTS_CAP:
        findings.append(f"more than {EVENTS_CAP:,} events; the rest were not read")
        rows = rows[:EVENTS_CAP]
    events = []
    for row in rows:
        event = event_of_fields(*row)
        if event is None:
            findings.append("store has events that are not well formed; they were skipped")
        else:
            events.append(event)
    return events, list(dict.fromkeys(findings))


def read_bytes(store: bytes, wal: bytes | None = None) -> tuple[list[Event], list[str]]:
    """:func:`read` of a store taken as bytes (and its write-ahead log's, where it had one), through a private copy
    in a fresh 0700 folder that is removed after: what a learner's folder holds is never opened by SQLite."""
    import shutil
    import tempfile

    if len(store) > STORE_CAP or (wal is not None and len(wal) > STORE_CAP):
        raise Refused(f"larger than {STORE_CAP:,} bytes")
    folder = Path(tempfile.mkdtemp(prefix="agl-store-"))
    try:
        path = folder / "progress.sqlite3"
        path.write_bytes(store)
        if wal:
            Path(f"{path}-wal").write_bytes(wal)
        return read(path, copy=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _json(text, cap: int):
    if not isinstance(text, str) or len(text) > cap:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def event_of_fields(ident, when, unit, qid, action, answer, verdict, torch_v, session="", detail="") -> Event | None:
    """An event from one row's (or one streamed line's) fields, each checked; None when they are not well formed.
    ``answer`` and ``detail`` are the JSON text the store keeps; an answer too long or not JSON reads as None."""
    if not (
        isinstance(ident, int)
        and not isinstance(ident, bool)
        and isinstance(when, (int, float))
        and not isinstance(when, bool)
        and isinstance(unit, str)
        and len(unit) <= 16
        and (qid is None or (isinstance(qid, str) and len(qid) <= 200))
        and isinstance(action, str)
        and len(action) <= 40
        and isinstance(verdict, str)
        and len(verdict) <= 40
    ):
        return None
    details = _json(detail, ANSWER_CAP)
    if qid is not None and moves.current_id(qid) != qid:  # an id that moved reads as today's (grader.engine.moves)
        qid = moves.current_id(qid)
        unit = moves.unit_of(qid)
    return Event(
        ident,
        float(when),
        unit,
        qid,
        action_of(action),  # a name this version does not know reads as "unknown", as the learner's store reads it
        _json(answer, ANSWER_CAP),
        verdict_of(verdict),
        str(torch_v)[:40],
        str(session)[:40],
        details if isinstance(details, dict) else {},
    )


def events_of_stream(raw: bytes) -> tuple[list[Event], list[str]]:
    """The events a grading kernel streamed out (one JSON object per line, see grader.engine.store), each line
    checked and capped exactly as a store row; (events, findings)."""
    events: list[Event] = []
    findings: list[str] = []
    for line in raw.split(b"\n"):
        if not line:
            continue
        if len(events) >= EVENTS_CAP:
            findings.append(f"more than {EVENTS_CAP:,} events; the rest were not read")
            break
        item = None
        if len(line) <= LINE_CAP:
            try:
                item = json.loads(line)
            except (ValueError, RecursionError):
                item = None
        event = None
        if isinstance(item, dict):
            get = item.get
            event = event_of_fields(
                len(events) + 1,
                *(get("time"), get("unit"), get("qid"), get("action"), get("answer"), get("verdict"), get("torch")),
                get("session", ""),
                get("detail", ""),
            )
        if event is None:
            findings.append("the event stream has lines that are not well formed; they were skipped")
        else:
            events.append(event)
    return events, list(dict.fromkeys(findings))


def same_record(a: Event, b: Event) -> bool:
    """Whether two events record the same thing (ids aside: a stream numbers its lines, a store its rows)."""
    return (a.time, a.unit, a.qid, a.action, a.answer, a.verdict, a.session) == (
        b.time,
        b.unit,
        b.qid,
        b.action,
        b.answer,
        b.verdict,
        b.session,
    )


def kept_in_order(streamed: list[Event], stored: list[Event]) -> bool:
    """Whether every streamed event is in the store, in order (rows the store has besides are allowed)."""
    i = 0
    for event in stored:
        if i < len(streamed) and same_record(streamed[i], event):
            i += 1
    return i == len(streamed)
