"""The PostgreSQL store's tables, created and migrated by the program (table schema_version).

The fold's columns are declared once, in FOLD_COLUMNS, in the order of engine.booked.Change:
the INSERT, the migration that fills them for old entries and the booked read all derive from
that list, so a wider Change is one line here plus one migration.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from engine.booked import Change, change
from store.log import JSON

# (column, type) in the order of engine.booked.Change:
# (ts, starts, ends, unit, at, size, arrives).
FOLD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("fold_ts", "BIGINT"),  # ts of an operation of valid shape
    ("starts", "TEXT"),  # the reservation a successful reserve starts
    ("ends", "TEXT"),  # the reservation a successful cancel, check_in or seat ends
    ("unit", "TEXT"),
    ("at", "BIGINT"),
    ("size", "BIGINT"),  # the party size a reserve's meta gave
    ("arrives", "TEXT"),  # the reservation a successful arrive marks
)
FOLD_NAMES = tuple(name for name, _ in FOLD_COLUMNS)
COMMIT_SHARDS = 16  # rows of the commit counter: writers on different rows never wait

_BIGINT = (-(2**63), 2**63 - 1)


def fold_values(operation: JSON, result: JSON, meta: JSON) -> Change:
    """An entry's engine.booked.change as PostgreSQL stores it. `meta` is what the fold's next
    version reads too. Integers are 64-bit here and not in the engine: a ts or `at` beyond
    2**63 minutes is clamped (no slot is near either, so no answer moves)."""
    values = change(operation, result, meta if isinstance(meta, dict) else None)
    clamped: list[Any] = []
    for value, (_, kind) in zip(values, FOLD_COLUMNS, strict=True):
        if kind == "BIGINT" and isinstance(value, int):
            value = min(max(value, _BIGINT[0]), _BIGINT[1])
        clamped.append(value)
    return tuple(clamped)  # as many as Change has: zip(strict) checked it


BASE = """
CREATE TABLE log_entries (
    merchant_id  TEXT NOT NULL,
    service_date DATE NOT NULL,
    seq          INTEGER NOT NULL CHECK (seq >= 0),
    operation    TEXT NOT NULL,  -- JSON with sorted keys, the same text SQLite keeps
    result       TEXT NOT NULL,
    received_at  DOUBLE PRECISION NOT NULL,
    meta         TEXT NOT NULL,
    CONSTRAINT log_entries_pkey PRIMARY KEY (merchant_id, service_date, seq)
);
CREATE TABLE idempotency (
    scope TEXT NOT NULL,
    key   TEXT COLLATE "C" NOT NULL,  -- byte order, as SQLite's: prefixes are key ranges
    value TEXT NOT NULL,
    CONSTRAINT idempotency_pkey PRIMARY KEY (scope, key)
);
CREATE TABLE outbox (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- delivery order
    partner      TEXT NOT NULL,
    kind         TEXT NOT NULL,
    key          TEXT NOT NULL,
    payload      TEXT NOT NULL,
    created_at   DOUBLE PRECISION NOT NULL,
    state        TEXT NOT NULL DEFAULT 'pending',  -- pending, delivered, dead, moot
    attempts     INTEGER NOT NULL DEFAULT 0,
    retry_at     DOUBLE PRECISION NOT NULL DEFAULT 0,
    claimed_at   DOUBLE PRECISION,  -- handed to a sender: a new change must not merge into it
    claimed_by   INTEGER,  -- the backend pid of that sender's session: alive or not
    delivered_at DOUBLE PRECISION,
    last_error   TEXT
);
CREATE INDEX outbox_pending ON outbox (id) WHERE state = 'pending';
CREATE INDEX outbox_key ON outbox (partner, kind, key, state);
CREATE TABLE exports (
    id     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    record TEXT NOT NULL
);
-- store.version(): every write transaction bumps one row (its connection's), so the sum
-- changes with each commit and is seen exactly when the commit is.
CREATE TABLE commits (
    shard INTEGER PRIMARY KEY,
    n     BIGINT NOT NULL
);
"""


def _statements(script: str) -> list[str]:
    return [s for s in script.split(";") if s.strip()]


def _create(conn: psycopg.Connection[Any]) -> None:
    """Schema 1: every table, the fold's columns included."""
    for statement in _statements(BASE):
        conn.execute(statement.encode())
    conn.execute(
        "INSERT INTO commits (shard, n) SELECT s, 0 FROM generate_series(0, %s) AS s",
        (COMMIT_SHARDS - 1,),
    )
    refold(conn)


def refold(conn: psycopg.Connection[Any]) -> None:
    """Add the FOLD_COLUMNS the table lacks and fill them in for every stored entry: the
    migration for each version of the fold (an empty table makes it a no-op)."""
    for name, kind in FOLD_COLUMNS:
        conn.execute(f"ALTER TABLE log_entries ADD COLUMN IF NOT EXISTS {name} {kind}".encode())
    assignments = ", ".join(f"{name} = %s" for name in FOLD_NAMES)
    rows = conn.execute(
        "SELECT merchant_id, service_date, seq, operation, result, meta FROM log_entries"
    ).fetchall()
    with conn.cursor() as cursor:
        cursor.executemany(
            f"UPDATE log_entries SET {assignments}"
            " WHERE merchant_id = %s AND service_date = %s AND seq = %s".encode(),
            [
                (
                    *fold_values(json.loads(op), json.loads(result), json.loads(meta)),
                    merchant,
                    day,
                    seq,
                )
                for merchant, day, seq, op, result, meta in rows
            ],
        )


# version -> the step from the version before. When engine.booked.Change gains columns: add
# them to FOLD_COLUMNS and append `refold` as the next version.
MIGRATIONS: Sequence[Callable[[psycopg.Connection[Any]], None]] = (_create,)
SCHEMA_VERSION = len(MIGRATIONS)
LOCK_KEY = 0x686F7374  # pg_advisory_xact_lock key: one process migrates at a time


class NewerSchema(Exception):
    def __init__(self, found: int) -> None:
        super().__init__(
            f"the database has schema {found}: a newer version of hoststand wrote it, and"
            f" this one reads schema {SCHEMA_VERSION} and older; run the newer version"
        )


def migrate(conn: psycopg.Connection[Any], on_upgrade: Callable[[str], None] | None = None) -> None:
    """Bring the current schema (search_path) to SCHEMA_VERSION, in the caller's transaction.
    Processes starting together take turns on an advisory lock. `on_upgrade` hears of each
    step of an upgrade of a database written by an older version (not of its creation)."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    found = 0 if row is None or row[0] is None else int(row[0])
    if found > SCHEMA_VERSION:
        raise NewerSchema(found)
    for version, step in enumerate(MIGRATIONS[found:], start=found + 1):
        if found and on_upgrade is not None:
            on_upgrade(f"upgrading from schema {version - 1} to {version}, once")
        step(conn)
    if found and found < SCHEMA_VERSION and on_upgrade is not None:
        on_upgrade(f"upgraded to schema {SCHEMA_VERSION}")
    if found == 0:
        conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (SCHEMA_VERSION,))
    elif found < SCHEMA_VERSION:
        conn.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION,))
