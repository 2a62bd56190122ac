"""Test helpers: a restaurant's slot by its local wall-clock time, and a clock moved by hand."""

from __future__ import annotations

from datetime import UTC, date, datetime

from feed.venue import calendar
from feed.venue.calendar import Slot
from feed.venue.restaurant import Restaurant


def slot(r: Restaurant, day: date, hhmm: str) -> Slot:
    """The slot of `day` starting at local `hhmm` (the test fails if there is none)."""
    found = calendar.slot_at(r, datetime.fromisoformat(f"{day.isoformat()}T{hhmm}"))
    assert found is not None, hhmm
    return found[1]


class HandClock:
    """A receiver's clock, moved by the test: `at("18:15")` is that UTC wall-clock time of
    `day` (London's in December)."""

    def __init__(self, day: date, hhmm: str = "12:00") -> None:
        self.day = day
        self.now = datetime(2000, 1, 1, tzinfo=UTC)
        self.at(hhmm)

    def __call__(self) -> datetime:
        return self.now

    def at(self, hhmm: str, day: date | None = None) -> None:
        hour, minute = (int(part) for part in hhmm.split(":"))
        d = day or self.day
        self.now = datetime(d.year, d.month, d.day, hour, minute, tzinfo=UTC)
