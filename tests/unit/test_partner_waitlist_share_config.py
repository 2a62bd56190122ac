"""`max_partner_waitlist` in a restaurant file: the most places on the walk-in waitlist
partners' entries take, all partners together. Left out, half of `max_waitlist` rounded up;
set, a whole number from 0 (partners cannot join) to `max_waitlist` (the file's or its
default); anything else is refused naming the key and the bound."""

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


def share(**changes: Any) -> int:
    return parse_restaurant(marlowes(**changes), "m.toml").partner_waitlist_limit


def test_partners_take_half_the_waitlist_rounded_up_when_the_file_leaves_it_out() -> None:
    assert share() == 12  # Marlowe's 24
    assert share(max_waitlist=25) == 13
    assert share(max_waitlist=1) == 1


def test_max_partner_waitlist_in_the_file_is_partners_share() -> None:
    assert share(max_partner_waitlist=0) == 0
    assert share(max_partner_waitlist=20) == 20
    assert share(max_waitlist=40, max_partner_waitlist=40) == 40


def test_a_partners_share_above_max_waitlist_is_refused_naming_the_limit() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_restaurant(marlowes(max_waitlist=10, max_partner_waitlist=11), "m.toml")
    assert str(refused.value) == "m.toml: max_partner_waitlist: must be at most max_waitlist (10)"


def test_a_partners_share_above_the_default_max_waitlist_is_refused_naming_the_default() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_restaurant(marlowes(max_partner_waitlist=25), "m.toml")
    assert str(refused.value) == (
        "m.toml: max_partner_waitlist: must be at most max_waitlist"
        " (24: the default, 4 per table, at least 10)"
    )


@pytest.mark.parametrize("bad", [-1, 1001, "5", True, 2.5])
def test_a_max_partner_waitlist_that_is_not_a_whole_number_from_0_is_refused(bad: Any) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_restaurant(marlowes(max_waitlist=1000, max_partner_waitlist=bad), "m.toml")
    assert str(refused.value).startswith("m.toml: max_partner_waitlist: ")
