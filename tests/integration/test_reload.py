"""Reloading the restaurant files of a running `hoststand serve` (SIGHUP, or POST
/api/v1/admin/reload): new rules reach lookups and slots, a bad file changes nothing,
bookings that no longer fit are listed and kept, partners are sent replaces."""

from __future__ import annotations

import signal
import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from store import open_store
from tests.integration.server_process import (
    CONFIGS,
    HOST_TOKENS,
    SETTINGS,
    TIMEOUT,
    ServerProcess,
    start_server,
)

MARLOWES = "marlowes-kitchen"
HOST_AUTH = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
ADMIN_TOKEN = "sample-admin-token-for-tests"
BASIC = ("tablefinder", "sample-basic-password")
SATURDAY = date(2026, 12, 5)  # the day after the servers' pinned Friday evening
LATE = int(datetime(2026, 12, 5, 21, 15, tzinfo=UTC).timestamp())  # London is UTC in December
SATURDAY_HOURS = (
    'saturday = [\n  { open = "12:00", close = "15:00", last_seating = "14:00" },\n'
    '  { open = "17:30", close = "23:00", last_seating = "21:30" },'
)
T2 = '[[tables]]\nid = "T2"\nx = 0\ny = 1\nseats = 2\n\n'


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of Marlowe's file to edit, and settings with an admin token and a partner
    that is sent availability replaces (to a port nobody listens on: they stay queued)."""
    restaurant = tmp_path / "marlowes.toml"
    restaurant.write_text(CONFIGS[0].read_text(encoding="utf-8"), encoding="utf-8")
    settings = tmp_path / "server.toml"
    text = SETTINGS.read_text(encoding="utf-8").replace(
        'basic_password = "sample-basic-password"\n',
        'basic_password = "sample-basic-password"\nnotify_url = "http://127.0.0.1:9/"\n',
    )
    text = text.replace(
        'admin_token = "sample-admin-token-change-me"', f'admin_token = "{ADMIN_TOKEN}"'
    )
    settings.write_text(text, encoding="utf-8")
    return restaurant, settings


@pytest.fixture
def server(tmp_path: Path, files: tuple[Path, Path]) -> Iterator[ServerProcess]:
    restaurant, settings = files
    process = start_server(
        tmp_path / "reload.db",
        settings=settings,
        configs=(restaurant, CONFIGS[1]),
        extra=["--no-export"],
    )
    try:
        yield process
    finally:
        process.stop()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def available(server: ServerProcess, start_sec: int, size: int = 2) -> bool:
    slot_time = {
        "service_id": "1000",
        "start_sec": str(start_sec),
        "duration_sec": str(45 * 60 if size <= 2 else 70 * 60),
        "resource_ids": {"party_size": size},
    }
    reply = requests.post(
        f"{server.base}/v3/BatchAvailabilityLookup",
        json={"merchant_id": MARLOWES, "slot_time": [slot_time]},
        auth=BASIC,
        timeout=TIMEOUT,
    )
    assert reply.status_code == 200, reply.text
    [answer] = reply.json()["slot_time_availability"]
    return bool(answer["available"])


def phone_booking(server: ServerProcess, size: int, start: str) -> dict[str, Any]:
    reply = requests.post(
        f"{server.base}/api/v1/restaurants/{MARLOWES}/reservations",
        json={"party_size": size, "start": start, "name": "Ada"},
        headers=HOST_AUTH,
        timeout=TIMEOUT,
    )
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def reservations(server: ServerProcess, day: date) -> list[dict[str, Any]]:
    reply = requests.get(
        f"{server.base}/api/v1/restaurants/{MARLOWES}/reservations",
        params={"date": day.isoformat()},
        headers=HOST_AUTH,
        timeout=TIMEOUT,
    )
    assert reply.status_code == 200, reply.text
    rows: list[dict[str, Any]] = reply.json()["reservations"]
    return rows


def admin_reload(server: ServerProcess, token: str | None = ADMIN_TOKEN) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.post(f"{server.base}/api/v1/admin/reload", headers=headers, timeout=TIMEOUT)


def replaced_days(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT key FROM outbox WHERE kind = 'availability' AND partner = 'tablefinder'"
        ).fetchall()
    return {str(key) for (key,) in rows}


def wait_for(condition: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the reload did not happen in time"
        time.sleep(0.05)


def test_admin_reload_applies_new_rules_keeps_misfits_and_queues_replaces(
    server: ServerProcess, files: tuple[Path, Path]
) -> None:
    restaurant, _settings = files
    on_t2 = phone_booking(server, 2, "2026-12-05T19:00")
    late = phone_booking(server, 4, "2026-12-05T21:15")
    assert on_t2["unit"] == "T2"
    assert available(server, LATE)
    store = open_store(str(server.db))
    entries_before = [e.operation for e in store.entries(MARLOWES, SATURDAY)]

    edit(restaurant, T2, "")
    edit(restaurant, SATURDAY_HOURS, SATURDAY_HOURS.replace('"21:30" },', '"21:00" },'))
    reply = admin_reload(server)

    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["status"] == "reloaded"
    assert body["changed"] == [MARLOWES] and body["unchanged"] == ["merch1"]
    attention = {row["reservation_id"]: row["attention"] for row in body["attention"]}
    assert attention == {
        late["reservation_id"]: "no longer fits: 21:15 is now outside the hours",
    }
    # The booking on the removed table is booked again on another, at its time and size.
    [rehomed] = body["rehomed"]
    assert (rehomed["reservation_id"], rehomed["from"], rehomed["to"]) == (
        on_t2["reservation_id"], "T2", "T4"
    )  # fmt: skip
    assert not available(server, LATE)  # no longer a slot
    rows = {row["reservation_id"]: row for row in reservations(server, SATURDAY)}
    assert {r: rows[r]["status"] for r in attention} == dict.fromkeys(attention, "booked")
    assert {r: rows[r]["attention"] for r in attention} == attention
    moved = rows[on_t2["reservation_id"]]
    assert (moved["status"], moved["unit"], moved["start"][11:16], moved["attention"]) == (
        "booked", "T4", "19:00", None
    )  # fmt: skip
    entries = [e.operation for e in store.entries(MARLOWES, SATURDAY)]
    assert entries[: len(entries_before)] == entries_before  # the rest is the re-homing
    cancel, reserve = entries[len(entries_before) :]
    assert cancel[0::2] == ["cancel", on_t2["reservation_id"]]
    assert (reserve[0], reserve[3], reserve[4]) == ("reserve", "T4", 7 * 60)  # 19:00: from 12:00
    listed = requests.get(
        f"{server.base}/api/v1/restaurants/{MARLOWES}/attention", headers=HOST_AUTH, timeout=5
    )
    assert [row["attention"] for row in listed.json()["attention"]] == list(attention.values())
    # A replace of every day ahead, even those nobody booked (coalesced per day).
    days = replaced_days(server.db)  # type: ignore[arg-type]
    assert {f"{MARLOWES}/2026-12-20", f"{MARLOWES}/2027-01-02"} <= days
    # None of merch1's, unchanged (its today's only, the clock's watch's at start-up).
    assert {key for key in days if key.startswith("merch1/")} <= {"merch1/2026-12-04"}
    assert body["replaces_queued"] >= 30
    # Settled by the host since: cancelled, it has nothing left to sort out.
    cancelled = requests.post(
        f"{server.base}/api/v1/restaurants/{MARLOWES}/reservations/{late['reservation_id']}/cancel",
        headers=HOST_AUTH,
        timeout=TIMEOUT,
    )
    assert cancelled.status_code == 200, cancelled.text
    listed = requests.get(
        f"{server.base}/api/v1/restaurants/{MARLOWES}/attention", headers=HOST_AUTH, timeout=5
    )
    assert listed.json()["attention"] == []
    rows = {row["reservation_id"]: row for row in reservations(server, SATURDAY)}
    assert (rows[late["reservation_id"]]["status"], rows[late["reservation_id"]]["attention"]) == (
        "cancelled",
        None,
    )
    store.close()


def test_a_reload_with_a_bad_file_is_refused_with_every_problem_and_changes_nothing(
    server: ServerProcess, files: tuple[Path, Path]
) -> None:
    restaurant, _settings = files
    edit(restaurant, SATURDAY_HOURS, SATURDAY_HOURS.replace('"21:30" },', '"21:00" },'))
    edit(restaurant, "slot_minutes = 15", 'slot_minutes = "15"\ncolour = "red"')

    assert admin_reload(server, token=None).status_code == 401
    assert admin_reload(server, token="not-the-admin-token").status_code == 401
    reply = admin_reload(server)

    assert reply.status_code == 422, reply.text
    error = reply.json()["error"]
    assert error["code"] == "invalid configuration"
    assert f"{restaurant}: colour: unknown key" in error["problems"]
    assert any(line.startswith(f"{restaurant}: slot_minutes: ") for line in error["problems"])
    assert available(server, LATE)  # the running configuration is kept


def test_sighup_reloads_and_a_bad_file_under_sighup_is_logged_and_kept(
    server: ServerProcess, files: tuple[Path, Path]
) -> None:
    restaurant, _settings = files
    assert available(server, LATE)
    edit(restaurant, SATURDAY_HOURS, SATURDAY_HOURS.replace('"21:30" },', '"21:00" },'))
    server.process.send_signal(signal.SIGHUP)
    wait_for(lambda: not available(server, LATE))

    edit(restaurant, SATURDAY_HOURS.replace('"21:30" },', '"21:00" },'), SATURDAY_HOURS)
    edit(restaurant, 'timezone = "Europe/London"', 'timezone = "Europe/Londres"')
    server.process.send_signal(signal.SIGHUP)
    wait_for(lambda: "reload refused" in server.output())

    assert f"reload refused: {restaurant}: timezone: unknown time zone" in server.output()
    assert not available(server, LATE)  # still the configuration of the first reload
    assert server.process.poll() is None


def test_a_server_started_on_a_file_changed_while_it_was_down_lists_the_misfits(
    tmp_path: Path, files: tuple[Path, Path]
) -> None:
    """A restart instead of a reload: the bookings that no longer fit are listed from the
    start (read from what the log stored), kept booked, and the log is not changed. (A
    file that removed a table a booking ahead is still on is refused at start instead:
    tests/e2e/test_cli.py; only a reload can book it again elsewhere.)"""
    restaurant, settings = files
    db = tmp_path / "restart.db"
    first = start_server(db, settings=settings, configs=(restaurant,), extra=["--no-export"])
    try:
        on_t2 = phone_booking(first, 2, "2026-12-05T19:00")
        late = phone_booking(first, 4, "2026-12-05T21:15")
        fits = phone_booking(first, 4, "2026-12-05T19:30")
    finally:
        first.stop()
    assert on_t2["unit"] == "T2"
    store = open_store(str(db))
    entries_before = [e.operation for e in store.entries(MARLOWES, SATURDAY)]
    store.close()
    edit(restaurant, SATURDAY_HOURS, SATURDAY_HOURS.replace('"21:30" },', '"21:00" },'))

    second = start_server(db, settings=settings, configs=(restaurant,), extra=["--no-export"])
    try:
        listed = requests.get(
            f"{second.base}/api/v1/restaurants/{MARLOWES}/attention",
            headers=HOST_AUTH,
            timeout=TIMEOUT,
        )
        assert listed.status_code == 200, listed.text
        rows = listed.json()["attention"]
        assert {row["reservation_id"]: row["attention"] for row in rows} == {
            late["reservation_id"]: "no longer fits: 21:15 is now outside the hours",
        }
        assert [row["start"][:16] for row in rows] == ["2026-12-05T21:15"]
        assert {row["name"] for row in rows} == {"Ada"}
        day = {row["reservation_id"]: row for row in reservations(second, SATURDAY)}
        assert day[late["reservation_id"]]["status"] == "booked"
        assert day[fits["reservation_id"]]["attention"] is None
        assert day[on_t2["reservation_id"]]["attention"] is None
    finally:
        second.stop()
    assert "1 booking(s) no longer fit" in second.output()  # written by the time it exits
    store = open_store(str(db))
    assert [e.operation for e in store.entries(MARLOWES, SATURDAY)] == entries_before
    store.close()


def test_a_server_whose_floor_is_not_the_one_in_force_says_so_on_healthz_until_reloaded(
    tmp_path: Path, server: ServerProcess, files: tuple[Path, Path]
) -> None:
    """Two servers on one store: a second one starts on a newer file without T2. The first,
    still on the old file, is degraded on /healthz (200: it still books right), naming
    Marlowe's, T2 and what to do; the second is ok. Once the first is reloaded on the same
    file, it is ok again. An unchanged floor never shows a problem."""
    restaurant, settings = files
    assert requests.get(f"{server.base}/healthz", timeout=TIMEOUT).json()["problems"] == []
    newer = tmp_path / "newer.toml"
    newer.write_text(restaurant.read_text(encoding="utf-8").replace(T2, ""), encoding="utf-8")
    second = start_server(
        server.db, settings=settings, configs=(newer, CONFIGS[1]), extra=["--no-export"]
    )
    try:
        reply = requests.get(f"{server.base}/healthz", timeout=TIMEOUT)
        assert reply.status_code == 200, reply.text
        health = reply.json()
        assert health["status"] == "degraded", health
        assert health["problems"] == [
            f"{MARLOWES}: this server's floor plan is not the one in force on the store"
            " (another server reloaded or started on a newer file): it has T2, the floor in"
            " force does not; reload this server (SIGHUP or POST /api/v1/admin/reload)"
        ], health
        other = requests.get(f"{second.base}/healthz", timeout=TIMEOUT).json()
        assert (other["status"], other["problems"]) == ("ok", []), other
        assert out_of_date(server) == {MARLOWES: 1.0, "merch1": 0.0}
        assert out_of_date(second) == {MARLOWES: 0.0, "merch1": 0.0}

        edit(restaurant, T2, "")
        assert admin_reload(server).status_code == 200
        health = requests.get(f"{server.base}/healthz", timeout=TIMEOUT).json()
        assert (health["status"], health["problems"]) == ("ok", []), health
        assert set(out_of_date(server).values()) == {0.0}
    finally:
        second.stop()


def out_of_date(server: ServerProcess) -> dict[str, float]:
    """hoststand_floor_out_of_date per merchant, from /metrics."""
    reply = requests.get(f"{server.base}/metrics", timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    return {
        s.labels["merchant"]: s.value
        for family in text_string_to_metric_families(reply.text)
        for s in family.samples
        if s.name == "hoststand_floor_out_of_date"
    }
