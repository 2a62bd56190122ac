"""SQLiteStore on real files: the store contract, plus WAL, durability, races and error mapping."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.booked import fold
from store.log import (
    ConcurrencyConflict,
    LogAppend,
    LogStore,
    NewEntry,
    OutboxMessage,
    StoreError,
    StoreUnavailable,
    StoreUnwritable,
)
from store.sqlite import CLAIM_SECONDS, SCHEMA_VERSION, SQLiteStore, _Job, translate
from tests.integration.full_disk import FullDiskStore
from tests.integration.outbox_rule import OUTBOX_ROWS, StoredRow, first_due_of_each_key
from tests.integration.store_contract import DAY, MERCHANT, StoreContract, entry

REPO = Path(__file__).resolve().parents[2]


class TestSQLiteStoreContract(StoreContract):
    def make_store(self, tmp_path: Path) -> LogStore:
        return SQLiteStore(tmp_path / "hoststand.db")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "hoststand.db"


@pytest.fixture
def store(db: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(db) as store:
        yield store


@pytest.fixture
def raw(db: Path, store: SQLiteStore) -> Iterator[sqlite3.Connection]:
    """A second, plain connection to the store's file (the store has created the schema)."""
    conn = sqlite3.connect(db, isolation_level=None)
    yield conn
    conn.close()


def pragma(conn: sqlite3.Connection, name: str) -> object:
    return conn.execute(f"PRAGMA {name}").fetchone()[0]


# -- the file ---------------------------------------------------------------------------------


def test_the_file_is_in_wal_mode(raw: sqlite3.Connection) -> None:
    assert pragma(raw, "journal_mode") == "wal"


def test_the_store_commits_with_synchronous_full(store: SQLiteStore) -> None:
    with store._connection() as conn:
        assert pragma(conn, "synchronous") == 2  # FULL


def test_entries_survive_closing_and_reopening_the_file(db: Path) -> None:
    with SQLiteStore(db) as store:
        store.append(MERCHANT, DAY, 0, [entry(0), entry(1)], remember=[("webhook", "k", 1)])
    with SQLiteStore(db) as store:
        assert [e.operation for e in store.entries(MERCHANT, DAY)] == [["board", 0], ["board", 1]]
        assert store.recall("webhook", "k") == 1
        store.append(MERCHANT, DAY, 2, [entry(2)])


def test_opening_an_existing_file_keeps_its_one_schema_version(db: Path) -> None:
    SQLiteStore(db).close()
    SQLiteStore(db).close()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    finally:
        conn.close()


# The log table as schema 2 had it, before each entry kept its change to the booked fold.
SCHEMA_2_LOG = """
CREATE TABLE log_entries (
    merchant_id TEXT NOT NULL, service_date TEXT NOT NULL,
    seq INTEGER NOT NULL CHECK (seq >= 0), operation TEXT NOT NULL, result TEXT NOT NULL,
    received_at REAL NOT NULL, meta TEXT NOT NULL,
    PRIMARY KEY (merchant_id, service_date, seq)
) WITHOUT ROWID
"""


def test_a_schema_2_file_gets_the_fold_columns_filled_in_for_its_old_entries(db: Path) -> None:
    log = [
        (["reserve", 0, "r1", "T1", 100], True),
        (["reserve", 0, "r2", "T5+T6", 100], True),
        (["reserve", 1, "r3", "T2", 200], True),
        (["cancel", 2, "r1"], []),
        (["cancel", 3, "r1"], "error: reservation not active"),
        (["reserve", 4, "r4", "T2", 210], "error: table conflict"),
        (["board", 10**6, "x"], "error: invalid arguments"),  # not a valid shape: no expiry
        (["check_in", 90, "r2"], "seated T5+T6"),
    ]
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(SCHEMA_2_LOG)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (2)")
    conn.executemany(
        "INSERT INTO log_entries VALUES (?, ?, ?, ?, ?, 0.0, '{}')",
        [
            (MERCHANT, DAY.isoformat(), seq, json.dumps(op), json.dumps(result))
            for seq, (op, result) in enumerate(log)
        ],
    )
    conn.close()
    with SQLiteStore(db) as store:
        booked = store.booked(MERCHANT, DAY, DAY)
        assert booked == {DAY: fold(log)}
        assert booked[DAY].last_ts == 90
        assert booked[DAY].reservations == {"r3": ("T2", 200, None, False)}
        store.append(MERCHANT, DAY, len(log), [NewEntry(["cancel", 91, "r3"], [], 0.0)])
        assert store.booked(MERCHANT, DAY, DAY)[DAY].reservations == {}
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    finally:
        conn.close()


# The log table as schema 3 had it: the fold's columns without size and arrives.
SCHEMA_3_LOG = """
CREATE TABLE log_entries (
    merchant_id TEXT NOT NULL, service_date TEXT NOT NULL,
    seq INTEGER NOT NULL CHECK (seq >= 0), operation TEXT NOT NULL, result TEXT NOT NULL,
    received_at REAL NOT NULL, meta TEXT NOT NULL,
    fold_ts INTEGER, starts TEXT, ends TEXT, unit TEXT, at INTEGER,
    PRIMARY KEY (merchant_id, service_date, seq)
) WITHOUT ROWID
"""


def test_a_schema_3_file_gets_sizes_and_arrivals_filled_in_for_its_old_entries(
    db: Path,
) -> None:
    log = [
        (["reserve", 0, "r1", "T1", 100], True, {"party_size": 3}),
        (["reserve", 0, "r2", "T2", 100], True, {}),
        (["arrive", 90, "r1"], True, {}),
        (["board", 500], {"tables": {}, "waiting": []}, {}),
    ]
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(SCHEMA_3_LOG)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (3)")
    conn.executemany(
        "INSERT INTO log_entries VALUES (?, ?, ?, ?, ?, 0.0, ?, NULL, NULL, NULL, NULL, NULL)",
        [
            (MERCHANT, DAY.isoformat(), seq, json.dumps(op), json.dumps(result), json.dumps(meta))
            for seq, (op, result, meta) in enumerate(log)
        ],
    )
    conn.close()
    with SQLiteStore(db) as store:
        booked = store.booked(MERCHANT, DAY, DAY)
        assert booked == {DAY: fold(log)}
        assert booked[DAY].reservations == {
            "r1": ("T1", 100, 3, True),
            "r2": ("T2", 100, None, False),
        }
        assert booked[DAY].bookings(500) == [("T1", 100, 3, True)]  # r2 was a no-show
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        columns = [row[1] for row in conn.execute("PRAGMA table_info(log_entries)")]
        assert columns[-2:] == ["size", "arrives"]
    finally:
        conn.close()


def test_a_file_with_a_newer_schema_is_refused(raw: sqlite3.Connection, db: Path) -> None:
    raw.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="newer"):
        SQLiteStore(db)


def test_json_is_stored_as_text_with_sorted_keys(
    store: SQLiteStore, raw: sqlite3.Connection
) -> None:
    store.append(MERCHANT, DAY, 0, [entry(0, zeta=1, alpha=2)])
    assert raw.execute("SELECT meta FROM log_entries").fetchone()[0] == '{"alpha":2,"zeta":1}'


# -- races ------------------------------------------------------------------------------------


def test_of_two_threads_appending_at_one_seq_one_wins_and_the_other_conflicts(
    store: SQLiteStore,
) -> None:
    rounds = 20
    outcomes: list[list[str]] = [[] for _ in range(rounds)]
    barrier = threading.Barrier(2)

    def writer(name: str) -> None:
        for seq in range(rounds):
            barrier.wait()  # both start each round from the same expected_seq
            try:
                store.append(MERCHANT, DAY, seq, [entry(seq, writer=name)])
                outcomes[seq].append("won")
            except ConcurrencyConflict:
                outcomes[seq].append("conflict")

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(sorted(outcome) == ["conflict", "won"] for outcome in outcomes)
    assert [e.seq for e in store.entries(MERCHANT, DAY)] == list(range(rounds))


def test_writers_that_reread_and_retry_on_conflict_all_land_with_no_gap(
    store: SQLiteStore,
) -> None:
    writers, each = 4, 25

    def writer(name: str) -> None:
        written = 0
        while written < each:
            seq = len(store.entries(MERCHANT, DAY))
            try:
                store.append(MERCHANT, DAY, seq, [entry(seq, writer=name)])
                written += 1
            except ConcurrencyConflict:
                pass  # another writer took `seq`: reread and try at the new end

    threads = [threading.Thread(target=writer, args=(f"w{n}",)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log = store.entries(MERCHANT, DAY)
    assert [e.seq for e in log] == list(range(writers * each))
    assert sorted(e.meta["writer"] for e in log) == sorted(
        f"w{n}" for n in range(writers) for _ in range(each)
    )


WORKER = """
import sys, time
from pathlib import Path
from store.log import ConcurrencyConflict, NewEntry
from store.sqlite import SQLiteStore
from datetime import date

db, go, name = sys.argv[1:]
with SQLiteStore(db) as store:
    print("ready", flush=True)
    while not Path(go).exists():
        time.sleep(0.001)
    try:
        new = NewEntry(["board", 0], {}, 0.0, {"w": name})
        store.append("marlowes", date(2024, 3, 9), 0, [new])
        print("won", flush=True)
    except ConcurrencyConflict:
        print("conflict", flush=True)
"""


def test_appends_committed_together_keep_their_own_conflicts(store: SQLiteStore) -> None:
    # Group commit writes concurrent appends in one transaction: a conflict in one of them
    # must undo that one only. 10 logs, 3 writers racing for seq 0 of each.
    days = [date(2024, 4, d) for d in range(1, 11)]
    barrier = threading.Barrier(30)
    outcomes: dict[date, list[str]] = {d: [] for d in days}
    lock = threading.Lock()

    def write(day: date, n: int) -> None:
        barrier.wait()
        try:
            store.append(MERCHANT, day, 0, [entry(n)], remember=[("writer", f"{day}-{n}", n)])
            result = "won"
        except ConcurrencyConflict:
            result = "conflict"
        with lock:
            outcomes[day].append(result)

    threads = [threading.Thread(target=write, args=(d, n)) for d in days for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    for day in days:
        assert sorted(outcomes[day]) == ["conflict", "conflict", "won"]
        [stored] = store.entries(MERCHANT, day)
        winner = [n for n in range(3) if store.recall("writer", f"{day}-{n}") is not None]
        assert len(winner) == 1  # a losing writer's key was rolled back with its entry
        assert stored.operation == entry(winner[0]).operation


def test_of_several_processes_appending_at_one_seq_one_wins_and_the_rest_conflict(
    store: SQLiteStore, db: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db), str(go), f"w{n}"],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    try:
        for worker in workers:
            assert worker.stdout is not None
            assert worker.stdout.readline().strip() == "ready"
        go.touch()  # all workers are open and waiting: release them together
        outcomes = sorted(worker.communicate(timeout=30)[0].strip() for worker in workers)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            worker.wait()
            if worker.stdout is not None:
                worker.stdout.close()
    assert outcomes == ["conflict", "conflict", "won"]
    assert [e.seq for e in store.entries(MERCHANT, DAY)] == [0]


# -- driver errors become the project's errors ------------------------------------------------


def test_a_database_locked_past_the_busy_timeout_is_store_unavailable(
    raw: sqlite3.Connection, db: Path
) -> None:
    with SQLiteStore(db, busy_timeout=0.05) as impatient:
        raw.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreUnavailable) as raised:
            impatient.append(MERCHANT, DAY, 0, [entry(0)])
        assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
        raw.execute("ROLLBACK")
        impatient.append(MERCHANT, DAY, 0, [entry(0)])  # unavailable was temporary


def test_a_writer_of_this_process_waits_its_turn_and_gives_up_at_the_busy_timeout(
    db: Path,
) -> None:
    # Writers of one process take turns on the store's own lock (no SQLite busy sleeps):
    # one held past busy_timeout by another thread is the same StoreUnavailable.
    with SQLiteStore(db, busy_timeout=0.05) as store:
        holding, release = threading.Event(), threading.Event()

        def hold() -> None:
            with store._transaction():
                holding.set()
                release.wait(5)

        holder = threading.Thread(target=hold)
        holder.start()
        assert holding.wait(5)
        try:
            with pytest.raises(StoreUnavailable, match="held"):
                store.append(MERCHANT, DAY, 0, [entry(0)])
        finally:
            release.set()
            holder.join(5)
        assert store.entries(MERCHANT, DAY) == []  # nothing was written
        store.append(MERCHANT, DAY, 0, [entry(0)])  # the turn came back
        assert len(store.entries(MERCHANT, DAY)) == 1


def test_a_file_that_cannot_be_opened_is_store_unavailable(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable):
        SQLiteStore(tmp_path / "no-such-directory" / "hoststand.db")


def test_a_file_that_is_not_a_database_is_a_store_error_not_unavailable(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not an SQLite database, just some text " * 100)
    with pytest.raises(StoreError) as raised:
        SQLiteStore(garbage)
    assert type(raised.value) is StoreError
    assert isinstance(raised.value.__cause__, sqlite3.DatabaseError)


def test_another_programs_database_is_refused_and_left_exactly_as_it_was(tmp_path: Path) -> None:
    theirs = tmp_path / "crm.db"
    with closing(sqlite3.connect(theirs)) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO customers (name) VALUES ('Ann')")
        conn.commit()
    before = theirs.read_bytes()
    with pytest.raises(StoreError, match="is not a Host Stand database") as raised:
        SQLiteStore(theirs)
    assert "customers" in str(raised.value)
    assert theirs.read_bytes() == before  # not even switched to WAL
    with closing(sqlite3.connect(theirs)) as conn:
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    assert tables == [("customers",)]


def test_a_database_with_our_table_names_but_no_schema_version_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "other.db"
    with closing(sqlite3.connect(theirs)) as conn:
        conn.execute("CREATE TABLE outbox (id INTEGER PRIMARY KEY, body TEXT)")
        conn.commit()
    before = theirs.read_bytes()
    with pytest.raises(StoreError, match="is not a Host Stand database"):
        SQLiteStore(theirs)
    assert theirs.read_bytes() == before


def test_an_empty_database_file_becomes_a_store(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    with SQLiteStore(empty) as store:
        store.append(MERCHANT, DAY, 0, [entry(0)])
        assert len(store.entries(MERCHANT, DAY)) == 1


def driver_error(conn: sqlite3.Connection, sql: str, *args: object) -> sqlite3.Error:
    with pytest.raises(sqlite3.Error) as raised:
        conn.execute(sql, args)
    return raised.value


def test_a_unique_key_violation_on_the_log_translates_to_a_concurrency_conflict(
    store: SQLiteStore, raw: sqlite3.Connection
) -> None:
    store.append(MERCHANT, DAY, 0, [entry(0)])
    error = driver_error(
        raw,
        "INSERT INTO log_entries (merchant_id, service_date, seq, operation, result,"
        " received_at, meta) VALUES (?, ?, 0, '[]', 'null', 0.0, '{}')",
        MERCHANT,
        "2024-03-09",
    )
    assert type(translate(error)) is ConcurrencyConflict


def test_other_integrity_errors_translate_to_a_plain_store_error(
    store: SQLiteStore, raw: sqlite3.Connection
) -> None:
    store.remember("webhook", "k", 1)
    not_null = driver_error(raw, "INSERT INTO log_entries (merchant_id) VALUES ('m')")
    duplicate_key = driver_error(raw, "INSERT INTO idempotency VALUES ('webhook', 'k', '2')")
    assert type(translate(not_null)) is StoreError
    assert type(translate(duplicate_key)) is StoreError


def test_a_locked_database_translates_to_store_unavailable(
    raw: sqlite3.Connection, db: Path
) -> None:
    raw.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(db, timeout=0.01, isolation_level=None)
    try:
        error = driver_error(other, "BEGIN IMMEDIATE")
    finally:
        other.close()
        raw.execute("ROLLBACK")
    assert "locked" in str(error)
    assert type(translate(error)) is StoreUnavailable


def test_any_other_driver_error_translates_to_a_plain_store_error(
    raw: sqlite3.Connection,
) -> None:
    assert type(translate(driver_error(raw, "SELECT * FROM no_such_table"))) is StoreError
    assert type(translate(sqlite3.InterfaceError("bad parameter"))) is StoreError


def test_a_full_disk_is_store_unwritable_and_the_append_writes_nothing(db: Path) -> None:
    with FullDiskStore(db) as store:
        store.append(MERCHANT, DAY, 0, [entry(0)])
        store.room = 0
        with pytest.raises(StoreUnwritable, match="cannot be written") as raised:
            store.append(MERCHANT, DAY, 1, [entry(1)], remember=[("webhook", "k", 1)])
        assert getattr(raised.value.__cause__, "sqlite_errorname", "") == "SQLITE_FULL"
        assert [e.seq for e in store.entries(MERCHANT, DAY)] == [0]
        assert store.recall("webhook", "k") is None
        store.room = None  # space freed: the same append goes through
        store.append(MERCHANT, DAY, 1, [entry(1)], remember=[("webhook", "k", 1)])
        assert [e.seq for e in store.entries(MERCHANT, DAY)] == [0, 1]


def test_a_full_disk_in_a_group_commit_fails_every_job_of_the_batch_and_writes_nothing(
    db: Path,
) -> None:
    # SQLite rolls the whole transaction back on a full disk, the jobs written before the
    # one that met it too: each must hear so, none may think it committed.
    with FullDiskStore(db) as store:
        message = OutboxMessage("p", "booking", "b1", {"x": 1}, 0.0)
        first = _Job([LogAppend(MERCHANT, DAY, 0, [entry(0)])], [], [], [message])
        second = _Job([LogAppend("other", DAY, 0, [entry(0)])], [("webhook", "k", 1)], [], [])
        store.room = 1  # the first job's rows fit, the second's do not
        store._commit([first, second])
        assert isinstance(first.error, StoreUnwritable) and first.done
        assert isinstance(second.error, StoreUnwritable) and second.done
        assert store.entries(MERCHANT, DAY) == store.entries("other", DAY) == []
        assert store.recall("webhook", "k") is None
        assert store.pending(now=1.0) == []


def test_a_disk_io_error_translates_to_store_unwritable() -> None:
    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorname = "SQLITE_IOERR_WRITE"
    assert type(translate(error)) is StoreUnwritable


@pytest.mark.parametrize("name", ["SQLITE_READONLY", "SQLITE_READONLY_DBMOVED"])
def test_a_database_file_that_cannot_be_written_translates_to_store_unwritable(name: str) -> None:
    error = sqlite3.OperationalError("attempt to write a readonly database")
    error.sqlite_errorname = name
    assert type(translate(error)) is StoreUnwritable


# -- no stray files ---------------------------------------------------------------------------


def test_closing_the_store_leaves_only_its_database_file(tmp_path: Path) -> None:
    directory = tmp_path / "data"
    directory.mkdir()
    with SQLiteStore(directory / "hoststand.db") as store:
        store.append(MERCHANT, DAY, 0, [entry(0)], remember=[("webhook", "k", 1)])
        store.entries(MERCHANT, DAY)
    assert sorted(p.name for p in directory.iterdir()) == ["hoststand.db"]


def test_the_store_writes_nothing_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        store.append(MERCHANT, DAY, 0, [entry(0)])
    assert list(cwd.iterdir()) == []


SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3", "-wal", "-shm", "-journal")


def database_files() -> set[Path]:
    found: set[Path] = set()
    for directory, subdirectories, files in os.walk(REPO):
        # Hidden directories are tools' own (.git, .venv, .mypy_cache keeps SQLite caches).
        subdirectories[:] = [d for d in subdirectories if not d.startswith(".")]
        found |= {Path(directory, f) for f in files if f.endswith(SQLITE_SUFFIXES)}
    return found


# Read when the tests are collected, before any runs: `make run` serves on hoststand.db in
# the project root (the README's first command), so that file is the user's, not a test's.
BEFORE_THE_RUN = database_files()


def test_the_test_run_leaves_no_database_files_in_the_repository() -> None:
    # Every test keeps its files under tmp_path; a new database file in the tree means one
    # did not. (A `make run` server still running may open and close its -wal and -shm.)
    made_by_make_run = {"hoststand.db", "hoststand.db-wal", "hoststand.db-shm"}
    stray = [
        path
        for path in database_files() - BEFORE_THE_RUN
        if not (path.parent == REPO and path.name in made_by_make_run)
    ]
    assert stray == []


def test_the_log_version_moves_with_appends_only_and_sees_other_writers(db: Path) -> None:
    """Readers of the logs key on log_version: the outbox and idempotency records, written
    all the time by the sender and the receivers, must not make them re-read the logs; an
    append by another store on the same file (another process) must."""
    from store.log import OutboxMessage

    with SQLiteStore(db) as store, SQLiteStore(db) as other:
        before, committed = store.log_version(), store.version()
        other.remember("webhook", "k", 1)
        other.append_all([], outbox=[OutboxMessage("p", "booking", "k", {"a": 1}, 0.0)])
        assert store.version() != committed  # something was committed ...
        assert store.log_version() == before  # ... but no log grew
        other.append(MERCHANT, DAY, 0, [entry(0)])
        moved = store.log_version()
        assert moved != before
        assert store.log_version() == moved
        other.append(MERCHANT, DAY, 1, [entry(1)])
        assert store.log_version() not in (before, moved)


# -- the outbox's due messages, found by SQL ---------------------------------------------------


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    OUTBOX_ROWS,
    st.sampled_from([100.0, 100.0 + CLAIM_SECONDS]),
    st.integers(min_value=1, max_value=6),
)
def test_pending_is_the_first_due_message_of_each_key_as_a_row_by_row_read_finds(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[tuple[str, str, str, str, float, float | None]],
    now: float,
    limit: int,
) -> None:
    stored: list[StoredRow] = []
    db = tmp_path_factory.mktemp("outbox") / "hoststand.db"
    with SQLiteStore(db) as store, closing(sqlite3.connect(db, isolation_level=None)) as raw:
        for partner, kind, key, state, retry_at, claimed in rows:
            cursor = raw.execute(
                "INSERT INTO outbox (partner, kind, key, payload, created_at, state, retry_at,"
                " claimed_at) VALUES (?, ?, ?, '{}', 0, ?, ?, ?)",
                (partner, kind, key, state, retry_at, claimed),
            )
            assert cursor.lastrowid is not None
            stored.append((cursor.lastrowid, partner, kind, key, state, retry_at, claimed, None))
        found = [item.id for item in store.pending(now, limit)]
    assert found == first_due_of_each_key(stored, now, limit, CLAIM_SECONDS)
