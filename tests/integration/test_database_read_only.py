"""A receiver on PostgreSQL whose database turns read-only while it runs (a failover onto a
standby, or a provider setting a full database read-only), as a real process on 127.0.0.1:
every write is refused 503 'cannot be written, retry' with nothing written, /healthz says
the store is unwritable, and the same request sent again once it is writable is done once.

The server connects as a role of the test's own, turned read-only for new sessions; only
that role's sessions are ended, so the other tests on the database go on.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import requests
from psycopg import sql

from tests.integration.postgres import base_url, fresh_schema
from tests.integration.server_process import (
    SECRETS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    signed_post,
    start_server,
)

START = "2026-12-05T19:00:00+00:00"  # tomorrow at 19:00 (the servers' clock is pinned)


def as_role(url: str, role: str, password: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{role}:{password}@{host}"))


class Role:
    """A login role of the test's own on the test database, owning what its server makes."""

    def __init__(self, schema_url: str) -> None:
        self.name = f"hs_ro_{uuid.uuid4().hex[:12]}"
        self.password = uuid.uuid4().hex
        self.url = as_role(schema_url, self.name, self.password)
        with psycopg.connect(schema_url, autocommit=True) as conn:
            schema = conn.execute("SELECT current_schema()").fetchone()
            assert schema is not None and schema[0] is not None
            name = sql.Identifier(self.name)
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(name, sql.Literal(self.password))
            )
            conn.execute(
                sql.SQL("GRANT USAGE, CREATE ON SCHEMA {} TO {}").format(
                    sql.Identifier(schema[0]), name
                )
            )

    def read_only(self, on: bool) -> None:
        """New sessions of the role read-only (or not), and its sessions now ended."""
        setting = "SET default_transaction_read_only = on" if on else "RESET ALL"
        with psycopg.connect(base_url(), autocommit=True) as conn:
            conn.execute(sql.SQL(f"ALTER ROLE {{}} {setting}").format(sql.Identifier(self.name)))
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (self.name,),
            )

    def cut(self) -> None:
        """The role's sessions ended, as a restart of the database ends them."""
        with psycopg.connect(base_url(), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (self.name,),
            )

    def drop(self) -> None:
        with psycopg.connect(base_url(), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (self.name,),
            )
            name = sql.Identifier(self.name)
            conn.execute(sql.SQL("DROP OWNED BY {}").format(name))
            conn.execute(sql.SQL("DROP ROLE {}").format(name))


@pytest.fixture
def role() -> Iterator[Role]:
    with fresh_schema("ro") as url:
        made = Role(url)
        try:
            yield made
        finally:
            made.drop()


@pytest.fixture
def server(role: Role, tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_server(role.url, workdir=tmp_path, extra=["--no-export"])
    try:
        yield process
    finally:
        process.stop()


def book(server: ServerProcess, event: dict[str, object]) -> requests.Response:
    return signed_post(server.base, "tablefinder", SECRETS["tablefinder"], event)


def health(server: ServerProcess) -> requests.Response:
    return requests.get(f"{server.base}/healthz", timeout=TIMEOUT)


def test_a_database_turned_read_only_refuses_each_write_503_and_healthz_says_unwritable(
    role: Role, server: ServerProcess
) -> None:
    """PostgreSQL's 'cannot execute INSERT in a read-only transaction' was no store error
    the server knew: a partner's booking was answered 500 (a traceback in the log), read as
    a bug, not 'retry'. It is the database that cannot be written, as a full disk: 503 with
    Retry-After, nothing written; the booking sent again once writable is booked once."""
    assert book(server, booking_event("evt-before", 2, "2026-12-05T18:00:00+00:00")).ok
    role.read_only(True)
    event = booking_event("evt-read-only", 2, START)
    replies: list[requests.Response] = []
    deadline = time.monotonic() + 30
    while not replies or "cannot be written" not in replies[-1].text:
        assert time.monotonic() < deadline, [(r.status_code, r.text) for r in replies]
        replies.append(book(server, event))
    assert {r.status_code for r in replies} == {503}, [(r.status_code, r.text) for r in replies]
    assert replies[-1].headers["Retry-After"] == "1"
    checked = health(server)
    assert checked.status_code == 503, checked.text
    assert checked.json()["store"] == "unwritable", checked.text
    assert "Traceback" not in server.output()

    role.read_only(False)
    deadline = time.monotonic() + 30
    while (reply := book(server, event)).status_code != 200:
        assert reply.status_code == 503 and time.monotonic() < deadline, reply.text
    again = book(server, event)
    assert again.status_code == 200
    assert again.json()["reservation_id"] == reply.json()["reservation_id"]
    deadline = time.monotonic() + 30
    while (checked := health(server)).status_code != 200:
        assert time.monotonic() < deadline, checked.text


def test_a_write_the_database_restart_cut_is_told_unreachable_and_done_once_when_sent_again(
    role: Role, server: ServerProcess
) -> None:
    """A database restarting ends its sessions: the booking whose connection it ended was
    answered 503 'the store is busy', sending the operator to look for locks. It is told
    unreachable (retry); sent again, it is booked once.

    The server's own threads (the outbox sender, the no-show sweep) use the store too: one
    of them may meet the ended connection first and take the loss, and the booking after
    the cut is then booked on a fresh connection, rightly. So the cut is made again, each
    time before a new booking, until a booking met it; every answer on the way is a
    booking or 'unreachable', never 'busy'."""
    assert book(server, booking_event("evt-before", 2, "2026-12-05T18:00:00+00:00")).ok
    first: requests.Response | None = None
    for attempt in range(20):
        role.cut()
        # Each try on a day of its own, so the tries booked do not fill the floor.
        event = booking_event(f"evt-cut-{attempt}", 2, f"2026-12-{5 + attempt:02d}T19:00:00+00:00")
        reply = book(server, event)
        if reply.status_code != 200:
            first = reply
            break
    assert first is not None, "no booking met a cut connection in 20 tries"
    assert first.status_code == 503, first.text
    message = first.json()["error"]["message"]
    assert "the store is unreachable, retry" in message and "busy" not in message, message
    deadline = time.monotonic() + 30
    while (reply := book(server, event)).status_code != 200:
        assert reply.status_code == 503 and time.monotonic() < deadline, reply.text
        message = reply.json()["error"]["message"]
        assert "busy" not in message, message
    again = book(server, event)
    assert again.json()["reservation_id"] == reply.json()["reservation_id"]
