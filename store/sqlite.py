"""The operation log and idempotency records in one SQLite file (the single-restaurant store).

WAL mode with synchronous=FULL: a call that returns has committed to disk. The primary key
(merchant_id, service_date, seq) is what stops a second writer; sqlite3 errors leave as StoreError.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from types import TracebackType

from engine.booked import BookedDay, Change, change, fold_days
from store.log import (
    JSON,
    Backlog,
    ConcurrencyConflict,
    DuplicateKey,
    LogAppend,
    LogEntry,
    NewEntry,
    OutboxItem,
    OutboxMessage,
    Remember,
    StoreError,
    StoreUnavailable,
    StoreUnwritable,
    backlog_of,
    check_append,
    prefix_args,
)

SCHEMA_VERSION = 4  # 2: outbox and exports; 3: each entry's change to the booked fold;
# 4: the change's party size and arrival
CLAIM_SECONDS = 120.0  # a sender holding a message longer than this has died

SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS log_entries (
    merchant_id  TEXT NOT NULL,
    service_date TEXT NOT NULL,  -- ISO 8601, so text order is date order
    seq          INTEGER NOT NULL CHECK (seq >= 0),
    operation    TEXT NOT NULL,  -- JSON, sorted keys
    result       TEXT NOT NULL,
    received_at  REAL NOT NULL,
    meta         TEXT NOT NULL,
    -- engine.booked.change(operation, result), kept so the fold reads plain columns
    fold_ts      INTEGER,  -- ts of an operation of valid shape
    starts       TEXT,     -- the reservation a successful reserve starts
    ends         TEXT,     -- the reservation a successful cancel or check_in ends
    unit         TEXT,
    at           INTEGER,
    size         INTEGER,  -- the reserve's party size (its meta's party_size), if known
    arrives      TEXT,     -- the reservation a successful arrive marks arrived
    PRIMARY KEY (merchant_id, service_date, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS idempotency (
    scope TEXT NOT NULL,
    key   TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (scope, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS outbox (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,  -- delivery order
    partner      TEXT NOT NULL,
    kind         TEXT NOT NULL,
    key          TEXT NOT NULL,
    payload      TEXT NOT NULL,
    created_at   REAL NOT NULL,
    state        TEXT NOT NULL DEFAULT 'pending',  -- pending, delivered, dead, moot
    attempts     INTEGER NOT NULL DEFAULT 0,
    retry_at     REAL NOT NULL DEFAULT 0,
    claimed_at   REAL,  -- handed to a sender: a new change must not merge into it
    claimed_by   TEXT,  -- that sender (SQLiteStore._sender): see release_claims
    delivered_at REAL,
    last_error   TEXT
);
-- log_version(): moved by every transaction that appends log entries, and only by those
CREATE TABLE IF NOT EXISTS log_version (n INTEGER NOT NULL);
INSERT INTO log_version (n) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM log_version);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (state, id);
CREATE INDEX IF NOT EXISTS outbox_key ON outbox (partner, kind, key, state);
CREATE TABLE IF NOT EXISTS exports (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    record TEXT NOT NULL
);
"""

# Every table any version of the schema has made (SQLite's own, sqlite_*, aside).
_OUR_TABLES = frozenset(
    {"schema_version", "log_entries", "idempotency", "outbox", "log_version", "exports"}
)


def _foreign_tables(conn: sqlite3.Connection) -> list[str]:
    """The tables that say this file belongs to another program: any table that is not
    ours, or every table when ours are there without their schema_version."""
    names = sorted(
        str(row[0])
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%'"
            " ESCAPE '\\'"
        )
    )
    if names and "schema_version" not in names:
        return names
    return [name for name in names if name not in _OUR_TABLES]


# Extended result codes (Python 3.11+ `sqlite_errorname`) are stabler than message text.
_UNAVAILABLE = {"SQLITE_BUSY", "SQLITE_BUSY_SNAPSHOT", "SQLITE_BUSY_RECOVERY", "SQLITE_LOCKED"}
_CANNOT_OPEN = {"SQLITE_CANTOPEN", "SQLITE_CANTOPEN_ISDIR", "SQLITE_CANTOPEN_NOTEMPDIR"}
_UNIQUE = {"SQLITE_CONSTRAINT_PRIMARYKEY", "SQLITE_CONSTRAINT_UNIQUE"}
# The disk is full, or the OS refused a read or write (SQLITE_IOERR_WRITE, _FSYNC, ...):
# SQLite has rolled the transaction back, so the caller may say "retry" with nothing written.
_UNWRITABLE = {"SQLITE_FULL"}
# ... or the file cannot be written at all (SQLITE_READONLY, _DBMOVED, _DIRECTORY...).
_UNWRITABLE_PREFIX = ("SQLITE_IOERR", "SQLITE_READONLY")


# outbox.pending: the due messages that are first of their key among the pending ones,
# found by SQLite (outbox_key's range below each row's id). A sender asks every round; it read
# every pending row into Python before, replaces waiting out their coalescing window too:
# 2.5 ms of the GIL a round in receiver_bench, beside the requests being served.
_PENDING_SQL = """
SELECT id, partner, kind, key, payload, created_at, attempts FROM outbox AS o
WHERE state = 'pending' AND retry_at <= ? AND (claimed_at IS NULL OR claimed_at <= ?)
  AND NOT EXISTS (
    SELECT 1 FROM outbox AS e
    WHERE e.partner = o.partner AND e.kind = o.kind AND e.key = o.key
      AND e.state = 'pending' AND e.id < o.id
  )
  {skip}
ORDER BY id LIMIT ?
"""


def _pending_sql(skipped: int) -> str:
    """_PENDING_SQL leaving out `skipped` partners (one placeholder each)."""
    skip = f"AND partner NOT IN ({', '.join('?' * skipped)})" if skipped else ""
    return _PENDING_SQL.format(skip=skip)


# outbox_backlog: pending and dead messages per partner (the delivered ones are not read).
_BACKLOG_SQL = (
    "SELECT partner, state, count(*), min(created_at) FROM outbox"
    " WHERE state IN ('pending', 'dead') GROUP BY partner, state"
)


def translate(exc: sqlite3.Error) -> StoreError:
    """The project's error for a driver error (raise it `from exc`)."""
    name = getattr(exc, "sqlite_errorname", "")
    if isinstance(exc, sqlite3.IntegrityError) and name in _UNIQUE and "log_entries." in str(exc):
        return ConcurrencyConflict(f"another writer appended first: {exc}")
    if name in _UNWRITABLE or name.startswith(_UNWRITABLE_PREFIX):
        return StoreUnwritable(f"the database cannot be written: {exc}")
    if name in _UNAVAILABLE or name in _CANNOT_OPEN:
        return StoreUnavailable(f"database unavailable: {exc}")
    return StoreError(f"{type(exc).__name__}: {exc}")


# engine.booked.Change, one column each, in the tuple's order: the one list the schema
# upgrade, the insert and the fold's read are written from.
_FOLD_COLUMNS = [
    ("fold_ts", "INTEGER"),
    ("starts", "TEXT"),
    ("ends", "TEXT"),
    ("unit", "TEXT"),
    ("at", "INTEGER"),
    ("size", "INTEGER"),
    ("arrives", "TEXT"),
]
_FOLD_NAMES = ", ".join(name for name, _ in _FOLD_COLUMNS)

# engine.booked.fold over the stored changes, in two reads of one snapshot: each day's
# last valid ts, then the reservations started, ended or arrived, in log order.
_LAST_TS_SQL = """
SELECT service_date, MAX(fold_ts) FROM log_entries
WHERE merchant_id = ? AND service_date >= ? AND service_date <= ?
GROUP BY service_date
"""
_CHANGES_SQL = f"""
SELECT service_date, {", ".join(name for name, _ in _FOLD_COLUMNS[1:])} FROM log_entries
WHERE merchant_id = ? AND service_date >= ? AND service_date <= ?
  AND (starts IS NOT NULL OR ends IS NOT NULL OR arrives IS NOT NULL)
ORDER BY service_date, seq
"""


_INT64 = (-(2**63), 2**63 - 1)


def _columns(change: Change) -> Change:
    """A change as SQLite can store it: its integers are 64-bit, the engine's are not. A
    ts or `at` beyond 2**63 minutes is clamped: no slot is near either, so no answer moves.
    (engine.booked.change already keeps a size within 32 bits.)"""
    ts, starts, ends, unit, at, size, arrives = change
    low, high = _INT64
    if ts is not None:
        ts = min(max(ts, low), high)
    if at is not None:
        at = min(max(at, low), high)
    return ts, starts, ends, unit, at, size, arrives


UPGRADE_STEPS = 10  # progress lines of a long upgrade (one per tenth done)


def _add_fold_columns(conn: sqlite3.Connection, say: Callable[[str], None]) -> None:
    """Schema 2 or 3 -> 4: the fold's columns that are missing, and every fold column
    filled in again for the entries already stored (from operation, result and meta).
    `say` hears how far it is, a tenth at a time: a big file takes minutes."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(log_entries)")}
    for name, kind in _FOLD_COLUMNS:
        if name not in have:
            conn.execute(f"ALTER TABLE log_entries ADD COLUMN {name} {kind}")
    rows = conn.execute(
        "SELECT merchant_id, service_date, seq, operation, result, meta FROM log_entries"
    ).fetchall()
    assignments = ", ".join(f"{name} = ?" for name, _ in _FOLD_COLUMNS)
    step = max(1, -(-len(rows) // UPGRADE_STEPS))
    for first in range(0, len(rows), step):
        conn.executemany(
            f"UPDATE log_entries SET {assignments}"
            " WHERE merchant_id = ? AND service_date = ? AND seq = ?",
            [
                (*_stored_change(operation, result, meta), merchant, day, seq)
                for merchant, day, seq, operation, result, meta in rows[first : first + step]
            ],
        )
        done = min(len(rows), first + step)
        say(f"{done}/{len(rows)} log entries filled in ({done * 100 // len(rows)}%)")


def _stored_change(operation: str, result: str, meta: str) -> Change:
    """The change of an entry as stored (JSON text), as its columns hold it."""
    loaded = json.loads(meta)
    return _columns(
        change(
            json.loads(operation), json.loads(result), loaded if isinstance(loaded, dict) else None
        )
    )


def _dumps(value: JSON) -> str:
    # Sorted keys: the same value is always the same text, so stored rows compare and diff.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


# Records under a key prefix: a range on the primary key (scope, key), so an index seek,
# not a scan of every record of the scope; substr() checks the prefix exactly.
PREFIX_WHERE = "scope = ? AND key >= ? AND key < ? AND substr(key, 1, ?) = ?"
LAST_UNDER_PREFIX = (
    f"SELECT key, value FROM idempotency WHERE {PREFIX_WHERE} ORDER BY key DESC LIMIT 1"
)

# Every scope holding a record: one index seek per scope (a loose index scan), not a read of
# every record.
SCOPES_SQL = """
WITH RECURSIVE s(scope) AS (
    SELECT min(scope) FROM idempotency
    UNION ALL
    SELECT (SELECT min(scope) FROM idempotency WHERE scope > s.scope) FROM s
    WHERE s.scope IS NOT NULL
)
SELECT scope FROM s WHERE scope IS NOT NULL
"""


@dataclass
class _Job:
    """One append_all waiting for the group commit that writes it."""

    appends: Sequence[LogAppend]
    remember: Sequence[Remember]
    put: Sequence[Remember]
    outbox: Sequence[OutboxMessage]
    done: bool = False
    error: BaseException | None = None


class SQLiteStore:
    """A `LogStore` on one SQLite file, shared by threads and processes.

    Threads: a small pool of connections, one checked out per call. Not one connection per
    thread, because a thread-per-request server would leave one behind per dead thread and
    `close()` could not reach them; not one connection behind a lock, because every reader
    would then wait behind a writer's fsync. Processes: SQLite's own file locks.
    """

    def __init__(
        self,
        path: str | Path,
        busy_timeout: float = 5.0,
        *,
        on_upgrade: Callable[[str], None] | None = None,
    ) -> None:
        """`on_upgrade` hears, a line at a time, the progress of the upgrade of a file
        written by an older version (the command line prints it on stderr)."""
        self.path = Path(path)
        self._on_upgrade = on_upgrade or (lambda _line: None)
        self.busy_timeout = busy_timeout  # seconds a writer waits for the lock before giving up
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._group = threading.Condition()  # guards _queue and _writing (group commit)
        # One write transaction of this process at a time (see _transaction).
        self._writer = threading.Lock()
        # only reads: PRAGMA data_version, and the log's counter when that moved
        self._watch: sqlite3.Connection | None = None
        self._log_seen: tuple[int, int] | None = None  # (data_version, log_version) last read
        self._watch_lock = threading.Lock()
        self._queue: list[_Job] = []
        self._writing = False
        self._closed = False
        # This store's sender, known to other processes on the file by a lock it holds on
        # a file of that name for as long as it lives (see release_claims).
        self._sender = uuid.uuid4().hex
        self._sender_fd: int | None = None
        self._sender_lock = threading.Lock()
        try:
            self._create_schema()
        except BaseException:
            self.close()
            raise

    # -- connections ---------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        # isolation_level=None: we issue BEGIN IMMEDIATE / COMMIT ourselves. check_same_thread
        # off because a pooled connection moves between threads (never used by two at once).
        conn = sqlite3.connect(
            self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute("PRAGMA synchronous=FULL")  # per connection, not stored in the file
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise StoreError("store is closed")
            conn = self._idle.pop() if self._idle else None
        try:
            if conn is None:
                conn = self._connect()
            yield conn
        except sqlite3.Error as exc:
            raise translate(exc) from exc
        finally:
            if conn is not None:
                with self._lock:
                    keep = not self._closed and not conn.in_transaction
                    if keep:
                        self._idle.append(conn)
                if not keep:
                    conn.close()

    @contextmanager
    def _transaction(self, durable: bool = True) -> Iterator[sqlite3.Connection]:
        # IMMEDIATE takes the write lock up front (waiting up to busy_timeout). A deferred
        # transaction that read first could fail with BUSY_SNAPSHOT without waiting at all.
        # durable=False commits without an fsync (WAL stays consistent; a crash may lose the
        # transaction): only for bookkeeping whose loss is harmless, such as delivery marks.
        #
        # This process's writers take turns on a lock of their own first. SQLite's busy
        # handler polls a held write lock in sleeps of 1, 2, 5, 10... ms: a request thread
        # that met the outbox sender's short transaction waited milliseconds for a lock
        # freed in microseconds (receiver_bench: 4% of the bookings' BEGINs over 1 ms, up
        # to 10 ms, with the event loop stalled). A lock wakes its next holder at release.
        # Other processes still meet at SQLite's lock and its busy timeout.
        if not self._writer.acquire(timeout=self.busy_timeout):
            raise StoreUnavailable(
                f"database unavailable: this process's writers held it {self.busy_timeout} s"
            )
        try:
            with self._connection() as conn:
                if not durable:
                    conn.execute("PRAGMA synchronous=NORMAL")
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        yield conn
                    except BaseException:
                        if conn.in_transaction:  # some errors (disk full, I/O) rolled back
                            conn.execute("ROLLBACK")
                        raise
                    conn.execute("COMMIT")
                finally:
                    if not durable:
                        conn.execute("PRAGMA synchronous=FULL")
        finally:
            self._writer.release()

    def _create_schema(self) -> None:
        with self._connection() as conn:
            # Before anything is written (WAL mode is stored in the file): another program's
            # database is left exactly as it was.
            foreign = _foreign_tables(conn)
            if foreign:
                raise StoreError(
                    f"{self.path} is not a Host Stand database (it has tables"
                    f" {', '.join(foreign)}); nothing was changed: give --db a new file"
                )
            # Stored in the file: set once, every later connection (any process) gets WAL.
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode != "wal":
                raise StoreError(f"could not switch {self.path} to WAL (journal mode {mode})")
        with self._transaction() as conn:
            # Statement by statement: executescript would COMMIT our transaction first.
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
            if row[0] is not None and row[0] < 4:
                started = time.monotonic()

                def say(line: str) -> None:
                    self._on_upgrade(f"{self.path}: upgrading from schema {row[0]}: {line}")

                say(f"to schema {SCHEMA_VERSION}, once (the file is locked until it is done)")
                _add_fold_columns(conn, say)
                say(f"done in {time.monotonic() - started:.1f} s")
            # Added beside schema 4 (an older program ignores it): who holds a claim.
            outbox_columns = {c[1] for c in conn.execute("PRAGMA table_info(outbox)")}
            if "claimed_by" not in outbox_columns:
                conn.execute("ALTER TABLE outbox ADD COLUMN claimed_by TEXT")
            if row[0] is None:
                conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
            elif row[0] < SCHEMA_VERSION:  # the new tables were just created: say so
                conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
            elif row[0] > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} has schema {row[0]}: a newer version of hoststand wrote it,"
                    f" and this one reads schema {SCHEMA_VERSION} and older; run the newer"
                    " version"
                )

    # -- the log -------------------------------------------------------------------------

    def append(
        self,
        merchant_id: str,
        service_date: date,
        expected_seq: int,
        entries: Sequence[NewEntry],
        remember: Sequence[Remember] = (),
    ) -> list[LogEntry]:
        check_append(expected_seq, entries)
        self.append_all([LogAppend(merchant_id, service_date, expected_seq, entries)], remember)
        return [
            _entry(
                (
                    expected_seq + i,
                    _dumps(e.operation),
                    _dumps(e.result),
                    float(e.received_at),
                    _dumps(e.meta),
                )
            )
            for i, e in enumerate(entries)
        ]

    def append_all(
        self,
        appends: Sequence[LogAppend],
        remember: Sequence[Remember] = (),
        put: Sequence[Remember] = (),
        outbox: Sequence[OutboxMessage] = (),
    ) -> None:
        for one in appends:
            check_append(one.expected_seq, one.entries)
        job = _Job(appends, remember, put, outbox)
        # Group commit: concurrent appends of this process share one transaction (one fsync),
        # each in its own savepoint so one's conflict does not undo another's. The first
        # caller to find no commit under way writes everything queued; the others wait.
        with self._group:
            self._queue.append(job)
            while not job.done and self._writing:
                self._group.wait()
            if job.done:
                if job.error is not None:
                    raise job.error
                return
            self._writing = True
            batch, self._queue = self._queue, []
        try:
            self._commit(batch)
        finally:
            with self._group:
                self._writing = False
                self._group.notify_all()
        if job.error is not None:
            raise job.error

    def _commit(self, batch: list[_Job]) -> None:
        try:
            if len(batch) == 1:  # alone: its failure rolls back the transaction, no savepoint
                self._commit_one(batch[0])
                return
            with self._transaction() as conn:
                for job in batch:
                    conn.execute("SAVEPOINT job")
                    try:
                        self._write(conn, job)
                    except (StoreError, sqlite3.Error) as exc:
                        if not conn.in_transaction:
                            # Disk full or I/O error: SQLite rolled back the whole batch,
                            # the jobs written before this one too. All of them fail.
                            if isinstance(exc, sqlite3.Error):
                                raise translate(exc) from exc
                            raise
                        conn.execute("ROLLBACK TO job")
                        job.error = translate(exc) if isinstance(exc, sqlite3.Error) else exc
                    conn.execute("RELEASE job")
                if any(job.appends and job.error is None for job in batch):
                    conn.execute("UPDATE log_version SET n = n + 1")  # once for the batch
        except StoreError as exc:  # BEGIN or COMMIT failed: nothing of the batch was written
            for job in batch:
                if job.error is None:
                    # Each waiting thread raises its own exception object.
                    job.error = type(exc)(*exc.args)
                    job.error.__cause__ = exc.__cause__ or exc  # the driver error
        finally:
            with self._group:
                for job in batch:
                    job.done = True

    def _commit_one(self, job: _Job) -> None:
        """A batch of one job (a server answering on its event loop never has more): the
        job's own transaction, no savepoint. Its failure rolls the transaction back and is
        the job's error, as a failed BEGIN or COMMIT is (driver errors arrive translated)."""
        try:
            with self._transaction() as conn:
                self._write(conn, job)
                if job.appends:
                    conn.execute("UPDATE log_version SET n = n + 1")
        except StoreError as exc:
            job.error = exc

    def _write(self, conn: sqlite3.Connection, job: _Job) -> None:
        for scope, key, value in job.remember:
            stored = self._insert_or_get(conn, scope, key, _dumps(value))
            if stored is not None:
                raise DuplicateKey(scope, key, json.loads(stored))
        for one in job.appends:
            day = one.service_date.isoformat()
            # The key stops a writer at a taken seq; this stops one that would leave a gap.
            if one.expected_seq > 0 and not self._has_seq(
                conn, one.merchant_id, day, one.expected_seq - 1
            ):
                raise ConcurrencyConflict(
                    f"expected_seq {one.expected_seq} is past the end of {one.merchant_id} {day}"
                )
            conn.executemany(
                "INSERT INTO log_entries (merchant_id, service_date, seq, operation, result,"
                f" received_at, meta, {_FOLD_NAMES})"
                f" VALUES (?, ?, ?, ?, ?, ?, ?{', ?' * len(_FOLD_COLUMNS)})",
                [
                    (
                        one.merchant_id,
                        day,
                        one.expected_seq + i,
                        _dumps(e.operation),
                        _dumps(e.result),
                        float(e.received_at),
                        _dumps(e.meta),
                        *_columns(change(e.operation, e.result, e.meta)),
                    )
                    for i, e in enumerate(one.entries)
                ],
            )
        if job.put:
            conn.executemany(
                "INSERT INTO idempotency (scope, key, value) VALUES (?, ?, ?)"
                " ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value",
                [(scope, key, _dumps(value)) for scope, key, value in job.put],
            )
        for message in job.outbox:
            self._enqueue(conn, message)

    @staticmethod
    def _enqueue(conn: sqlite3.Connection, message: OutboxMessage) -> None:
        if message.merge:
            row = conn.execute(
                "SELECT 1 FROM outbox WHERE partner = ? AND kind = ? AND key = ?"
                " AND state = 'pending' AND claimed_at IS NULL",
                (message.partner, message.kind, message.key),
            ).fetchone()
            if row is not None:
                return  # an undelivered one for the same window is sent with fresh content
        conn.execute(
            "INSERT INTO outbox (partner, kind, key, payload, created_at, retry_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                message.partner,
                message.kind,
                message.key,
                _dumps(message.payload),
                message.created_at,
                message.not_before,
            ),
        )

    # -- the outbox and export records ---------------------------------------------------

    def pending(self, now: float, limit: int = 100, skip: Collection[str] = ()) -> list[OutboxItem]:
        """Due messages, oldest first, at most one per key (see `claim`).

        A message in back-off or being sent holds back the ones behind it with its key. A
        claim older than CLAIM_SECONDS is a sender that died: the message is due again."""
        with self._connection() as conn:
            rows = conn.execute(
                _pending_sql(len(skip)), (now, now - CLAIM_SECONDS, *skip, limit)
            ).fetchall()
        return [
            OutboxItem(id_, partner, kind, key, json.loads(payload), created, attempts)
            for id_, partner, kind, key, payload, created, attempts in rows
        ]

    def claim(self, message_ids: Sequence[int], now: float) -> list[int]:
        # One writer at a time (BEGIN IMMEDIATE): a message another sender claimed since
        # our pending() read is left to it.
        self._hold_sender_lock()
        claimed = []
        with self._transaction(durable=False) as conn:
            for message_id in message_ids:
                row = conn.execute(
                    "UPDATE outbox SET claimed_at = ?, claimed_by = ? WHERE id = ?"
                    " AND state = 'pending' AND (claimed_at IS NULL OR claimed_at <= ?)"
                    " RETURNING id",
                    (now, self._sender, message_id, now - CLAIM_SECONDS),
                ).fetchone()
                if row is not None:
                    claimed.append(int(row[0]))
        return claimed

    def release_claims(self) -> None:
        """Forget this store's claims and those of senders that are gone; a sender of
        another live process on the file keeps its own (it is sending them now: were they
        released, this one would send them again, and a change made meanwhile would be
        merged into a message whose content was read before it, and never told).

        A sender holds an flock on `<db>-senders/<its id>` while its process lives (the
        OS drops it when the process dies, however it dies): a claim whose holder's file
        can be locked, or is not there, is a dead sender's. Claims made before senders
        were named (claimed_by NULL) are released, as they all were before."""
        with self._transaction(durable=False) as conn:
            holders = [
                row[0]
                for row in conn.execute(
                    "SELECT DISTINCT claimed_by FROM outbox"
                    " WHERE state = 'pending' AND claimed_at IS NOT NULL"
                )
            ]
            for holder in holders:
                if holder is None or holder == self._sender or not self._sender_alive(holder):
                    conn.execute(
                        "UPDATE outbox SET claimed_at = NULL, claimed_by = NULL"
                        " WHERE state = 'pending' AND claimed_by IS ?",
                        (holder,),
                    )

    def _senders(self) -> Path:
        return self.path.with_name(f"{self.path.name}-senders")

    def _hold_sender_lock(self) -> None:
        """Take this sender's lock (once): other processes then know it is alive. The file
        is made under a temporary name (`.<id>.tmp`, which nobody else reads) and locked
        before it takes the sender's name: a file named as a sender is locked from the
        moment it exists while its process lives, so one another process can lock is a
        dead sender's, which it may remove (`_sender_alive`, `_tidy_senders`)."""
        with self._sender_lock:
            if self._sender_fd is not None:
                return
            senders = self._senders()
            for _attempt in range(100):
                senders.mkdir(exist_ok=True)
                making = senders / f".{self._sender}.tmp"
                try:
                    fd = os.open(making, os.O_RDWR | os.O_CREAT, 0o644)
                except FileNotFoundError:
                    continue  # another process's clean stop removed the empty directory
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    os.rename(making, senders / self._sender)
                except BaseException:
                    os.close(fd)
                    making.unlink(missing_ok=True)
                    raise
                self._sender_fd = fd
                return
            raise StoreUnavailable(f"{senders}: cannot keep a sender's lock file there")

    def _sender_alive(self, holder: str) -> bool:
        """Whether the sender `holder` still holds its lock (its process is running). An
        flock is per open file: a store of this process opening the file conflicts too."""
        if not holder.isalnum():
            return False  # not a name this store gives: nobody holds a lock on it
        path = self._senders() / holder
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # drops the lock taken, if it was
        path.unlink(missing_ok=True)  # a dead sender's: nobody will ask again
        return False

    def _tidy_senders(self) -> None:
        """At a clean stop: remove the lock files of senders that are gone (killed, so
        never removed their own), then the directory once it is empty. A live sender's
        file stays, and the directory with it (rmdir refuses one that is not empty); a
        sender starting meanwhile makes the directory again (`_hold_sender_lock`)."""
        senders = self._senders()
        try:
            names = os.listdir(senders)
        except OSError:
            return
        for name in names:
            self._sender_alive(name)  # unlinks a dead sender's file
        with suppress(OSError):
            senders.rmdir()

    def delivered(self, message_id: int, at: float) -> None:
        self.settle([(message_id, at)], [])

    def failed(self, message_id: int, retry_at: float | None, error: str) -> None:
        self.settle([], [(message_id, retry_at, error)])

    def settle(
        self,
        delivered: Sequence[tuple[int, float]],
        failed: Sequence[tuple[int, float | None, str]],
        moot: Sequence[tuple[int, float, str]] = (),
    ) -> None:
        # Not fsynced: a mark lost in a crash means one more send, which the partner
        # recognises by its message id; it must not cost the bookings' commits an fsync.
        with self._transaction(durable=False) as conn:
            conn.executemany(
                "UPDATE outbox SET state = 'delivered', delivered_at = ?, attempts = attempts + 1"
                " WHERE id = ?",
                [(at, message_id) for message_id, at in delivered],
            )
            conn.executemany(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ?, retry_at = ?,"
                " state = ?, claimed_at = NULL WHERE id = ?",
                [
                    (
                        error[:500],
                        retry_at or 0,
                        "pending" if retry_at is not None else "dead",
                        message_id,
                    )
                    for message_id, retry_at, error in failed
                ],
            )
            # A moot message's delivered_at is when it was made moot: retention keeps it
            # keep_days from then, as a delivered one from its delivery (prune_moot).
            conn.executemany(
                "UPDATE outbox SET state = 'moot', delivered_at = ?, last_error = ?,"
                " claimed_at = NULL WHERE id = ?",
                [(at, why[:500], message_id) for message_id, at, why in moot],
            )

    def outbox_stats(self, recent: int = 1000) -> JSON:
        with self._connection() as conn:
            counts = dict(
                conn.execute("SELECT state, count(*) FROM outbox GROUP BY state").fetchall()
            )
            lags = [
                row[0]
                for row in conn.execute(
                    "SELECT delivered_at - created_at FROM outbox WHERE state = 'delivered'"
                    " ORDER BY id DESC LIMIT ?",
                    (recent,),
                ).fetchall()
            ]
            oldest = conn.execute(
                "SELECT min(created_at) FROM outbox WHERE state = 'pending'"
            ).fetchone()[0]
        return {
            "pending": counts.get("pending", 0),
            "delivered": counts.get("delivered", 0),
            "dead": counts.get("dead", 0),
            "moot": counts.get("moot", 0),
            "oldest_pending_created_at": oldest,
            "recent_lags": sorted(lags),
        }

    def outbox_backlog(self) -> dict[str, Backlog]:
        with self._connection() as conn:
            rows = conn.execute(_BACKLOG_SQL).fetchall()
        return backlog_of(rows)

    def record_export(self, record: JSON) -> None:
        with self._transaction() as conn:
            conn.execute("INSERT INTO exports (record) VALUES (?)", (_dumps(record),))

    def exports(self, limit: int = 20) -> list[JSON]:
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT record FROM exports ORDER BY id DESC LIMIT ?", (limit,)
            ).fetchall()
        return [json.loads(row[0]) for row in rows]

    @staticmethod
    def _has_seq(conn: sqlite3.Connection, merchant_id: str, day: str, seq: int) -> bool:
        row = conn.execute(
            "SELECT 1 FROM log_entries WHERE merchant_id = ? AND service_date = ? AND seq = ?",
            (merchant_id, day, seq),
        ).fetchone()
        return row is not None

    def entries(
        self, merchant_id: str, service_date: date, after_seq: int = -1, limit: int | None = None
    ) -> list[LogEntry]:
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT seq, operation, result, received_at, meta FROM log_entries"
                " WHERE merchant_id = ? AND service_date = ? AND seq > ? ORDER BY seq LIMIT ?",
                (merchant_id, service_date.isoformat(), after_seq, -1 if limit is None else limit),
            ).fetchall()
        return [_entry(row) for row in rows]

    def operations(self, merchant_id: str, service_date: date) -> list[list[JSON]]:
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT operation FROM log_entries WHERE merchant_id = ? AND service_date = ?"
                " ORDER BY seq",
                (merchant_id, service_date.isoformat()),
            ).fetchall()
        return [json.loads(row[0]) for row in rows]

    def booked(self, merchant_id: str, first: date, last: date) -> dict[date, BookedDay]:
        args = (merchant_id, first.isoformat(), last.isoformat())
        with self._connection() as conn:
            conn.execute("BEGIN")  # both reads see the same commits
            try:
                last_ts = conn.execute(_LAST_TS_SQL, args).fetchall()
                changes = conn.execute(_CHANGES_SQL, args).fetchall()
            finally:
                conn.execute("COMMIT")
        days = fold_days(last_ts, changes)
        return {date.fromisoformat(d): day for d, day in days.items()}

    def version(self) -> int:
        # PRAGMA data_version on a connection that never writes changes whenever any other
        # connection, in this process or another, commits: a cheap "has anything changed".
        return self._watched(lambda watch: int(watch.execute("PRAGMA data_version").fetchone()[0]))

    def log_version(self) -> int:
        # The log's counter is read only when data_version says something was committed
        # (data_version first: a commit between the two reads is seen at the next call).
        def read(watch: sqlite3.Connection) -> int:
            seen = int(watch.execute("PRAGMA data_version").fetchone()[0])
            if self._log_seen is None or self._log_seen[0] != seen:
                row = watch.execute("SELECT n FROM log_version").fetchone()
                self._log_seen = (seen, int(row[0]))
            return self._log_seen[1]

        return self._watched(read)

    def _watched(self, read: Callable[[sqlite3.Connection], int]) -> int:
        """`read` on the connection that only watches (opened on first use), under its lock."""
        with self._watch_lock:
            if self._closed:
                raise StoreError("store is closed")
            if self._watch is None:
                self._watch = self._connect()
            try:
                return read(self._watch)
            except sqlite3.Error as exc:
                raise translate(exc) from exc

    def service_dates(self, merchant_id: str, since: date | None = None) -> list[date]:
        first = "" if since is None else since.isoformat()  # ISO dates sort as text
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT DISTINCT service_date FROM log_entries WHERE merchant_id = ?"
                " AND service_date >= ? ORDER BY service_date",
                (merchant_id, first),
            ).fetchall()
        return [date.fromisoformat(row[0]) for row in rows]

    # -- idempotency records -------------------------------------------------------------

    @staticmethod
    def _insert_or_get(conn: sqlite3.Connection, scope: str, key: str, text: str) -> str | None:
        """Store `text` unless the key exists; the text already stored, or None if inserted."""
        cursor = conn.execute(
            "INSERT INTO idempotency (scope, key, value) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (scope, key, text),
        )
        if cursor.rowcount == 1:
            return None
        row = conn.execute(
            "SELECT value FROM idempotency WHERE scope = ? AND key = ?", (scope, key)
        ).fetchone()
        return str(row[0])

    def remember(self, scope: str, key: str, value: JSON) -> JSON:
        text = _dumps(value)
        with self._transaction() as conn:
            stored = self._insert_or_get(conn, scope, key, text)
        return json.loads(stored if stored is not None else text)

    def recall(self, scope: str, key: str) -> JSON | None:
        with self._connection() as conn:
            row = conn.execute(
                "SELECT value FROM idempotency WHERE scope = ? AND key = ?", (scope, key)
            ).fetchone()
        return None if row is None else json.loads(row[0])

    def recall_prefix(self, scope: str, prefix: str) -> list[tuple[str, JSON]]:
        with self._connection() as conn:
            rows = conn.execute(
                f"SELECT key, value FROM idempotency WHERE {PREFIX_WHERE} ORDER BY key",
                prefix_args(scope, prefix),
            ).fetchall()
        return [(str(key), json.loads(value)) for key, value in rows]

    def recall_last(self, scope: str, prefix: str) -> tuple[str, JSON] | None:
        with self._connection() as conn:
            row = conn.execute(LAST_UNDER_PREFIX, prefix_args(scope, prefix)).fetchone()
        return None if row is None else (str(row[0]), json.loads(row[1]))

    def forget_range(self, scope: str, first: str, before: str) -> int:
        with self._transaction() as conn:
            cursor = conn.execute(
                "DELETE FROM idempotency WHERE scope = ? AND key >= ? AND key < ?",
                (scope, first, before),
            )
            return int(cursor.rowcount)

    # -- retention -----------------------------------------------------------------------

    def scopes(self) -> list[str]:
        with self._connection() as conn:
            rows = conn.execute(SCOPES_SQL).fetchall()
        return [str(row[0]) for row in rows]

    def records_page(self, scope: str, after: str | None, limit: int) -> list[tuple[str, JSON]]:
        # None: from the first key ("" included, which `key > ''` would leave out).
        since = "key >= ?" if after is None else "key > ?"
        with self._connection() as conn:
            rows = conn.execute(
                f"SELECT key, value FROM idempotency WHERE scope = ? AND {since}"
                " ORDER BY key LIMIT ?",
                (scope, after or "", limit),
            ).fetchall()
        return [(str(key), json.loads(value)) for key, value in rows]

    def forget(self, scope: str, records: Sequence[tuple[str, JSON]]) -> int:
        if not records:
            return 0
        # Each key only while it holds the value read (compared as JSON, not as text: a
        # record written otherwise than by _dumps is the same record). One writer at a time:
        # nothing changes between the read and the delete.
        read = dict(records)
        with self._transaction() as conn:
            same = [
                (scope, key)
                for key, value in conn.execute(
                    "SELECT key, value FROM idempotency WHERE scope = ? AND key IN"
                    f" ({', '.join('?' * len(read))})",
                    (scope, *read),
                ).fetchall()
                if json.loads(value) == read[key]
            ]
            cursor = conn.executemany("DELETE FROM idempotency WHERE scope = ? AND key = ?", same)
            return int(cursor.rowcount)

    def prune_delivered(self, before: float, limit: int) -> int:
        with self._transaction(durable=False) as conn:
            cursor = conn.execute(
                "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE state = 'delivered'"
                " AND delivered_at < ? ORDER BY id LIMIT ?)",
                (before, limit),
            )
            return int(cursor.rowcount)

    def prune_moot(self, before: float, limit: int) -> int:
        # One made moot before delivered_at was noted for it is dated by its creation.
        with self._transaction(durable=False) as conn:
            cursor = conn.execute(
                "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE state = 'moot'"
                " AND coalesce(delivered_at, created_at) < ? ORDER BY id LIMIT ?)",
                (before, limit),
            )
            return int(cursor.rowcount)

    def prune_exports(self, before: float, keep: int, limit: int) -> int:
        with self._transaction(durable=False) as conn:
            cursor = conn.execute(
                "DELETE FROM exports WHERE id IN (SELECT id FROM exports"
                " WHERE id < (SELECT coalesce(min(id), 0) FROM"
                " (SELECT id FROM exports ORDER BY id DESC LIMIT ?))"
                " AND json_extract(record, '$.finished_at') < ? ORDER BY id LIMIT ?)",
                (keep, before, limit),
            )
            return int(cursor.rowcount)

    # -- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        """Close every idle connection; one still in use is closed when its call ends."""
        with self._watch_lock:
            if self._watch is not None:
                self._watch.close()
                self._watch = None
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        with self._sender_lock:
            if self._sender_fd is not None:
                # Its claims, if any are left, are a dead sender's from now on.
                (self._senders() / self._sender).unlink(missing_ok=True)
                os.close(self._sender_fd)
                self._sender_fd = None
                self._tidy_senders()  # nothing of the senders' left beside the database

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _entry(row: Sequence[object]) -> LogEntry:
    seq, operation, result, received_at, meta = row
    assert isinstance(seq, int) and isinstance(received_at, float)
    assert isinstance(operation, str) and isinstance(result, str) and isinstance(meta, str)
    return LogEntry(seq, json.loads(operation), json.loads(result), received_at, json.loads(meta))
