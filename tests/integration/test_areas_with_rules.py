"""Seating areas (issue #14) and the booking rules together, on The Terrace
(samples/terrace.toml) with rules added: a walk-in-only patio table, pacing, a lunch with
turns of its own and, for the "rich" export path, a cancellation window.

Within an area, partners see the area's tables of the online floor (no walk-in tables);
pacing counts the whole restaurant's slot, whatever the area; every entry of the feed
(fast path and rich path alike) carries its room and is what `availability_entries`,
a lookup and a booking find.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from feed.files.export import availability_entries, export_feeds, merchant_days
from feed.push.outbox import replace_body
from feed.service import days
from feed.service.days import Applied, DayBook, Refused
from feed.venue.restaurant import Restaurant, parse_restaurant
from store.sqlite import SQLiteStore
from tests.integration.slots import slot

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)  # Thursday morning (Lisbon = UTC in winter)
THURSDAY = date(2026, 12, 3)
SATURDAY = date(2026, 12, 5)  # lunch (turns of its own) and dinner


def terrace(*, lunch_turns: bool = True, **extra: Any) -> Restaurant:
    data = tomllib.loads((REPO / "samples" / "terrace.toml").read_text())
    for table in data["tables"]:
        if table["id"] == "P3":
            table["walk_in_only"] = True
    data["pacing"] = {"max_parties_per_slot": 3}
    if lunch_turns:
        lunch = data["hours"]["saturday"][0]
        lunch["turn_minutes"] = {"2": 60, "4": 90}
    data.update(extra)
    return parse_restaurant(data, "terrace-with-rules")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        yield store


def exported(r: Restaurant, store: SQLiteStore, out: Path) -> list[dict[str, Any]]:
    export_feeds([r], store, out, NOW, days=3)
    (path,) = out.glob("availability-*.json")
    document = json.loads(path.read_text())
    return [e for s in document["service_availability"] for e in s["availability"]]


@pytest.mark.parametrize("rich", [False, True], ids=["fast-path", "rich-path"])
def test_the_feed_has_per_area_entries_with_the_rules(
    store: SQLiteStore, tmp_path: Path, rich: bool
) -> None:
    # Without windows or turns of its own a restaurant takes the writer's fast path.
    r = terrace(cancel_cutoff_minutes=120) if rich else terrace(lunch_turns=False)
    assert (merchant_days(DayBook(store, r), NOW, 3).entries is not None) is rich
    book = DayBook(store, r)
    for area in ("main", "main", "patio"):
        assert isinstance(
            book.book(THURSDAY, slot(r, THURSDAY, "19:00"), 2, NOW, area=area), Applied
        )
    entries = exported(r, store, tmp_path / "feeds")
    assert entries == list(availability_entries(DayBook(store, r), NOW, 3))
    assert {e["resources"]["room_id"] for e in entries} == {"main", "patio"}
    assert all(e["resources"]["room_name"] in ("Dining room", "Patio") for e in entries)
    # The walk-in patio table (P3, 2 seats) is never sold: the patio seats 2 at P1 and P2.
    patio_2 = [
        e
        for e in entries
        if e["resources"] == {"party_size": 2, "room_id": "patio", "room_name": "Patio"}
    ]
    assert patio_2 and {e["spots_total"] for e in patio_2} == {2}
    # Pacing counts the restaurant's slot: three bookings at 19:00 close it in every area.
    at_seven = int(slot(r, THURSDAY, "19:00").start_sec)
    assert [e["spots_open"] for e in entries if e["start_sec"] == at_seven] == [0] * len(
        [e for e in entries if e["start_sec"] == at_seven]
    )
    # Saturday lunch has turns of its own (rich path), per area too.
    lunch = int(slot(r, SATURDAY, "12:30").start_sec)
    durations = {
        e["duration_sec"]
        for e in entries
        if e["start_sec"] == lunch and e["resources"]["party_size"] == 2
    }
    assert durations == ({3600} if rich else {2700})
    if rich:
        assert all(
            e["scheduling_rule_overrides"] == {"last_online_cancellable_sec": e["start_sec"] - 7200}
            for e in entries
        )
    else:
        assert all("scheduling_rule_overrides" not in e for e in entries)


def test_bookings_within_an_area_follow_the_rules(store: SQLiteStore) -> None:
    r = terrace()
    book = DayBook(store, r)
    seven = slot(r, THURSDAY, "19:00")
    # Partners never get the walk-in table: the patio has two online tables for 2.
    assert book.spots(THURSDAY, seven, 2, NOW, "patio") == 2
    for _ in range(2):
        assert isinstance(book.book(THURSDAY, seven, 2, NOW, area="patio"), Applied)
    assert book.spots(THURSDAY, seven, 2, NOW, "patio") == 0
    refused = book.book(THURSDAY, seven, 2, NOW, area="patio")
    assert isinstance(refused, Refused) and refused.code == days.SLOT_UNAVAILABLE
    # The host may take the walk-in table, within the area.
    host = book.book(THURSDAY, seven, 2, NOW, area="patio", host=True)
    assert isinstance(host, Applied) and host.operation[3] == "P3"
    # Three bookings at 19:00: pacing closes the slot in the dining room too.
    assert book.spots(THURSDAY, seven, 2, NOW, "main") == 0
    paced = book.book(THURSDAY, seven, 2, NOW, area="main")
    assert isinstance(paced, Refused) and paced.code == days.OVER_PACING
    over = book.book(THURSDAY, seven, 2, NOW, area="main", host=True, over_pacing=True)
    assert isinstance(over, Applied) and str(over.operation[3]).startswith("M")


def test_replaces_carry_the_room_and_the_service_turn(store: SQLiteStore) -> None:
    r = terrace()
    body = replace_body(DayBook(store, r), [SATURDAY], NOW)
    (window,) = body["extendedServiceAvailability"]
    lunch = datetime(2026, 12, 5, 12, 30, tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = [a for a in window["availability"] if a["startTime"].startswith(lunch[:16])]
    assert {a["resources"].get("roomId") for a in rows} == {"main", "patio"}
    assert {a["duration"] for a in rows if a["resources"]["partySize"] == 2} == {"3600s"}
    patio_2 = [
        a
        for a in rows
        if a["resources"] == {"partySize": 2, "roomId": "patio", "roomName": "Patio"}
    ]
    assert [a["spotsTotal"] for a in patio_2] == [2]
