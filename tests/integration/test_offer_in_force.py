"""A server still on the old file (another server on the store reloaded a file without T5)
counts its availability on the floor in force, as it writes: its lookups, the feed, the
replaces it sends partners and the host's preview never offer a table the floor in force
lacks, so the feed's promise holds on it (k open: k bookings succeed, the next fails)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from feed.files.export import availability_rows
from feed.push.outbox import replace_body
from feed.service.config_reload import Reloader
from feed.service.floors import note_floor
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.settings import Partner, Settings
from feed.venue import calendar
from feed.venue.restaurant import load_restaurant
from store import open_store
from tests.integration.test_reload_meanwhile import FRIDAY, MID, marlowes, remove_t5

PARTNER = Partner("p", None, None)
T7 = '[[tables]]\nid = "T7"\nx = 3\ny = 3\nseats = 4\n\n'
SATURDAY = date(2026, 12, 5)


def at(hour: int, minute: int = 0) -> datetime:
    """Friday's clock (London is UTC in December)."""
    return datetime(2026, 12, 4, hour, minute, tzinfo=UTC)


def seven(day: date) -> int:
    """19:00 on `day`, as a partner's start_sec."""
    return int(datetime(day.year, day.month, day.day, 19, tzinfo=UTC).timestamp())


def slot(day: date, size: int) -> dict[str, Any]:
    return {"merchant_id": MID, "service_id": "1000", "start_sec": seven(day),
            "duration_sec": 4200, "resources": {"party_size": size}}  # fmt: skip


def offered(receiver: Receiver, day: date, size: int) -> dict[str, Any]:
    """What the server tells of `day` 19:00 for `size`: BatchAvailabilityLookup's answer,
    the spots its book counts, the replace's and the feed's (open, total), the preview's."""
    book, now, start = receiver.books[MID], receiver.clock(), seven(day)
    api = PartnerApi(receiver.books, receiver.store, receiver.clock)
    asked_slot = {**slot(day, size), "resource_ids": {"party_size": size}}
    asked = {"merchant_id": MID, "slot_time": [asked_slot]}
    lookup = api.lookup(PARTNER, asked).body["slot_time_availability"][0]["available"]
    stamp = datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%dT%H:%M")
    window = replace_body(book, [day], now)["extendedServiceAvailability"][0]
    replace = [
        (e["spotsOpen"], e["spotsTotal"])
        for e in window["availability"]
        if e["resources"]["partySize"] == size and e["startTime"].startswith(stamp)
    ]
    feed = [
        (row[3], row[4])
        for row, _area in availability_rows(book, now, 2)
        if (row[0], row[2]) == (start, size)
    ]
    host = [(o, t) for s, n, o, t in book.rows(day, now, host=True) if (s, n) == (start, size)]
    the_slot = next(s for s in calendar.slots(book.restaurant, day) if s.start_sec == start)
    spots = book.spots(day, the_slot, size, now)
    return {"lookup": lookup, "spots": spots, "replace": replace, "feed": feed, "host": host}


@pytest.mark.parametrize(
    ("day", "hour"),
    [(FRIDAY, 12), (SATURDAY, 10)],
    ids=["today-in-service", "a-day-ahead-no-fence"],
)
def test_a_server_on_the_old_file_offers_only_the_tables_in_force(
    any_db: str, tmp_path: Path, day: date, hour: int
) -> None:
    """A, B and C (4) booked T1, T5 and T6 at 19:00 and B cancelled: T5 and the 6-top T3
    are left for 4. Server A reloads a file without T5, re-homing nobody (today in
    service, with its fence entry on today's log; or at 10:00 for a day ahead, with no
    log entry at all, after server B has read the day's lookups). Server B, not reloaded,
    counted T5 open: it told a partner 2 spots for 4 at 19:00 (the lookup's spots, the
    replace, the feed, the host's preview) where A said 1, and the partner's second
    booking through B was refused. Now B says what A says, and exactly as many bookings
    through B succeed as it said were open, the next refused."""
    path = marlowes(tmp_path)
    clock = [at(hour)]
    first, second = open_store(any_db), open_store(any_db)
    try:
        note_floor(first, MID, load_restaurant(path).floor, clock[0].timestamp())
        a = Receiver([load_restaurant(path)], first, Settings(), lambda: clock[0])
        b = Receiver([load_restaurant(path)], second, Settings(), lambda: clock[0])
        when = f"{day.isoformat()}T19:00"
        ids = [a.host_book(MID, 4, when, name, "").body["reservation_id"] for name in "ABC"]
        assert a.host_operation(MID, "cancel", ids[1]).code is None  # T5's: nothing re-homed
        before = offered(b, day, 4)
        assert before == offered(a, day, 4)
        assert before["spots"] == 2, before

        clock[0] = at(hour, 5)
        remove_t5(path)
        assert Reloader([path], a).reload().applied
        clock[0] = at(hour, 6)
        on_a = offered(a, day, 4)
        assert (on_a["spots"], on_a["replace"]) == (1, [(1, 3)]), on_a
        assert offered(b, day, 4) == on_a

        api = PartnerApi(b.books, b.store, b.clock)
        for i in range(on_a["spots"] + 1):
            body = {"slot": slot(day, 4), "user_information": {"user_id": f"u{i}"}}
            made = api.create_booking(PARTNER, body)
            if i < on_a["spots"]:
                assert made.body.get("booking", {}).get("status") == "CONFIRMED", made.body
            else:
                assert made.body["booking_failure"]["cause"] == "SLOT_UNAVAILABLE", made.body
        after = offered(b, day, 4)
        assert after == offered(a, day, 4)
        assert (after["spots"], after["lookup"]) == (0, False), after
    finally:
        first.close()
        second.close()


def test_a_server_on_the_old_file_offers_no_table_another_servers_reload_added(
    any_db: str, tmp_path: Path
) -> None:
    """A, B and C (4) hold T1, T5 and T6 at 19:00 on Saturday: the 6-top T3 is left for 4.
    Server A reloads a file adding T7, a 4-top. Server B, not reloaded, cannot seat or
    book at T7 (its file has no T7, and the floor record does not say whether T7 is a
    walk-in table or in which area): it offers 1 spot for 4 where A offers 2 (the reading
    chosen: a spot fewer, never one a booking through B is refused), and the promise holds
    on B, 1 booking through it, the next refused. Reloaded, B offers what A offers.
    (Held before this change too: pinned as the reading.)"""
    path = marlowes(tmp_path)
    clock = [at(10)]
    first, second = open_store(any_db), open_store(any_db)
    try:
        note_floor(first, MID, load_restaurant(path).floor, clock[0].timestamp())
        a = Receiver([load_restaurant(path)], first, Settings(), lambda: clock[0])
        b = Receiver([load_restaurant(path)], second, Settings(), lambda: clock[0])
        for name in "ABC":
            assert a.host_book(MID, 4, "2026-12-05T19:00", name, "").code is None
        clock[0] = at(10, 5)
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("\n[[combos]]", "\n" + T7 + "[[combos]]", 1), "utf-8")
        assert Reloader([path], a).reload().applied
        assert offered(a, SATURDAY, 4)["spots"] == 2
        on_b = offered(b, SATURDAY, 4)
        assert (on_b["spots"], on_b["replace"]) == (1, [(1, 4)]), on_b

        api = PartnerApi(b.books, b.store, b.clock)
        for i in range(2):
            body = {"slot": slot(SATURDAY, 4), "user_information": {"user_id": f"u{i}"}}
            made = api.create_booking(PARTNER, body)
            if i == 0:
                assert made.body.get("booking", {}).get("status") == "CONFIRMED", made.body
            else:
                assert made.body["booking_failure"]["cause"] == "SLOT_UNAVAILABLE", made.body
        assert Reloader([path], b).reload().applied
        assert offered(b, SATURDAY, 4) == offered(a, SATURDAY, 4)
        assert offered(b, SATURDAY, 4)["spots"] == 1
    finally:
        first.close()
        second.close()
