"""The host's hand on the tables over a real server (issue #11): seat, move, arrive, a
check-in at a busy table, and the day's reservations as the host sees them.

The server's clock is pinned at Friday 2026-12-04 18:00 GMT (Marlowe's dinner is on)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.integration.server_process import HOST_TOKENS, ServerProcess, running_server

MARLOWES = "marlowes-kitchen"
HOST = f"/api/v1/restaurants/{MARLOWES}"
AUTH = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
TIMEOUT = 10


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    with running_server(tmp_path / "hoststand.db") as running:
        yield running


def call(server: ServerProcess, method: str, path: str, body: Any = None) -> requests.Response:
    return requests.request(
        method, f"{server.base}{HOST}{path}", json=body, headers=AUTH, timeout=TIMEOUT
    )


def ok(reply: requests.Response) -> Any:
    assert reply.status_code == 200, reply.text
    return reply.json()


def phone_booking(server: ServerProcess, size: int, hhmm: str, name: str) -> str:
    body = {"party_size": size, "start": f"2026-12-04T{hhmm}", "name": name, "phone": "+44 1"}
    return str(ok(call(server, "POST", "/reservations", body))["reservation_id"])


def tables(server: ServerProcess) -> dict[str, str]:
    return dict(ok(call(server, "GET", "/board"))["result"]["tables"])


def reservations(server: ServerProcess) -> dict[str, dict[str, Any]]:
    rows = ok(call(server, "GET", "/reservations"))["reservations"]
    return {row["reservation_id"]: row for row in rows}


def test_a_check_in_at_a_busy_table_marks_the_guests_arrived_and_names_free_units(
    server: ServerProcess,
) -> None:
    rid = phone_booking(server, 4, "18:15", "Ann")  # T1, the first 4-top
    for party in ("X", "Y"):  # the 2-tops
        ok(call(server, "POST", "/walk-ins", {"size": 2, "party_id": party}))
    ok(call(server, "POST", "/walk-ins", {"size": 1, "party_id": "W", "name": "Bo"}))  # waits
    assert ok(call(server, "POST", "/parties/W/seat", {"unit": "T1"}))["result"] == ["W@T1"]
    busy = call(server, "POST", f"/reservations/{rid}/check-in")
    assert busy.status_code == 409, busy.text
    error = busy.json()["error"]
    assert error["code"] == "table busy" and error["arrived"] is True
    assert error["free_units"] == ["T5", "T6", "T3"]  # fewest seats first
    assert "T1" in error["message"] and "T5" in error["message"]
    assert reservations(server)[rid]["status"] == "arrived"
    # The host chooses T5 for them: checked in where they sit.
    seated = ok(call(server, "POST", f"/parties/{rid}/seat", {"unit": "T5"}))
    assert f"{rid}@T5" in seated["result"]
    row = reservations(server)[rid]
    assert (row["status"], row["seated_at"], row["unit"]) == ("seated", "T5", "T1")
    assert tables(server)["T5"] == rid


def test_a_busy_check_in_names_no_table_held_for_guests_due_now(
    server: ServerProcess,
) -> None:
    ann = phone_booking(server, 4, "18:15", "Ann")  # T1
    cy = phone_booking(server, 4, "18:15", "Cy")  # T5: held for Cy from 18:00, as for Ann
    for party in ("X", "Y"):  # the 2-tops
        ok(call(server, "POST", "/walk-ins", {"size": 2, "party_id": party}))
    ok(call(server, "POST", "/walk-ins", {"size": 1, "party_id": "W"}))  # waits
    assert ok(call(server, "POST", "/parties/W/seat", {"unit": "T1"}))["result"] == ["W@T1"]
    assert tables(server)["T5"] == f"held:{reservations(server)[cy]['reservation_id']}"
    busy = call(server, "POST", f"/reservations/{ann}/check-in")
    assert busy.status_code == 409, busy.text
    error = busy.json()["error"]
    assert error["free_units"] == ["T6", "T3"]  # T5 is Cy's: seating Ann there robs Cy
    assert "free now for them: T6, T3" in error["message"]


def test_a_busy_check_in_names_apart_the_free_tables_booked_before_the_guests_would_finish(
    server: ServerProcess,
) -> None:
    """18:00: Ann's four are at the door for 18:15, Wu sits at Ann's T1. T5 is free now but
    Cy's four are due there at 18:45, inside the 70 minutes Ann's party would sit: the
    answer said "free now for them: T5, T6, T3", and the host sat Ann at Cy's table. It
    names T5 apart, with Cy's time, and lists the tables clear of other bookings."""
    ann = phone_booking(server, 4, "18:15", "Ann")  # T1
    phone_booking(server, 4, "18:45", "Cy")  # T5: due before Ann's 70 minutes are over
    phone_booking(server, 6, "20:00", "Dee")  # T3, due after Ann would be done: clear
    for party in ("X", "Y"):  # the 2-tops
        ok(call(server, "POST", "/walk-ins", {"size": 2, "party_id": party}))
    ok(call(server, "POST", "/walk-ins", {"size": 1, "party_id": "W", "name": "Wu"}))  # waits
    assert ok(call(server, "POST", "/parties/W/seat", {"unit": "T1"}))["result"] == ["W@T1"]
    busy = call(server, "POST", f"/reservations/{ann}/check-in")
    assert busy.status_code == 409, busy.text
    error = busy.json()["error"]
    assert error["free_units"] == ["T5", "T6", "T3"]  # as before: every free table that fits
    assert error["clear_units"] == ["T6", "T3"]
    assert error["booked_units"] == [{"unit": "T5", "at": "18:45", "in_minutes": 45}]
    assert error["message"] == (
        "T1 is still taken: the guests are marked arrived; free now for them: T6, T3;"
        " free but booked before they would finish: T5 at 18:45"
    )


def test_a_busy_check_in_with_only_booked_tables_free_says_none_is_clear(
    server: ServerProcess,
) -> None:
    """The only free 2-top is Tanaka's, due within Lou's 45 minutes: not offered as free
    for Lou, said as booked, with Tanaka's time."""
    lou = phone_booking(server, 2, "18:15", "Lou")  # T2
    phone_booking(server, 2, "18:30", "Tanaka")  # T4
    for size, pid in ((4, "al"), (4, "bea"), (4, "cam"), (6, "dee")):  # T1, T5, T6, T3
        ok(call(server, "POST", "/walk-ins", {"size": size, "party_id": pid}))
    ok(call(server, "POST", "/walk-ins", {"size": 2, "party_id": "W"}))  # waits
    ok(call(server, "POST", "/parties/W/seat", {"unit": "T2"}))
    error = call(server, "POST", f"/reservations/{lou}/check-in").json()["error"]
    assert (error["free_units"], error["clear_units"]) == (["T4"], [])
    assert error["booked_units"] == [{"unit": "T4", "at": "18:30", "in_minutes": 30}]
    assert error["message"] == (
        "T2 is still taken: the guests are marked arrived; no table is free for them clear"
        " of other bookings; free but booked before they would finish: T4 at 18:30"
    )


def test_a_seated_party_moves_and_the_board_follows(server: ServerProcess) -> None:
    ok(call(server, "POST", "/walk-ins", {"size": 2, "party_id": "W"}))
    assert tables(server)["T2"] == "W"
    assert ok(call(server, "POST", "/parties/W/move", {"unit": "T4"}))["result"] == []
    board = tables(server)
    assert (board["T2"], board["T4"]) == ("free", "W")


def test_a_party_of_eight_seated_on_a_combo_is_freed_by_one_table(
    server: ServerProcess,
) -> None:
    ok(call(server, "POST", "/walk-ins", {"size": 8, "party_id": "BIG"}))
    board = tables(server)
    assert (board["T5"], board["T6"]) == ("BIG", "BIG")  # seated by the pass on T5+T6
    ok(call(server, "POST", "/tables/T6/free"))
    board = tables(server)
    assert (board["T5"], board["T6"]) == ("free", "free")


def test_arrived_guests_are_listed_as_arrived(server: ServerProcess) -> None:
    rid = phone_booking(server, 2, "19:00", "Cy")
    assert ok(call(server, "POST", f"/reservations/{rid}/arrive"))["result"] is True
    assert reservations(server)[rid]["status"] == "arrived"


def test_the_days_reservations_come_in_time_order_with_the_guests_details(
    server: ServerProcess,
) -> None:
    late = phone_booking(server, 2, "20:00", "Late")
    early = phone_booking(server, 3, "18:30", "Early")
    rows = ok(call(server, "GET", "/reservations"))["reservations"]
    assert [r["reservation_id"] for r in rows] == [early, late]
    first = rows[0]
    assert (first["name"], first["phone"], first["party_size"], first["status"]) == (
        "Early",
        "+44 1",
        3,
        "booked",
    )
    assert first["seated_at"] is None and first["notes"] == ""


@pytest.mark.parametrize(
    "path,body,status,code,words",
    [
        ("/parties/W/seat", {"unit": "T9"}, 404, "unknown table", "T9 is not a table"),
        ("/parties/NOBODY/seat", {"unit": "T1"}, 404, "unknown party", "no party NOBODY"),
        ("/parties/W/move", {"unit": "T1"}, 409, "not seated", "W is not sitting"),
        ("/parties/W/seat", {"unit": "T2"}, 409, "table too small", "T2 is too small"),
    ],
)
def test_the_hosts_refusals_say_what_is_wrong_in_words(
    server: ServerProcess, path: str, body: Any, status: int, code: str, words: str
) -> None:
    for party, size in (("X", 2), ("Y", 2), ("Z", 6), ("W", 6)):  # T2, T4, T3; W waits
        ok(call(server, "POST", "/walk-ins", {"size": size, "party_id": party}))
    reply = call(server, "POST", path, body)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert error["code"] == code and words in error["message"], error


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/reservations/{rid}/check-in", None),
        ("/reservations/{rid}/arrive", None),
        ("/parties/{rid}/seat", {"unit": "T2"}),
    ],
    ids=["check-in", "arrive", "seat"],
)
def test_a_booking_of_a_later_day_is_too_early_with_its_time_and_changes_nothing(
    server: ServerProcess, path: str, body: Any
) -> None:
    booking = {"party_size": 2, "start": "2026-12-05T19:00", "name": "Dee", "phone": "+44 1"}
    rid = str(ok(call(server, "POST", "/reservations", booking))["reservation_id"])
    reply = call(server, "POST", path.format(rid=rid), body)
    assert reply.status_code == 409, reply.text
    error = reply.json()["error"]
    assert error["code"] == "too early"
    assert "Saturday 2026-12-05 19:00" in error["message"]
    assert set(error) == {"code", "message"}
    [row] = ok(call(server, "GET", "/reservations?date=2026-12-05"))["reservations"]
    assert (row["status"], row["seated_at"]) == ("booked", None)
    assert tables(server)["T2"] == "free"


def test_a_changed_booking_sits_on_the_floor_under_the_id_the_host_knows(
    server: ServerProcess,
) -> None:
    """A change books the guests again under another engine reservation ("bk-....1"): the
    floor names the occupant, its joined tables and its reservation row by the booking id,
    and the host moves them by it."""
    big = phone_booking(server, 9, "19:00", "")
    ok(call(server, "POST", f"/reservations/{big}/change", {"start": "2026-12-04T19:30"}))
    assert ok(call(server, "POST", f"/parties/{big}/seat", {"unit": "T5+T6"}))["result"] == [
        f"{big}@T5+T6"
    ]
    floor = ok(call(server, "GET", "/floor"))
    seated = {t["id"]: t["occupant"]["party_id"] for t in floor["tables"] if t["occupant"]}
    assert seated == {"T5": big, "T6": big}
    assert [c["party_id"] for c in floor["combos"]] == [big, None, None]
    assert [(r["reservation_id"], r["party_id"]) for r in floor["reservations"]] == [(big, big)]
    assert reservations(server)[big]["source"] == "host"
    moved = call(server, "POST", f"/parties/{seated['T5']}/move", {"unit": "T3+T4"})
    assert moved.status_code == 200, moved.text
    assert tables(server)["T3"] == big


def test_a_change_says_over_pacing_as_a_boolean_or_is_refused_changing_nothing(
    server: ServerProcess,
) -> None:
    booking = phone_booking(server, 2, "19:00", "Di")
    for bad in ("yes", 1, None):
        reply = call(
            server,
            "POST",
            f"/reservations/{booking}/change",
            {"start": "2026-12-04T19:30", "over_pacing": bad},
        )
        assert 400 <= reply.status_code < 500, (bad, reply.text)
        assert reservations(server)[booking]["start"][11:16] == "19:00"
    # Marlowe's has no pacing: the flag changes nothing, and the booking is not marked.
    body = {"start": "2026-12-04T19:30", "over_pacing": True}
    ok(call(server, "POST", f"/reservations/{booking}/change", body))
    row = reservations(server)[booking]
    assert (row["start"][11:16], row["over_pacing"]) == ("19:30", False)
