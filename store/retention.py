"""Retention: the records that only mattered for a while are removed once they cannot matter.

What grows with every day of service, and what becomes of it:

- the operation logs (log_entries), the booking index and each partner user's bookings
  (idempotency scopes `booking`, `user:<partner>`), the waitlist's entries (`waitlist`,
  `wluser:<partner>`): KEPT. They are what a partner's GetBookingStatus, ListBookings and
  GetWaitlistEntry read, what the host's lists and the feeds fold, and the history of every
  booking; nothing here removes them.
- idempotency records whose only use is to answer a retry (a webhook's event id, a
  partner's own reservation id, a CreateBooking or CreateWaitlistEntry token, a host's
  Idempotency-Key): REMOVED once the moment they answer for (the booking's slot, the day
  of the entry, the request's receipt, whichever is latest) is `keep_seconds` past
  (`Rule` says, per scope, what that moment is).
- delivered outbox messages: REMOVED `keep_seconds` after delivery (the outbox only
  reads pending ones; `feed status` counts and times the recent deliveries); moot ones (a
  replace of a restaurant no server served: its day was noted to be told again by the
  first server back, so nothing is lost with it) likewise, `keep_seconds` after they were
  made moot. Pending and given-up (dead) messages stay: the first are owed, the second
  are the operator's to see.
- export records: REMOVED once finished `keep_seconds` ago, the newest EXPORTS_KEPT always
  kept (`feed status` and /healthz read the newest).
- turns and generation timestamps (store.turns, store.generations) forget their own.

The pass works a page of BATCH records at a time, each deletion its own short transaction,
so the bookings being written meanwhile never wait long behind it. Several servers on one
store may run it at once (each deletion is of exactly the records read, key and value: a
record already gone deletes nothing, and one removed by another pass and written anew
since, under the same key, is the new one and stays); the server takes turns at it
(store.turns) anyway, but a pass of a big store may run past its hour.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from store.log import JSON, LogStore

BATCH = 200  # records read, and removed, per transaction
EXPORTS_KEPT = 100  # export records always kept, however old
DAY = 86400.0

# (key, value) -> the Unix time until which the record may still be asked for, or None when
# that cannot be told (the record is kept).
Rule = Callable[[str, JSON], float | None]


@dataclass
class Removed:
    """What one pass removed: records by kind (the rule's scope prefix), delivered and
    moot messages, export records."""

    records: dict[str, int] = field(default_factory=dict)
    delivered: int = 0
    moot: int = 0
    exports: int = 0

    @property
    def total(self) -> int:
        return sum(self.records.values()) + self.delivered + self.moot + self.exports

    def by_kind(self) -> dict[str, int]:
        """Every kind and its count: each rule's scope prefix without its ':', "delivered",
        "moot" and "exports"."""
        kinds = {prefix.rstrip(":"): n for prefix, n in self.records.items()}
        return {**kinds, "delivered": self.delivered, "moot": self.moot, "exports": self.exports}


def prune(
    store: LogStore,
    now: float,
    keep_seconds: float,
    rules: Mapping[str, Rule],
    stop: Callable[[], bool] = lambda: False,
    *,
    wall: float | None = None,
) -> Removed:
    """One pass: every record of a scope starting with one of `rules`' prefixes whose rule
    says it mattered until before `now - keep_seconds` is removed; then delivered messages,
    moot ones and export records that old by `wall` (the machine's clock, which stamps
    them: delivery lag and export ages are real-time figures; default `now`). `stop()` is
    asked between batches (a server stopping)."""
    cutoff = now - keep_seconds
    # A clock pinned days before the machine's (--now, as the tests run it) kept them for
    # ever, and one pinned later removed what was delivered a moment ago.
    stamped = (now if wall is None else wall) - keep_seconds
    removed = Removed(records={prefix: 0 for prefix in rules})
    for scope in store.scopes():
        prefix = next((p for p in rules if scope.startswith(p)), None)
        if prefix is None:
            continue
        rule = rules[prefix]
        after: str | None = None
        while True:
            page = store.records_page(scope, after, BATCH)
            if not page:
                break
            gone = []
            for key, value in page:
                until = rule(key, value)
                if until is not None and until < cutoff:
                    gone.append((key, value))
            removed.records[prefix] += store.forget(scope, gone)
            after = page[-1][0]
            if stop():
                return removed
    while not stop():
        n = store.prune_delivered(stamped, BATCH)
        removed.delivered += n
        if n < BATCH:
            break
    while not stop():
        n = store.prune_moot(stamped, BATCH)
        removed.moot += n
        if n < BATCH:
            break
    while not stop():
        n = store.prune_exports(stamped, EXPORTS_KEPT, BATCH)
        removed.exports += n
        if n < BATCH:
            break
    return removed
