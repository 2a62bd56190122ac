"""The operation log, idempotency records and outbox in PostgreSQL (many receivers, many
restaurants), behind the same LogStore contract as the SQLite file.

The primary key (merchant_id, service_date, seq) is what stops a second writer, in any
process; driver errors leave as the store's errors (`translate`). A transaction that lost a
deadlock or a serialization check wrote nothing and is run again.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import date
from types import TracebackType
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from engine.booked import BookedDay, fold_days
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
    StoreUnreachable,
    StoreUnwritable,
    backlog_of,
    check_append,
    prefix_args,
)
from store.postgres_schema import (
    COMMIT_SHARDS,
    FOLD_NAMES,
    NewerSchema,
    fold_values,
    migrate,
)

CLAIM_SECONDS = 120.0  # a sender holding a message longer than this has died
RETRIES = 5  # runs of a transaction that lost a deadlock or a serialization check
Conn = psycopg.Connection[Any]
T = TypeVar("T")

# outbox.pending: the due messages that are first of their key among the pending ones, in
# one query (outbox_key below each row's id), not every pending row read each round. A fresh
# claim holds unless its sender's session is gone (pg_stat_activity has no such backend).
_PENDING_SQL = """
SELECT id, partner, kind, key, payload, created_at, attempts FROM outbox AS o
WHERE state = 'pending' AND retry_at <= %s
  AND (
    claimed_at IS NULL OR claimed_at <= %s
    OR (claimed_by IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a WHERE a.pid = o.claimed_by))
  )
  AND NOT EXISTS (
    SELECT 1 FROM outbox AS e
    WHERE e.partner = o.partner AND e.kind = o.kind AND e.key = o.key
      AND e.state = 'pending' AND e.id < o.id
  )
  AND NOT (partner = ANY(%s))
ORDER BY id LIMIT %s
"""

# SQLSTATE classes: 08 connection, 53 insufficient resources, 57 operator intervention
# (shutdown, cancel), 58 system error; 55P03 lock_not_available (lock_timeout).
_UNAVAILABLE_CLASSES = ("08", "53", "57", "58")
_RETRY = ("40001", "40P01")  # serialization_failure, deadlock_detected
# The connection is gone, not waiting (08 connection_exception; 57P01-03 admin_shutdown,
# crash_shutdown, cannot_connect_now: the database restarting): said unreachable. Said
# 'busy', it sent the operator of a restarted database to look for locks.
_GONE = ("57P01", "57P02", "57P03")
# disk_full, io_error: the server's disk cannot be written; read_only_sql_transaction: the
# database is read-only (a failover onto a standby, a provider's full database set so), a
# write refused as a whole, as on a full disk: retry (it was a 500, taken for a bug).
_UNWRITABLE = ("53100", "58030", "25006")
_KEY_DETAIL = re.compile(r"Key \(scope, key\)=\((?P<scope>.*?), (?P<key>.*)\) already exists")


# outbox_backlog: pending and dead messages per partner (the delivered ones are not read).
_BACKLOG_SQL = (
    "SELECT partner, state, count(*), min(created_at) FROM outbox"
    " WHERE state IN ('pending', 'dead') GROUP BY partner, state"
)


def translate(exc: psycopg.Error) -> StoreError:
    """The project's error for a driver error (raise it `from exc`)."""
    state = exc.sqlstate or ""
    if isinstance(exc, psycopg.errors.UniqueViolation):
        constraint = exc.diag.constraint_name
        if constraint == "log_entries_pkey":
            return ConcurrencyConflict(f"another writer appended first: {exc}")
        if constraint == "idempotency_pkey":
            # Not reached through append/remember, which read the stored value instead.
            found = _KEY_DETAIL.match(exc.diag.message_detail or "")
            scope, key = (found["scope"], found["key"]) if found else ("", "")
            return DuplicateKey(scope, key, None)
    if isinstance(exc, PoolClosed):
        return StoreError("store is closed")
    if state in _UNWRITABLE:
        return StoreUnwritable(f"the database cannot be written: {exc}")
    if isinstance(exc, PoolTimeout) or state in _RETRY or state == "55P03":
        return StoreUnavailable(f"database unavailable: {exc}")
    if state in _GONE or state[:2] == "08":
        return StoreUnreachable(f"the database is unreachable: {exc}")
    if state[:2] in _UNAVAILABLE_CLASSES:
        return StoreUnavailable(f"database unavailable: {exc}")
    if isinstance(exc, psycopg.OperationalError) and not state:  # the client lost the server
        return StoreUnreachable(f"the database is unreachable: {exc}")
    return StoreError(f"{type(exc).__name__}: {exc}")


def _dumps(value: JSON) -> str:
    # Sorted keys: the same value is always the same text, as in the SQLite store.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


_INSERT_ENTRY = (
    "INSERT INTO log_entries (merchant_id, service_date, seq, operation, result, received_at,"
    f" meta, {', '.join(FOLD_NAMES)})"
    f" VALUES (%s, %s, %s, %s, %s, %s, %s, {', '.join(['%s'] * len(FOLD_NAMES))})"
).encode()
_BUMP = (
    b"UPDATE commits SET n = n + 1 WHERE shard = pg_backend_pid() % " + str(COMMIT_SHARDS).encode()
)
# engine.booked.fold over the stored changes, in one snapshot: each day's last valid ts, then
# the reservations started or ended, in log order (every fold column but the ts).
_LAST_TS_SQL = b"""
SELECT service_date, MAX(fold_ts) FROM log_entries
WHERE merchant_id = %s AND service_date >= %s AND service_date <= %s
GROUP BY service_date
"""
_CHANGES_SQL = f"""
SELECT service_date, {", ".join(FOLD_NAMES[1:])} FROM log_entries
WHERE merchant_id = %s AND service_date >= %s AND service_date <= %s
  AND (starts IS NOT NULL OR ends IS NOT NULL OR arrives IS NOT NULL)
ORDER BY service_date, seq
""".encode()


# Records under a key prefix: a range on the primary key (byte order, "C"), then the
# prefix checked exactly.
PREFIX_WHERE = "scope = %s AND key >= %s AND key < %s AND left(key, %s) = %s"
LAST_UNDER_PREFIX = (
    f"SELECT key, value FROM idempotency WHERE {PREFIX_WHERE} ORDER BY key DESC LIMIT 1"
)

# Every scope holding a record: one index seek per scope (a loose index scan), not a read of
# every record.
SCOPES_SQL = b"""
WITH RECURSIVE s(scope) AS (
    SELECT min(scope) FROM idempotency
    UNION ALL
    SELECT (SELECT min(scope) FROM idempotency WHERE scope > s.scope) FROM s
    WHERE s.scope IS NOT NULL
)
SELECT scope FROM s WHERE scope IS NOT NULL
"""


class PostgresStore:
    """A `LogStore` on one PostgreSQL database (its schema is the URL's search_path).

    Threads share a pool of connections, one checked out per call; processes share the
    server. Appends are not batched as in SQLite: the server commits them side by side.
    """

    def __init__(
        self,
        url: str,
        *,
        max_connections: int = 10,
        timeout: float = 10.0,
        lock_timeout: float = 5.0,
        on_upgrade: Callable[[str], None] | None = None,
    ) -> None:
        """`on_upgrade` hears of the steps of an upgrade of a database written by an older
        version (the command line prints them on stderr)."""
        self.url = url
        self.timeout = timeout  # seconds a call waits for a connection, or to connect
        self._closed = False
        self._session_lock = threading.Lock()
        self._session: Conn | None = None  # the outbox sender's identity (claimed_by)
        ms = round(lock_timeout * 1000)  # a writer waits this long for a row lock
        self._connect_args: dict[str, Any] = {
            "autocommit": True,  # transactions are explicit (conn.transaction())
            "connect_timeout": max(1, round(timeout)),
            # Added to the URL's own options (a test's search_path, say), not in their place.
            "options": f"{conninfo_to_dict(url).get('options') or ''} -c lock_timeout={ms}",
        }
        try:
            with psycopg.connect(url, **self._connect_args) as conn, conn.transaction():
                migrate(conn, on_upgrade)
        except NewerSchema as exc:
            raise StoreError(str(exc)) from exc
        except psycopg.Error as exc:
            raise translate(exc) from exc
        # Set when a pooled connection was lost, cleared when the pool connects again: in
        # between, each call connects on its own (see `_connection`).
        self._lost = False
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            kwargs=self._connect_args,
            timeout=timeout,
            open=True,
            name="hoststand",
            configure=self._pool_connected,
        )

    # -- connections and transactions ---------------------------------------------------

    def _pool_connected(self, _conn: Conn) -> None:
        self._lost = False  # the server accepts connections again: back to the pool

    @contextmanager
    def _connection(self) -> Iterator[Conn]:
        """A pooled connection; or, after one was lost (the server went away), a connection
        of this call's own until the pool has connected again. A server that refuses
        connections (down, restarting) is then StoreUnreachable at once: the pool would
        make the call wait `timeout` seconds for a connection it cannot make, and say busy.
        Only a pool that is merely exhausted keeps callers waiting."""
        if self._closed:
            raise StoreError("store is closed")
        if self._lost:
            with self._own_connection() as conn:
                yield conn
            return
        pooled: Conn | None = None
        try:
            with self._pool.connection() as pooled:
                yield pooled
        except psycopg.Error as exc:
            if pooled is not None and pooled.closed:
                self._lost = True
            raise translate(exc) from exc

    @contextmanager
    def _own_connection(self) -> Iterator[Conn]:
        try:
            conn = psycopg.connect(self.url, **self._connect_args)
        except psycopg.Error as exc:
            raise StoreUnreachable(f"the database is unreachable: {exc}") from exc
        # The server accepts connections again: the next call goes back to the pool. Not
        # only once the pool says it has connected: after an outage longer than its
        # reconnect_timeout it has stopped trying, and connects again only when asked.
        # Its idle connections from before the outage are checked first (one round trip
        # each, once): each broken one would otherwise fail a call of its own.
        if self._lost:
            with contextlib.suppress(psycopg.Error):
                self._pool.check()
            self._lost = False
        try:
            with conn:
                yield conn
        except psycopg.Error as exc:
            raise translate(exc) from exc

    def _transact(self, work: Callable[[Conn], T], durable: bool = True) -> T:
        """`work` in one transaction that bumps the commit counter; run again (at most
        RETRIES times) when the server aborted it for a deadlock or a serialization check.
        durable=False commits without waiting for the WAL flush: only for bookkeeping whose
        loss is harmless, such as delivery marks (a lost mark is one more send)."""
        for attempt in range(RETRIES):
            try:
                with self._connection() as conn, conn.transaction():
                    if not durable:
                        conn.execute("SET LOCAL synchronous_commit = off")
                    done = work(conn)
                    conn.execute(_BUMP)  # last: the row lock is held only for the commit
                    return done
            except StoreUnavailable as exc:
                cause = exc.__cause__
                state = cause.sqlstate if isinstance(cause, psycopg.Error) else None
                if state not in _RETRY or attempt + 1 == RETRIES:
                    raise
            time.sleep(random.uniform(0, 0.01 * 2**attempt))  # jitter: retries spread out
        raise AssertionError("unreachable")

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
            LogEntry(
                expected_seq + i,
                json.loads(_dumps(e.operation)),
                json.loads(_dumps(e.result)),
                float(e.received_at),
                json.loads(_dumps(e.meta)),
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
        self._transact(lambda conn: self._write(conn, appends, remember, put, outbox))

    def _write(
        self,
        conn: Conn,
        appends: Sequence[LogAppend],
        remember: Sequence[Remember],
        put: Sequence[Remember],
        outbox: Sequence[OutboxMessage],
    ) -> None:
        # Rows are locked in one global order (keys, then logs, each sorted) so two
        # transactions never wait on each other in a circle.
        for scope, key, value in sorted(remember, key=lambda r: (r[0], r[1])):
            stored = self._insert_or_get(conn, scope, key, _dumps(value))
            if stored is not None:
                raise DuplicateKey(scope, key, json.loads(stored))
        rows = []
        for one in sorted(appends, key=lambda a: (a.merchant_id, a.service_date)):
            # The key stops a writer at a taken seq; this stops one that would leave a gap.
            if one.expected_seq > 0 and not self._has_seq(
                conn, one.merchant_id, one.service_date, one.expected_seq - 1
            ):
                raise ConcurrencyConflict(
                    f"expected_seq {one.expected_seq} is past the end of {one.merchant_id}"
                    f" {one.service_date.isoformat()}"
                )
            rows += [
                (
                    one.merchant_id,
                    one.service_date,
                    one.expected_seq + i,
                    _dumps(e.operation),
                    _dumps(e.result),
                    float(e.received_at),
                    _dumps(e.meta),
                    *fold_values(e.operation, e.result, e.meta),
                )
                for i, e in enumerate(one.entries)
            ]
        with conn.cursor() as cursor:
            if rows:
                cursor.executemany(_INSERT_ENTRY, rows)
            if put:
                cursor.executemany(
                    "INSERT INTO idempotency (scope, key, value) VALUES (%s, %s, %s)"
                    " ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value",
                    [(scope, key, _dumps(value)) for scope, key, value in put],
                )
        for message in outbox:
            self._enqueue(conn, message)

    @staticmethod
    def _enqueue(conn: Conn, message: OutboxMessage) -> None:
        if message.merge:
            row = conn.execute(
                "SELECT 1 FROM outbox WHERE partner = %s AND kind = %s AND key = %s"
                " AND state = 'pending' AND claimed_at IS NULL LIMIT 1",
                (message.partner, message.kind, message.key),
            ).fetchone()
            if row is not None:
                return  # an undelivered one for the same window is sent with fresh content
        conn.execute(
            "INSERT INTO outbox (partner, kind, key, payload, created_at, retry_at)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            (
                message.partner,
                message.kind,
                message.key,
                _dumps(message.payload),
                message.created_at,
                message.not_before,
            ),
        )

    @staticmethod
    def _has_seq(conn: Conn, merchant_id: str, day: date, seq: int) -> bool:
        row = conn.execute(
            "SELECT 1 FROM log_entries WHERE merchant_id = %s AND service_date = %s AND seq = %s",
            (merchant_id, day, seq),
        ).fetchone()
        return row is not None

    def entries(
        self, merchant_id: str, service_date: date, after_seq: int = -1, limit: int | None = None
    ) -> list[LogEntry]:
        with self._connection() as conn:
            rows = conn.execute(  # LIMIT NULL: no limit
                "SELECT seq, operation, result, received_at, meta FROM log_entries"
                " WHERE merchant_id = %s AND service_date = %s AND seq > %s ORDER BY seq LIMIT %s",
                (merchant_id, service_date, after_seq, limit),
            ).fetchall()
        return [
            LogEntry(seq, json.loads(op), json.loads(result), received, json.loads(meta))
            for seq, op, result, received, meta in rows
        ]

    def operations(self, merchant_id: str, service_date: date) -> list[list[JSON]]:
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT operation FROM log_entries WHERE merchant_id = %s AND service_date = %s"
                " ORDER BY seq",
                (merchant_id, service_date),
            ).fetchall()
        return [json.loads(row[0]) for row in rows]

    def booked(self, merchant_id: str, first: date, last: date) -> dict[date, BookedDay]:
        args = (merchant_id, first, last)
        with self._connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            last_ts = conn.execute(_LAST_TS_SQL, args).fetchall()
            changes = conn.execute(_CHANGES_SQL, args).fetchall()
        return fold_days(last_ts, changes)

    def version(self) -> int:
        with self._connection() as conn:
            row = conn.execute("SELECT sum(n) FROM commits").fetchone()
        return int(row[0]) if row is not None and row[0] is not None else 0

    def log_version(self) -> int:
        # Every write transaction moves the commit counter: more often than the logs change,
        # as the interface allows (each reader's check is one query either way).
        return self.version()

    def service_dates(self, merchant_id: str, since: date | None = None) -> list[date]:
        with self._connection() as conn:
            rows = conn.execute(  # a range of the primary key's index: older days unread
                "SELECT DISTINCT service_date FROM log_entries WHERE merchant_id = %s"
                " AND service_date >= %s ORDER BY service_date",
                (merchant_id, since or date.min),
            ).fetchall()
        return [row[0] for row in rows]

    # -- idempotency records -------------------------------------------------------------

    @staticmethod
    def _insert_or_get(conn: Conn, scope: str, key: str, text: str) -> str | None:
        """Store `text` unless the key exists; the text already stored, or None if inserted.
        A concurrent insert of the key makes this one wait for its commit, then read it.
        A record the retention (store.retention) removes between the insert and the read
        is gone: the insert is tried again, and now stores `text`."""
        for _attempt in range(3):
            inserted = conn.execute(
                "INSERT INTO idempotency (scope, key, value) VALUES (%s, %s, %s)"
                " ON CONFLICT DO NOTHING RETURNING 1",
                (scope, key, text),
            ).fetchone()
            if inserted is not None:
                return None
            row = conn.execute(
                "SELECT value FROM idempotency WHERE scope = %s AND key = %s", (scope, key)
            ).fetchone()
            if row is not None:
                return str(row[0])
        raise StoreError(f"key {key!r} of {scope!r} vanished")

    def remember(self, scope: str, key: str, value: JSON) -> JSON:
        text = _dumps(value)
        stored = self._transact(lambda conn: self._insert_or_get(conn, scope, key, text))
        return json.loads(stored if stored is not None else text)

    def recall(self, scope: str, key: str) -> JSON | None:
        with self._connection() as conn:
            row = conn.execute(
                "SELECT value FROM idempotency WHERE scope = %s AND key = %s", (scope, key)
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
        def delete(conn: Any) -> int:
            cursor = conn.execute(
                "DELETE FROM idempotency WHERE scope = %s AND key >= %s AND key < %s",
                (scope, first, before),
            )
            return int(cursor.rowcount)

        return self._transact(delete)

    # -- the outbox and export records ---------------------------------------------------

    def pending(self, now: float, limit: int = 100, skip: Collection[str] = ()) -> list[OutboxItem]:
        """Due messages, oldest first, at most one per key (see `claim`): a message in
        back-off or being sent holds back the ones behind it with its key. A claim is void
        once CLAIM_SECONDS old or once its sender's session has ended (a process killed
        mid-send): the live processes send the message again at once."""
        with self._connection() as conn:
            rows = conn.execute(
                _PENDING_SQL, (now, now - CLAIM_SECONDS, list(skip), limit)
            ).fetchall()
        return [
            OutboxItem(id_, partner, kind, key, json.loads(payload), created, attempts)
            for id_, partner, kind, key, payload, created, attempts in rows
        ]

    def _as_sender(self, work: Callable[[Conn], T]) -> T:
        """`work` in one transaction on this store's own session, whose backend pid is the
        sender's identity in claims (`pg_backend_pid()` in the SQL, never a pid read
        earlier): a claim is made by a live session or not at all. A session the server
        ended (a PostgreSQL restart, pg_terminate_backend) fails its next query; it is
        replaced by a new one, with a new pid, and the work done there. Keeping the dead
        session's pid would make every claim void for the other processes, so each would
        send every message too."""
        with self._session_lock:
            for attempt in range(2):
                if self._closed:
                    raise StoreError("store is closed")
                if self._session is None or self._session.closed:
                    try:
                        self._session = psycopg.connect(self.url, **self._connect_args)
                    except psycopg.Error as exc:
                        raise StoreUnreachable(f"the database is unreachable: {exc}") from exc
                session = self._session
                try:
                    with session.transaction():
                        # Not durable: a claim lost to a crash is a void one (sent again).
                        session.execute("SET LOCAL synchronous_commit = off")
                        done = work(session)
                        session.execute(_BUMP)
                        return done
                except psycopg.Error as exc:
                    if session.closed and attempt == 0:
                        continue  # the server ended the session before this query: anew
                    raise translate(exc) from exc
        raise AssertionError("unreachable")

    def claim(self, message_ids: Sequence[int], now: float) -> list[int]:
        """Claim the messages no live sender holds (a claim whose sender's session has ended
        is void); the ids claimed. Rows another process is claiming this instant are skipped
        (SKIP LOCKED): theirs to send, not ours."""
        if not message_ids:
            return []

        def work(conn: Conn) -> list[int]:
            rows = conn.execute(
                "UPDATE outbox SET claimed_at = %s, claimed_by = pg_backend_pid() WHERE id IN ("
                " SELECT id FROM outbox WHERE id = ANY(%s) AND state = 'pending'"
                " AND (claimed_at IS NULL OR claimed_at <= %s OR claimed_by NOT IN"
                " (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL))"
                " ORDER BY id FOR UPDATE SKIP LOCKED) RETURNING id",
                (now, list(message_ids), now - CLAIM_SECONDS),
            ).fetchall()
            return sorted(int(row[0]) for row in rows)

        return self._as_sender(work)

    def release_claims(self) -> None:
        """Forget this store's claims and those of senders whose session has ended;
        another live process keeps its own (it is sending them now)."""
        self._as_sender(
            lambda conn: conn.execute(
                "UPDATE outbox SET claimed_at = NULL, claimed_by = NULL"
                " WHERE state = 'pending' AND claimed_at IS NOT NULL AND (claimed_by IS NULL"
                " OR claimed_by = pg_backend_pid() OR claimed_by NOT IN (SELECT pid FROM"
                " pg_stat_activity WHERE pid IS NOT NULL))"
            )
        )

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
        def work(conn: Conn) -> None:
            with conn.cursor() as cursor:
                if delivered:
                    cursor.executemany(
                        "UPDATE outbox SET state = 'delivered', delivered_at = %s,"
                        " attempts = attempts + 1 WHERE id = %s",
                        [(at, message_id) for message_id, at in delivered],
                    )
                if failed:
                    cursor.executemany(
                        "UPDATE outbox SET attempts = attempts + 1, last_error = %s,"
                        " retry_at = %s, state = %s, claimed_at = NULL, claimed_by = NULL"
                        " WHERE id = %s",
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
                if moot:
                    # A moot message's delivered_at is when it was made moot: retention keeps
                    # it keep_days from then, as a delivered one from its delivery (prune_moot).
                    cursor.executemany(
                        "UPDATE outbox SET state = 'moot', delivered_at = %s, last_error = %s,"
                        " claimed_at = NULL, claimed_by = NULL WHERE id = %s",
                        [(at, why[:500], message_id) for message_id, at, why in moot],
                    )

        self._transact(work, durable=False)

    def outbox_stats(self, recent: int = 1000) -> JSON:
        with self._connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            counts = dict(
                conn.execute("SELECT state, count(*) FROM outbox GROUP BY state").fetchall()
            )
            lags = [
                row[0]
                for row in conn.execute(
                    "SELECT delivered_at - created_at FROM outbox WHERE state = 'delivered'"
                    " ORDER BY id DESC LIMIT %s",
                    (recent,),
                ).fetchall()
            ]
            oldest_row = conn.execute(
                "SELECT min(created_at) FROM outbox WHERE state = 'pending'"
            ).fetchone()
        return {
            "pending": counts.get("pending", 0),
            "delivered": counts.get("delivered", 0),
            "dead": counts.get("dead", 0),
            "moot": counts.get("moot", 0),
            "oldest_pending_created_at": oldest_row[0] if oldest_row else None,
            "recent_lags": sorted(lags),
        }

    def outbox_backlog(self) -> dict[str, Backlog]:
        with self._connection() as conn:
            rows = conn.execute(_BACKLOG_SQL).fetchall()
        return backlog_of(rows)

    def record_export(self, record: JSON) -> None:
        self._transact(
            lambda conn: conn.execute("INSERT INTO exports (record) VALUES (%s)", (_dumps(record),))
        )

    def exports(self, limit: int = 20) -> list[JSON]:
        with self._connection() as conn:
            rows = conn.execute(
                "SELECT record FROM exports ORDER BY id DESC LIMIT %s", (limit,)
            ).fetchall()
        return [json.loads(row[0]) for row in rows]

    # -- retention -----------------------------------------------------------------------

    def scopes(self) -> list[str]:
        with self._connection() as conn:
            rows = conn.execute(SCOPES_SQL).fetchall()
        return [str(row[0]) for row in rows]

    def records_page(self, scope: str, after: str | None, limit: int) -> list[tuple[str, JSON]]:
        # None: from the first key ("" included, which `key > ''` would leave out).
        since = "key >= %s" if after is None else "key > %s"
        with self._connection() as conn:
            rows = conn.execute(
                f"SELECT key, value FROM idempotency WHERE scope = %s AND {since}"
                " ORDER BY key LIMIT %s".encode(),
                (scope, after or "", limit),
            ).fetchall()
        return [(str(key), json.loads(value)) for key, value in rows]

    def forget(self, scope: str, records: Sequence[tuple[str, JSON]]) -> int:
        if not records:
            return 0
        # Each key only while it holds the value read (compared as JSON, not as text: a
        # record written otherwise than by _dumps is the same record).
        keys = [key for key, _value in records]
        values = [_dumps(value) for _key, value in records]

        def delete(conn: Conn) -> int:
            cursor = conn.execute(
                "DELETE FROM idempotency AS i USING unnest(%s::text[], %s::text[]) AS r(key, value)"
                " WHERE i.scope = %s AND i.key = r.key AND i.value::jsonb = r.value::jsonb",
                (keys, values, scope),
            )
            return int(cursor.rowcount)

        return self._transact(delete)

    def prune_delivered(self, before: float, limit: int) -> int:
        def delete(conn: Conn) -> int:
            cursor = conn.execute(
                "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE state = 'delivered'"
                " AND delivered_at < %s ORDER BY id LIMIT %s)",
                (before, limit),
            )
            return int(cursor.rowcount)

        return self._transact(delete, durable=False)

    def prune_moot(self, before: float, limit: int) -> int:
        # One made moot before delivered_at was noted for it is dated by its creation.
        def delete(conn: Conn) -> int:
            cursor = conn.execute(
                "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE state = 'moot'"
                " AND coalesce(delivered_at, created_at) < %s ORDER BY id LIMIT %s)",
                (before, limit),
            )
            return int(cursor.rowcount)

        return self._transact(delete, durable=False)

    def prune_exports(self, before: float, keep: int, limit: int) -> int:
        def delete(conn: Conn) -> int:
            cursor = conn.execute(
                "DELETE FROM exports WHERE id IN (SELECT id FROM exports"
                " WHERE id < (SELECT coalesce(min(id), 0) FROM"
                " (SELECT id FROM exports ORDER BY id DESC LIMIT %s) AS newest)"
                " AND (record::json->>'finished_at')::double precision < %s"
                " ORDER BY id LIMIT %s)",
                (keep, before, limit),
            )
            return int(cursor.rowcount)

        return self._transact(delete, durable=False)

    # -- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the pool (calls still running finish first) and the sender's session."""
        with self._session_lock:
            if self._closed:
                return
            self._closed = True
            if self._session is not None:
                self._session.close()
                self._session = None
        self._pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
