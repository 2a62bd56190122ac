"""`max_waitlist` in a restaurant file: the most parties the walk-in waitlist holds. Left
out, 4 per table and at least 10 (24 at a 6-table bistro, 160 at a 40-table room); set, a
whole number from 1 to 1,000; anything else is refused naming the key."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from feed.venue.restaurant import ConfigError, parse_restaurant

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml"


def marlowes(**changes: Any) -> dict[str, Any]:
    data = tomllib.loads(SAMPLE.read_text(encoding="utf-8"))
    data.update(changes)
    return data


def with_tables(count: int) -> dict[str, Any]:
    seats = [2, 4, 6] * count
    tables = [{"id": f"T{i}", "seats": seats[i]} for i in range(count)]
    # max_party_size within what the tables seat (a file's larger one is refused).
    largest = max(seats[:count])
    return marlowes(tables=tables, combos=[], turn_minutes={"large": 120}, max_party_size=largest)


def test_the_waitlist_holds_4_parties_a_table_when_max_waitlist_is_left_out() -> None:
    assert parse_restaurant(marlowes(), "m.toml").waitlist_limit == 24
    assert parse_restaurant(with_tables(40), "m.toml").waitlist_limit == 160


def test_a_small_floors_waitlist_holds_at_least_10_parties() -> None:
    assert parse_restaurant(with_tables(2), "m.toml").waitlist_limit == 10


def test_max_waitlist_in_the_file_is_the_limit() -> None:
    assert parse_restaurant(marlowes(max_waitlist=40), "m.toml").waitlist_limit == 40
    assert parse_restaurant(marlowes(max_waitlist=1), "m.toml").waitlist_limit == 1
    assert parse_restaurant(marlowes(max_waitlist=1000), "m.toml").waitlist_limit == 1000


@pytest.mark.parametrize("bad", [0, -5, 1001, 10**9, "20", True, 2.5])
def test_a_max_waitlist_that_is_not_a_whole_number_from_1_to_1000_is_refused(bad: Any) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_restaurant(marlowes(max_waitlist=bad), "m.toml")
    assert str(refused.value).startswith("m.toml: max_waitlist: ")
