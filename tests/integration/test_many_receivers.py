"""Several `hoststand serve` processes on one PostgreSQL, as real processes on 127.0.0.1:
each sees the others' bookings at once (lookups, lists, previews, feeds: caches follow the
log, not a timer), each partner message is sent once however many run, and a process killed
with SIGKILL leaves the others serving with nothing lost."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests
from click.testing import CliRunner

from feed.cli import main as cli
from store import open_store
from tests.integration.partner_stub import AVAILABILITY, BOOKING, SLOW, UPLOAD, PartnerStub
from tests.integration.postgres import fresh_schema
from tests.integration.server_process import (
    CONFIGS,
    HOST_TOKENS,
    NOW,
    SECRETS,
    TIMEOUT,
    ServerProcess,
    booking_event,
    signed_post,
    start_server,
)
from tests.integration.test_partner_updates import NOTIFY_TOKEN, write_settings

MARLOWES = "marlowes-kitchen"
PARTNER = "tablefinder"
BASIC = ("tablefinder", "sample-basic-password")
SATURDAY_1900 = "2026-12-05T19:00:00+00:00"
FIVE = 5  # T3 is Marlowe's only table for five: one booking fills the slot for that size
FIVE_TURN = 5400
SETTLE_SECONDS = 40


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema("many") as fresh:
        yield fresh


@contextmanager
def receivers(
    url: str,
    tmp_path: Path,
    count: int,
    settings: Path | None = None,
    first_port: int | None = None,
) -> Iterator[list[ServerProcess]]:
    """`count` servers on `url`: on free ports, or on `first_port` and the ports after it."""
    started: list[ServerProcess] = []
    try:
        for i in range(count):
            port = None if first_port is None else first_port + i
            if settings is None:
                started.append(start_server(url, workdir=tmp_path, port=port))
            else:
                started.append(start_server(url, workdir=tmp_path, settings=settings, port=port))
        yield started
    finally:
        for server in started:
            server.stop()


def book(server: ServerProcess, size: int, start: str, event_id: str | None = None) -> Any:
    event = booking_event(event_id or f"evt-{uuid.uuid4().hex}", size, start)
    reply = signed_post(server.base, PARTNER, SECRETS[PARTNER], event)
    return reply.status_code, reply.json()


def host_headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}


def host_cancel(server: ServerProcess, reservation_id: str) -> None:
    path = f"/api/v1/restaurants/{MARLOWES}/reservations/{reservation_id}/cancel"
    reply = requests.post(server.base + path, headers=host_headers(), timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text


def five_available(server: ServerProcess) -> bool:
    start = int(datetime.fromisoformat(SATURDAY_1900).timestamp())
    body = {
        "merchant_id": MARLOWES,
        "slot_time": [
            {
                "service_id": "1000",
                "start_sec": str(start),
                "duration_sec": str(FIVE_TURN),
                "resource_ids": {"party_size": FIVE},
            }
        ],
    }
    reply = requests.post(
        f"{server.base}/v3/BatchAvailabilityLookup", json=body, auth=BASIC, timeout=TIMEOUT
    )
    assert reply.status_code == 200, reply.text
    [answer] = reply.json()["slot_time_availability"]
    return bool(answer["available"])


def listed(server: ServerProcess) -> set[str]:
    reply = requests.get(
        f"{server.base}/api/v1/restaurants/{MARLOWES}/reservations",
        params={"date": "2026-12-05"},
        headers=host_headers(),
        timeout=TIMEOUT,
    )
    assert reply.status_code == 200, reply.text
    return {r["reservation_id"] for r in reply.json()["reservations"] if r["status"] == "booked"}


def previewed_five_open(url: str) -> int:
    """`hoststand slots --json`'s spots_open for five at Saturday 19:00."""
    options = ["--config", str(CONFIGS[0]), "--db", url, "--date", "2026-12-05", "--json"]
    result = CliRunner().invoke(cli, ["--now", NOW.isoformat(), "slots", *options])
    assert result.exit_code == 0, result.output
    [row] = [
        r
        for r in json.loads(result.stdout)
        if r["start"].startswith("2026-12-05T19:00") and r["party_size"] == FIVE
    ]
    return int(row["spots_open"])


def test_a_booking_through_one_receiver_shows_at_once_in_the_others_lookups_and_lists(
    url: str, tmp_path: Path
) -> None:
    with receivers(url, tmp_path, 2) as (first, second):
        # The second has answered (and cached) the slot before the first books it.
        assert five_available(second) and five_available(first)
        assert listed(second) == set()
        assert previewed_five_open(url) == 1
        status, body = book(first, FIVE, SATURDAY_1900)
        assert status == 200 and body["tables"] == ["T3"], body
        assert not five_available(second)
        assert listed(second) == {body["reservation_id"]}
        assert previewed_five_open(url) == 0
        # And back: a cancel through the second frees the slot in the first's answers.
        host_cancel(second, body["reservation_id"])
        assert five_available(first)
        assert listed(first) == set()
        assert book(second, FIVE, SATURDAY_1900)[0] == 200
        assert not five_available(first)


def test_the_feed_exported_beside_running_receivers_has_their_bookings(
    url: str, tmp_path: Path
) -> None:
    with receivers(url, tmp_path, 2) as (first, second):
        assert book(first, FIVE, SATURDAY_1900)[0] == 200
        assert book(second, 2, SATURDAY_1900)[0] == 200
        out = tmp_path / "feeds"
        options = ["--config", str(CONFIGS[0]), "--db", url, "--out", str(out), "--days", "2"]
        result = CliRunner().invoke(cli, ["--now", NOW.isoformat(), "feed", "export", *options])
        assert result.exit_code == 0, result.output
    [path] = out.glob("availability-*.json")
    document = json.loads(path.read_text())
    start = int(datetime.fromisoformat(SATURDAY_1900).timestamp())
    cells = {
        e["resources"]["party_size"]: (e["spots_open"], e["spots_total"])
        for g in document["service_availability"]
        for e in g["availability"]
        if e["start_sec"] == start
    }
    assert cells[FIVE] == (0, 1)
    assert cells[2][0] == cells[2][1] - 1


def outbox(url: str) -> Any:
    with closing(open_store(url)) as store:
        return store.outbox_stats(recent=10_000)


def settle(url: str) -> Any:
    deadline = time.monotonic() + SETTLE_SECONDS
    while (stats := outbox(url))["pending"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert stats["pending"] == 0, stats
    return stats


def assert_each_message_acted_on_once(stub: PartnerStub, url: str) -> None:
    """Every message the partner acted on was acted on once, and is delivered in the store:
    read once the receivers have stopped, as a receiver's clock may still tell partners of
    today after `settle` (its first look at the day, on its turn) and that replace reaches
    the partner before counts read at `settle` would know of it."""
    stats = outbox(url)
    ids = stub.acted_ids()
    assert len(ids) == len(set(ids)) == stats["delivered"]
    assert stats["dead"] == 0


def test_each_partner_message_is_sent_once_however_many_receivers_run(
    url: str, tmp_path: Path
) -> None:
    with PartnerStub(token=NOTIFY_TOKEN) as stub:
        settings = write_settings(tmp_path, stub)
        with receivers(url, tmp_path, 3, settings) as servers:
            booked = []
            for i in range(12):
                status, body = book(servers[i % 3], 2, f"2026-12-0{5 + i % 3}T19:00:00+00:00")
                assert status == 200, body
                booked.append(body["reservation_id"])
            for i, rid in enumerate(booked):
                host_cancel(servers[(i + 1) % 3], rid)  # each through another process
            settle(url)
        notified = Counter(r.target for r in stub.acted(BOOKING))
        assert notified == Counter(booked)  # one CANCELED notification per booking
        assert stub.duplicates(BOOKING) == [] and stub.duplicates(AVAILABILITY) == []
        assert stub.acted(AVAILABILITY)
        assert_each_message_acted_on_once(stub, url)


STREAM = 45
KILL_AFTER = 15


def test_a_receiver_killed_with_sigkill_leaves_the_others_serving_and_nothing_is_lost(
    url: str, tmp_path: Path
) -> None:
    """Bookings round-robin over three processes, each cancelled by the host at once (so
    every process is sending notifications); one process is SIGKILLed mid-stream. An event
    whose receiver died is sent again to a live one, as a partner retries: every
    acknowledged booking is stored once, the others go on answering, and every cancel is
    notified once, the killed process's undelivered messages included."""
    with PartnerStub(token=NOTIFY_TOKEN) as stub:
        settings = write_settings(tmp_path, stub)
        with receivers(url, tmp_path, 3, settings) as servers:
            victim, live = servers[0], servers[1:]
            events: dict[str, dict[str, Any]] = {}
            replies: dict[str, tuple[int, Any]] = {}
            for i in range(STREAM):
                if i == KILL_AFTER:
                    victim.stop(kill=True)
                start = f"2026-12-0{5 + i % 4}T{17 + i % 5}:30:00+00:00"
                event = events[f"stream-{i}"] = booking_event(
                    f"stream-{i}", [2, 4, 3][i % 3], start
                )
                for server in [servers[i % 3], *live]:
                    try:
                        reply = signed_post(server.base, PARTNER, SECRETS[PARTNER], event)
                    except requests.ConnectionError:
                        assert server is victim
                        continue
                    replies[event["id"]] = (reply.status_code, reply.json())
                    if reply.status_code == 200:
                        host_cancel(server, reply.json()["reservation_id"])
                    break
            # The killed one's answers are stored: a live one replays them to a retry, as
            # each booking now stands (the host cancelled every one).
            for event_id, (code, body) in list(replies.items())[:KILL_AFTER]:
                again = signed_post(live[0].base, PARTNER, SECRETS[PARTNER], events[event_id])
                now_stands = {**body, "status": "cancelled"} if code == 200 else body
                assert (again.status_code, again.json()) == (code, now_stands)
            acknowledged = [b["reservation_id"] for s, b in replies.values() if s == 200]
            assert len(replies) == STREAM and len(acknowledged) > STREAM // 2
            settle(url)
        reserved: Counter[str] = Counter()
        with closing(open_store(url)) as store:
            for day in store.service_dates(MARLOWES):
                for entry in store.entries(MARLOWES, day):
                    if entry.operation[0] == "reserve":
                        reserved[entry.operation[2]] += 1
        assert reserved == Counter(acknowledged)  # each once, none that was not answered
        assert Counter(r.target for r in stub.acted(BOOKING)) == Counter(acknowledged)
        assert_each_message_acted_on_once(stub, url)


RESTART_PORT = 8341  # and the two after it


def end_every_session(url: str) -> None:
    """What a PostgreSQL restart does to the receivers: every session of the database but
    this one is ended (the server still runs, so they may reconnect at once)."""
    with psycopg.connect(url, autocommit=True) as conn:
        ended = [
            row[0]
            for row in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
            ).fetchall()
        ]
        conn.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", (ended,))
        deadline = time.monotonic() + SETTLE_SECONDS
        while conn.execute(
            "SELECT 1 FROM pg_stat_activity WHERE pid = ANY(%s)", (ended,)
        ).fetchone():
            assert time.monotonic() < deadline, "the ended sessions are still there"
            time.sleep(0.05)


def host_cancel_through_a_restart(server: ServerProcess, reservation_id: str) -> None:
    """A host's cancel, tried again while it meets a pooled connection the restart ended
    (503: nothing was written), as the tablet does."""
    path = f"/api/v1/restaurants/{MARLOWES}/reservations/{reservation_id}/cancel"
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        reply = requests.post(server.base + path, headers=host_headers(), timeout=TIMEOUT)
        if reply.status_code != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert reply.status_code == 200, reply.text


@pytest.mark.alone  # ends every session of the test database
def test_after_a_postgresql_restart_each_partner_message_is_still_sent_once(
    url: str, tmp_path: Path
) -> None:
    """The restart ends each sender's session; a sender keeping the dead session's pid would
    make its claims void for the others, and each of the three would send every message.
    Slow partner answers keep each claim open while the others look for due messages."""
    with PartnerStub(token=NOTIFY_TOKEN) as stub:
        settings = write_settings(tmp_path, stub)
        with receivers(url, tmp_path, 3, settings, first_port=RESTART_PORT) as servers:
            booked = []
            for i in range(6):
                status, body = book(servers[i % 3], 2, f"2026-12-0{5 + i % 3}T20:00:00+00:00")
                assert status == 200, body
                booked.append(body["reservation_id"])
            settle(url)
            end_every_session(url)
            stub.fail_next(len(booked), SLOW, [BOOKING])
            for i, rid in enumerate(booked):
                host_cancel_through_a_restart(servers[(i + 1) % 3], rid)
            settle(url)
        notified = Counter(r.target for r in stub.acted(BOOKING))
        assert notified == Counter(booked)  # one CANCELED notification per booking
        assert stub.duplicates(BOOKING) == [] and stub.duplicates(AVAILABILITY) == []
        assert_each_message_acted_on_once(stub, url)


EXPORT_PORT = 8344  # and the two after it


def test_receivers_started_together_never_upload_two_feeds_with_one_generation_timestamp(
    url: str, tmp_path: Path
) -> None:
    """Each runs its start-up export; partners refuse a reused generation_timestamp. The
    clock is pinned (--now), so without coordination all three would use the same one."""
    with PartnerStub() as stub:
        started: list[ServerProcess] = []
        try:
            for i in range(3):
                own = tmp_path / f"receiver-{i}"  # its own staging directory
                own.mkdir()
                settings = write_settings(own, stub)
                started.append(
                    start_server(url, workdir=own, settings=settings, port=EXPORT_PORT + i)
                )
            stub.wait_for(
                lambda s: len(availability_uploads(s)) >= 3, SETTLE_SECONDS, "3 start-up feeds"
            )
        finally:
            for server in started:
                server.stop()
        stamps = [
            json.loads(r.body)["metadata"]["generation_timestamp"]
            for r in availability_uploads(stub)
        ]
    assert len(stamps) == 3 and len(set(stamps)) == 3, stamps
    assert min(stamps) == int(NOW.timestamp())  # the first to start has the clock's own


def availability_uploads(stub: PartnerStub) -> list[Any]:
    return [r for r in stub.acted(UPLOAD) if r.target.startswith("availability-")]
