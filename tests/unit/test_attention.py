"""Why a booking no longer fits its restaurant's rules after a reload (feed.service.attention)."""

from __future__ import annotations

import tomllib
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from feed.service.attention import reasons
from feed.venue.restaurant import Restaurant, parse_restaurant

MARLOWES = Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml"
SATURDAY = date(2026, 12, 5)
AT_19 = datetime(2026, 12, 5, 19, 0, tzinfo=UTC)  # London is UTC in December


def marlowes(**changes: Any) -> Restaurant:
    data = tomllib.loads(MARLOWES.read_text(encoding="utf-8"))
    data.update(changes)
    return parse_restaurant(data, "test")


def test_a_booking_that_still_fits_has_no_reason() -> None:
    assert reasons(marlowes(), SATURDAY, AT_19, "T2", 2) == []


def test_a_booking_on_a_removed_table_no_longer_fits() -> None:
    tables = [t for t in tomllib.loads(MARLOWES.read_text())["tables"] if t["id"] != "T2"]
    r = marlowes(tables=tables)
    assert reasons(r, SATURDAY, AT_19, "T2", 2) == ["table T2 removed"]


def test_a_booking_on_a_closed_day_no_longer_fits() -> None:
    r = marlowes(closed=["2026-12-05"])
    assert reasons(r, SATURDAY, AT_19, "T2", 2) == ["2026-12-05 is now closed"]


def test_a_booking_after_the_new_last_seating_no_longer_fits() -> None:
    late = datetime(2026, 12, 5, 21, 15, tzinfo=UTC)
    hours = tomllib.loads(MARLOWES.read_text())["hours"]
    hours["saturday"][1]["last_seating"] = "21:00"
    assert reasons(marlowes(hours=hours), SATURDAY, late, "T1", 4) == [
        "21:15 is now outside the hours"
    ]


def test_a_party_above_the_new_maximum_no_longer_fits() -> None:
    assert reasons(marlowes(max_party_size=8), SATURDAY, AT_19, "T5+T6", 9) == [
        "T5+T6 now seats 8, the party is 9",
        "a party of 9 is above the new maximum of 8",
    ]


def test_tables_no_longer_combined_no_longer_fit() -> None:
    # T1+T3 stays, so parties of 10 still have a unit (max_party_size stays 10).
    combos = [{"tables": ["T1", "T3"]}]
    assert reasons(marlowes(combos=combos), SATURDAY, AT_19, "T5+T6", 7) == [
        "tables T5+T6 are no longer combined"
    ]
