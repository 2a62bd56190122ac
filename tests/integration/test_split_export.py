"""A feed split across machines: each exports shard I of N of one feed (export_feeds with a
FeedPart), and the N shards together are the feed one machine would write. On both stores."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from feed.files.export import FeedPart, export_feeds, shard_of
from feed.service.days import Applied, DayBook
from feed.venue import calendar
from feed.venue.restaurant import Restaurant, load_restaurant
from store import open_store
from store.log import LogStore

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "marlowes.toml"
NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
STAMP = 1_796_500_000  # the generation_timestamp every machine is given
NONCE = "18446744073709551615"  # the largest uint64: passed through as written
KINDS = ("availability", "merchant", "service")
TOTAL = 3
RESTAURANTS = 9


def restaurant_files(directory: Path, count: int) -> list[Path]:
    """`count` copies of Marlowe's, each with its own merchant id."""
    text = SAMPLE.read_text(encoding="utf-8")
    paths = []
    for i in range(count):
        path = directory / f"r{i}.toml"
        path.write_text(
            text.replace('merchant_id = "marlowes-kitchen"', f'merchant_id = "split-{i:02d}"'),
            encoding="utf-8",
        )
        paths.append(path)
    return paths


@pytest.fixture
def restaurants(tmp_path: Path) -> list[Restaurant]:
    return [load_restaurant(p) for p in restaurant_files(tmp_path, RESTAURANTS)]


@pytest.fixture
def store(any_db: str, restaurants: list[Restaurant]) -> Iterator[LogStore]:
    """A store where a few restaurants have bookings, so their entries differ."""
    opened = open_store(any_db)
    day = date(2026, 12, 5)
    for r in restaurants[::2]:
        [slot] = [s for s in calendar.slots(r, day) if (s.local.hour, s.local.minute) == (19, 0)]
        outcome = DayBook(opened, r).book(day, slot, 4, NOW)
        assert isinstance(outcome, Applied) and outcome.result is True
    yield opened
    opened.close()


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def files(out: Path, kind: str) -> list[Path]:
    return sorted(out.glob(f"{kind}-*.json"))


def records(out: Path, kind: str) -> list[Any]:
    """Every record of `kind` across the directory's files, in file then record order."""
    found: list[Any] = []
    for path in files(out, kind):
        document = load(path)
        if kind == "availability":
            found += [e for g in document["service_availability"] for e in g["availability"]]
        else:
            found += document[kind]
    return found


def split(
    restaurants: list[Restaurant], store: LogStore, out: Path, total: int = TOTAL
) -> list[int]:
    """Each machine's export of its shard into the one directory; restaurants per shard."""
    counts = []
    for number in range(total):
        part = FeedPart(number, total, NONCE, STAMP)
        counts.append(export_feeds(restaurants, store, out, NOW, days=3, part=part).restaurants)
    return counts


def test_the_shards_of_a_split_export_together_hold_exactly_the_single_exports_records(
    tmp_path: Path, store: LogStore, restaurants: list[Restaurant]
) -> None:
    export_feeds(restaurants, store, tmp_path / "single", NOW, days=3)
    counts = split(restaurants, store, tmp_path / "split")
    assert sum(counts) == RESTAURANTS and all(counts)
    for kind in KINDS:
        single = records(tmp_path / "single", kind)
        shards = records(tmp_path / "split", kind)
        key = json.dumps
        assert sorted(map(key, shards)) == sorted(map(key, single)), kind
        assert len(shards) == len(single)


def test_each_shard_is_labelled_as_shard_i_of_n_with_the_nonce_and_timestamp_given(
    tmp_path: Path, store: LogStore, restaurants: list[Restaurant]
) -> None:
    split(restaurants, store, tmp_path)
    for kind in KINDS:
        paths = files(tmp_path, kind)
        assert [p.name for p in paths] == [f"{kind}-{STAMP}-{i}-of-{TOTAL}.json" for i in range(3)]
        schema = json.loads((REPO / "schemas" / f"{kind}_feed.schema.json").read_text())
        for number, path in enumerate(paths):
            document = load(path)
            jsonschema.validate(document, schema)
            assert document["metadata"] == {
                "processing_instruction": "PROCESS_AS_COMPLETE",
                "shard_number": number,
                "total_shards": TOTAL,
                "nonce": NONCE,
                "generation_timestamp": STAMP,
            }


def test_a_restaurant_is_in_the_shard_its_merchant_id_hashes_to_in_every_feed(
    tmp_path: Path, store: LogStore, restaurants: list[Restaurant]
) -> None:
    split(restaurants, store, tmp_path)
    for kind in KINDS:
        for number, path in enumerate(files(tmp_path, kind)):
            document = load(path)
            if kind == "availability":
                found = [e for g in document["service_availability"] for e in g["availability"]]
            else:
                found = document[kind]
            ids = {record["merchant_id"] for record in found}
            expected = {
                r.merchant_id for r in restaurants if shard_of(r.merchant_id, TOTAL) == number
            }
            assert ids == expected, (kind, number)


def test_the_split_depends_on_the_merchant_id_only_not_on_the_other_restaurants() -> None:
    ids = [f"split-{i:02d}" for i in range(40)]
    whole = {m: shard_of(m, 4) for m in ids}
    assert whole == {m: shard_of(m, 4) for m in reversed(ids)}
    assert set(whole.values()) == {0, 1, 2, 3}
    assert whole["split-07"] == shard_of("split-07", 4)  # alone, as a machine with one file


def test_a_shard_machine_writes_the_same_bytes_whatever_order_its_files_come_in(
    tmp_path: Path, store: LogStore, restaurants: list[Restaurant]
) -> None:
    part = FeedPart(1, TOTAL, NONCE, STAMP)
    export_feeds(restaurants, store, tmp_path / "a", NOW, days=3, part=part)
    export_feeds(restaurants[::-1], store, tmp_path / "b", NOW, days=3, part=part)
    for kind in KINDS:
        [a], [b] = files(tmp_path / "a", kind), files(tmp_path / "b", kind)
        assert a.read_bytes() == b.read_bytes()


def test_a_shard_with_an_older_generation_timestamp_than_the_directorys_last_is_refused(
    tmp_path: Path, store: LogStore, restaurants: list[Restaurant]
) -> None:
    export_feeds(restaurants, store, tmp_path, NOW, days=1, part=FeedPart(0, 2, NONCE, STAMP))
    # The same timestamp is the feed's other shard, written into the same directory.
    export_feeds(restaurants, store, tmp_path, NOW, days=1, part=FeedPart(1, 2, NONCE, STAMP))
    with pytest.raises(ValueError, match="older than the last export"):
        export_feeds(
            restaurants, store, tmp_path, NOW, days=1, part=FeedPart(0, 2, NONCE, STAMP - 1)
        )
    later = export_feeds(restaurants, store, tmp_path, NOW, days=1)
    assert later.generation_timestamp == STAMP + 1  # a plain export still comes after
