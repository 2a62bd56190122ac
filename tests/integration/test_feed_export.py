"""Feed export on a real SQLite file: the three feeds, what they hold, and how they are written."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import jsonschema
import pytest

from feed.files.export import export_feeds
from feed.floor import availability
from feed.service.days import Applied, DayBook
from feed.venue import calendar
from feed.venue.restaurant import Restaurant, load_restaurant
from store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "schemas"
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)  # Marlowe's Friday lunch opens right now
NOW_SEC = int(NOW.timestamp())
LONDON = ZoneInfo("Europe/London")
LOS_ANGELES = ZoneInfo("America/Los_Angeles")
KINDS = ("availability", "merchant", "service")


SAMPLE_FILES = ("marlowes.toml", "google-floorplan.toml")


@pytest.fixture(scope="module")
def restaurants() -> list[Restaurant]:
    return [load_restaurant(REPO / "samples" / name) for name in SAMPLE_FILES]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        yield store


def feed_files(out: Path) -> list[Path]:
    return sorted(p for p in out.iterdir() if not p.name.startswith("."))


def load(path: Path) -> Any:
    if path.name.endswith(".gz"):
        return json.loads(gzip.decompress(path.read_bytes()))
    return json.loads(path.read_text(encoding="utf-8"))


def the(out: Path, kind: str) -> Any:
    [path] = [p for p in feed_files(out) if p.name.startswith(kind + "-")]
    return load(path)


def entries(document: Any) -> list[dict[str, Any]]:
    return [e for group in document["service_availability"] for e in group["availability"]]


def schema(kind: str) -> Any:
    return json.loads((SCHEMAS / f"{kind}_feed.schema.json").read_text(encoding="utf-8"))


def cell(feed: list[dict[str, Any]], merchant: str, start_sec: int, n: int) -> tuple[int, int]:
    [entry] = [
        e
        for e in feed
        if (e["merchant_id"], e["start_sec"], e["resources"]["party_size"])
        == (merchant, start_sec, n)
    ]
    return entry["spots_open"], entry["spots_total"]


def local_sec(tz: ZoneInfo, *args: int) -> int:
    return int(datetime(*args, tzinfo=tz).timestamp())


def test_an_export_writes_the_three_feeds_each_valid_against_its_schema(
    tmp_path: Path, store: SQLiteStore, restaurants: list[Restaurant]
) -> None:
    out = tmp_path / "out"
    summary = export_feeds(restaurants, store, out, NOW, days=3)
    files = feed_files(out)
    assert [p.name for p in files] == [f"{k}-{NOW_SEC}-0-of-1.json" for k in KINDS]
    assert sorted(f.path for f in summary.files) == files
    for kind in KINDS:
        document = the(out, kind)
        jsonschema.validate(document, schema(kind))
        assert document["metadata"]["generation_timestamp"] == NOW_SEC
    assert [m["merchant_id"] for m in the(out, "merchant")["merchant"]] == [
        "marlowes-kitchen",
        "merch1",
    ]


def test_a_restaurant_without_a_region_has_a_merchant_feed_without_one(
    tmp_path: Path, store: SQLiteStore
) -> None:
    text = (REPO / "samples" / "marlowes.toml").read_text(encoding="utf-8")
    assert 'region = "Greater London"\n' in text
    path = tmp_path / "no-region.toml"
    path.write_text(text.replace('region = "Greater London"\n', ""), encoding="utf-8")
    out = tmp_path / "out"
    export_feeds([load_restaurant(path)], store, out, NOW, days=1)
    document = the(out, "merchant")
    jsonschema.validate(document, schema("merchant"))
    address = document["merchant"][0]["geo"]["address"]
    assert "region" not in address
    assert address["locality"] == "London"


def test_the_feed_has_an_entry_per_future_slot_and_party_size_the_floor_can_seat(
    tmp_path: Path, store: SQLiteStore, restaurants: list[Restaurant]
) -> None:
    export_feeds(restaurants, store, tmp_path, NOW, days=3)
    feed = entries(the(tmp_path, "availability"))
    assert all(e["start_sec"] > NOW_SEC and e["spots_total"] > 0 for e in feed)
    # Marlowe's: Fri 4 - Sun 6 December, 9 lunch + 17 dinner slots a day, minus Friday 12:00
    # (starting now); sizes 1-10 all fit something.
    marlowes = [e for e in feed if e["merchant_id"] == "marlowes-kitchen"]
    assert len({e["start_sec"] for e in marlowes}) == 3 * 26 - 1
    assert {e["resources"]["party_size"] for e in marlowes} == set(range(1, 11))
    assert len(marlowes) == (3 * 26 - 1) * 10
    assert min(e["start_sec"] for e in marlowes) == local_sec(LONDON, 2026, 12, 4, 12, 15)
    # merch1: 17:00-21:00 every 15 minutes (17 slots) for three days; nothing seats 1-3.
    merch1 = [e for e in feed if e["merchant_id"] == "merch1"]
    assert {e["resources"]["party_size"] for e in merch1} == set(range(4, 11))
    assert len(merch1) == 3 * 17 * 7
    assert max(e["start_sec"] for e in merch1) == local_sec(LOS_ANGELES, 2026, 12, 6, 21, 0)


def test_entries_are_in_start_then_party_size_order_per_merchant(
    tmp_path: Path, store: SQLiteStore, restaurants: list[Restaurant]
) -> None:
    export_feeds(restaurants, store, tmp_path, NOW, days=3)
    feed = entries(the(tmp_path, "availability"))
    keys = [(e["merchant_id"], e["start_sec"], e["resources"]["party_size"]) for e in feed]
    assert keys == sorted(keys)


def test_a_fully_booked_cell_is_written_with_spots_open_zero(
    tmp_path: Path, store: SQLiteStore, restaurants: list[Restaurant]
) -> None:
    seed = restaurants[1]
    day = date(2026, 12, 5)
    [slot] = [s for s in calendar.slots(seed, day) if s.local.hour == 19 and s.local.minute == 0]
    outcome = DayBook(store, seed).book(day, slot, 7, NOW)  # L1, the only table for 6-8
    assert isinstance(outcome, Applied) and outcome.result is True
    export_feeds(restaurants, store, tmp_path, NOW, days=3)
    feed = entries(the(tmp_path, "availability"))
    assert slot.start_sec == local_sec(LOS_ANGELES, 2026, 12, 5, 19, 0)
    assert cell(feed, "merch1", slot.start_sec, 7) == (0, 1)
    assert cell(feed, "merch1", slot.start_sec, 8) == (0, 1)
    assert cell(feed, "merch1", slot.start_sec, 6) == (3, 4)


def test_a_restaurants_bookings_lower_its_entries_and_no_one_elses(
    tmp_path: Path, store: SQLiteStore, restaurants: list[Restaurant]
) -> None:
    export_feeds(restaurants, store, tmp_path / "before", NOW, days=3)
    marlowes = restaurants[0]
    day = date(2026, 12, 5)
    [slot] = [
        s for s in calendar.slots(marlowes, day) if s.local.hour == 19 and s.local.minute == 0
    ]
    book = DayBook(store, marlowes)
    for size in (2, 5):  # T2, then T3 (the only table for 5)
        outcome = book.book(day, slot, size, NOW)
        assert isinstance(outcome, Applied) and outcome.result is True
    export_feeds(restaurants, store, tmp_path / "after", NOW, days=3)
    before = entries(the(tmp_path / "before", "availability"))
    after = entries(the(tmp_path / "after", "availability"))
    start = local_sec(LONDON, 2026, 12, 5, 19, 0)
    assert cell(before, "marlowes-kitchen", start, 2) == (5, 5)
    assert cell(after, "marlowes-kitchen", start, 2) == (4, 5)
    assert cell(after, "marlowes-kitchen", start, 5) == (0, 1)
    assert cell(after, "marlowes-kitchen", start, 6) == (0, 1)
    # T3 is in both T3+T4 and T1+T3: only T5+T6 is left for 7-8, nothing for 9-10.
    assert cell(after, "marlowes-kitchen", start, 8) == (1, 2)
    assert cell(after, "marlowes-kitchen", start, 10) == (0, 1)
    # The party of 5 keeps T3 for its 90-minute turn: another 5 fits from 20:30 only.
    assert cell(after, "marlowes-kitchen", start + 1800, 5) == (0, 1)
    assert cell(after, "marlowes-kitchen", start + 5400, 5) == (1, 1)
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert changed and all(b["merchant_id"] == "marlowes-kitchen" for b, _ in changed)
    # From 17:30 (a large party's 120-minute turn would reach 19:00) to 20:15.
    assert {b["start_sec"] for b, _ in changed} == set(range(start - 5400, start + 5400, 900))


def test_a_party_seated_before_the_day_opens_keeps_its_table_in_that_days_feed(
    tmp_path: Path, store: SQLiteStore, restaurants: list[Restaurant]
) -> None:
    # Friday's lunch opens at 12:00; the host seats the 12:00 party of 5 (T3, the only
    # table for 5) at 11:40, and the feed is exported at 11:45, before the opening.
    marlowes, day = restaurants[0], date(2026, 12, 4)
    [noon] = [s for s in calendar.slots(marlowes, day) if s.local.hour == 12 and s.minute == 0]
    book = DayBook(store, marlowes)
    booked = book.book(day, noon, 5, NOW - timedelta(hours=1), booking_id="bk-five")
    assert isinstance(booked, Applied) and booked.result is True
    seated = book.operate(day, NOW - timedelta(minutes=20), "seat", "bk-five", "T3")
    assert isinstance(seated, Applied) and seated.result == ["bk-five@T3"]
    export_feeds(restaurants, store, tmp_path, NOW - timedelta(minutes=15), days=1)
    feed = entries(the(tmp_path, "availability"))
    assert cell(feed, "marlowes-kitchen", noon.start_sec, 5) == (0, 1)
    # Seated at 11:40 for a 90-minute turn: T3 is taken until 13:10.
    assert cell(feed, "marlowes-kitchen", noon.start_sec + 3600, 5) == (0, 1)
    assert cell(feed, "marlowes-kitchen", noon.start_sec + 4500, 5) == (1, 1)


@pytest.mark.parametrize(
    ("sizes", "duration_sec"), [((1, 2), 2700), ((3, 4), 4200), ((5, 6), 5400), ((7, 10), 7200)]
)
def test_duration_sec_is_the_turn_time_of_the_party_size(
    tmp_path: Path,
    store: SQLiteStore,
    restaurants: list[Restaurant],
    sizes: tuple[int, int],
    duration_sec: int,
) -> None:
    export_feeds(restaurants[:1], store, tmp_path, NOW, days=1)
    feed = entries(the(tmp_path, "availability"))
    low, high = sizes
    chosen = [e for e in feed if low <= e["resources"]["party_size"] <= high]
    assert {e["resources"]["party_size"] for e in chosen} == set(range(low, high + 1))
    assert {e["duration_sec"] for e in chosen} == {duration_sec}


def test_the_same_state_and_generation_timestamp_give_identical_bytes(
    tmp_path: Path, store: SQLiteStore, restaurants: list[Restaurant]
) -> None:
    export_feeds(restaurants, store, tmp_path / "one", NOW, days=3)
    export_feeds(restaurants, store, tmp_path / "two", NOW, days=3)
    one, two = feed_files(tmp_path / "one"), feed_files(tmp_path / "two")
    assert [p.name for p in one] == [p.name for p in two]
    for a, b in zip(one, two, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_a_second_export_into_the_same_directory_gets_a_later_generation_timestamp(
    tmp_path: Path, store: SQLiteStore, restaurants: list[Restaurant]
) -> None:
    first = export_feeds(restaurants, store, tmp_path, NOW, days=3)
    second = export_feeds(restaurants, store, tmp_path, NOW, days=3)
    assert first.generation_timestamp == NOW_SEC
    assert second.generation_timestamp > first.generation_timestamp
    newest = [p for p in feed_files(tmp_path) if str(second.generation_timestamp) in p.name]
    assert len(newest) == 3
    for p in newest:
        metadata = load(p)["metadata"]
        assert metadata["generation_timestamp"] == second.generation_timestamp
    assert load(newest[0])["metadata"]["nonce"] != the_first_nonce(tmp_path, first)


def the_first_nonce(out: Path, summary: Any) -> str:
    [path] = [
        p
        for p in feed_files(out)
        if p.name.startswith(f"availability-{summary.generation_timestamp}-")
    ]
    return str(load(path)["metadata"]["nonce"])


def test_shards_share_one_nonce_and_generation_timestamp(
    tmp_path: Path, store: SQLiteStore, restaurants: list[Restaurant]
) -> None:
    export_feeds(restaurants, store, tmp_path, NOW, days=3, shards=2)
    shards = sorted(p for p in feed_files(tmp_path) if p.name.startswith("availability-"))
    assert [p.name for p in shards] == [
        f"availability-{NOW_SEC}-0-of-2.json",
        f"availability-{NOW_SEC}-1-of-2.json",
    ]
    documents = [load(p) for p in shards]
    for d in documents:
        jsonschema.validate(d, schema("availability"))
    metadata = [d["metadata"] for d in documents]
    assert [m["shard_number"] for m in metadata] == [0, 1]
    assert {m["total_shards"] for m in metadata} == {2}
    assert len({m["nonce"] for m in metadata}) == 1
    assert {m["generation_timestamp"] for m in metadata} == {NOW_SEC}
    merchants = [{e["merchant_id"] for e in entries(d)} for d in documents]
    assert merchants == [{"marlowes-kitchen"}, {"merch1"}]


def test_gzip_output_decompresses_to_the_same_valid_documents(
    tmp_path: Path, store: SQLiteStore, restaurants: list[Restaurant]
) -> None:
    export_feeds(restaurants, store, tmp_path / "plain", NOW, days=3)
    export_feeds(restaurants, store, tmp_path / "gz", NOW, days=3, gzip=True)
    zipped = feed_files(tmp_path / "gz")
    assert [p.name for p in zipped] == [f"{k}-{NOW_SEC}-0-of-1.json.gz" for k in KINDS]
    for kind, path in zip(KINDS, zipped, strict=True):
        document = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
        jsonschema.validate(document, schema(kind))
        assert document == the(tmp_path / "plain", kind)


def test_an_export_after_the_last_seating_of_the_only_day_has_no_entries(
    tmp_path: Path, store: SQLiteStore, restaurants: list[Restaurant]
) -> None:
    late = NOW + timedelta(hours=10)  # 22:00 GMT: Marlowe's last seating today has passed
    export_feeds(restaurants[:1], store, tmp_path, late, days=1)
    assert entries(the(tmp_path, "availability")) == []


def test_an_export_keeps_a_servers_warm_floors_and_lets_go_of_the_ones_it_worked_out(
    store: SQLiteStore, tmp_path: Path
) -> None:
    """A server keeps what its lookups worked out per floor; its scheduled export must not
    throw that away. A floor only the export worked out is let go (memory stays flat)."""
    restaurants = [load_restaurant(REPO / "samples" / f) for f in SAMPLE_FILES]  # fresh floors
    warm, cold = restaurants
    DayBook(store, warm).rows(NOW.date(), NOW)  # a lookup: the floor is worked out and kept
    kept = availability._units(warm.online_floor)
    assert not availability.worked_out(cold.online_floor)
    export_feeds(restaurants, store, tmp_path / "out", NOW, days=3)
    assert availability._units(warm.online_floor) is kept
    assert not availability.worked_out(cold.online_floor)
    assert not availability.worked_out(cold.floor)
