"""The Terrace's feeds (samples/terrace.toml, two seating areas) are reproduced byte for
byte: one availability entry per slot, party size and area, with room_id and room_name.

Regenerate on purpose only, after checking the change is meant:
    HOSTSTAND_REGEN_GOLDEN=1 .venv/bin/pytest tests/integration/test_areas_golden.py
(it rewrites tests/golden/areas/ from the same bookings and the same pinned clock).
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, date, datetime
from pathlib import Path

from feed.files.export import availability_entries, export_feeds
from feed.files.writer import write_availability_feed
from feed.service.days import Applied, DayBook
from feed.venue import calendar
from feed.venue.restaurant import load_restaurant
from store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "areas"
TERRACE = load_restaurant(REPO / "samples" / "terrace.toml")
NOW = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)  # Thursday morning (Lisbon = UTC in winter)
# (day, local time, party size, area): the patio full for 4 at Thursday 19:00, a party of 8
# on a dining-room combo on Friday, and one booking without an area.
BOOKINGS = [
    (date(2026, 12, 3), "19:00", 4, "patio"),
    (date(2026, 12, 3), "19:00", 4, "patio"),
    (date(2026, 12, 3), "20:00", 2, None),
    (date(2026, 12, 4), "20:00", 8, "main"),
]


def export(out: Path) -> list[Path]:
    store = SQLiteStore(out / "hoststand.db")
    try:
        book = DayBook(store, TERRACE)
        for day, hhmm, size, area in BOOKINGS:
            slot = next(
                s for s in calendar.slots(TERRACE, day) if s.local.strftime("%H:%M") == hhmm
            )
            assert isinstance(book.book(day, slot, size, NOW, area=area), Applied)
        export_feeds([TERRACE], store, out / "feeds", NOW, days=2)
    finally:
        store.close()
    return sorted((out / "feeds").glob("*.json"))


def test_the_terrace_feed_is_reproduced_byte_for_byte(tmp_path: Path) -> None:
    files = export(tmp_path)
    if os.environ.get("HOSTSTAND_REGEN_GOLDEN"):
        shutil.rmtree(GOLDEN, ignore_errors=True)
        GOLDEN.mkdir(parents=True)
        for f in files:
            shutil.copyfile(f, GOLDEN / f.name)
    assert [f.name for f in files] == sorted(p.name for p in GOLDEN.glob("*.json"))
    for f in files:
        assert f.read_bytes() == (GOLDEN / f.name).read_bytes(), f.name


def test_every_entry_of_the_terrace_names_its_area_and_the_patio_is_full_for_four() -> None:
    document = json.loads(next(GOLDEN.glob("availability-*.json")).read_text("utf-8"))
    entries = document["service_availability"][0]["availability"]
    rooms = {(e["resources"]["room_id"], e["resources"]["room_name"]) for e in entries}
    assert rooms == {("main", "Dining room"), ("patio", "Patio")}
    seven = [
        e for e in entries if e["start_sec"] == 1796324400 and e["resources"]["party_size"] == 4
    ]
    assert [(e["resources"]["room_id"], e["spots_open"], e["spots_total"]) for e in seven] == [
        ("main", 3, 3),
        ("patio", 0, 2),
    ]
    # No entry for a size an area cannot seat: the patio has no table for 5 or 6.
    assert not [
        e
        for e in entries
        if e["resources"] == {"party_size": 6, "room_id": "patio", "room_name": "Patio"}
    ]


def test_the_entry_path_writes_the_same_bytes_as_the_fast_path(tmp_path: Path) -> None:
    golden = next(GOLDEN.glob("availability-*.json"))
    store = SQLiteStore(tmp_path / "hoststand.db")
    try:
        book = DayBook(store, TERRACE)
        for day, hhmm, size, area in BOOKINGS:
            slot = next(
                s for s in calendar.slots(TERRACE, day) if s.local.strftime("%H:%M") == hhmm
            )
            book.book(day, slot, size, NOW, area=area)
        entries = list(availability_entries(book, NOW, 2))
    finally:
        store.close()
    stamp = int(NOW.timestamp())
    out = tmp_path / "entries.json"
    write_availability_feed(
        out,
        [(TERRACE.merchant_id, entries)],
        shard_number=0,
        total_shards=1,
        nonce=json.loads(golden.read_text("utf-8"))["metadata"]["nonce"],
        generation_timestamp=stamp,
        now_sec=stamp,
    )
    assert out.read_bytes() == golden.read_bytes()
