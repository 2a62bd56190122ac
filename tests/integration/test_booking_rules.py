"""Issue #14's booking rules on a real SQLite file, through the service functions every path
calls (DayBook, the receiver's webhooks and host API, the v3 booking server, the export):
pacing, walk-in tables, booking and cancellation windows, the online party limit,
per-service turns and special days. The Harbour Room (samples/harbour.toml) has them all."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from feed.files.export import export_feeds
from feed.floor.availability import spots_total
from feed.http.statuses import status_of
from feed.push.outbox import replace_body
from feed.service import days
from feed.service.days import Applied, DayBook, Refused
from feed.service.floorview import FloorViews, slots_of
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.service.signing import sign
from feed.settings import Partner, Settings
from feed.venue import calendar
from feed.venue.calendar import Slot
from feed.venue.restaurant import Restaurant, load_restaurant
from store.sqlite import SQLiteStore
from tests.integration.slots import slot

REPO = Path(__file__).resolve().parents[2]
HARBOUR = REPO / "samples" / "harbour.toml"
GOLDEN = REPO / "tests" / "golden" / "harbour"
THURSDAY = date(2026, 12, 3)  # lunch 12:00-14:00 (own turns, 12 covers), dinner 17:00-21:30
NYE = date(2026, 12, 31)  # a special day: 18:00-01:00, last seating 22:30
NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)  # Dublin is on UTC in December
GOLDEN_NOW = NOW
SECRET = "s" * 32
PARTNER = Partner("tablefinder", SECRET, None)


@pytest.fixture(scope="module")
def harbour() -> Restaurant:
    return load_restaurant(HARBOUR)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        yield store


def receiver(store: SQLiteStore, r: Restaurant, now: datetime = NOW) -> Receiver:
    return Receiver([r], store, Settings(partners={PARTNER.id: PARTNER}), lambda: now)


def webhook(rec: Receiver, event: dict[str, Any], now: datetime = NOW) -> Any:
    body = json.dumps(event).encode()
    return rec.webhook(PARTNER.id, sign(SECRET, int(now.timestamp()), body), body)


def requested(r: Restaurant, size: int, start: str) -> dict[str, Any]:
    return {
        "id": f"evt-{uuid.uuid4().hex}",
        "type": "reservation.requested",
        "merchant_id": r.merchant_id,
        "data": {"party_size": size, "start": start, "name": "Ada"},
    }


def v3_create(api: PartnerApi, r: Restaurant, start_sec: int, size: int) -> Any:
    return api.create_booking(
        PARTNER,
        {
            "idempotency_token": uuid.uuid4().hex,
            "slot": {
                "merchant_id": r.merchant_id,
                "service_id": r.service_id,
                "start_sec": str(start_sec),
                "resources": {"party_size": size},
            },
            "user_information": {"user_id": uuid.uuid4().hex, "given_name": "Ada"},
        },
    ).body


def v3_available(api: PartnerApi, r: Restaurant, start_sec: int, size: int) -> bool:
    body = api.lookup(
        PARTNER,
        {
            "merchant_id": r.merchant_id,
            "slot_time": [{"start_sec": str(start_sec), "resource_ids": {"party_size": size}}],
        },
    ).body
    return bool(body["slot_time_availability"][0]["available"])


def cell(book: DayBook, day: date, s: Slot, n: int, *, host: bool = False) -> tuple[int, int]:
    for start, size, spots_open, total in book.rows(day, NOW, host=host):
        if start == s.start_sec and size == n:
            return spots_open, total
    return 0, 0


# -- walk-in tables ------------------------------------------------------------------------


def test_walk_in_tables_are_not_in_partners_spots_but_the_host_sees_them(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    book = DayBook(store, harbour)
    s = slot(harbour, THURSDAY, "18:00")
    assert cell(book, THURSDAY, s, 2) == (4, 4)  # H1 H2 H3 H4
    assert cell(book, THURSDAY, s, 2, host=True) == (4, 6)  # and W1 W2 (4 parties a slot)


def test_partner_bookings_never_land_on_walk_in_tables_and_the_host_still_books_them(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    book = DayBook(store, harbour)
    s = slot(harbour, THURSDAY, "18:00")
    units = []
    while isinstance(outcome := book.book(THURSDAY, s, 2, NOW), Applied):
        units.append(outcome.operation[3])
    assert sorted(units) == ["H1", "H2", "H3", "H4"]
    assert book.spots(THURSDAY, s, 2, NOW) == 0
    host = book.book(THURSDAY, s, 2, NOW, {"source": "host"}, host=True, over_pacing=True)
    assert isinstance(host, Applied) and host.operation[3] in ("W1", "W2")


# -- pacing --------------------------------------------------------------------------------


def test_pacing_caps_spots_open_by_the_covers_still_allowed(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    book = DayBook(store, harbour)
    s = slot(harbour, THURSDAY, "12:00")  # lunch: 12 covers, 4 parties per slot
    assert book.spots(THURSDAY, s, 4, NOW) == 3  # H3 H4 H5, and 12 // 4 = 3
    assert isinstance(book.book(THURSDAY, s, 2, NOW, host=True), Applied)
    assert book.spots(THURSDAY, s, 4, NOW) == 2  # (12 - 2) // 4, the floor has 3
    assert cell(book, THURSDAY, s, 4) == (2, 3)
    assert isinstance(book.book(THURSDAY, s, 4, NOW), Applied)
    assert isinstance(book.book(THURSDAY, s, 4, NOW), Applied)
    assert book.spots(THURSDAY, s, 4, NOW) == 0  # H5 is free, 2 covers are left
    refused = book.book(THURSDAY, s, 4, NOW)
    assert isinstance(refused, Refused) and refused.code == days.OVER_PACING
    assert book.spots(THURSDAY, s, 2, NOW) == 1  # 10 covers, 3 parties


def test_pacing_caps_parties_per_slot(store: SQLiteStore, harbour: Restaurant) -> None:
    book = DayBook(store, harbour)
    s = slot(harbour, THURSDAY, "18:00")  # dinner: 16 covers, 4 parties
    for host in (True, True, False, False):
        assert isinstance(book.book(THURSDAY, s, 2, NOW, host=host), Applied)
    assert book.spots(THURSDAY, s, 6, NOW) == 0  # H5 is free, 8 covers left: 4 parties
    refused = book.book(THURSDAY, s, 6, NOW)
    assert isinstance(refused, Refused) and refused.code == days.OVER_PACING


def test_a_cancellation_gives_pacing_back(store: SQLiteStore, harbour: Restaurant) -> None:
    book = DayBook(store, harbour)
    s = slot(harbour, THURSDAY, "13:00")
    first = book.book(THURSDAY, s, 6, NOW)
    book.book(THURSDAY, s, 4, NOW)
    assert isinstance(first, Applied)
    assert book.spots(THURSDAY, s, 2, NOW) == 1
    book.operate(THURSDAY, NOW, "cancel", first.operation[2])
    assert book.spots(THURSDAY, s, 2, NOW) == 3  # the floor's H1 H2 H4; 8 covers, 3 parties


def test_a_checked_in_booking_still_counts_toward_its_slots_pacing(
    tmp_path: Path, store: SQLiteStore
) -> None:
    # The Harbour Room taking bookings up to the minute (no min_advance_minutes).
    text = HARBOUR.read_text(encoding="utf-8")
    assert "min_advance_minutes = 120\n" in text
    path = tmp_path / "harbour.toml"
    path.write_text(text.replace("min_advance_minutes = 120\n", ""), encoding="utf-8")
    book = DayBook(store, load_restaurant(path))
    s = slot(book.restaurant, THURSDAY, "12:00")  # lunch: 12 covers, 4 parties per slot
    made = [book.book(THURSDAY, s, 4, NOW) for _ in range(3)]
    assert all(isinstance(m, Applied) for m in made)
    assert book.spots(THURSDAY, s, 2, NOW) == 0  # 12 covers booked
    first = made[0]
    assert isinstance(first, Applied)
    at_the_door = datetime(2026, 12, 3, 11, 50, tzinfo=UTC)
    checked_in = book.operate(THURSDAY, at_the_door, "check_in", first.operation[2])
    assert isinstance(checked_in, Applied) and str(checked_in.result).startswith("seated")
    # The kitchen still cooks for those 4 guests starting at 12:00: no room is given back,
    # though a 2-top is free.
    assert book.spots(THURSDAY, s, 2, at_the_door) == 0
    refused = book.book(THURSDAY, s, 2, at_the_door)
    assert isinstance(refused, Refused) and refused.code == days.OVER_PACING
    host = book.book(THURSDAY, s, 2, at_the_door, host=True)
    assert isinstance(host, Refused) and host.code == days.OVER_PACING


def test_the_host_is_refused_over_pacing_unless_it_says_so_and_the_list_marks_it(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    rec = receiver(store, harbour)
    for _ in range(3):
        assert rec.host_book(harbour.merchant_id, 4, "2026-12-03T12:00", "Bo", "1").code is None
    refused = rec.host_book(harbour.merchant_id, 2, "2026-12-03T12:00", "Cy", "2")
    assert status_of(refused) == 409 and refused.code == days.OVER_PACING
    assert "over pacing" in refused.body["error"]["message"]
    over = rec.host_book(harbour.merchant_id, 2, "2026-12-03T12:00", "Cy", "2", over_pacing=True)
    assert over.code is None, over.body
    rows = rec.host_reservations(harbour.merchant_id, THURSDAY).body["reservations"]
    assert [row["over_pacing"] for row in rows] == [False, False, False, True]
    # The tablet's floor document marks it too (the page shows "over pacing").
    floor = FloorViews(rec.books[harbour.merchant_id]).floor(THURSDAY, NOW)
    assert [row["over_pacing"] for row in floor["reservations"]] == [False, False, False, True]


def test_the_tablets_slots_offer_what_the_host_can_book_and_mark_over_pacing(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    """The phone booking form's slots are the host's reach, not the partners': walk-in
    tables and parties above max_online_party_size count, and a size whose spots are all
    beyond pacing is marked (the host books it by saying so)."""
    rec = receiver(store, harbour)
    book = rec.books[harbour.merchant_id]
    views = FloorViews(book)

    def six_pm() -> dict[str, Any]:
        [found] = [s for s in views.floor(THURSDAY, NOW)["slots"] if s["time"] == "18:00"]
        return found

    before = six_pm()
    seated = [n for n in range(1, harbour.max_party_size + 1) if spots_total(harbour.floor, n)]
    assert set(before["open"]) == {str(n) for n in seated}
    assert before["open"]["2"] == 6  # H1-H4 and the walk-in tables W1, W2
    assert book.spots(THURSDAY, slot(harbour, THURSDAY, "18:00"), 2, NOW) == 4  # partners
    assert before["open"]["8"] > 0 and harbour.max_online_party_size == 6  # by phone only
    assert before["over_pacing"] == []
    for _ in range(4):  # dinner paces 4 parties a slot
        assert rec.host_book(harbour.merchant_id, 2, "2026-12-03T18:00", "Bo", "1").code is None
    after = six_pm()
    assert after["open"]["2"] == 2  # W1 and W2 are left
    assert after["over_pacing"] == [n for n, spots in after["open"].items() if spots > 0]
    assert after["over_pacing"]  # ... and the host may still book them
    other = [s for s in slots_of(book, THURSDAY, NOW) if s["time"] == "18:00"]
    assert other == [after]  # GET /slots?date= answers the same
    # Slots closer than min_advance_minutes (120) are not offered: nobody books them.
    at_four = datetime(2026, 12, 3, 16, 30, tzinfo=UTC)
    times = [s["time"] for s in views.floor(THURSDAY, at_four)["slots"]]
    assert times and times[0] == "18:30" and "18:00" not in times


def test_a_webhook_booking_over_pacing_is_409(store: SQLiteStore, harbour: Restaurant) -> None:
    rec = receiver(store, harbour)
    for _ in range(3):
        assert webhook(rec, requested(harbour, 4, "2026-12-03T12:00:00+00:00")).code is None
    refused = webhook(rec, requested(harbour, 2, "2026-12-03T12:00:00+00:00"))
    assert status_of(refused) == 409 and refused.code == days.OVER_PACING


def test_v3_create_and_update_over_pacing_fail_with_slot_unavailable(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    book = DayBook(store, harbour)
    api = PartnerApi({harbour.merchant_id: book}, store, lambda: NOW)
    noon, later = slot(harbour, THURSDAY, "12:00"), slot(harbour, THURSDAY, "12:30")
    for _ in range(2):
        assert "booking" in v3_create(api, harbour, noon.start_sec, 4)
    assert v3_available(api, harbour, noon.start_sec, 4)
    assert v3_available(api, harbour, noon.start_sec, 5) is False  # 12 - 8 = 4 covers left
    assert v3_create(api, harbour, noon.start_sec, 5)["booking_failure"]["cause"] == (
        "SLOT_UNAVAILABLE"
    )
    moving = v3_create(api, harbour, later.start_sec, 6)["booking"]
    update = api.update_booking(
        PARTNER,
        {
            "booking": {
                "booking_id": moving["booking_id"],
                "slot": {"start_sec": str(noon.start_sec)},
            }
        },
    ).body
    assert update["booking_failure"]["cause"] == "SLOT_UNAVAILABLE"


# -- party size online ---------------------------------------------------------------------


def test_parties_above_the_online_limit_call_the_restaurant(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    book = DayBook(store, harbour)
    api = PartnerApi({harbour.merchant_id: book}, store, lambda: NOW)
    s = slot(harbour, THURSDAY, "18:00")
    assert {n for _, n, _, _ in book.rows(THURSDAY, NOW)} == {1, 2, 3, 4, 5, 6}
    assert v3_available(api, harbour, s.start_sec, 7) is False
    assert v3_create(api, harbour, s.start_sec, 7)["booking_failure"]["cause"] == (
        "SLOT_UNAVAILABLE"
    )
    assert isinstance(book.book(THURSDAY, s, 7, NOW), Refused)
    host = book.book(THURSDAY, s, 7, NOW, host=True)
    assert isinstance(host, Applied) and host.operation[3] == "H3+H4"


# -- windows -------------------------------------------------------------------------------


def test_a_partner_cancel_inside_the_cutoff_is_refused_and_the_host_may_cancel(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    rec = receiver(store, harbour)
    booked = webhook(rec, requested(harbour, 2, "2026-12-03T18:00:00+00:00"))
    assert booked.code is None
    reservation_id = booked.body["reservation_id"]
    late = datetime(2026, 12, 2, 18, 1, tzinfo=UTC)  # 23 h 59 min before: inside 24 h
    cancel = {
        "id": f"evt-{uuid.uuid4().hex}",
        "type": "reservation.cancelled",
        "merchant_id": harbour.merchant_id,
        "data": {"reservation_id": reservation_id},
    }
    refused = webhook(receiver(store, harbour, late), cancel, late)
    assert status_of(refused) == 409 and refused.code == days.OUTSIDE_CANCELLATION_WINDOW
    host = receiver(store, harbour, late).host_operation(
        harbour.merchant_id, "cancel", reservation_id
    )
    assert host.code is None, host.body


def test_a_v3_cancel_inside_the_cutoff_fails_with_outside_cancellation_window(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    book = DayBook(store, harbour)
    s = slot(harbour, THURSDAY, "18:00")
    created = v3_create(PartnerApi({harbour.merchant_id: book}, store, lambda: NOW), harbour,
                        s.start_sec, 2)["booking"]  # fmt: skip
    cancel = {"booking": {"booking_id": created["booking_id"], "status": "CANCELED"}}
    in_time = datetime.fromtimestamp(s.start_sec - 24 * 3600, UTC)
    too_late = datetime.fromtimestamp(s.start_sec - 24 * 3600 + 60, UTC)
    late_api = PartnerApi({harbour.merchant_id: book}, store, lambda: too_late)
    failed = late_api.update_booking(PARTNER, cancel).body
    assert failed["booking_failure"]["cause"] == "OUTSIDE_CANCELLATION_WINDOW"
    api = PartnerApi({harbour.merchant_id: book}, store, lambda: in_time)
    assert api.update_booking(PARTNER, cancel).body["booking"]["status"] == "CANCELED"


def test_a_v3_change_inside_the_cutoff_fails_like_a_cancel_so_the_cutoff_cannot_be_got_round(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    book = DayBook(store, harbour)
    s = slot(harbour, THURSDAY, "18:00")
    created = v3_create(PartnerApi({harbour.merchant_id: book}, store, lambda: NOW), harbour,
                        s.start_sec, 2)["booking"]  # fmt: skip
    booking_id = created["booking_id"]
    away = slot(harbour, date(2026, 12, 10), "18:00").start_sec  # a week later, far outside
    changes = [
        {"slot": {"start_sec": str(away)}},  # moved out of the window
        {"slot": {"start_sec": str(s.start_sec + 3600)}},  # later the same evening
        {"slot": {"resources": {"party_size": 1}}},  # shrunk
        {"slot": {"resources": {"party_size": 4}}},  # grown: the old booking is given up too
    ]
    too_late = datetime.fromtimestamp(s.start_sec - 24 * 3600 + 60, UTC)
    late_api = PartnerApi({harbour.merchant_id: book}, store, lambda: too_late)
    before = store.entries(harbour.merchant_id, THURSDAY)
    for change in changes:
        failed = late_api.update_booking(PARTNER, {"booking": {"booking_id": booking_id, **change}})
        assert failed.body["booking_failure"]["cause"] == "OUTSIDE_CANCELLATION_WINDOW", change
    assert store.entries(harbour.merchant_id, THURSDAY) == before  # nothing written
    [kept] = late_api.list_bookings(PARTNER, {"user_id": created["user_information"]["user_id"]}
                                    ).body["bookings"]  # fmt: skip
    assert kept["slot"] == created["slot"] and kept["status"] == "CONFIRMED"
    cancel = {"booking": {"booking_id": booking_id, "status": "CANCELED"}}
    assert late_api.update_booking(PARTNER, cancel).body["booking_failure"]["cause"] == (
        "OUTSIDE_CANCELLATION_WINDOW"
    )
    # Outside the window the same move is taken, as a cancel would be.
    in_time = datetime.fromtimestamp(s.start_sec - 24 * 3600, UTC)
    api = PartnerApi({harbour.merchant_id: book}, store, lambda: in_time)
    moved = api.update_booking(PARTNER, {"booking": {"booking_id": booking_id, **changes[0]}})
    assert moved.body["booking"]["slot"]["start_sec"] == away


def test_feed_entries_and_the_service_feed_publish_the_windows(
    store: SQLiteStore, harbour: Restaurant, tmp_path: Path
) -> None:
    export_feeds([harbour], store, tmp_path, NOW, days=2)
    feed = json.loads(next(tmp_path.glob("availability-*.json")).read_text())
    entries = feed["service_availability"][0]["availability"]
    for entry in entries:
        assert entry["scheduling_rule_overrides"] == {
            "last_bookable_sec": entry["start_sec"] - 120 * 60,
            "last_online_cancellable_sec": entry["start_sec"] - 1440 * 60,
        }
    service = json.loads(next(tmp_path.glob("service-*.json")).read_text())["service"][0]
    assert service["rules"] == {"min_advance_booking": 7200, "min_advance_online_canceling": 86400}
    assert {e["resources"]["party_size"] for e in entries} == {1, 2, 3, 4, 5, 6}


# -- turns per service and special days ----------------------------------------------------


def test_a_bookings_turn_follows_the_service_its_slot_is_in(
    store: SQLiteStore, harbour: Restaurant, tmp_path: Path
) -> None:
    export_feeds([harbour], store, tmp_path, NOW, days=2)
    feed = json.loads(next(tmp_path.glob("availability-*.json")).read_text())
    durations = {
        (datetime.fromtimestamp(e["start_sec"], UTC).hour, e["resources"]["party_size"]): e[
            "duration_sec"
        ]
        for e in feed["service_availability"][0]["availability"]
    }
    assert durations[(12, 2)] == 50 * 60 and durations[(18, 2)] == 75 * 60
    assert durations[(12, 4)] == 60 * 60 and durations[(18, 4)] == 90 * 60
    book = DayBook(store, harbour)
    api = PartnerApi({harbour.merchant_id: book}, store, lambda: NOW)
    lunch = v3_create(api, harbour, slot(harbour, THURSDAY, "12:00").start_sec, 2)
    assert lunch["booking"]["slot"]["duration_sec"] == 50 * 60


def test_a_lunch_booking_frees_its_table_after_the_lunch_turn(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    book = DayBook(store, harbour)
    noon = slot(harbour, THURSDAY, "12:00")
    assert isinstance(book.book(THURSDAY, noon, 6, NOW), Applied)
    # H5 is taken for 75 minutes at lunch (105 at dinner): free again from 13:30.
    assert book.spots(THURSDAY, slot(harbour, THURSDAY, "13:00"), 6, NOW) == 0
    assert book.spots(THURSDAY, slot(harbour, THURSDAY, "13:30"), 6, NOW) == 1


def test_a_special_day_has_its_own_services_turns_and_pacing(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    starts = [s.local.strftime("%H:%M") for s in calendar.slots(harbour, NYE)]
    assert starts[0] == "18:00" and starts[-1] == "22:30" and len(starts) == 10
    assert calendar.turns_at(harbour, NYE, 0)[2] == 120
    now = datetime(2026, 12, 30, 10, 0, tzinfo=UTC)
    book = DayBook(store, harbour)
    s = slot(harbour, NYE, "19:00")
    assert book.spots(NYE, s, 4, now) == 2  # 10 covers // 4
    assert book.spots(NYE, s, 1, now) == 2  # 3 parties, but two tables of 2
    assert calendar.closing_instant(harbour, NYE) == datetime(2027, 1, 1, 1, 0, tzinfo=UTC)


def test_the_waitlist_protects_bookings_with_the_days_own_turns(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    """On New Year's Eve a party of 2 keeps its table 120 minutes, not the usual 75: a
    walk-in at 18:30 is not given a table booked at 20:00 (it would still be eating), and
    its quote counts on the slower turn too. A day with lunch turns of its own runs on the
    longer of its services' turns."""
    assert calendar.floor_of_day(harbour, NYE).turn(2) == 120
    assert calendar.floor_of_day(harbour, NYE).turn(8) == 180  # large
    assert harbour.floor.turn(2) == 75
    sunday = date(2026, 12, 6)  # lunch only, with turns of its own: 50 for 2
    assert calendar.floor_of_day(harbour, sunday).turn(2) == 50
    # Thursday's lunch turns 2 in 50 minutes, its dinner in the restaurant's 75: the longer.
    assert calendar.turns_at(harbour, THURSDAY, 0)[2] < 75
    assert calendar.floor_of_day(harbour, THURSDAY).turn(2) == 75
    now = datetime(2026, 12, 30, 10, 0, tzinfo=UTC)
    book = DayBook(store, harbour)
    eight = slot(harbour, NYE, "20:00")
    tables = []
    while isinstance(
        outcome := book.book(NYE, eight, 2, now, host=True, over_pacing=True), Applied
    ):
        tables.append(outcome.operation[3])
    assert {"H1", "H2", "W1"} <= set(tables)  # every table a party of 2 may have
    assert book.stand(NYE).floor.turn(2) == 120
    walk_in = book.operate(NYE, datetime(2026, 12, 31, 18, 30, tzinfo=UTC), "walk_in", "w-1", 2)
    assert isinstance(walk_in, Applied)
    assert walk_in.result == "queued 1"  # 18:30 + 75 would have fit before 20:00; + 120 not


def test_availability_replaces_follow_the_rules(store: SQLiteStore, harbour: Restaurant) -> None:
    book = DayBook(store, harbour)
    noon = slot(harbour, THURSDAY, "12:00")
    book.book(THURSDAY, noon, 4, NOW)
    book.book(THURSDAY, noon, 4, NOW)
    window = replace_body(book, [THURSDAY], NOW)["extendedServiceAvailability"][0]
    entries = {
        (e["startTime"][11:16], e["resources"]["partySize"]): e for e in window["availability"]
    }
    assert max(n for _, n in entries) == 6  # the online party limit
    assert entries[("18:00", 2)]["spotsTotal"] == 4  # no walk-in tables
    assert entries[("12:00", 4)]["spotsOpen"] == 1  # 4 covers of 12 left
    assert entries[("12:00", 2)]["duration"] == "3000s"  # lunch turns
    assert entries[("18:00", 2)]["duration"] == "4500s"


# -- golden feed files ---------------------------------------------------------------------


def test_a_fresh_export_of_the_harbour_room_equals_the_golden_files(
    store: SQLiteStore, harbour: Restaurant, tmp_path: Path
) -> None:
    """Regenerate with: rm -rf tests/golden/harbour && .venv/bin/hoststand --now
    2026-12-02T10:00:00+00:00 feed export --config samples/harbour.toml
    --db "$(mktemp -d)/empty.db" --out tests/golden/harbour --days 2"""
    out = tmp_path / "out"
    export_feeds([harbour], store, out, GOLDEN_NOW, days=2)
    golden = sorted(p.name for p in GOLDEN.iterdir())
    assert sorted(p.name for p in out.iterdir()) == golden
    for name in golden:
        assert (out / name).read_bytes() == (GOLDEN / name).read_bytes(), name


def test_the_hosts_change_into_a_paced_slot_is_refused_unless_it_says_so_and_marks_it(
    store: SQLiteStore, harbour: Restaurant
) -> None:
    # The guest phoned to come at 12:00, which pacing has full: as for a phone booking, the
    # host may say so (over_pacing) and the booking is then marked; without it, 409.
    rec = receiver(store, harbour)
    for _ in range(3):
        assert rec.host_book(harbour.merchant_id, 4, "2026-12-03T12:00", "Bo", "1").code is None
    cy = rec.host_book(harbour.merchant_id, 2, "2026-12-03T12:30", "Cy", "2")
    assert cy.code is None, cy.body
    cy_id = cy.body["reservation_id"]
    refused = rec.host_change(harbour.merchant_id, cy_id, None, "2026-12-03T12:00")
    assert status_of(refused) == 409 and refused.code == days.OVER_PACING
    rows = rec.host_reservations(harbour.merchant_id, THURSDAY).body["reservations"]
    assert [(r["start"][11:16], r["over_pacing"]) for r in rows if r["name"] == "Cy"] == [
        ("12:30", False)
    ]
    moved = rec.host_change(harbour.merchant_id, cy_id, None, "2026-12-03T12:00", over_pacing=True)
    assert moved.code is None, moved.body
    rows = rec.host_reservations(harbour.merchant_id, THURSDAY).body["reservations"]
    standing = [r for r in rows if r["name"] == "Cy" and r["status"] == "booked"]
    assert [(r["start"][11:16], r["over_pacing"]) for r in standing] == [("12:00", True)]
    # Moved back within pacing, the mark goes: it is the new slot's, not the booking's.
    back = rec.host_change(harbour.merchant_id, cy_id, None, "2026-12-03T12:30")
    assert back.code is None, back.body
    rows = rec.host_reservations(harbour.merchant_id, THURSDAY).body["reservations"]
    standing = [r for r in rows if r["name"] == "Cy" and r["status"] == "booked"]
    assert [(r["start"][11:16], r["over_pacing"]) for r in standing] == [("12:30", False)]
