"""The wall clock, the one place the real time is read, and the range of dates we accept.

Everything else takes "now" as a parameter; the CLI's --now pins it for previews and tests.
A date from outside FIRST_DAY..LAST_DAY is refused where it is read: a day's slots look a
day either side and zone offsets move instants across midnight, and Python's dates end at
years 1 and 9999, so a date near those ends would overflow deep inside instead.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

FIRST_DAY = date(1970, 1, 1)
LAST_DAY = date(9998, 12, 31)


def check_day(day: date) -> None:
    """Raise ValueError unless `day` is within FIRST_DAY..LAST_DAY."""
    if not FIRST_DAY <= day <= LAST_DAY:
        raise ValueError(
            f"{day.isoformat()} is out of range: dates run from {FIRST_DAY.isoformat()}"
            f" to {LAST_DAY.isoformat()}"
        )


def parse_instant(text: str) -> datetime:
    """An ISO-8601 instant; one without an offset is taken as UTC. Raises ValueError, also
    for a date out of FIRST_DAY..LAST_DAY."""
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    check_day(value.date())
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def real_now() -> datetime:
    return datetime.now(UTC)
