"""The rule `LogStore.pending` keeps, row by row in id order: what each store's one query is
held to over random outboxes (tests/integration/test_sqlite_store.py, test_postgres_store.py)."""

from __future__ import annotations

from hypothesis import strategies as st

# (partner, kind, key, state, retry_at, claimed_at): few values each, so keys repeat, some
# messages wait out a back-off (retry_at 150 at now 100) and claims are fresh or stale.
OUTBOX_ROWS = st.lists(
    st.tuples(
        st.sampled_from(["p1", "p2"]),
        st.sampled_from(["booking", "availability"]),
        st.sampled_from(["k1", "k2", "k3"]),
        st.sampled_from(["pending", "pending", "delivered", "dead", "moot"]),
        st.sampled_from([0.0, 50.0, 150.0]),
        st.sampled_from([None, 10.0, 90.0]),
    ),
    max_size=25,
)
# A row as stored: its id first, the claiming session last (None: no session is recorded).
StoredRow = tuple[int, str, str, str, str, float, float | None, int | None]


def first_due_of_each_key(
    rows: list[StoredRow],
    now: float,
    limit: int,
    claim_seconds: float,
    live: set[int] | None = None,
) -> list[int]:
    """The first pending message of each key, if it is due and not claimed by a live sender
    (a claim younger than `claim_seconds` holds; with `live`, unless it names a session
    that is not one of them); at most `limit`, oldest first."""
    seen: set[tuple[str, str, str]] = set()
    due: list[int] = []
    for id_, partner, kind, key, state, retry_at, claimed, session in sorted(rows):
        if state != "pending" or (partner, kind, key) in seen:
            continue
        seen.add((partner, kind, key))
        held = claimed is not None and claimed > now - claim_seconds
        if held and live is not None:
            held = session is None or session in live
        if retry_at <= now and not held:
            due.append(id_)
    return due[:limit]
