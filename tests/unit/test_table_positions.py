"""Table positions on the host's floor picture: optional x and y per table, both or none."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from feed.venue.restaurant import ConfigError, load_restaurant, parse_restaurant

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _with_tables(tables: str) -> dict[str, Any]:
    text = (SAMPLES / "google-floorplan.toml").read_text(encoding="utf-8")
    return tomllib.loads(text.split("[[tables]]", 1)[0] + tables)


def test_marlowes_sample_places_every_table_on_the_grid() -> None:
    r = load_restaurant(SAMPLES / "marlowes.toml")
    assert r.positions == {
        "T1": (0, 0), "T3": (1, 0), "T4": (2, 0), "T2": (0, 1), "T5": (1, 1), "T6": (2, 1),
    }  # fmt: skip


def test_a_floor_without_positions_has_none() -> None:
    assert load_restaurant(SAMPLES / "google-floorplan.toml").positions == {}


def test_a_table_with_x_but_no_y_is_refused() -> None:
    tables = '[[tables]]\nid = "A"\nseats = 4\nx = 1\n'
    with pytest.raises(ConfigError, match="both x and y"):
        parse_restaurant(_with_tables(tables), "t.toml")


def test_positions_on_some_tables_only_are_refused() -> None:
    tables = '[[tables]]\nid = "A"\nseats = 4\nx = 1\ny = 0\n\n[[tables]]\nid = "B"\nseats = 4\n'
    with pytest.raises(ConfigError, match="every table"):
        parse_restaurant(_with_tables(tables), "t.toml")
