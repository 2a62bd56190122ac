"""`hoststand host ...` on a stored day, through click's runner with the clock pinned at
Friday 2026-12-04 18:00 GMT (Marlowe's dinner is on). Exit 0 done, 1 refused, 2 bad input."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from feed.cli import main

MARLOWES = str(Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml")
NOW = "2026-12-04T18:00:00Z"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HOSTSTAND_DB", raising=False)
    monkeypatch.delenv("HOSTSTAND_SETTINGS", raising=False)
    monkeypatch.chdir(tmp_path)


def host(*args: str, now: str = NOW) -> Result:
    return CliRunner().invoke(
        main, ["--now", now, "host", *args, "--config", MARLOWES, "--db", "h.db"]
    )


def as_json(*args: str) -> Any:
    result = host(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def book(size: int, at: str, name: str) -> str:
    result = CliRunner().invoke(
        main,
        ["--now", NOW, "reserve", "--config", MARLOWES, "--db", "h.db",
         "--party-size", str(size), "--at", at, "--name", name],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return result.output.split()[1].rstrip(":")


def test_a_walk_in_is_seated_and_the_board_shows_it_by_name() -> None:
    result = host("walk-in", "2", "--name", "Ann", "--id", "A")
    assert (result.exit_code, result.output) == (0, "Ann: seated T2\n")
    board = host("board")
    assert board.exit_code == 0
    assert "T2" in board.output and "Ann (2) at T2, seated 18:00" in board.output
    assert "\x1b[" not in board.output  # no colour when the output is not a terminal


def test_the_board_as_json_is_the_tablets_floor_document() -> None:
    host("walk-in", "8", "--name", "Big", "--id", "B")
    floor = as_json("board")
    by_id = {t["id"]: t for t in floor["tables"]}
    assert by_id["T5"]["occupant"]["unit"] == "T5+T6" == by_id["T6"]["occupant"]["unit"]
    assert [c["party_id"] for c in floor["combos"]] == ["B", None, None]


def test_free_names_who_to_seat_now() -> None:
    for pid, size in (("P1", 2), ("P2", 2), ("P3", 2), ("P4", 6), ("P5", 3), ("P6", 4)):
        host("walk-in", str(size), "--id", pid)
    queued = host("walk-in", "1", "--id", "P7")
    assert queued.output == "P7: queued 1\n"
    freed = host("free", "T4")
    assert (freed.exit_code, freed.output) == (0, "T4 freed; seat now: P7 at T4\n")


def test_a_refusal_exits_1_and_says_why() -> None:
    result = host("free", "T4")
    assert result.exit_code == 1
    assert "table not occupied" in result.output


def test_bad_input_exits_2() -> None:
    assert host("walk-in", "0").exit_code == 2
    assert host("walk-in", "two").exit_code == 2
    result = CliRunner().invoke(main, ["host", "board", "--config", "nope.toml", "--db", "h.db"])
    assert result.exit_code == 2


def test_a_walk_in_larger_than_the_restaurant_seats_is_bad_input_and_writes_nothing() -> None:
    # 12 passes the command's own 1..20 but not Marlowe's max_party_size of 10: the same
    # mistake as a size of 0, and what `hoststand reserve` says is bad input (2), not a
    # refusal by the floor (1).
    for args in (("walk-in", "12", "--name", "Big"), ("walk-in", "12", "--json")):
        result = host(*args)
        assert result.exit_code == 2, result.output
        assert "Marlowe's Kitchen seats parties of 1 to 10, not 12" in result.stderr
    assert stored_days() == set()
    reserved = CliRunner().invoke(
        main,
        ["--now", NOW, "reserve", "--config", MARLOWES, "--db", "h.db",
         "--party-size", "12", "--at", "2026-12-04T19:00"],
    )  # fmt: skip
    assert reserved.exit_code == 2, reserved.output


def test_a_closed_day_is_refused() -> None:
    assert host("board", "--date", "2026-12-25").exit_code == 1


def test_check_in_arrive_seat_move_cancel_and_the_reservations_list() -> None:
    ann = book(4, "2026-12-04T18:15", "Ann")  # T1
    bo = book(2, "2026-12-04T19:00", "Bo")
    cy = book(4, "2026-12-04T19:30", "Cy")
    assert host("check-in", ann).output == f"{ann} checked in: seated\n"
    assert host("arrive", bo).output == f"{bo} arrived\n"
    seated = host("seat", bo, "T4")
    assert seated.exit_code == 0 and f"{bo} at T4" in seated.output
    assert host("move", bo, "T2").exit_code == 0
    cancelled = host("cancel", cy)
    assert (cancelled.exit_code, cancelled.output) == (0, f"{cy} cancelled\n")
    rows = {r["name"]: r for r in as_json("reservations")}
    assert rows["Ann"]["status"] == "seated" and rows["Ann"]["seated_at"] == "T1"
    assert rows["Bo"]["status"] == "seated" and rows["Bo"]["seated_at"] == "T2"
    assert rows["Cy"]["status"] == "cancelled"
    text = host("reservations").output
    assert "18:15" in text and "Ann (4)" in text and "cancelled" in text


def test_leave_takes_a_waiting_party_off_the_queue() -> None:
    for pid in ("A", "B", "C", "D", "E", "F"):
        host("walk-in", "4", "--id", pid)
    host("walk-in", "4", "--id", "G")
    assert [p["party_id"] for p in as_json("board")["queue"]] == ["E", "F", "G"]
    assert host("leave", "G").exit_code == 0
    assert "G" not in [p["party_id"] for p in as_json("board")["queue"]]
    assert host("leave", "G").exit_code == 1


def test_a_stored_day_is_chosen_with_date() -> None:
    host("walk-in", "2", "--id", "X")
    other = as_json("board", "--date", "2026-12-05")
    assert all(t["occupant"] is None for t in other["tables"])


def test_the_reservations_list_names_a_booking_without_a_name_once() -> None:
    result = CliRunner().invoke(
        main,
        ["--now", NOW, "reserve", "--config", MARLOWES, "--db", "h.db",
         "--party-size", "2", "--at", "2026-12-04T19:00"],
    )  # fmt: skip
    booking_id = result.output.split()[1].rstrip(":")
    (line,) = host("reservations").output.splitlines()
    assert line.split() == ["19:00", "booked", "-", "(2)", "T2", booking_id]


def test_a_cancel_that_frees_a_held_table_names_who_to_seat_now() -> None:
    ann = book(2, "2026-12-04T18:15", "Ann")  # held from 18:00: the pass keeps it for her
    for pid, size in (("P1", 2), ("P2", 4), ("P3", 6), ("P4", 4), ("P5", 4)):
        host("walk-in", str(size), "--id", pid)
    assert host("walk-in", "2", "--id", "Q").output == "Q: queued 1\n"
    cancelled = host("cancel", ann)
    assert cancelled.exit_code == 0
    (table,) = [
        t["id"] for t in as_json("board")["tables"] if (t["occupant"] or {}).get("party_id") == "Q"
    ]
    assert cancelled.output == f"{ann} cancelled; seat now: Q at {table}\n"


def test_the_reservations_list_says_how_late_a_booking_not_yet_here_is() -> None:
    lou = book(2, "2026-12-04T18:15", "Lou")
    may = book(2, "2026-12-04T18:30", "May")
    lines = host("reservations", now="2026-12-04T18:27:00Z").output.splitlines()
    assert lines[0].endswith("12 min late") and lou in lines[0]
    assert "late" not in lines[1] and may in lines[1]
    host("arrive", lou, now="2026-12-04T18:27:00Z")  # at the door: no longer late
    assert "late" not in host("reservations", now="2026-12-04T18:28:00Z").output


def test_change_books_again_under_the_same_id_and_the_list_keeps_one_row() -> None:
    ann = book(6, "2026-12-04T19:00", "Ann")  # T3, Marlowe's only table for 6, 90 minutes
    bo = book(6, "2026-12-04T21:00", "Bo")
    refused = host("change", bo, "--at", "2026-12-04T19:15")
    assert refused.exit_code == 1
    assert refused.output.strip() == (
        "hoststand: no table for 6 at 2026-12-04 19:15; open for 6 that day: 20:30, 20:45, 21:00"
    )  # at 18:00 the 17:30 slot has gone; 21:00 is Bo's own, open once Bo moves
    moved = host("change", bo, "--at", "2026-12-04T20:30")
    assert (moved.exit_code, moved.output) == (
        0,
        f"{bo} changed: party of 6 at 2026-12-04 20:30, T3\n",
    )
    smaller = host("change", bo, "--party-size", "4")
    assert (smaller.exit_code, smaller.output) == (
        0,
        f"{bo} changed: party of 4 at 2026-12-04 20:30, T1\n",
    )
    # One row per booking: Bo's two earlier versions are not 'cancelled' rows.
    rows = as_json("reservations")
    assert [(r["reservation_id"], r["time"], r["size"], r["status"]) for r in rows] == [
        (ann, "19:00", 6, "booked"),
        (bo, "20:30", 4, "booked"),
    ]
    assert [line.split()[:3] for line in host("reservations").output.splitlines()] == [
        ["19:00", "booked", "Ann"],
        ["20:30", "booked", "Bo"],
    ]


def test_change_needs_a_time_or_a_size_and_a_known_booking() -> None:
    bo = book(2, "2026-12-04T19:00", "Bo")
    nothing = host("change", bo)
    assert nothing.exit_code == 2 and "give --at, --party-size or both" in nothing.output
    unknown = host("change", "bk-nope", "--party-size", "2")
    assert unknown.exit_code == 1 and "no reservation bk-nope" in unknown.output
    assert host("change", bo, "--party-size", "0").exit_code == 2


# -- a partner's booking changed from the terminal ------------------------------------------

SECRET = "s" * 32
PARTNER_SETTINGS = f"""
[[partners]]
id = "tablefinder"
secret = "{SECRET}"
notify_url = "http://127.0.0.1:9"
"""


def partner_booking(start: str, at: str = NOW) -> str:
    """tablefinder's booking, taken by its signed webhook as `serve` takes it."""
    import uuid

    from feed.service.receiver import Receiver
    from feed.service.signing import sign
    from feed.settings import Partner, Settings
    from feed.venue.restaurant import load_restaurant
    from store.sqlite import SQLiteStore

    partner = Partner("tablefinder", SECRET, None, notify_url="http://127.0.0.1:9")
    now = datetime.fromisoformat(at.replace("Z", "+00:00"))
    event = {
        "id": f"evt-{uuid.uuid4().hex}",
        "type": "reservation.requested",
        "merchant_id": "marlowes-kitchen",
        "data": {"party_size": 2, "start": start, "name": "Pat"},
    }
    body = json.dumps(event).encode()
    with SQLiteStore(Path("h.db")) as store:
        rec = Receiver(
            [load_restaurant(Path(MARLOWES))],
            store,
            Settings(partners={"tablefinder": partner}),
            lambda: now,
        )
        reply = rec.webhook("tablefinder", sign(SECRET, int(now.timestamp()), body), body)
        assert reply.code is None, reply.body
        return str(reply.body["reservation_id"])


def told(kind: str = "booking") -> list[dict[str, Any]]:
    """Every message of `kind` in the file's outbox, in order (pending() gives only the
    first of each booking's queue)."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect("h.db")) as conn:
        rows = conn.execute("SELECT payload FROM outbox WHERE kind = ? ORDER BY id", (kind,))
        return [json.loads(payload) for (payload,) in rows]


def test_a_partners_booking_is_changed_here_only_with_the_partners_known() -> None:
    pat = partner_booking("2026-12-04T19:00:00+00:00")
    before = len(told())
    refused = host("cancel", pat)
    assert refused.exit_code == 1
    assert refused.output.strip() == (
        f"hoststand: {pat} is tablefinder's booking: give --settings (the file `serve` reads)"
        " so that tablefinder hears of the change"
    )
    assert host("change", pat, "--at", "2026-12-04T19:30").exit_code == 1
    assert [r["status"] for r in as_json("reservations")] == ["booked"]  # nothing changed
    Path("settings.toml").write_text(PARTNER_SETTINGS, encoding="utf-8")
    moved = host("change", pat, "--at", "2026-12-04T19:30", "--settings", "settings.toml")
    assert moved.exit_code == 0, moved.output
    (update,) = told()[before:]
    assert update["status"] == "CONFIRMED" and update["_updateMask"] == "startTime"
    assert update["startTime"] == "2026-12-04T19:30:00Z"
    cancelled = CliRunner().invoke(
        main,
        ["--now", NOW, "host", "cancel", pat, "--config", MARLOWES, "--db", "h.db"],
        env={"HOSTSTAND_SETTINGS": "settings.toml"},  # as serve's file, from the environment
    )
    assert cancelled.exit_code == 0, cancelled.output
    assert told()[-1]["status"] == "CANCELED"
    assert told("availability"), "partners get today's availability replaced too"


def test_a_walk_in_booking_of_the_host_needs_no_settings() -> None:
    bo = book(2, "2026-12-04T19:00", "Bo")
    assert host("cancel", bo).exit_code == 0
    assert host("walk-in", "2", "--settings", "missing.toml").exit_code == 2  # a bad file


def test_no_write_makes_a_partners_booking_a_no_show_the_partner_would_not_hear_of() -> None:
    pat = partner_booking("2026-12-04T18:15:00+00:00")  # held until 18:30
    late = "2026-12-04T18:31:00Z"
    assert host("board", now=late).exit_code == 0  # reading writes nothing: allowed
    refused = host("walk-in", "2", now=late)
    assert refused.exit_code == 1
    assert refused.output.strip() == (
        f"hoststand: {pat}, tablefinder's booking at 18:15, is a no-show by now: give"
        " --settings (the file `serve` reads) so that tablefinder hears of it"
    )
    assert [r["status"] for r in as_json("reservations")] == ["booked"]  # nothing written
    Path("settings.toml").write_text(PARTNER_SETTINGS, encoding="utf-8")
    walked = host("walk-in", "2", "--settings", "settings.toml", now=late)
    assert walked.exit_code == 0, walked.output
    assert told()[-1]["status"] == "NO_SHOW"  # the walk-in's minute made it one: told
    assert host("walk-in", "2", now=late).exit_code == 0  # nothing left to miss


def test_a_booking_moved_to_another_day_says_where_it_went_on_the_day_it_left() -> None:
    bo = book(2, "2026-12-04T19:00", "Bo")
    assert host("change", bo, "--at", "2026-12-05T20:00").exit_code == 0
    (row,) = as_json("reservations")  # Friday, the day it left
    assert (row["reservation_id"], row["status"], row["moved_to"]) == (
        bo,
        "cancelled",
        "2026-12-05 20:00",
    )
    assert "moved to 2026-12-05 20:00" in host("reservations").output
    saturday = as_json("reservations", "--date", "2026-12-05")
    assert [(r["reservation_id"], r["status"], r["moved_to"]) for r in saturday] == [
        (bo, "booked", None)
    ]
    assert host("cancel", bo).exit_code == 0  # called off after all: nowhere to point at
    (row,) = as_json("reservations")
    assert (row["status"], row["moved_to"]) == ("cancelled", None)


def stored_days() -> set[str]:
    """The service days h.db holds log entries for."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect("h.db")) as db:
        return {str(day) for (day,) in db.execute("SELECT DISTINCT service_date FROM log_entries")}


def test_a_walk_in_is_taken_only_on_the_day_being_served_now() -> None:
    for day in ("2027-06-04", "2026-12-05", "2026-12-03"):  # far ahead, tomorrow, yesterday
        refused = host("walk-in", "2", "--id", "W", "--date", day)
        assert refused.exit_code == 1
        assert refused.stderr.splitlines() == [
            f"hoststand: a walk-in is a party at the door now, on the day being served, not"
            f" on {day}: the day being served is 2026-12-04 (leave out --date)"
        ]
        assert all(t["occupant"] is None for t in as_json("board", "--date", day)["tables"])
    assert stored_days() == set()  # nothing written anywhere
    walked = host("walk-in", "2", "--id", "W", "--date", "2026-12-04")
    assert (walked.exit_code, walked.output) == (0, "W: seated T2\n")


def test_a_walk_in_for_today_between_services_is_refused_as_on_the_tablet() -> None:
    refused = host("walk-in", "2", "--date", "2026-12-04", now="2026-12-04T16:00:00Z")
    assert refused.exit_code == 1
    assert refused.stderr.splitlines() == [
        "hoststand: Marlowe's Kitchen is not serving now; the next service opens at 17:30"
    ]
    too_big = host("walk-in", "12", "--date", "2026-12-04")
    assert too_big.exit_code == 2  # bad input, whatever the hour
    assert too_big.stderr.splitlines() == [
        "hoststand: size: Marlowe's Kitchen seats parties of 1 to 10, not 12"
    ]
    assert stored_days() == set()


def test_free_and_leave_act_only_on_the_day_being_served_now() -> None:
    for command in (("free", "T2"), ("leave", "W")):
        refused = host(*command, "--date", "2026-12-05")
        assert refused.exit_code == 1
        assert len(refused.stderr.splitlines()) == 1
        assert "not on 2026-12-05: the day being served is 2026-12-04" in refused.stderr
    assert stored_days() == set()


def test_a_date_outside_the_calendar_is_bad_input() -> None:
    for command in (("board",), ("walk-in", "2")):
        result = host(*command, "--date", "9999-12-31")
        assert result.exit_code == 2
        assert result.stderr.splitlines() == [
            "hoststand: --date: 9999-12-31 is out of range: dates run from 1970-01-01 to 9998-12-31"
        ]


def test_two_restaurant_files_are_refused_not_the_last_one_taken() -> None:
    google = str(Path(MARLOWES).with_name("google-floorplan.toml"))
    both = ["--config", MARLOWES, "--config", google, "--db", "h.db"]
    for command in (
        ["host", "walk-in", "2"],
        ["host", "board"],
        ["reserve", "--party-size", "2", "--at", "2026-12-05T19:00"],
        ["slots", "--date", "2026-12-05"],
    ):
        result = CliRunner().invoke(main, ["--now", NOW, *command, *both])
        assert result.exit_code == 2, (command, result.output)
        assert result.stderr.splitlines() == [
            f"hoststand: --config given 2 times ({MARLOWES}, {google}): this command works"
            " on one restaurant, give its file once"
        ]
    assert not Path("h.db").exists()  # refused before anything was opened
    once_twice = ["--config", MARLOWES, "--config", MARLOWES, "--db", "h.db"]
    walked = CliRunner().invoke(
        main, ["--now", NOW, "host", "walk-in", "2", "--id", "W", *once_twice]
    )
    assert (walked.exit_code, walked.output) == (0, "W: seated T2\n")  # the same file: no doubt


def test_no_write_cancels_a_partners_booking_on_a_day_closed_since_unheard(
    tmp_path: Path,
) -> None:
    """Saturday is closed in the file after tablefinder booked 19:30 and the host 21:00:
    at 20:30 a write on Saturday cancels the partner's booking first (its hold is over,
    the restaurant was closed): without the partners known, nothing is written."""
    pat = partner_booking("2026-12-05T19:30:00+00:00")
    bo = book(2, "2026-12-05T21:00", "Bo")
    text = Path(MARLOWES).read_text(encoding="utf-8")
    old = 'closed = ["2026-12-25", "2026-12-26"]'
    closed = tmp_path / "closed.toml"
    closed.write_text(text.replace(old, 'closed = ["2026-12-05", "2026-12-25", "2026-12-26"]'))
    late = "2026-12-05T20:30:00Z"
    cancel = ["--now", late, "host", "cancel", bo, "--date", "2026-12-05"]
    refused = CliRunner().invoke(main, [*cancel, "--config", str(closed), "--db", "h.db"])
    assert refused.exit_code == 1
    assert refused.output.strip() == (
        f"hoststand: {pat}, tablefinder's booking at 19:30, is cancelled (the day is closed)"
        " by now: give --settings (the file `serve` reads) so that tablefinder hears of it"
    )
    Path("settings.toml").write_text(PARTNER_SETTINGS, encoding="utf-8")
    options = ["--config", str(closed), "--db", "h.db", "--settings", "settings.toml"]
    done = CliRunner().invoke(main, [*cancel, *options])
    assert done.exit_code == 0, done.output
    assert told()[-1]["status"] == "CANCELED" and told()[-1]["name"].endswith(pat)


def test_without_date_a_write_on_a_bookings_day_closed_since_is_checked_all_the_same(
    tmp_path: Path,
) -> None:
    """As above, with no --date: the host's commands on Bo's booking still write Saturday's
    log (the booking's own day, closed since), so the same check stops each of them."""
    pat = partner_booking("2026-12-05T19:30:00+00:00")
    bo = book(2, "2026-12-05T21:00", "Bo")
    closed = closed_saturday(tmp_path)
    said = (
        f"hoststand: {pat}, tablefinder's booking at 19:30, is cancelled (the day is closed)"
        " by now: give --settings (the file `serve` reads) so that tablefinder hears of it"
    )
    for now in ("2026-12-05T20:30:00Z", "2026-12-06T12:00:00Z"):  # that evening, next day
        for command in (["cancel", bo], ["arrive", bo], ["seat", bo, "T2"], ["check-in", bo]):
            args = ["--now", now, "host", *command, "--config", closed, "--db", "h.db"]
            refused = CliRunner().invoke(main, args)
            assert (refused.exit_code, refused.output.strip()) == (1, said), command
    args = ["--now", NOW, "host", "reservations", "--json", "--date", "2026-12-05"]
    listed = CliRunner().invoke(main, [*args, "--config", MARLOWES, "--db", "h.db"])
    rows = json.loads(listed.output)
    assert [r["status"] for r in rows] == ["booked", "booked"]  # nothing was written


def test_a_change_is_checked_on_the_day_it_moves_the_booking_to_as_well() -> None:
    """Bo (Saturday) moved to tonight at 18:31: tonight's log is written too, where
    tablefinder's 18:15 is past its hold: refused without the partners known."""
    pat = partner_booking("2026-12-04T18:15:00+00:00")
    bo = book(2, "2026-12-05T20:00", "Bo")
    refused = host("change", bo, "--at", "2026-12-04T20:00", now="2026-12-04T18:31:00Z")
    assert (refused.exit_code, refused.output.strip()) == (
        1,
        f"hoststand: {pat}, tablefinder's booking at 18:15, is a no-show by now: give"
        " --settings (the file `serve` reads) so that tablefinder hears of it",
    )
    assert [r["status"] for r in as_json("reservations", "--date", "2026-12-05")] == ["booked"]


def test_a_phone_booking_makes_no_partners_booking_a_no_show_unheard() -> None:
    """`hoststand reserve` writes tonight's log as the host's commands do: at 18:31 that
    makes tablefinder's 18:15 a no-show on the way, so without the partners known it is
    refused and nothing is written; with them, the booking is taken and the partner told."""
    pat = partner_booking("2026-12-04T18:15:00+00:00")
    phone = ["--now", "2026-12-04T18:31:00Z", "reserve", "--config", MARLOWES, "--db", "h.db"]
    phone += ["--party-size", "2", "--at", "2026-12-04T20:00"]
    refused = CliRunner().invoke(main, phone)
    assert (refused.exit_code, refused.output.strip()) == (
        1,
        f"hoststand: {pat}, tablefinder's booking at 18:15, is a no-show by now: give"
        " --settings (the file `serve` reads) so that tablefinder hears of it",
    )
    assert [r["status"] for r in as_json("reservations")] == ["booked"]  # nothing written
    Path("settings.toml").write_text(PARTNER_SETTINGS, encoding="utf-8")
    booked = CliRunner().invoke(main, [*phone, "--settings", "settings.toml"])
    assert booked.exit_code == 0, booked.output
    assert told()[-1]["status"] == "NO_SHOW"


def closed_saturday(tmp_path: Path) -> str:
    """Marlowe's file with Saturday 2026-12-05 closed (a reload after it was booked)."""
    text = Path(MARLOWES).read_text(encoding="utf-8")
    old = 'closed = ["2026-12-25", "2026-12-26"]'
    closed = tmp_path / "closed.toml"
    closed.write_text(text.replace(old, 'closed = ["2026-12-05", "2026-12-25", "2026-12-26"]'))
    return str(closed)


def api_rows(config: str, day: str, at: str) -> list[tuple[str, str]]:
    """The host API's list of `day` (GET .../reservations?date=) on h.db at `at`."""
    from datetime import date

    from feed.service.receiver import Receiver
    from feed.settings import Settings
    from feed.venue.restaurant import load_restaurant
    from store.sqlite import SQLiteStore

    now = datetime.fromisoformat(at.replace("Z", "+00:00"))
    with SQLiteStore(Path("h.db")) as store:
        rec = Receiver([load_restaurant(Path(config))], store, Settings(), lambda: now)
        reply = rec.host_reservations("marlowes-kitchen", date.fromisoformat(day))
        assert reply.code is None, reply.body
        return [(r["reservation_id"], r["status"]) for r in reply.body["reservations"]]


def test_the_reservations_of_a_day_closed_since_are_listed_as_the_api_lists_them(
    tmp_path: Path,
) -> None:
    """Saturday closed in the file after Ann (19:30) and Bo (21:00) were booked: the host
    can still read, cancel and move them, so the list shows them, as the tablet's does;
    at 20:30 Ann's hold has ended on a closed day: cancelled, never a no-show."""
    ann = book(2, "2026-12-05T19:30", "Ann")
    bo = book(4, "2026-12-05T21:00", "Bo")
    closed = closed_saturday(tmp_path)
    for at in (NOW, "2026-12-05T20:30:00Z"):
        args = ["--now", at, "host", "reservations", "--date", "2026-12-05"]
        listed = CliRunner().invoke(main, [*args, "--json", "--config", closed, "--db", "h.db"])
        assert listed.exit_code == 0, listed.output
        rows = [(r["reservation_id"], r["status"]) for r in json.loads(listed.output)]
        assert rows == api_rows(closed, "2026-12-05", at)
        assert rows == [(ann, "booked" if at == NOW else "cancelled"), (bo, "booked")]
    text = CliRunner().invoke(
        main, ["--now", NOW, "host", "reservations", "--date", "2026-12-05",
               "--config", closed, "--db", "h.db"],
    )  # fmt: skip
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert [line.split()[:3] for line in lines] == [
        ["19:30", "booked", "Ann"],
        ["21:00", "booked", "Bo"],
    ]
    assert stored_days() == {"2026-12-05"}  # the bookings only: reading writes nothing


def test_a_closed_day_without_bookings_is_still_refused_by_the_list(tmp_path: Path) -> None:
    refused = host("reservations", "--date", "2026-12-25")
    assert refused.exit_code == 1
    assert refused.stderr.splitlines() == ["hoststand: Marlowe's Kitchen is closed 2026-12-25"]


def log_entries() -> int:
    """How many entries h.db's logs hold, every day."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect("h.db")) as db:
        return int(db.execute("SELECT count(*) FROM log_entries").fetchone()[0])


def test_a_date_other_than_the_bookings_own_day_is_refused_not_ignored() -> None:
    """Bo is booked on Saturday: a host who names Friday (the day being served) for a
    command on Bo meant Friday, but the command acts on Bo's own day. It is refused with
    one line, nothing written; Saturday named, or --date left out, it is done."""
    bo = book(2, "2026-12-05T20:00", "Bo")
    host("walk-in", "2", "--id", "W")  # seated on Friday, the day being served
    before = log_entries()
    for command in (
        ("change", bo, "--party-size", "3"),
        ("cancel", bo),
        ("check-in", bo),
        ("arrive", bo),
        ("seat", bo, "T4"),
        ("move", bo, "T4"),
    ):
        refused = host(*command, "--date", "2026-12-04")
        assert refused.exit_code == 1, (command, refused.output)
        assert refused.stderr.splitlines() == [
            f"hoststand: {bo} is booked on 2026-12-05, not on 2026-12-04: {command[0]} acts"
            " on the booking's own day (leave out --date)"
        ]
    for command in (("seat", "W", "T4"), ("move", "W", "T4")):  # a walk-in: today's
        refused = host(*command, "--date", "2026-12-05")
        assert refused.exit_code == 1, (command, refused.output)
        assert len(refused.stderr.splitlines()) == 1
        assert "not on 2026-12-05: the day being served is 2026-12-04" in refused.stderr
    assert log_entries() == before  # nothing written
    changed = host("change", bo, "--party-size", "3", "--date", "2026-12-05")
    assert changed.exit_code == 0, changed.output
    assert host("move", "W", "T4", "--date", "2026-12-04").exit_code == 0
    assert host("cancel", bo).exit_code == 0  # no --date: the booking's own day
    unknown = host("cancel", "nobody", "--date", "2026-12-06")
    assert unknown.exit_code == 1
    assert unknown.stderr.splitlines() == ["hoststand: no reservation nobody"]


def test_the_reservations_list_says_why_a_booking_no_longer_fits_as_the_api_does(
    tmp_path: Path,
) -> None:
    """Bo (Friday 21:00) and Di (Saturday) were booked; then the file gave Friday's dinner
    its last seating at 20:30 and closed Saturday. A server on that file lists both with
    why (GET .../reservations, `attention`); the terminal's list says the same: marked on
    the row, with the reason, and as `attention` in --json (null on Cy, who still fits)."""
    import requests

    from tests.integration.server_process import CONFIGS, HOST_TOKENS, start_server

    cy = book(2, "2026-12-04T19:00", "Cy")
    bo = book(4, "2026-12-04T21:00", "Bo")
    di = book(2, "2026-12-05T20:00", "Di")
    text = Path(closed_saturday(tmp_path)).read_text(encoding="utf-8")
    dinner = '{ open = "17:30", close = "23:00", last_seating = "21:30" },\n]\nsaturday'
    assert dinner in text
    changed = tmp_path / "marlowes.toml"
    changed.write_text(text.replace(dinner, dinner.replace("21:30", "20:30")), encoding="utf-8")
    late = "no longer fits: 21:00 is now outside the hours"
    closed = "no longer fits: 2026-12-05 is now closed"

    def listed(*args: str) -> Result:
        return CliRunner().invoke(
            main,
            ["--now", NOW, "host", "reservations", *args, "--config", str(changed), "--db", "h.db"],
        )

    friday = json.loads(listed("--json").output)
    assert [(r["reservation_id"], r["attention"]) for r in friday] == [(cy, None), (bo, late)]
    saturday = json.loads(listed("--json", "--date", "2026-12-05").output)
    assert [(r["reservation_id"], r["attention"]) for r in saturday] == [(di, closed)]
    lines = listed().output.splitlines()
    assert [line.split()[:3] for line in lines] == [
        ["19:00", "booked", "Cy"],
        ["21:00", "booked", "Bo"],
    ]
    assert "!" not in lines[0] and lines[1].endswith(f"{bo}  ! {late}")
    assert listed("--date", "2026-12-05").output.rstrip().endswith(f"{di}  ! {closed}")
    args = ["--now", NOW, "host", "board", "--json", "--config", str(changed), "--db", "h.db"]
    floor = json.loads(CliRunner().invoke(main, args).output)  # the tablet's floor document
    assert [(r["reservation_id"], r["attention"]) for r in floor["reservations"]] == [
        (cy, None),
        (bo, late),
    ]
    server = start_server(tmp_path / "h.db", configs=(changed, *CONFIGS[1:]))
    try:
        auth = {"Authorization": f"Bearer {HOST_TOKENS['marlowes-kitchen']}"}
        api = f"{server.base}/api/v1/restaurants/marlowes-kitchen/reservations"
        for day, cli in (("2026-12-04", friday), ("2026-12-05", saturday)):
            reply = requests.get(api, params={"date": day}, headers=auth, timeout=10)
            assert reply.status_code == 200, reply.text
            rows = reply.json()["reservations"]
            assert [(r["reservation_id"], r["attention"]) for r in rows] == [
                (r["reservation_id"], r["attention"]) for r in cli
            ]
        tablet = requests.get(api.replace("/reservations", "/floor"), headers=auth, timeout=10)
        assert tablet.json()["reservations"] == floor["reservations"]
    finally:
        server.stop()


def test_a_guests_name_or_notes_print_as_one_plain_line_in_the_reservations_list() -> None:
    # A partner's booking may carry any name: this one forged a second row, and its escape
    # cleared the host's terminal (click keeps escapes when it writes to a terminal).
    forged = "Ann\n19:30  booked    Eve (8)    T3       bk-0000000000000000\x1b[2J\u202e"
    booking_id = book(2, "2026-12-04T19:00", forged)
    result = CliRunner().invoke(
        main,
        ["--now", NOW, "host", "reservations", "--config", MARLOWES, "--db", "h.db"],
        color=True,
    )
    assert result.exit_code == 0, result.output
    (line,) = result.output.splitlines()
    assert booking_id in line and "Ann 19:30  booked    Eve (8)" in line
    assert "\x1b[2J" not in line and "\u202e" not in line
