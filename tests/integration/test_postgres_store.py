"""PostgresStore on a real server: the store contract, plus the schema's versions, the error
mapping (one test per driver error), retries, the commit counter and processes racing."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.booked import NO_CHANGE
from store import open_store, redact
from store.log import (
    ConcurrencyConflict,
    DuplicateKey,
    LogAppend,
    LogStore,
    OutboxItem,
    OutboxMessage,
    StoreError,
    StoreUnavailable,
    StoreUnreachable,
    StoreUnwritable,
)
from store.postgres import CLAIM_SECONDS, PostgresStore, translate
from store.postgres_schema import FOLD_COLUMNS, SCHEMA_VERSION
from tests.integration.outbox_rule import OUTBOX_ROWS, StoredRow, first_due_of_each_key
from tests.integration.postgres import fresh_schema
from tests.integration.server_process import free_port
from tests.integration.store_contract import DAY, MERCHANT, StoreContract, entry
from tests.integration.tcp_proxy import TcpProxy

REPO = Path(__file__).resolve().parents[2]
T0 = 1_796_400_000.0  # 2026-12-04 18:40 UTC, fixed: never today's clock


class TestPostgresStoreContract(StoreContract):
    @pytest.fixture(autouse=True)
    def schema(self) -> Iterator[None]:
        with fresh_schema("contract") as url:
            self.url = url
            yield

    def make_store(self, tmp_path: Path) -> LogStore:
        return PostgresStore(self.url)


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema("pg") as url:
        yield url


@pytest.fixture
def store(url: str) -> Iterator[PostgresStore]:
    with PostgresStore(url) as store:
        yield store


@pytest.fixture
def raw(url: str, store: PostgresStore) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A plain connection to the store's schema (the store has created the tables)."""
    with psycopg.connect(url, autocommit=True) as conn:
        yield conn


def driver_error(conn: psycopg.Connection[tuple[object, ...]], query: str) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as raised:
        conn.execute(query.encode())
    return raised.value


# -- the schema --------------------------------------------------------------------------


def test_a_postgresql_url_opens_a_postgres_store_and_a_path_an_sqlite_file(
    url: str, tmp_path: Path
) -> None:
    with open_store(url) as pg:  # type: ignore[attr-defined]
        assert isinstance(pg, PostgresStore)
    with open_store(url.replace("postgresql://", "postgres://", 1)) as pg:  # type: ignore[attr-defined]
        assert isinstance(pg, PostgresStore)
    sqlite = open_store(str(tmp_path / "hoststand.db"))
    try:
        assert type(sqlite).__name__ == "SQLiteStore"
    finally:
        sqlite.close()


def test_a_url_is_printed_without_its_password() -> None:
    assert redact("postgresql://host:s3cret@db:5432/hs") == "postgresql://host:***@db:5432/hs"
    assert redact("postgres://db/hs") == "postgres://db/hs"
    assert redact("data/hoststand.db") == "data/hoststand.db"


def test_opening_a_database_twice_keeps_its_one_schema_version(url: str) -> None:
    PostgresStore(url).close()
    with PostgresStore(url) as store:
        store.append(MERCHANT, DAY, 0, [entry(0)])
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]


def test_a_database_with_a_newer_schema_is_refused(
    raw: psycopg.Connection[tuple[object, ...]], url: str
) -> None:
    raw.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="newer"):
        PostgresStore(url)


def test_the_fold_columns_are_one_per_element_of_the_engines_change() -> None:
    # engine.booked.Change is about to grow (size, arrives): FOLD_COLUMNS must follow it.
    assert len(FOLD_COLUMNS) == len(NO_CHANGE)


def test_json_is_stored_as_text_with_sorted_keys(
    store: PostgresStore, raw: psycopg.Connection[tuple[object, ...]]
) -> None:
    store.append(MERCHANT, DAY, 0, [entry(0, zeta=1, alpha=2)])
    assert raw.execute("SELECT meta FROM log_entries").fetchone() == ('{"alpha":2,"zeta":1}',)


def test_the_version_sees_commits_made_through_another_store(url: str) -> None:
    with PostgresStore(url) as reader, PostgresStore(url) as writer:
        before = reader.version()
        writer.append(MERCHANT, DAY, 0, [entry(0)])
        assert reader.version() != before


# -- driver errors become the project's errors ---------------------------------------------


def test_a_unique_violation_on_the_log_key_translates_to_a_concurrency_conflict(
    store: PostgresStore, raw: psycopg.Connection[tuple[object, ...]]
) -> None:
    store.append(MERCHANT, DAY, 0, [entry(0)])
    error = driver_error(
        raw,
        "INSERT INTO log_entries (merchant_id, service_date, seq, operation, result, received_at,"
        f" meta) VALUES ('{MERCHANT}', '{DAY.isoformat()}', 0, '[]', 'null', 0, '{{}}')",
    )
    assert type(translate(error)) is ConcurrencyConflict


def test_a_unique_violation_on_an_idempotency_key_translates_to_a_duplicate_key(
    store: PostgresStore, raw: psycopg.Connection[tuple[object, ...]]
) -> None:
    store.remember("webhook", "k1", {"status": 201})
    error = driver_error(raw, "INSERT INTO idempotency VALUES ('webhook', 'k1', '2')")
    translated = translate(error)
    assert type(translated) is DuplicateKey
    assert (translated.scope, translated.key) == ("webhook", "k1")


def test_a_server_nobody_listens_on_is_store_unavailable() -> None:
    with pytest.raises(StoreUnavailable) as raised:
        PostgresStore(f"postgresql://nobody:x@127.0.0.1:{free_port()}/none", timeout=2)
    assert isinstance(raised.value.__cause__, psycopg.OperationalError)


@pytest.mark.alone  # ends every session of the test database
def test_a_connection_the_server_ended_is_store_unavailable(
    store: PostgresStore, raw: psycopg.Connection[tuple[object, ...]]
) -> None:
    store.append(MERCHANT, DAY, 0, [entry(0)])  # the pool holds a connection now
    raw.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    with pytest.raises(StoreUnavailable):
        store.entries(MERCHANT, DAY)
    # Unavailable is temporary: each dead pooled connection fails one call and is dropped.
    for _ in range(10):
        try:
            assert [e.seq for e in store.entries(MERCHANT, DAY)] == [0]
            break
        except StoreUnavailable:
            continue
    else:
        pytest.fail("the pool never served again")


@pytest.mark.parametrize("condition", ["disk_full", "io_error", "read_only_sql_transaction"])
def test_a_disk_the_server_cannot_write_translates_to_store_unwritable(
    raw: psycopg.Connection[tuple[object, ...]], condition: str
) -> None:
    error = driver_error(raw, f"DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '{condition}'; END $$")
    assert type(translate(error)) is StoreUnwritable


@pytest.mark.parametrize(
    "condition", ["admin_shutdown", "crash_shutdown", "cannot_connect_now", "connection_failure"]
)
def test_a_connection_the_database_ended_translates_to_store_unreachable(
    raw: psycopg.Connection[tuple[object, ...]], condition: str
) -> None:
    error = driver_error(raw, f"DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '{condition}'; END $$")
    assert type(translate(error)) is StoreUnreachable


def test_any_other_driver_error_translates_to_a_plain_store_error(
    raw: psycopg.Connection[tuple[object, ...]],
) -> None:
    missing = driver_error(raw, "SELECT * FROM no_such_table")
    not_null = driver_error(raw, "INSERT INTO log_entries (merchant_id) VALUES ('m')")
    assert type(translate(missing)) is StoreError
    assert type(translate(not_null)) is StoreError


FAIL_ONCE = """
CREATE SEQUENCE fails;
CREATE FUNCTION fail_first() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF nextval('fails') <= {times} THEN
        RAISE EXCEPTION 'injected' USING ERRCODE = '{code}';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER fail_first BEFORE INSERT ON log_entries FOR EACH ROW EXECUTE FUNCTION fail_first();
"""


@pytest.mark.parametrize("code", ["serialization_failure", "deadlock_detected"])
def test_a_transaction_the_server_aborted_for_a_deadlock_or_serialization_is_run_again(
    store: PostgresStore, raw: psycopg.Connection[tuple[object, ...]], code: str
) -> None:
    raw.execute(FAIL_ONCE.format(times=2, code=code).encode())
    store.append(MERCHANT, DAY, 0, [entry(0)], remember=[("webhook", "k", 1)])
    assert [e.seq for e in store.entries(MERCHANT, DAY)] == [0]
    assert store.recall("webhook", "k") == 1


def test_a_transaction_aborted_every_time_is_store_unavailable_and_writes_nothing(
    store: PostgresStore, raw: psycopg.Connection[tuple[object, ...]]
) -> None:
    raw.execute(FAIL_ONCE.format(times=1000, code="serialization_failure").encode())
    with pytest.raises(StoreUnavailable) as raised:
        store.append(MERCHANT, DAY, 0, [entry(0)], remember=[("webhook", "k", 1)])
    assert isinstance(raised.value.__cause__, psycopg.errors.SerializationFailure)
    assert store.entries(MERCHANT, DAY) == []
    assert store.recall("webhook", "k") is None


def test_a_row_locked_past_the_lock_timeout_is_store_unavailable(url: str) -> None:
    with PostgresStore(url, lock_timeout=0.05) as impatient, psycopg.connect(url) as holder:
        impatient.append(MERCHANT, DAY, 0, [entry(0)])
        holder.execute("LOCK TABLE log_entries IN EXCLUSIVE MODE")
        with pytest.raises(StoreUnavailable):
            impatient.append(MERCHANT, DAY, 1, [entry(1)])
        holder.rollback()
        impatient.append(MERCHANT, DAY, 1, [entry(1)])  # unavailable was temporary


# -- the outbox across processes -------------------------------------------------------------


def test_two_senders_claiming_the_same_messages_get_each_message_once(url: str) -> None:
    # Two stores are two processes' pools: both read the same pending list, both claim it.
    with PostgresStore(url) as first, PostgresStore(url) as second:
        messages = [OutboxMessage("tablefinder", "booking", f"bk-{n}", {}, T0) for n in range(20)]
        first.append_all([LogAppend(MERCHANT, DAY, 0, [entry(0)])], outbox=messages)
        seen_first, seen_second = first.pending(T0), second.pending(T0)
        assert [i.id for i in seen_first] == [i.id for i in seen_second]
        barrier = threading.Barrier(2)
        claimed: dict[str, list[int]] = {}

        def claim(name: str, store: PostgresStore, items: list[OutboxItem]) -> None:
            barrier.wait()
            claimed[name] = store.claim([i.id for i in items], T0)

        threads = [
            threading.Thread(target=claim, args=("first", first, seen_first)),
            threading.Thread(target=claim, args=("second", second, seen_second)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(claimed["first"] + claimed["second"]) == [i.id for i in seen_first]
        assert second.claim([i.id for i in seen_first], T0 + 1) == []  # all held by a live one


def test_a_sender_starting_up_keeps_the_claims_of_a_live_process(url: str) -> None:
    with PostgresStore(url) as running, PostgresStore(url) as starting:
        running.append_all(
            [LogAppend(MERCHANT, DAY, 0, [entry(0)])],
            outbox=[OutboxMessage("tablefinder", "booking", "bk-1", {}, T0)],
        )
        [item] = running.pending(T0)
        assert running.claim([item.id], T0) == [item.id]
        starting.release_claims()
        assert starting.pending(T0 + 1) == []  # still being sent by the running one
    with PostgresStore(url) as after_both_died:  # the claimer's session has ended
        deadline = time.monotonic() + 10  # its backend exits just after the client hangs up
        while True:
            after_both_died.release_claims()
            due = after_both_died.pending(T0 + 1)
            if due or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert [i.id for i in due] == [item.id]


def test_a_claim_of_a_sender_whose_session_ended_is_due_again_without_waiting_it_out(
    url: str,
) -> None:
    """A process killed mid-send: the live ones send its messages again at once, not after
    CLAIM_SECONDS (the partner drops a repeat by its message id)."""
    with PostgresStore(url) as live:
        with PostgresStore(url) as killed:
            killed.append_all(
                [LogAppend(MERCHANT, DAY, 0, [entry(0)])],
                outbox=[OutboxMessage("tablefinder", "booking", "bk-1", {}, T0)],
            )
            [item] = killed.pending(T0)
            assert killed.claim([item.id], T0) == [item.id]
            assert live.pending(T0 + 1) == []  # held by a live sender
            assert live.claim([item.id], T0 + 1) == []
        deadline = time.monotonic() + 10  # its backend exits just after the client hangs up
        while not (due := live.pending(T0 + 2)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [i.id for i in due] == [item.id]
        assert live.claim([item.id], T0 + 2) == [item.id]


def claimer(raw: psycopg.Connection[tuple[object, ...]], message_id: int) -> int:
    row = raw.execute("SELECT claimed_by FROM outbox WHERE id = %s", (message_id,)).fetchone()
    assert row is not None and isinstance(row[0], int), row
    return row[0]


def wait_until_gone(raw: psycopg.Connection[tuple[object, ...]], pid: int) -> None:
    deadline = time.monotonic() + 10  # the backend exits just after it is told to
    while raw.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
        assert time.monotonic() < deadline, f"backend {pid} is still there"
        time.sleep(0.05)


def test_a_sender_whose_session_the_server_ended_claims_under_a_new_live_one(
    url: str, raw: psycopg.Connection[tuple[object, ...]]
) -> None:
    """After a PostgreSQL restart (here: its session terminated) a sender's claims name a
    live session again, so the other processes leave its messages alone: not a dead pid,
    which would make each of them send every message too."""
    with PostgresStore(url) as sender, PostgresStore(url) as other:
        messages = [OutboxMessage("tablefinder", "booking", f"bk-{n}", {}, T0) for n in (1, 2)]
        sender.append_all([LogAppend(MERCHANT, DAY, 0, [entry(0)])], outbox=messages)
        first, second = sender.pending(T0)
        assert sender.claim([first.id], T0) == [first.id]
        ended = claimer(raw, first.id)
        raw.execute("SELECT pg_terminate_backend(%s)", (ended,))
        wait_until_gone(raw, ended)
        assert sender.claim([second.id], T0) == [second.id]
        assert claimer(raw, second.id) != ended
        assert second.id not in [i.id for i in other.pending(T0 + 1)]
        assert other.claim([second.id], T0 + 1) == []  # held by the sender's live session
        sender.release_claims()  # its own claims, under its new session
        assert other.claim([second.id], T0 + 1) == [second.id]


DOWN_PORT = 8347  # the relay that takes the database down


def test_a_database_that_refuses_connections_is_unreachable_at_once_and_serves_once_back(
    url: str,
) -> None:
    """Down (connection refused) is said at once, not after waiting `timeout` seconds for a
    pooled connection that cannot be made; the store serves again when the server is back."""
    proxy, via = TcpProxy.before(url, port=DOWN_PORT)
    try:
        with PostgresStore(via, timeout=30) as store:
            store.append(MERCHANT, DAY, 0, [entry(0)])  # the pool holds a connection
            proxy.stop()
            failures: list[StoreUnavailable] = []
            for _ in range(2):  # the pooled connection the stop cut fails one call first
                with pytest.raises(StoreUnavailable) as raised:
                    store.entries(MERCHANT, DAY)
                failures.append(raised.value)
            assert isinstance(failures[-1], StoreUnreachable), failures
            assert "the database is unreachable" in str(failures[-1])
            proxy.start()
            deadline = time.monotonic() + 30
            while True:
                try:
                    assert [e.seq for e in store.entries(MERCHANT, DAY)] == [0]
                    break
                except StoreUnavailable:
                    assert time.monotonic() < deadline, "the store never served again"
                    time.sleep(0.05)
    finally:
        proxy.stop()


def test_once_the_server_is_back_the_store_goes_back_to_its_pool(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a lost connection each call connects on its own; the first that can connect
    puts the store back on its pool. Waiting for the pool to say it connected is not
    enough: after an outage longer than its reconnect_timeout (300 s) the pool stops
    trying and connects again only when asked, so the store would connect once per call
    for ever."""
    proxy, via = TcpProxy.before(url, port=DOWN_PORT)
    try:
        with PostgresStore(via, timeout=30) as store:
            store.append(MERCHANT, DAY, 0, [entry(0)])
            proxy.stop()
            with pytest.raises(StoreUnavailable):
                store.entries(MERCHANT, DAY)  # the pooled connection the stop cut
            assert store._lost
            # A pool that has given up (past reconnect_timeout) holds no connection and makes
            # none until asked: it says so, whatever it manages meanwhile in this test.
            stats = store._pool.get_stats
            monkeypatch.setattr(store._pool, "get_stats", lambda: {**stats(), "pool_available": 0})
            proxy.start()
            connects: list[object] = []
            real = psycopg.connect

            def counted(*args: Any, **kwargs: Any) -> psycopg.Connection[Any]:
                connects.append(args)
                return real(*args, **kwargs)

            monkeypatch.setattr(psycopg, "connect", counted)
            served = 0
            for _ in range(40):  # a pooled connection from before may still fail one call
                try:
                    assert [e.seq for e in store.entries(MERCHANT, DAY)] == [0]
                    served += 1
                except StoreUnavailable:
                    pass
            assert served >= 30
            assert len(connects) <= 5  # not one per call: the pool's connections serve
    finally:
        proxy.stop()


# -- processes ------------------------------------------------------------------------------

WORKER = """
import sys, time
from pathlib import Path
from datetime import date
from store.log import ConcurrencyConflict, NewEntry
from store.postgres import PostgresStore

url, go, name = sys.argv[1:]
with PostgresStore(url) as store:
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


def test_of_several_processes_appending_at_one_seq_one_wins_and_the_rest_conflict(
    url: str, store: PostgresStore, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, url, str(go), f"w{n}"],
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
        go.touch()
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


# -- the outbox's due messages, found by SQL ---------------------------------------------------

DEAD_SESSION = 2**31 - 1  # no backend has this pid


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    OUTBOX_ROWS,
    st.lists(st.sampled_from(["live", "dead", None]), min_size=25, max_size=25),
    st.sampled_from([100.0, 100.0 + CLAIM_SECONDS]),
    st.integers(min_value=1, max_value=6),
)
def test_pending_is_the_first_due_message_of_each_key_as_a_row_by_row_read_finds(
    store: PostgresStore,
    raw: psycopg.Connection[tuple[object, ...]],
    rows: list[tuple[str, str, str, str, float, float | None]],
    sessions: list[str | None],
    now: float,
    limit: int,
) -> None:
    # A fresh claim by a session that has ended is void: the rule reads pg_stat_activity.
    live_pid = raw.info.backend_pid
    raw.execute("DELETE FROM outbox")
    stored: list[StoredRow] = []
    for (partner, kind, key, state, retry_at, claimed), session in zip(
        rows, sessions, strict=False
    ):
        pid = {"live": live_pid, "dead": DEAD_SESSION, None: None}[session]
        row = raw.execute(
            "INSERT INTO outbox (partner, kind, key, payload, created_at, state, retry_at,"
            " claimed_at, claimed_by) VALUES (%s, %s, %s, '{}', 0, %s, %s, %s, %s) RETURNING id",
            (partner, kind, key, state, retry_at, claimed, pid),
        ).fetchone()
        assert row is not None
        stored.append((int(str(row[0])), partner, kind, key, state, retry_at, claimed, pid))
    found = [item.id for item in store.pending(now, limit)]
    assert found == first_due_of_each_key(stored, now, limit, CLAIM_SECONDS, {live_pid})
