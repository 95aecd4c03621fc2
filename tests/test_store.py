"""The progress store: nothing lost under concurrent writers, corrupt files moved aside, read-only folders survived."""

import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import warnings

import pytest

from grader.engine.store import FILENAME, MIGRATIONS, SCHEMA_VERSION, Store, StoreWarning, current

WRITER = textwrap.dedent("""
    import sys
    from grader.engine.store import Store
    store = Store(sys.argv[1])
    for i in range(int(sys.argv[3])):
        store.append("01", "01.pow-node", "predict", "recorded", answer=[sys.argv[2], i])
""")


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = tmp_path / FILENAME
    Store(path).events()  # create it first, as an open kernel would have
    n = 1000
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(n)]) for name in ("a", "b")]
    assert [p.wait(timeout=240) for p in procs] == [0, 0]
    events = Store(path).events()
    assert len(events) == 2 * n
    for name in ("a", "b"):
        assert sorted(e.answer[1] for e in events if e.answer[0] == name) == list(range(n))


def test_location_follows_autograd_lab_home(home):
    current().append("00", None, "reset", "recorded")
    assert (home / FILENAME).exists()


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_corrupt_file_is_moved_aside_and_a_fresh_one_started(tmp_path, damage):
    path = tmp_path / FILENAME
    store = Store(path)
    for i in range(200):
        store.append("01", "01.pow-node", "predict", "recorded", answer=i)
    data = path.read_bytes()
    for side in ("-wal", "-shm"):
        if os.path.exists(str(path) + side):
            os.remove(str(path) + side)
    path.write_bytes(b"this is not a database at all" * 100 if damage == "garbage" else data[: len(data) // 3])
    fresh = Store(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fresh.append("01", None, "reset", "recorded")
    backups = list(tmp_path.glob(FILENAME + ".corrupt-*"))
    assert len(backups) == 1
    assert any(str(backups[0]) in str(w.message) for w in caught if issubclass(w.category, StoreWarning))
    assert [e.action for e in fresh.events()] == ["reset"]


@pytest.mark.skipif(
    os.geteuid() == 0 if hasattr(os, "geteuid") else True,
    reason="root can write a read-only folder; covered by the in-memory fallback test below",
)
def test_a_read_only_folder_gives_an_in_memory_store(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        store = Store(folder / FILENAME)
        with pytest.warns(StoreWarning, match="in memory"):
            store.append("01", None, "reset", "recorded")
        assert len(store.events()) == 1
    finally:
        folder.chmod(stat.S_IRWXU)


def test_an_unusable_location_gives_an_in_memory_store(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    store = Store(blocker / "sub" / FILENAME)
    with pytest.warns(StoreWarning, match="memory for this session only"):
        store.append("01", None, "reset", "recorded")
    store.append("01", None, "mark", "refused")
    assert [e.action for e in store.events()] == ["reset", "mark"]


def test_an_old_file_is_migrated(tmp_path):
    path = tmp_path / FILENAME
    con = sqlite3.connect(path)
    con.execute(MIGRATIONS[0])
    con.execute(
        "INSERT INTO events (time, unit, qid, action, answer, verdict, torch) "
        "VALUES (1.0, '01', '01.pow-node', 'predict', '\"PowBackward0\"', 'recorded', '2.4.1')"
    )
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.close()
    store = Store(path)
    events = store.events()
    assert len(events) == 1 and events[0].answer == "PowBackward0" and events[0].detail == {}
    store.append("01", "01.pow-node", "reveal", "correct")
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_read_only_file_keeps_its_history_in_memory(tmp_path, monkeypatch):
    """Root can write anywhere, so open the file the way a read-only folder would force: mode=ro."""
    path = tmp_path / FILENAME
    Store(path).append("01", "01.pow-node", "predict", "recorded", answer="PowBackward0")
    store = Store(path)
    monkeypatch.setattr(
        store, "_connect_file", lambda: sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    )
    with pytest.warns(StoreWarning, match="in memory for this session only"):
        store.append("01", "01.pow-node", "reveal", "correct")
    assert [e.action for e in store.events()] == ["predict", "reveal"]
    assert len(Store(path).events()) == 1  # the file itself was not touched


def test_a_store_from_a_newer_version_is_read_as_it_is_and_never_moved(tmp_path):
    import hashlib
    import warnings

    from grader.engine.store import SCHEMA_VERSION

    path = tmp_path / "progress.sqlite"
    first = Store(path)
    first.append("01", "01.pow-node", "predict", "recorded", "PowBackward0")
    del first
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    newer = Store(path)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert [e.answer for e in newer.events()] == ["PowBackward0"]
        newer.append("01", "01.pow-node", "reveal", "correct", "PowBackward0")
    assert any("newer autograd-lab" in n for n in newer.notes)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir() if ".corrupt" in p.name) == []
