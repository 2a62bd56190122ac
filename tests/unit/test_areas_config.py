"""Seating areas in a restaurant file (issue #14): tables name their area, areas have
display names, combos stay in one area unless they say otherwise."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from feed.venue.restaurant import SCHEMA_PATH, ConfigError, load_restaurant, parse_restaurant

ROOT = Path(__file__).resolve().parents[2]
TERRACE = ROOT / "samples" / "terrace.toml"

BASE: dict[str, Any] = {
    "merchant_id": "m1",
    "name": "Two Rooms",
    "timezone": "Europe/London",
    "telephone": "+44 20 7946 0000",
    "url": "https://two.example.com/",
    "address": {
        "street_address": "1 High Street",
        "locality": "London",
        "country": "GB",
        "postal_code": "N1 1AA",
    },
    "geo": {"latitude": 51.5, "longitude": -0.1},
    "hours": {"monday": [{"open": "17:00", "close": "23:00"}]},
}


def two_rooms(**changes: Any) -> dict[str, Any]:
    data = {
        **BASE,
        "areas": {"main": "Dining room", "patio": "Patio"},
        "tables": [
            {"id": "A", "seats": 4, "area": "main"},
            {"id": "B", "seats": 4, "area": "main"},
            {"id": "C", "seats": 4, "area": "patio"},
        ],
        "combos": [{"tables": ["A", "B"]}],
    }
    data.update(changes)
    return data


def error_of(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_restaurant(data, "r.toml")
    return str(caught.value)


def test_tables_belong_to_the_areas_they_name_in_file_order() -> None:
    r = parse_restaurant(two_rooms(), "r.toml")
    assert [(a.id, a.name, a.tables, a.combos) for a in r.areas] == [
        ("main", "Dining room", ("A", "B"), ("A+B",)),
        ("patio", "Patio", ("C",), ()),
    ]
    assert r.rooms == r.areas
    assert r.area_of("A+B") is r.areas[0] and r.area_of("C") is r.areas[1]


def test_without_areas_the_floor_is_one_area_and_partners_see_no_rooms() -> None:
    r = parse_restaurant({**BASE, "tables": [{"id": "A", "seats": 4}]}, "r.toml")
    assert r.areas == () and r.rooms == ()


def test_one_named_area_is_the_whole_floor_for_partners() -> None:
    data = {
        **BASE,
        "areas": {"main": "Dining room"},
        "tables": [{"id": "A", "seats": 4, "area": "main"}],
    }
    r = parse_restaurant(data, "r.toml")
    assert len(r.areas) == 1 and r.rooms == ()


def test_an_area_used_by_a_table_but_not_named_is_an_error() -> None:
    data = two_rooms(areas={"main": "Dining room"})
    assert "r.toml: tables[2].area: no area 'patio' in [areas]" in error_of(data)


def test_a_named_area_without_tables_is_an_error() -> None:
    data = two_rooms(areas={"main": "Dining room", "patio": "Patio", "bar": "Bar"})
    assert "r.toml: areas.bar: no table is in this area" in error_of(data)


def test_either_every_table_has_an_area_or_none_has() -> None:
    data = two_rooms()
    data["tables"][1] = {"id": "B", "seats": 4}
    assert "tables[1].area: some tables have an area" in error_of(data)


def test_areas_named_without_any_table_in_them_is_an_error() -> None:
    data = {**BASE, "areas": {"main": "Dining room"}, "tables": [{"id": "A", "seats": 4}]}
    assert "areas: no table has an area" in error_of(data)


def test_a_combo_across_two_areas_is_an_error_unless_cross_area() -> None:
    data = two_rooms(combos=[{"tables": ["B", "C"]}])
    assert "combos[0].tables: B is in 'main' and C in 'patio'" in error_of(data)
    allowed = two_rooms(combos=[{"tables": ["C", "B"], "cross_area": True}])
    r = parse_restaurant(allowed, "r.toml")
    assert [a.combos for a in r.areas] == [(), ("C+B",)]  # its first table's area


def test_an_area_id_is_plain_text_without_spaces() -> None:
    data = two_rooms(areas={"main room": "Dining room", "patio": "Patio"})
    assert "areas.main room" in error_of(data)


def test_the_terrace_sample_has_two_areas_and_validates_against_the_schema() -> None:
    r = load_restaurant(TERRACE)
    assert [(a.id, a.name) for a in r.rooms] == [("main", "Dining room"), ("patio", "Patio")]
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(tomllib.loads(TERRACE.read_text("utf-8")))
