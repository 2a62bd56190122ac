"""The export's bytes, pinned: a week of seeded bookings, cancels, arrivals and seated
parties at five restaurants (the samples and a floor shaped like bench/feed_bench.py's)
export to the same files, byte for byte, whatever is done to make the export faster; and
the fast path writes what the entry path (each entry built and checked one by one from the
replayed days) writes.

Regenerate the pins on purpose only, after checking a change of the feed is meant:
    HOSTSTAND_PRINT_PINS=1 .venv/bin/pytest -s tests/integration/test_export_bytes.py
(it prints the new digests to paste into PINS).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from feed.files.export import availability_entries, export_feeds
from feed.files.writer import write_availability_feed
from feed.floor.availability import release
from feed.service.days import Applied, DayBook
from feed.venue import calendar
from feed.venue.restaurant import Restaurant, load_restaurant, parse_restaurant
from store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
# Friday 13:00 UTC: Marlowe's and the Harbour Room's lunches are under way (London and
# Dublin are on UTC in winter), the Terrace's too (Lisbon); Los Angeles is before dawn.
NOW = datetime(2026, 12, 4, 13, 0, tzinfo=UTC)
DAYS = 7
SEATS = [2] * 12 + [4] * 16 + [6] * 8 + [8] * 4  # bench/feed_bench.py's floor
COMBOS = [
    ("T25", "T29"),
    ("T26", "T29"),
    ("T26", "T30"),
    ("T27", "T31"),
    ("T28", "T31"),
    ("T29", "T30"),
    ("T33", "T34"),
    ("T34", "T35"),
    ("T37", "T1"),
    ("T38", "T2"),
]
WEEK = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
PINS = {
    "availability": "d92471fc8c9c8a7537cfe92965f894ee861c152129503e8c1eafbba750875ce7",
    "merchant": "9bc675abc7934731bc8ea7d306a384498ec0373f160667a3272396ed80aea1c0",
    "service": "3b6e9704e9f8c79d347d7be6003fb34fe9eaf5de05a2d418f45f23ae90cdffdb",
}


def bench_shaped() -> Restaurant:
    dinner = {"open": "17:00", "close": "23:00", "last_seating": "22:45"}
    lunch = {"open": "12:00", "close": "15:00", "last_seating": "14:30"}
    config: dict[str, Any] = {
        "merchant_id": "bench-shaped",
        "name": "Bench Bistro",
        "service_id": "1000",
        "timezone": "Europe/London",
        "telephone": "+44 20 7946 0321",
        "url": "https://bench.example.co.uk/",
        "slot_minutes": 15,
        "horizon_days": 30,
        "max_party_size": 10,
        "address": {
            "street_address": "1 Lamb's Conduit Street",
            "locality": "London",
            "region": "Greater London",
            "country": "GB",
            "postal_code": "WC1N 3LE",
        },
        "geo": {"latitude": 51.5215, "longitude": -0.1185},
        "turn_minutes": {"2": 45, "4": 70, "6": 90, "8": 100, "large": 120},
        "hours": {day: [dict(lunch), dict(dinner)] for day in WEEK},
        "tables": [{"id": f"T{n}", "seats": s} for n, s in enumerate(SEATS, start=1)],
        "combos": [{"tables": list(pair)} for pair in COMBOS],
    }
    return parse_restaurant(config, "bench-shaped")


def restaurants() -> list[Restaurant]:
    files = ("marlowes.toml", "google-floorplan.toml", "terrace.toml", "harbour.toml")
    return [load_restaurant(REPO / "samples" / f) for f in files] + [bench_shaped()]


def fill(store: SQLiteStore, rs: list[Restaurant]) -> int:
    """Seeded bookings over the week (made three hours before NOW), then, forty minutes
    before NOW, the host's hand on today's and tomorrow's: check-ins, arrivals, cancels,
    seats and walk-ins (some refused: the log keeps those too). Returns the bookings made."""
    rng = random.Random(11)
    made = 0
    for r in rs:
        book = DayBook(store, r)
        days = calendar.days_ahead(r, NOW, DAYS)
        ids: dict[int, list[str]] = {}
        for k, day in enumerate(days):
            slots = calendar.slots(r, day)
            for slot in sorted(rng.sample(slots, len(slots) // 3), key=lambda s: s.minute):
                for _ in range(rng.randint(1, 3)):
                    host = rng.random() < 0.2
                    size = rng.randint(1, r.max_party_size if host else r.online_limit)
                    rid = f"bk-{r.merchant_id}-{day.isoformat()}-{made}"
                    area = rng.choice([None, *(a.id for a in r.rooms)])
                    outcome = book.book(
                        day, slot, size, NOW - timedelta(hours=3), booking_id=rid, area=area,
                        host=host,
                    )  # fmt: skip
                    if isinstance(outcome, Applied) and outcome.result is True:
                        made += 1
                        ids.setdefault(k, []).append(rid)
        later = NOW - timedelta(minutes=40)
        for k in (0, 1):
            for rid in ids.get(k, [])[:12]:
                name = rng.choice(["check_in", "arrive", "cancel", "cancel", "arrive"])
                book.operate(days[k], later, name, rid)
            table = rng.choice(r.floor.tables).id
            book.operate(days[k], later, "walk_in", f"walk-{k}", rng.randint(1, 4))
            if ids.get(k):
                book.operate(days[k], later, "seat", ids[k][-1], table)
    return made


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_export_of_a_busy_week_is_pinned_byte_for_byte(tmp_path: Path) -> None:
    rs = restaurants()
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        assert fill(store, rs) > 250
        for r in rs:  # cold floors, as a one-shot export finds them
            release(r.floor)
            release(r.online_floor)
        export_feeds(rs, store, tmp_path / "feeds", NOW, days=DAYS)
    files = sorted((tmp_path / "feeds").glob("*.json"))
    found = {f.name.split("-")[0]: digest(f) for f in files}
    if os.environ.get("HOSTSTAND_PRINT_PINS"):
        print(json.dumps(found, indent=4))
    assert found == PINS


def test_the_fast_path_writes_what_the_entry_path_writes(tmp_path: Path) -> None:
    rs = sorted(restaurants(), key=lambda r: r.merchant_id)
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        fill(store, rs)
        summary = export_feeds(rs, store, tmp_path / "feeds", NOW, days=DAYS)
        [fast] = (tmp_path / "feeds").glob("availability-*.json")
        by_merchant = [
            (r.merchant_id, list(availability_entries(DayBook(store, r), NOW, DAYS))) for r in rs
        ]
    out = tmp_path / "entries.json"
    write_availability_feed(
        out,
        by_merchant,
        shard_number=0,
        total_shards=1,
        nonce=json.loads(fast.read_text("utf-8"))["metadata"]["nonce"],
        generation_timestamp=summary.generation_timestamp,
        now_sec=int(NOW.timestamp()),
    )
    assert summary.entries > 5000
    assert out.read_bytes() == fast.read_bytes()
