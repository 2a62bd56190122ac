"""A `hoststand serve` SIGKILLed in the middle of writes, then restarted: a burst of partner
CreateBookings from several threads at once, and the host seating parties. Whatever was
answered is there and reads as answered; nothing half-written is visible (every booking in
a log has its index and its user's record, each key its one change); a request whose answer
was lost, sent again, is done at most once. On both stores."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from datetime import date
from pathlib import Path
from typing import Any

import requests

from feed.service.days import BOOKING_SCOPE
from feed.venue.restaurant import load_restaurant
from store import open_store
from tests.integration.partner_stub import BOOKING, PartnerStub
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
from tests.integration.test_partner_updates import (
    NOTIFY_TOKEN,
    TABLEFINDER,
    assert_acted_once,
    current_replace,
    replaces_for,
    settle_after_restart,
    start,
    write_settings,
)

MARLOWES = "marlowes-kitchen"
BASIC = ("tablefinder", "sample-basic-password")
HOST = f"/api/v1/restaurants/{MARLOWES}"
HOST_AUTH = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
BURST = 80
KILL_AFTER = 25  # answers
THREADS = 6
DINNER = ("17:30", "18:15", "19:00", "19:45", "20:30", "21:15")


def create_body(i: int) -> dict[str, Any]:
    """The i-th booking of the burst: six slots over four evenings, a user each."""
    day = 5 + i % 4  # Saturday 5 .. Tuesday 8 December 2026, London = UTC
    hour, minute = (int(p) for p in DINNER[(i // 4) % len(DINNER)].split(":"))
    start = int(NOW.replace(day=day, hour=hour, minute=minute).timestamp())
    return {
        "slot": {
            "merchant_id": MARLOWES,
            "service_id": "1000",
            "start_sec": str(start),
            "duration_sec": "2700",
            "resources": {"party_size": 2},
        },
        "user_information": {"user_id": f"crash-user-{i}", "given_name": "Ada"},
        "idempotency_token": str(10_000 + i),
        "payment_information": {"prepayment_status": "PREPAYMENT_NOT_PROVIDED"},
    }


def kill_midway(
    server: ServerProcess, send: Callable[[int], None], count: int, enough: threading.Event
) -> None:
    """`send(0)` to `send(count - 1)` from THREADS threads at once, the server SIGKILLed as
    soon as `enough` is set (within 60 s, or the test fails); returns when every send has
    ended (each catches the failures a killed server gives it), the server killed."""
    try:
        with ThreadPoolExecutor(THREADS) as pool:
            futures = [pool.submit(send, i) for i in range(count)]
            assert enough.wait(timeout=60)
            server.stop(kill=True)
            for future in futures:
                future.result()
    finally:
        server.stop(kill=True)


def v3(server: ServerProcess, name: str, body: Any) -> Any:
    reply = requests.post(f"{server.base}/v3/{name}", json=body, auth=BASIC, timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    return reply.json()


def stored_reserves(db: str) -> Counter[str]:
    with closing(open_store(db)) as store:
        return Counter(
            entry.operation[2]
            for day in store.service_dates(MARLOWES)
            for entry in store.entries(MARLOWES, day)
            if entry.operation[0] == "reserve"
        )


def test_a_create_booking_burst_killed_midway_loses_nothing_answered_and_shows_nothing_half_done(
    any_db: str, tmp_path: Path
) -> None:
    server = start_server(any_db, workdir=tmp_path)
    answered: dict[int, Any] = {}
    lost: list[int] = []
    lock = threading.Lock()
    enough = threading.Event()

    def send(i: int) -> None:
        try:
            reply = requests.post(
                f"{server.base}/v3/CreateBooking", json=create_body(i), auth=BASIC, timeout=5
            )
            body = reply.json() if reply.status_code == 200 else None
        except (requests.RequestException, ValueError):
            body = None
        with lock:
            if body is None:
                lost.append(i)
            else:
                answered[i] = body
            if len(answered) >= KILL_AFTER:
                enough.set()

    kill_midway(server, send, BURST, enough)
    confirmed = {
        i: body["booking"]["booking_id"]
        for i, body in answered.items()
        if body.get("booking", {}).get("status") == "CONFIRMED"
    }
    assert len(confirmed) >= KILL_AFTER // 2
    assert lost, "the burst finished before the kill"

    reserves = stored_reserves(any_db)
    assert set(reserves.values()) == {1}
    assert set(confirmed.values()) <= set(reserves)
    with closing(open_store(any_db)) as store:
        for booking_id in reserves:  # no booking without its index: nothing half-written
            index = store.recall(BOOKING_SCOPE, booking_id)
            assert isinstance(index, dict) and index["merchant_id"] == MARLOWES, booking_id

    restarted = start_server(any_db, workdir=tmp_path)
    try:
        for i, booking_id in confirmed.items():
            status = v3(restarted, "GetBookingStatus", {"booking_id": booking_id})
            assert status["booking_status"] == "CONFIRMED", status
            listed = v3(restarted, "ListBookings", {"user_id": f"crash-user-{i}"})["bookings"]
            assert [b["booking_id"] for b in listed] == [booking_id]
            again = v3(restarted, "CreateBooking", create_body(i))  # the same token
            assert again["booking"]["booking_id"] == booking_id
        # A request whose answer was lost, sent again, is booked once: either the booking
        # the killed server stored for its token, or a new one now.
        for i in lost:
            again = v3(restarted, "CreateBooking", create_body(i))
            assert again == v3(restarted, "CreateBooking", create_body(i))
            if "booking" in again:
                confirmed[i] = again["booking"]["booking_id"]
    finally:
        restarted.stop()
    reserves = stored_reserves(any_db)
    assert set(reserves.values()) == {1}
    assert set(reserves) == set(confirmed.values())


def host(server: ServerProcess, path: str, body: Any = None, key: str | None = None) -> Any:
    headers = {**HOST_AUTH, **({"Idempotency-Key": key} if key else {})}
    return requests.post(f"{server.base}{HOST}{path}", json=body, headers=headers, timeout=5)


def board(server: ServerProcess) -> Any:
    reply = requests.get(f"{server.base}{HOST}/board", headers=HOST_AUTH, timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_host_seatings_killed_midway_keep_each_answered_tap_once(
    any_db: str, tmp_path: Path
) -> None:
    """Walk-ins fill the floor and queue; the host then frees tables (each seating the next
    party) and takes more walk-ins, each tap with its Idempotency-Key, while the server is
    killed. After the restart every answered tap replays its answer and changes nothing,
    and the board is the log's."""
    server = start_server(any_db, workdir=tmp_path)
    taps: list[tuple[str, str, Any]] = []
    for i in range(14):
        taps.append((f"walk-{i}", "/walk-ins", {"size": 2, "party_id": f"w{i}"}))
    for table in ("T1", "T2", "T3", "T4", "T5", "T6"):
        taps.append((f"free-{table}", f"/tables/{table}/free", None))
    answered: dict[str, tuple[int, Any]] = {}
    lost: list[str] = []
    killer = threading.Timer(0, lambda: None)
    try:
        for n, (key, path, body) in enumerate(taps):
            if n == len(taps) - 4:
                killer = threading.Timer(0.02, lambda: server.stop(kill=True))
                killer.start()
            try:
                reply = host(server, path, body, key)
                answered[key] = (reply.status_code, reply.json())
            except requests.RequestException:
                lost.append(key)
    finally:
        killer.join()
        server.stop(kill=True)
    assert len(answered) >= len(taps) - 4
    restarted = start_server(any_db, workdir=tmp_path)
    try:
        before = board(restarted)
        for key, path, body in taps:
            if key in answered:
                reply = host(restarted, path, body, key)
                assert (reply.status_code, reply.json()) == answered[key], key
        assert board(restarted) == before  # replayed answers changed nothing
        for key, path, body in taps:
            if key in lost:
                first = host(restarted, path, body, key)
                second = host(restarted, path, body, key)
                assert (first.status_code, first.json()) == (second.status_code, second.json())
    finally:
        restarted.stop()


def test_the_outbox_of_a_burst_killed_midway_still_tells_the_partner_where_each_day_ended(
    tmp_path: Path,
) -> None:
    """Partner bookings from several threads, each answered booking cancelled by the host
    (a notification owed for each), the server SIGKILLed midway: after a restart the
    partner has heard of every cancel once and each day's last replace is the day as it
    is, nothing given up."""
    marlowes = load_restaurant(CONFIGS[0])
    db = tmp_path / "hoststand.db"
    with PartnerStub(token=NOTIFY_TOKEN) as stub:
        settings = write_settings(tmp_path, stub)
        server = start(db, settings)
        cancelled: list[str] = []
        lock = threading.Lock()
        enough = threading.Event()

        def one(i: int) -> None:
            day = 5 + i % 3
            event = booking_event(f"burst-{i}", 2, f"2026-12-{day:02d}T{DINNER[i % 6]}:00+00:00")
            try:
                reply = signed_post(server.base, TABLEFINDER, SECRETS[TABLEFINDER], event)
                if reply.status_code != 200:
                    return
                rid = reply.json()["reservation_id"]
                cancel = requests.post(
                    f"{server.base}{HOST}/reservations/{rid}/cancel",
                    headers=HOST_AUTH,
                    timeout=5,
                )
                if cancel.status_code == 200:
                    with lock:
                        cancelled.append(rid)
                        if len(cancelled) >= 10:
                            enough.set()
            except requests.RequestException:
                return

        kill_midway(server, one, 60, enough)
        outbox = settle_after_restart(db, settings)
        for rid in cancelled:
            told = [r for r in stub.acted(BOOKING) if r.target == rid]
            assert len(told) == 1, rid
            assert told[0].json()["status"] == "CANCELED"
        for day in (date(2026, 12, 5), date(2026, 12, 6), date(2026, 12, 7)):
            assert replaces_for(stub, day)[-1] == current_replace(db, marlowes, day)
        assert outbox["dead"] == 0
        assert_acted_once(stub, db)
