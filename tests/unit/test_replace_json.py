"""The availability replace as sent (written straight from rows) is the replace as built."""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from feed.push.outbox import replace_body, replace_json
from feed.service.days import DayBook
from feed.venue import calendar
from feed.venue.restaurant import Restaurant, parse_restaurant
from store.sqlite import SQLiteStore

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SAMPLE = SAMPLES / "marlowes.toml"
DAY = date(2026, 12, 4)  # a Friday


def restaurant(merchant_id: str, sample: Path = SAMPLE) -> Restaurant:
    config = tomllib.loads(sample.read_text(encoding="utf-8"))
    config["merchant_id"] = merchant_id
    return parse_restaurant(config, "test")


@pytest.mark.parametrize("merchant_id", ["marlowes", 'odd "quoted" \\ id', "café-ünïcode"])
@pytest.mark.parametrize("hours_before", [30, 0, -2])  # the day before, at opening, mid-service
# Marlowe's; the terrace's two seating areas (a window per area's rows, each with its room);
# the harbour's lunch and dinner with turns of their own, and pacing.
@pytest.mark.parametrize("sample", ["marlowes.toml", "terrace.toml", "harbour.toml"])
def test_the_replace_sent_is_the_replace_built(
    tmp_path: Path, merchant_id: str, hours_before: int, sample: str
) -> None:
    r = restaurant(merchant_id, SAMPLES / sample)
    opening = calendar.opening_instant(r, DAY)
    assert opening is not None
    booked_at = opening - timedelta(days=2)
    with SQLiteStore(tmp_path / "x.db") as store:
        book = DayBook(store, r)
        slots = calendar.slots(r, DAY)
        for i, slot in enumerate(slots[::3]):
            book.book(DAY, slot, 2 + i % 8, booked_at)
        now = opening - timedelta(hours=hours_before)
        sent = replace_json(book, [DAY], now)
        built = replace_body(book, [DAY], now)
    assert json.loads(sent) == built
    availability = built["extendedServiceAvailability"][0]["availability"]
    future = [s for s in slots if s.start_sec > int(now.timestamp())]
    assert {a["startTime"] for a in availability} == {calendar_stamp(s.start_sec) for s in future}
    assert any(a["spotsOpen"] < a["spotsTotal"] for a in availability) == bool(future)


def test_a_closed_day_sends_an_empty_replace(tmp_path: Path) -> None:
    r = restaurant("marlowes")
    closed = date(2026, 12, 25)  # samples/marlowes.toml: closed on Christmas Day
    assert calendar.opening_instant(r, closed) is None
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    with SQLiteStore(tmp_path / "x.db") as store:
        book = DayBook(store, r)
        sent = json.loads(replace_json(book, [closed], now))
        assert sent == replace_body(book, [closed], now)
    assert sent["extendedServiceAvailability"][0]["availability"] == []


def calendar_stamp(start_sec: int) -> str:
    from feed.service.notify import rfc3339

    return rfc3339(datetime.fromtimestamp(start_sec, UTC))


def test_a_replace_window_holds_a_last_seating_at_the_close(tmp_path: Path) -> None:
    config = tomllib.loads(SAMPLE.read_text(encoding="utf-8"))
    config["hours"]["friday"] = [{"open": "17:30", "close": "23:00", "last_seating": "23:00"}]
    r = parse_restaurant(config, "test")
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    with SQLiteStore(tmp_path / "x.db") as store:
        [window] = replace_body(DayBook(store, r), [DAY], now)["extendedServiceAvailability"]
    starts = {a["startTime"] for a in window["availability"]}
    assert "2026-12-04T23:00:00Z" in starts  # the last seating, at the close
    # The window's end is exclusive: every entry it carries lies inside it.
    assert all(window["startTimeRestrict"] <= s < window["endTimeRestrict"] for s in starts)


def test_a_replace_window_is_the_whole_service_day(tmp_path: Path) -> None:
    config = tomllib.loads(SAMPLE.read_text(encoding="utf-8"))
    config["hours"]["friday"] = [{"open": "18:00", "close": "01:00", "last_seating": "00:30"}]
    r = parse_restaurant(config, "test")
    now = datetime(2026, 12, 1, 12, tzinfo=UTC)
    christmas = date(2026, 12, 25)  # closed: its window still takes back all it had
    with SQLiteStore(tmp_path / "x.db") as store:
        body = replace_body(DayBook(store, r), [DAY, DAY + timedelta(days=1), christmas], now)
    windows = [
        (w["startTimeRestrict"], w["endTimeRestrict"]) for w in body["extendedServiceAvailability"]
    ]
    assert windows == [
        ("2026-12-04T00:00:00Z", "2026-12-05T01:00:00Z"),  # Friday's dinner, past midnight
        ("2026-12-05T01:00:00Z", "2026-12-06T00:00:00Z"),  # Saturday: after Friday's close
        ("2026-12-25T00:00:00Z", "2026-12-26T00:00:00Z"),
    ]
