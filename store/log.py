"""The operation log of a service day and the interface every store implements.

A (merchant, service day) log holds entries at seqs 0, 1, 2, ... with no gap and no duplicate;
an append names the seq it expects to write next, and a second writer at that seq fails.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from engine.booked import BookedDay

# A JSON value: whatever `json.dumps` accepts and `json.loads` gives back. `Any` rather than a
# recursive alias because dict/list invariance would make callers cast every literal.
JSON = Any


@dataclass(frozen=True)
class NewEntry:
    """An entry not yet in the log: its seq is given by the append."""

    operation: list[JSON]
    result: JSON
    received_at: float  # Unix seconds, the wall clock when the operation was received
    meta: dict[str, JSON] = field(default_factory=dict)  # booking details, partner, key...


@dataclass(frozen=True)
class LogEntry:
    seq: int
    operation: list[JSON]
    result: JSON
    received_at: float
    meta: dict[str, JSON] = field(default_factory=dict)


class StoreError(Exception):
    """Any failure of a store; the driver's own exception is kept as `__cause__`."""


class ConcurrencyConflict(StoreError):
    """The append's `expected_seq` is not the log's length: another writer got there first."""


class StoreUnavailable(StoreError):
    """The database stayed locked past the busy timeout, or could not be opened; retryable."""


class StoreUnreachable(StoreUnavailable):
    """The database server cannot be reached (it refuses connections: down, restarting);
    retryable, and said at once rather than after waiting for a connection."""


class StoreUnwritable(StoreUnavailable):
    """The database cannot be written: its disk is full, or writing failed (an I/O error).
    Nothing of the transaction was written; retryable once the operator frees the disk."""


class DuplicateKey(StoreError):
    """`append(..., remember=...)` found its key already stored; nothing was written."""

    def __init__(self, scope: str, key: str, value: JSON) -> None:
        super().__init__(f"key {key!r} already stored in scope {scope!r}")
        self.scope = scope
        self.key = key
        self.value = value  # the stored value, e.g. the response to replay to a retried webhook


Remember = tuple[str, str, JSON]  # (scope, key, value) of an idempotency record


@dataclass(frozen=True)
class OutboxMessage:
    """Something to tell a partner, written in the same transaction as the change it reports.

    Messages with the same (partner, kind, key) are delivered in order; with `merge`, a new
    message joins an undelivered one with the same key instead of queueing behind it."""

    partner: str
    kind: str  # "booking" (a notification) or "availability" (a window replace)
    key: str  # a booking id, or "<merchant>/<day>" for a window
    payload: JSON
    created_at: float  # Unix seconds of the change: delivery lag is measured from here
    merge: bool = False
    not_before: float = 0.0  # not sent before this (lets changes coalesce into one send)


@dataclass(frozen=True)
class OutboxItem:
    id: int
    partner: str
    kind: str
    key: str
    payload: JSON
    created_at: float
    attempts: int


@dataclass(frozen=True)
class Backlog:
    """One partner's undelivered messages: pending, given up (dead), and when the oldest
    pending one was written (Unix seconds, None when nothing is pending). Moot messages
    (`settle`) are neither: nothing was lost with them."""

    pending: int = 0
    dead: int = 0
    oldest_pending_created_at: float | None = None


@dataclass(frozen=True)
class LogAppend:
    """Entries for one (merchant, day) log at seqs expected_seq, expected_seq + 1, ..."""

    merchant_id: str
    service_date: date
    expected_seq: int
    entries: Sequence[NewEntry]


class LogStore(Protocol):
    """Service-day operation logs plus idempotency records, durable once a call returns."""

    def append(
        self,
        merchant_id: str,
        service_date: date,
        expected_seq: int,
        entries: Sequence[NewEntry],
        remember: Sequence[Remember] = (),
    ) -> list[LogEntry]:
        """Write `entries` at seqs expected_seq, expected_seq + 1, ... all or nothing.

        `remember` records commit in the same transaction (e.g. a webhook's response and a
        booking's index). Raises ConcurrencyConflict when expected_seq is not the log's
        current length, and DuplicateKey when a `remember` key is already stored (the keys
        are checked first).
        """
        ...

    def append_all(
        self,
        appends: Sequence[LogAppend],
        remember: Sequence[Remember] = (),
        put: Sequence[Remember] = (),
        outbox: Sequence[OutboxMessage] = (),
    ) -> None:
        """Several logs' appends, `remember` records (insert, DuplicateKey if present), `put`
        records (insert or replace) and outbox messages in one transaction: all or nothing."""
        ...

    def pending(self, now: float, limit: int = 100, skip: Collection[str] = ()) -> list[OutboxItem]:
        """Undelivered messages due at `now` (not in back-off, not claimed by a live
        sender), oldest first, at most one per key; none for the partners in `skip` (the
        sender has as many of theirs in flight as it sends at once: their due messages
        must not use up `limit` and keep every other partner's out)."""
        ...

    def claim(self, message_ids: Sequence[int], now: float) -> list[int]:
        """A sender is sending these: a later change queues a new message instead of merging
        into one whose content is already being sent. Returns the ids claimed: those still
        pending and not held by a live sender (in this process or another), so a message
        is sent by one sender only."""
        ...

    def release_claims(self) -> None:
        """Forget this store's claims and those of senders that died (a sender starting
        up: a dead one's claims are void); a live sender's, in another process on the same
        store, are kept: it is sending those messages now."""
        ...

    def delivered(self, message_id: int, at: float) -> None: ...

    def failed(self, message_id: int, retry_at: float | None, error: str) -> None:
        """One more failed attempt; retry at `retry_at`, or never (None: given up)."""
        ...

    def settle(
        self,
        delivered: Sequence[tuple[int, float]],
        failed: Sequence[tuple[int, float | None, str]],
        moot: Sequence[tuple[int, float, str]] = (),
    ) -> None:
        """`delivered` and `failed` for many messages in one transaction (one fsync). `moot`
        (id, when, why): never to be sent, as nothing is lost with them (a replace of a
        restaurant no server serves, its days noted to be told again): kept apart from the
        dead ones, which a partner refused, and removed as delivered ones are
        (`prune_moot`)."""
        ...

    def outbox_stats(self, recent: int = 1000) -> JSON:
        """Counts by state (pending, delivered, dead, moot) and the lag (seconds) of the
        `recent` last delivered messages."""
        ...

    def outbox_backlog(self) -> dict[str, Backlog]:
        """Per partner, what is not delivered yet (partners with nothing pending or dead are
        left out): one grouped query, cheap enough for every metrics scrape and health check."""
        ...

    def record_export(self, record: JSON) -> None:
        """Keep the record of one export to one destination (when, files, outcome...)."""
        ...

    def exports(self, limit: int = 20) -> list[JSON]:
        """The most recent export records, newest first."""
        ...

    def entries(
        self, merchant_id: str, service_date: date, after_seq: int = -1, limit: int | None = None
    ) -> list[LogEntry]:
        """The entries with seq > after_seq, in seq order (the first `limit` of them)."""
        ...

    def operations(self, merchant_id: str, service_date: date) -> list[list[JSON]]:
        """Just the operations of a log, in seq order: enough to rebuild the day's state."""
        ...

    def booked(self, merchant_id: str, first: date, last: date) -> dict[date, BookedDay]:
        """engine.booked.fold of every log from `first` to `last` (days without entries are
        left out): what the days leave booked, without replaying the engine."""
        ...

    def version(self) -> int:
        """A number that changes whenever anything is committed, by any writer: readers
        holding state skip re-reading the log while it stays the same."""
        ...

    def log_version(self) -> int:
        """A number that changes whenever an entry is appended to any log, by any writer
        (it may change more often, never less): readers of the logs skip re-reading them
        while it stays the same, whatever else (outbox, idempotency records) is written."""
        ...

    def service_dates(self, merchant_id: str, since: date | None = None) -> list[date]:
        """The days that have at least one entry (from `since` on, when given), in order."""
        ...

    def remember(self, scope: str, key: str, value: JSON) -> JSON:
        """Store `value` under (scope, key) unless a value is there; return the stored one."""
        ...

    def recall(self, scope: str, key: str) -> JSON | None: ...

    def recall_prefix(self, scope: str, prefix: str) -> list[tuple[str, JSON]]:
        """Every (key, value) of `scope` whose key starts with `prefix`, in key order."""
        ...

    def recall_last(self, scope: str, prefix: str) -> tuple[str, JSON] | None:
        """The last (key, value) of `recall_prefix(scope, prefix)`, reading that one only
        (a record kept anew at times, read on a hot path: the floor in force)."""
        ...

    def forget_range(self, scope: str, first: str, before: str) -> int:
        """Drop the records of `scope` with first <= key < before (records that only
        mattered for a while, such as past turns); how many."""
        ...

    # -- retention (store.retention): records that can no longer matter are removed ------

    def scopes(self) -> list[str]:
        """Every scope that holds a record, in order (one index seek per scope)."""
        ...

    def records_page(self, scope: str, after: str | None, limit: int) -> list[tuple[str, JSON]]:
        """The first `limit` (key, value) of `scope` whose key is after `after` (None: from
        the first), in key order: a long pass over a scope, a page at a time."""
        ...

    def forget(self, scope: str, records: Sequence[tuple[str, JSON]]) -> int:
        """Drop exactly these (key, value) records of `scope` as `records_page` read them,
        in one transaction: a key holding another value now (removed by another pass and
        written anew since) is left as it is. How many were dropped."""
        ...

    def prune_delivered(self, before: float, limit: int) -> int:
        """Drop at most `limit` delivered outbox messages delivered before `before` (Unix
        seconds), oldest first; how many. Pending and given-up messages are never dropped."""
        ...

    def prune_moot(self, before: float, limit: int) -> int:
        """Drop at most `limit` moot outbox messages made moot before `before` (Unix
        seconds; one made moot by a version that did not note when: created before it),
        oldest first; how many. Nothing is lost with them: their days were noted to be
        told again."""
        ...

    def prune_exports(self, before: float, keep: int, limit: int) -> int:
        """Drop at most `limit` export records finished before `before` (Unix seconds),
        oldest first, never one of the newest `keep`; how many."""
        ...

    def close(self) -> None: ...


def prefix_args(scope: str, prefix: str) -> tuple[str, str, str, int, str]:
    """The parameters of a store's prefix query (its PREFIX_WHERE): a range on the primary
    key (scope, key), so an index seek, then the prefix checked exactly."""
    return (scope, prefix, prefix + "\U0010ffff", len(prefix), prefix)


def backlog_of(rows: Sequence[tuple[str, str, int, float | None]]) -> dict[str, Backlog]:
    """`outbox_backlog` from its query's (partner, state, count, oldest created_at) rows."""
    out: dict[str, Backlog] = {}
    for partner, state, count, oldest in rows:
        was = out.get(partner, Backlog())
        if state == "pending":
            out[partner] = Backlog(int(count), was.dead, oldest)
        elif state == "dead":
            out[partner] = Backlog(was.pending, int(count), was.oldest_pending_created_at)
    return out


def check_append(expected_seq: int, entries: Sequence[NewEntry]) -> None:
    """Argument checks every backend makes before touching its database."""
    if isinstance(expected_seq, bool) or not isinstance(expected_seq, int) or expected_seq < 0:
        raise ValueError(f"expected_seq must be an integer >= 0, got {expected_seq!r}")
    if not entries:
        raise ValueError("append needs at least one entry")
