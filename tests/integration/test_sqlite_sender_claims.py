"""Senders' claims on one SQLite file shared by several server processes: a sender starting
up voids the claims of senders that died, never those of a live one. Else the starting
one sends the live one's messages again, and a change made meanwhile is merged into a
message already being sent (its content read before the change): marked delivered, the
partner never hears of the change. (PostgreSQL knows its senders by session:
test_postgres_store.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from store.log import OutboxMessage
from store.sqlite import SQLiteStore

T0 = 1_796_400_000.0  # 2026-12-04 18:40 UTC, fixed: never today's clock
DAY = date(2026, 12, 4)
WINDOW = f"marlowes-kitchen/{DAY.isoformat()}"
REPO = Path(__file__).resolve().parents[2]


def window(at: float = T0) -> OutboxMessage:
    payload = {"merchant_id": "marlowes-kitchen", "day": DAY.isoformat()}
    return OutboxMessage("tablefinder", "availability", WINDOW, payload, at, merge=True)


def booking(key: str) -> OutboxMessage:
    return OutboxMessage("tablefinder", "booking", key, {"status": "CANCELED"}, T0)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "hoststand.db"


@pytest.fixture
def running(db: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(db) as store:
        yield store


@pytest.fixture
def starting(db: Path) -> Iterator[SQLiteStore]:
    """Another server's store on the same file, its sender starting up."""
    with SQLiteStore(db) as store:
        yield store


def test_a_sender_starting_up_keeps_the_claims_of_a_live_process(
    running: SQLiteStore, starting: SQLiteStore
) -> None:
    running.append_all([], outbox=[booking("bk-1")])
    [item] = running.pending(T0)
    assert running.claim([item.id], T0) == [item.id]
    starting.release_claims()
    assert starting.pending(T0 + 1) == []  # still being sent by the running one
    assert starting.claim([item.id], T0 + 1) == []


def test_a_change_while_a_replace_is_sent_is_sent_after_it(
    running: SQLiteStore, starting: SQLiteStore
) -> None:
    running.append_all([], outbox=[window(T0)])
    [sending] = running.pending(T0)
    assert running.claim([sending.id], T0) == [sending.id]  # its body is read now
    starting.release_claims()
    starting.append_all([], outbox=[window(T0 + 1)])  # the day changes meanwhile
    running.delivered(sending.id, T0 + 2)
    [behind] = starting.pending(T0 + 2)  # the change is told in a replace of its own
    assert behind.id != sending.id and behind.created_at == T0 + 1


def test_the_claims_of_a_sender_whose_process_died_are_released_on_start(
    db: Path, starting: SQLiteStore
) -> None:
    """A real process claims a message and dies (killed, nothing closed)."""
    starting.append_all([], outbox=[booking("bk-1")])
    script = textwrap.dedent(
        f"""
        import os
        from store.sqlite import SQLiteStore
        store = SQLiteStore({str(db)!r})
        [item] = store.pending({T0})
        assert store.claim([item.id], {T0}) == [item.id]
        os._exit(0)
        """
    )
    subprocess.run([sys.executable, "-c", script], cwd=REPO, check=True, timeout=60)
    assert starting.pending(T0 + 1) == []  # claimed, by a sender now gone
    starting.release_claims()
    assert [i.key for i in starting.pending(T0 + 1)] == ["bk-1"]


def test_a_sender_keeps_its_own_claims_out_of_others_release_after_a_restart(
    db: Path, starting: SQLiteStore
) -> None:
    """Its own claims (a loop restarted in the same process) are released: it is not
    sending them any more."""
    starting.append_all([], outbox=[booking("bk-1")])
    [item] = starting.pending(T0)
    assert starting.claim([item.id], T0) == [item.id]
    starting.release_claims()
    assert [i.id for i in starting.pending(T0 + 1)] == [item.id]


def test_a_claim_of_another_live_process_stays_until_that_process_dies(
    db: Path, starting: SQLiteStore
) -> None:
    """A real process claims a message and goes on running (waiting on its stdin); a
    sender starting meanwhile leaves it be. Once it has been killed, it is due again."""
    starting.append_all([], outbox=[booking("bk-1")])
    script = textwrap.dedent(
        f"""
        import sys
        from store.sqlite import SQLiteStore
        store = SQLiteStore({str(db)!r})
        [item] = store.pending({T0})
        assert store.claim([item.id], {T0}) == [item.id]
        print("claimed", flush=True)
        sys.stdin.read()
        """
    )
    with subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as sender:
        try:
            assert sender.stdout is not None and sender.stdout.readline() == "claimed\n"
            starting.release_claims()
            assert starting.pending(T0 + 1) == []  # it is sending it
        finally:
            sender.kill()
            sender.wait(timeout=60)
    starting.release_claims()
    assert [i.key for i in starting.pending(T0 + 1)] == ["bk-1"]


def beside(db: Path) -> list[str]:
    """What lies next to the database other than its own files (the WAL's go on close)."""
    return sorted(p.name for p in db.parent.iterdir() if p.name != db.name)


def test_a_clean_stop_leaves_nothing_of_its_sender_beside_the_database(db: Path) -> None:
    """A sender holds its lock file in `<db>-senders/` while it lives; once the store is
    closed neither the file nor the directory is left (they would pile up next to the
    user's database, one directory per database, one file per killed process)."""
    with SQLiteStore(db) as store:
        store.append_all([], outbox=[booking("bk-1")])
        [item] = store.pending(T0)
        assert store.claim([item.id], T0) == [item.id]
        assert beside(db) == ["hoststand.db-senders", "hoststand.db-shm", "hoststand.db-wal"]
    assert beside(db) == []


def test_a_clean_stop_leaves_a_live_senders_lock_and_removes_a_dead_ones(db: Path) -> None:
    """One real process claims a message and dies (its lock file left behind); another
    claims one and goes on running. A sender here stops cleanly: the dead one's file goes,
    the live one's stays (its claim is still its own), and so does the directory. Once the
    live one has stopped cleanly too, nothing is left."""
    with SQLiteStore(db) as store:
        store.append_all([], outbox=[booking("bk-1"), booking("bk-2"), booking("bk-3")])
    claim = textwrap.dedent(
        f"""
        import os, sys
        from store.sqlite import SQLiteStore
        store = SQLiteStore({str(db)!r})
        item = [i for i in store.pending({T0}) if i.key == sys.argv[1]][0]
        assert store.claim([item.id], {T0}) == [item.id]
        if sys.argv[2] == "die":
            os._exit(0)
        print("claimed", flush=True)
        sys.stdin.read()
        store.close()
        """
    )
    subprocess.run([sys.executable, "-c", claim, "bk-1", "die"], cwd=REPO, check=True, timeout=60)
    senders = db.with_name(f"{db.name}-senders")
    [dead] = os.listdir(senders)
    with subprocess.Popen(
        [sys.executable, "-c", claim, "bk-2", "live"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as live:
        try:
            assert live.stdout is not None and live.stdout.readline() == "claimed\n"
            [alive] = [name for name in os.listdir(senders) if name != dead]
            with SQLiteStore(db) as store:
                [item] = [i for i in store.pending(T0) if i.key == "bk-3"]
                assert store.claim([item.id], T0) == [item.id]
            assert os.listdir(senders) == [alive]
            with SQLiteStore(db) as store:
                store.release_claims()
                assert [i.key for i in store.pending(T0 + 1)] == ["bk-1", "bk-3"]
            assert os.listdir(senders) == [alive]
        finally:
            assert live.stdin is not None
            live.stdin.close()
            live.wait(timeout=60)
    assert live.returncode == 0
    assert beside(db) == []
