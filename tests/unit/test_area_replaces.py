"""Availability replaces carry the room at a restaurant with seating areas (issue #14),
and say what the feed says for it."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

from feed.push.outbox import replace_body, replace_json
from feed.service.days import DayBook
from feed.venue import calendar
from feed.venue.restaurant import load_restaurant
from store.sqlite import SQLiteStore

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
DAY = date(2026, 12, 4)  # a Friday
NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


def test_a_replace_at_a_restaurant_with_areas_has_each_areas_entries_with_its_room(
    tmp_path: Path,
) -> None:
    r = load_restaurant(SAMPLES / "terrace.toml")
    with SQLiteStore(tmp_path / "x.db") as store:
        book = DayBook(store, r)
        slot = next(s for s in calendar.slots(r, DAY) if s.local.strftime("%H:%M") == "19:00")
        book.book(DAY, slot, 4, NOW, area="patio")
        sent = replace_json(book, [DAY], NOW)
        built = replace_body(book, [DAY], NOW)
        patio = {(c.slot.start_sec, c.party_size): c for c in book.cells(DAY, NOW, area="patio")}
    assert json.loads(sent) == built
    availability = built["extendedServiceAvailability"][0]["availability"]
    rooms = {(a["resources"]["roomId"], a["resources"]["roomName"]) for a in availability}
    assert rooms == {("main", "Dining room"), ("patio", "Patio")}
    for a in availability:
        if a["resources"]["roomId"] == "patio":
            start = int(datetime.fromisoformat(a["startTime"]).timestamp())
            cell = patio[(start, a["resources"]["partySize"])]
            assert (a["spotsOpen"], a["spotsTotal"]) == (cell.spots_open, cell.spots_total)
    at_seven = [
        (a["resources"]["roomId"], a["spotsOpen"])
        for a in availability
        if a["resources"]["partySize"] == 4
        and int(datetime.fromisoformat(a["startTime"]).timestamp()) == slot.start_sec
    ]
    assert at_seven == [("main", 3), ("patio", 1)]


def test_a_replace_without_areas_has_no_room(tmp_path: Path) -> None:
    r = load_restaurant(SAMPLES / "marlowes.toml")
    with SQLiteStore(tmp_path / "x.db") as store:
        built = replace_body(DayBook(store, r), [DAY], NOW)
    availability = built["extendedServiceAvailability"][0]["availability"]
    assert availability and all(set(a["resources"]) == {"partySize"} for a in availability)
