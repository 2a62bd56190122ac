"""Test helpers: a restaurant's slot by its local wall-clock time."""

from __future__ import annotations

from datetime import date, datetime

from feed.venue import calendar
from feed.venue.calendar import Slot
from feed.venue.restaurant import Restaurant


def slot(r: Restaurant, day: date, hhmm: str) -> Slot:
    """The slot of `day` starting at local `hhmm` (the test fails if there is none)."""
    found = calendar.slot_at(r, datetime.fromisoformat(f"{day.isoformat()}T{hhmm}"))
    assert found is not None, hhmm
    return found[1]
