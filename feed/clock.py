"""The wall clock, the one place the real time is read.

Everything else takes "now" as a parameter; the CLI's --now pins it for previews and tests.
"""

from __future__ import annotations

from datetime import UTC, datetime


def parse_instant(text: str) -> datetime:
    """An ISO-8601 instant; one without an offset is taken as UTC. Raises ValueError."""
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def real_now() -> datetime:
    return datetime.now(UTC)
