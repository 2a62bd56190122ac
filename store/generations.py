"""Generation timestamps across processes: each export's generation_timestamp is used by
one export only, among all the receivers sharing a store (partners refuse a reused one).

Built on the idempotency records, as the turns are (store.turns): the first to record a
timestamp has it, and the others take the next free second.
"""

from __future__ import annotations

import uuid

from store.log import LogStore

SCOPE = "generation"
KEEP_SECONDS = 7 * 24 * 3600  # older records are forgotten as new ones are taken


def key(stamp: int) -> str:
    # Zero-padded, so that key order is time order (forget_range is a key range).
    return f"{stamp:012d}"


def take(store: LogStore, earliest: int) -> int:
    """The first generation_timestamp from `earliest` on that no export has taken in
    `store`, now taken for this one. Receivers started in the same second (or a clock
    pinned with --now) would otherwise each upload a feed with the same one."""
    mine = uuid.uuid4().hex  # this export only: a timestamp is never taken twice
    stamp = earliest
    while store.remember(SCOPE, key(stamp), mine) != mine:
        stamp += 1
    store.forget_range(SCOPE, key(0), key(stamp - KEEP_SECONDS))
    return stamp
