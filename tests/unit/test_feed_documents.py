"""Writing feed documents: deterministic bytes, atomic files, and the checks on every entry."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from feed.files import documents, writer
from feed.files.documents import (
    AVAILABILITY,
    AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE,
    DUPLICATE_RECORD,
    DURATION_OUT_OF_RANGE,
    INVALID_SHARD,
    MERCHANT,
    MERCHANT_ID_MISMATCH,
    MERCHANT_NOT_CONTIGUOUS,
    MISSING_REQUIRED_FIELD,
    MISSING_RESOURCES,
    SCHEMA_VIOLATION,
    SERVICE,
    TIMESTAMP_OUT_OF_RANGE,
    FeedChecker,
    FeedError,
    availability_entry,
    in_schema_order,
    load_schema,
    merchant_record,
    service_record,
    validate_document,
)
from feed.files.writer import (
    feed_filename,
    shard,
    write_availability_feed,
    write_merchant_feed,
    write_service_feed,
)

NOW = 1_767_225_600  # 2026-01-01T00:00:00Z
GENERATED = NOW + 60
EVENING = NOW + 18 * 3600  # 18:00 UTC on the same day
GOLDEN = Path(__file__).resolve().parents[2] / "samples" / "feeds" / "availability-golden.json"

Groups = list[tuple[str, list[dict[str, Any]]]]


def slots(merchant_id: str, count: int = 3) -> list[dict[str, Any]]:
    return [
        availability_entry(merchant_id, "dining", EVENING + 1800 * n, 5400, size, 1, 2)
        for n in range(count)
        for size in (2, 4)
    ]


def write(path: Path, groups: Any, **overrides: Any) -> writer.FileStats:
    arguments: dict[str, Any] = {
        "shard_number": 0,
        "total_shards": 1,
        "nonce": None,
        "generation_timestamp": GENERATED,
        "now_sec": NOW,
        "gzip": False,
    }
    arguments.update(overrides)
    return write_availability_feed(path, groups, **arguments)


def written_entries(path: Path) -> list[dict[str, Any]]:
    document = json.loads(path.read_bytes())
    entries: list[dict[str, Any]] = document["service_availability"][0]["availability"]
    return entries


def golden_groups() -> Groups:
    """A small hand-built evening at Marlowe's: two slots, three party sizes, a bar room."""
    entries = [
        availability_entry("marlowes", "dining", EVENING, 5400, 2, 2, 3),
        availability_entry("marlowes", "dining", EVENING, 5400, 4, 1, 2),
        availability_entry("marlowes", "dining", EVENING, 5400, 6, 0, 1),
        availability_entry(
            "marlowes", "dining", EVENING, 5400, 2, 1, 1, room_id="bar", room_name="Bar"
        ),
        availability_entry("marlowes", "dining", EVENING + 1800, 5400, 2, 3, 3),
        availability_entry("marlowes", "dining", EVENING + 1800, 5400, 4, 2, 2),
        availability_entry("marlowes", "dining", EVENING + 1800, 5400, 6, 1, 1),
    ]
    return [("marlowes", entries)]


# --- entries -------------------------------------------------------------------------------


def test_an_entry_is_built_with_the_fixed_key_order_and_synchronous_confirmation() -> None:
    entry = availability_entry("marlowes", "dining", EVENING, 5400, 4, 1, 3)
    assert list(entry) == [
        "merchant_id",
        "service_id",
        "start_sec",
        "duration_sec",
        "spots_total",
        "spots_open",
        "resources",
        "confirmation_mode",
    ]
    assert entry["spots_total"] == 3 and entry["spots_open"] == 1
    assert entry["resources"] == {"party_size": 4}
    assert entry["confirmation_mode"] == "CONFIRMATION_MODE_SYNCHRONOUS"


def test_the_hot_path_key_order_is_the_schema_order() -> None:
    schema = load_schema(AVAILABILITY)
    node = schema["$defs"]["availability"]
    entry = {
        "scheduling_rule_overrides": {"last_bookable_sec": EVENING, "first_bookable_sec": NOW},
        "availability_tag": "t",
        "resources": {"room_name": "Bar", "party_size": 2, "room_id": "bar"},
        **availability_entry("marlowes", "dining", EVENING, 5400, 2, 1, 1),
    }
    ordered = documents.entry_in_order(entry)
    expected = in_schema_order(entry, node, schema)
    assert json.dumps(ordered) == json.dumps(expected)


# --- FeedChecker: one test per code ---------------------------------------------------------


def rejection(checker: FeedChecker, entry: Mapping[str, Any]) -> str:
    with pytest.raises(FeedError) as caught:
        checker.check(entry)
    return caught.value.code


def test_more_open_spots_than_total_is_a_spot_count_out_of_range() -> None:
    entry = availability_entry("marlowes", "dining", EVENING, 5400, 2, 3, 2)
    assert rejection(FeedChecker(now_sec=NOW), entry) == AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE


def test_a_start_in_milliseconds_is_a_timestamp_out_of_range() -> None:
    entry = availability_entry("marlowes", "dining", EVENING * 1000, 5400, 2, 1, 2)
    with pytest.raises(FeedError) as caught:
        FeedChecker(now_sec=NOW).check(entry)
    assert caught.value.code == TIMESTAMP_OUT_OF_RANGE
    assert "milliseconds" in caught.value.message


def test_a_start_in_the_past_is_a_timestamp_out_of_range() -> None:
    entry = availability_entry("marlowes", "dining", NOW - 1, 5400, 2, 1, 2)
    assert rejection(FeedChecker(now_sec=NOW), entry) == TIMESTAMP_OUT_OF_RANGE


def test_a_start_exactly_now_is_accepted() -> None:
    FeedChecker(now_sec=NOW).check(availability_entry("marlowes", "dining", NOW, 5400, 2, 1, 2))


def test_a_duration_of_a_week_or_more_is_a_duration_out_of_range() -> None:
    entry = availability_entry("marlowes", "dining", EVENING, 7 * 86_400, 2, 1, 2)
    assert rejection(FeedChecker(now_sec=NOW), entry) == DURATION_OUT_OF_RANGE


def test_an_entry_without_resources_is_missing_resources() -> None:
    entry = availability_entry("marlowes", "dining", EVENING, 5400, 2, 1, 2)
    del entry["resources"]
    assert rejection(FeedChecker(now_sec=NOW), entry) == MISSING_RESOURCES


def test_an_entry_without_spots_total_is_missing_a_required_field() -> None:
    entry = availability_entry("marlowes", "dining", EVENING, 5400, 2, 1, 2)
    del entry["spots_total"]
    assert rejection(FeedChecker(now_sec=NOW), entry) == MISSING_REQUIRED_FIELD


def test_an_unknown_field_is_a_schema_violation() -> None:
    entry = {**availability_entry("marlowes", "dining", EVENING, 5400, 2, 1, 2), "x": 1}
    assert rejection(FeedChecker(now_sec=NOW), entry) == SCHEMA_VIOLATION


def test_identical_entries_are_rejected_as_duplicates() -> None:
    checker = FeedChecker(now_sec=NOW)
    entry = availability_entry("marlowes", "dining", EVENING, 5400, 2, 1, 2)
    checker.check(entry)
    assert rejection(checker, dict(entry, spots_open=0)) == DUPLICATE_RECORD


def test_entries_differing_only_in_party_size_or_room_are_not_duplicates() -> None:
    checker = FeedChecker(now_sec=NOW)
    checker.check(availability_entry("marlowes", "dining", EVENING, 5400, 2, 1, 2))
    checker.check(availability_entry("marlowes", "dining", EVENING, 5400, 4, 1, 2))
    checker.check(
        availability_entry("marlowes", "dining", EVENING, 5400, 2, 1, 2, room_id="b", room_name="B")
    )


def test_the_same_slot_at_two_merchants_is_not_a_duplicate() -> None:
    checker = FeedChecker(now_sec=NOW)
    checker.check(availability_entry("marlowes", "dining", EVENING, 5400, 2, 1, 2))
    checker.check(availability_entry("rosas", "dining", EVENING, 5400, 2, 1, 2))


def test_a_merchant_coming_back_after_another_is_refused() -> None:
    # The duplicate set is cleared per merchant; a merchant split in two could hide a duplicate.
    checker = FeedChecker(now_sec=NOW)
    checker.check(availability_entry("marlowes", "dining", EVENING, 5400, 2, 1, 2))
    checker.check(availability_entry("rosas", "dining", EVENING, 5400, 2, 1, 2))
    entry = availability_entry("marlowes", "dining", EVENING, 5400, 2, 1, 2)
    assert rejection(checker, entry) == MERCHANT_NOT_CONTIGUOUS


# --- the availability writer ------------------------------------------------------------------


def test_the_written_feed_is_valid_against_the_whole_schema(tmp_path: Path) -> None:
    path = tmp_path / "feed.json"
    stats = write(path, [("marlowes", slots("marlowes")), ("rosas", slots("rosas"))])
    document = json.loads(path.read_bytes())
    validate_document(AVAILABILITY, document)
    assert stats == writer.FileStats(path=path, bytes=path.stat().st_size, entries=12)
    assert document["metadata"] == {
        "processing_instruction": "PROCESS_AS_COMPLETE",
        "shard_number": 0,
        "total_shards": 1,
        "generation_timestamp": GENERATED,
    }


def test_the_same_input_gives_identical_bytes(tmp_path: Path) -> None:
    write(tmp_path / "a.json", [("marlowes", slots("marlowes"))])
    write(tmp_path / "b.json", [("marlowes", slots("marlowes"))])
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_key_order_of_the_input_does_not_change_the_bytes(tmp_path: Path) -> None:
    shuffled = [dict(reversed(list(entry.items()))) for entry in slots("marlowes")]
    write(tmp_path / "a.json", [("marlowes", slots("marlowes"))])
    write(tmp_path / "b.json", [("marlowes", shuffled)])
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_entries_are_compact_json_in_the_order_given(tmp_path: Path) -> None:
    entries = slots("marlowes")
    write(tmp_path / "a.json", [("marlowes", entries)])
    text = (tmp_path / "a.json").read_text("utf-8")
    assert ": " not in text and ", " not in text
    assert written_entries(tmp_path / "a.json") == entries


def test_gzip_output_is_deterministic_and_carries_no_time_or_name(tmp_path: Path) -> None:
    write(tmp_path / "a.json.gz", [("marlowes", slots("marlowes"))], gzip=True)
    write(tmp_path / "b.json.gz", [("marlowes", slots("marlowes"))], gzip=True)
    write(tmp_path / "plain.json", [("marlowes", slots("marlowes"))])
    first = (tmp_path / "a.json.gz").read_bytes()
    assert first == (tmp_path / "b.json.gz").read_bytes()
    assert first[3] & 0x08 == 0  # FNAME flag: no file name in the header
    assert first[4:8] == b"\0\0\0\0"  # MTIME
    assert gzip.decompress(first) == (tmp_path / "plain.json").read_bytes()


def test_a_spots_open_of_zero_is_written_out(tmp_path: Path) -> None:
    entry = availability_entry("marlowes", "dining", EVENING, 5400, 6, 0, 1)
    write(tmp_path / "a.json", [("marlowes", [entry])])
    assert written_entries(tmp_path / "a.json")[0]["spots_open"] == 0
    assert b'"spots_open":0' in (tmp_path / "a.json").read_bytes()


def test_an_empty_feed_is_a_valid_document(tmp_path: Path) -> None:
    stats = write(tmp_path / "a.json", [])
    validate_document(AVAILABILITY, json.loads((tmp_path / "a.json").read_bytes()))
    assert stats.entries == 0 and written_entries(tmp_path / "a.json") == []


def failing_midway(error: Exception) -> Iterator[dict[str, Any]]:
    yield from slots("marlowes")
    raise error


@pytest.mark.parametrize("gzip_output", [False, True])
def test_a_failure_mid_stream_leaves_no_file_and_no_temp(
    tmp_path: Path, gzip_output: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "BATCH_ENTRIES", 2)  # so bytes did reach the temp file
    path = tmp_path / "feed.json"
    with pytest.raises(OSError, match="disk on fire"):
        write(path, [("marlowes", failing_midway(OSError("disk on fire")))], gzip=gzip_output)
    assert os.listdir(tmp_path) == []


def test_a_failure_keeps_the_previous_feed_whole(tmp_path: Path) -> None:
    path = tmp_path / "feed.json"
    write(path, [("marlowes", slots("marlowes"))])
    before = path.read_bytes()
    bad = availability_entry("marlowes", "dining", EVENING, 5400, 2, 5, 1)
    with pytest.raises(FeedError):
        write(path, [("marlowes", [*slots("marlowes", 1), bad])])
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["feed.json"]


def test_identical_entries_in_a_feed_are_refused(tmp_path: Path) -> None:
    entries = slots("marlowes")
    with pytest.raises(FeedError) as caught:
        write(tmp_path / "a.json", [("marlowes", [*entries, entries[0]])])
    assert caught.value.code == DUPLICATE_RECORD
    assert not (tmp_path / "a.json").exists()


def test_milliseconds_in_a_feed_are_refused(tmp_path: Path) -> None:
    entry = availability_entry("marlowes", "dining", EVENING * 1000, 5400, 2, 1, 2)
    with pytest.raises(FeedError) as caught:
        write(tmp_path / "a.json", [("marlowes", [entry])])
    assert caught.value.code == TIMESTAMP_OUT_OF_RANGE


def test_an_entry_filed_under_another_merchant_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FeedError) as caught:
        write(tmp_path / "a.json", [("marlowes", slots("rosas"))])
    assert caught.value.code == MERCHANT_ID_MISMATCH


def test_progress_reports_running_counts_ending_with_the_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "BATCH_ENTRIES", 4)
    seen: list[int] = []
    write(tmp_path / "a.json", [("marlowes", slots("marlowes", 5))], progress=seen.append)
    assert seen == [4, 8, 10]


def test_several_shards_need_a_nonce_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(FeedError) as caught:
        write(tmp_path / "a.json", [], total_shards=2)
    assert caught.value.code == MISSING_REQUIRED_FIELD
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(("number", "total"), [(2, 2), (-1, 2), (0, 0)])
def test_a_shard_number_outside_the_shards_is_refused(
    tmp_path: Path, number: int, total: int
) -> None:
    with pytest.raises(FeedError) as caught:
        write(tmp_path / "a.json", [], shard_number=number, total_shards=total, nonce=7)
    assert caught.value.code == INVALID_SHARD


def test_sharded_feeds_share_nonce_timestamp_and_total(tmp_path: Path) -> None:
    merchants = ["alba", "bistro", "marlowes", "rosas", "sable"]
    shards = shard(merchants, 3)
    paths = []
    for number, merchant_ids in enumerate(shards):
        path = tmp_path / feed_filename("availability", GENERATED, number, 3, gzip=False)
        groups = [(merchant_id, slots(merchant_id)) for merchant_id in merchant_ids]
        write(path, groups, shard_number=number, total_shards=3, nonce=11203880)
        paths.append(path)
    metadata = [json.loads(path.read_bytes())["metadata"] for path in paths]
    assert [m["shard_number"] for m in metadata] == [0, 1, 2]
    assert {(m["total_shards"], m["nonce"], m["generation_timestamp"]) for m in metadata} == {
        (3, "11203880", GENERATED)
    }
    written = [e["merchant_id"] for path in paths for e in written_entries(path)]
    assert sorted(set(written)) == merchants


# --- sharding and names --------------------------------------------------------------------


def test_shards_are_contiguous_balanced_and_non_empty() -> None:
    assert shard(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert shard(list(range(6)), 1) == [list(range(6))]


def test_fewer_items_than_shards_leaves_the_last_shards_empty() -> None:
    assert shard(["a", "b"], 3) == [["a"], ["b"], []]


def test_zero_shards_is_an_error() -> None:
    with pytest.raises(ValueError):
        shard([1], 0)


def test_feed_filenames_sort_in_shard_order() -> None:
    names = [feed_filename("availability", GENERATED, n, 12, gzip=True) for n in range(12)]
    assert names[3] == f"availability-{GENERATED}-03-of-12.json.gz"
    assert sorted(names) == names
    assert feed_filename("merchant", GENERATED, 0, 1, gzip=False) == (
        f"merchant-{GENERATED}-0-of-1.json"
    )


# --- merchant and service feeds -------------------------------------------------------------

ADDRESS = {
    "street_address": "1 Example Street",
    "locality": "London",
    "region": "Greater London",
    "country": "GB",
    "postal_code": "SW1A 1AA",
}


def marlowes() -> dict[str, Any]:
    return merchant_record(
        "marlowes",
        "Marlowe's",
        "+44 20 7946 0000",
        "https://marlowes.example",
        51.5,
        -0.12,
        ADDRESS,
    )


def test_the_merchant_feed_is_valid_sorted_and_deterministic(tmp_path: Path) -> None:
    rosas = merchant_record(
        "rosas", "Rosa's", "+442079460001", "https://rosas.example", 51.6, -0.1, ADDRESS
    )
    stats = write_merchant_feed(tmp_path / "a.json", [rosas, marlowes()], generation_timestamp=NOW)
    write_merchant_feed(tmp_path / "b.json", [marlowes(), rosas], generation_timestamp=NOW)
    document = json.loads((tmp_path / "a.json").read_bytes())
    validate_document(MERCHANT, document)
    assert [m["merchant_id"] for m in document["merchant"]] == ["marlowes", "rosas"]
    assert document["merchant"][0]["telephone"] == "+442079460000"
    assert stats.entries == 2
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


@pytest.mark.parametrize(
    ("written", "reduced"),
    [
        ("+44 20 7946 0000", "+442079460000"),
        ("+1 (415) 555-0142", "+14155550142"),
        ("+353.1.555.0142", "+35315550142"),
    ],
)
def test_a_merchant_telephone_is_reduced_to_e164(written: str, reduced: str) -> None:
    record = merchant_record("m", "M", written, "https://m.example", 51.5, -0.1, ADDRESS)
    assert record["telephone"] == reduced


@pytest.mark.parametrize(
    "written", ["+44 (0)20 7946 0000", "020 7946 0000", "+44 20", "+0 20 7946 0000", "+44 x7946"]
)
def test_a_merchant_telephone_that_does_not_reduce_to_e164_is_refused(written: str) -> None:
    with pytest.raises(ValueError):
        merchant_record("m", "M", written, "https://m.example", 51.5, -0.1, ADDRESS)


def test_an_invalid_merchant_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    bad = dict(marlowes(), category="bar")
    with pytest.raises(FeedError) as caught:
        write_merchant_feed(tmp_path / "a.json", [bad], generation_timestamp=NOW)
    assert caught.value.code == SCHEMA_VIOLATION
    assert os.listdir(tmp_path) == []


def test_a_merchant_listed_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FeedError) as caught:
        write_merchant_feed(tmp_path / "a.json", [marlowes(), marlowes()], generation_timestamp=NOW)
    assert caught.value.code == DUPLICATE_RECORD


def test_the_service_feed_is_valid_with_its_rules(tmp_path: Path) -> None:
    service = service_record(
        "marlowes", "dining", "Dinner", min_advance_booking=3600, min_advance_online_canceling=7200
    )
    write_service_feed(tmp_path / "s.json.gz", [service], generation_timestamp=NOW, gzip=True)
    document = json.loads(gzip.decompress((tmp_path / "s.json.gz").read_bytes()))
    validate_document(SERVICE, document)
    assert document["service"] == [
        {
            "merchant_id": "marlowes",
            "service_id": "dining",
            "localized_service_name": {
                "value": "Dinner",
                "localized_value": [{"locale": "en", "value": "Dinner"}],
            },
            "rules": {"min_advance_booking": 3600, "min_advance_online_canceling": 7200},
        }
    ]


def test_a_second_service_for_a_merchant_is_refused(tmp_path: Path) -> None:
    services = [
        service_record("marlowes", "dining", "Dinner"),
        service_record("marlowes", "lunch", "Lunch"),
    ]
    with pytest.raises(FeedError) as caught:
        write_service_feed(tmp_path / "s.json", services, generation_timestamp=NOW)
    assert caught.value.code == DUPLICATE_RECORD


# --- golden file -------------------------------------------------------------------------------


def test_the_golden_feed_is_reproduced_byte_for_byte(tmp_path: Path) -> None:
    """Regenerate on purpose only: HOSTSTAND_REGEN_GOLDEN=1 pytest -k golden."""
    arguments: dict[str, Any] = {"nonce": 11203880}
    if os.environ.get("HOSTSTAND_REGEN_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        write(GOLDEN, golden_groups(), **arguments)
    path = tmp_path / "availability.json"
    write(path, golden_groups(), **arguments)
    assert path.read_bytes() == GOLDEN.read_bytes()


# --- the export's row path -------------------------------------------------------------------


def write_rows(path: Path, groups: Any) -> writer.FileStats:
    return writer.write_availability_rows(
        path,
        groups,
        shard_number=0,
        total_shards=1,
        nonce=None,
        generation_timestamp=GENERATED,
        now_sec=NOW,
    )


def test_rows_are_written_as_the_very_same_bytes_as_their_entries(tmp_path: Path) -> None:
    rows = [(EVENING + 900 * n, 5400, size, n % 3, 2 + n % 2) for n in range(40) for size in (2, 4)]
    write_rows(tmp_path / "rows.json", [("marlowes", "dining", rows), ("other", "1000", rows)])
    groups = [
        (m, [availability_entry(m, s, *row[:3], row[3], row[4]) for row in rows])
        for m, s in (("marlowes", "dining"), ("other", "1000"))
    ]
    write(tmp_path / "entries.json", groups)
    assert (tmp_path / "rows.json").read_bytes() == (tmp_path / "entries.json").read_bytes()


@pytest.mark.parametrize(
    ("row", "code"),
    [
        ((EVENING, 5400, 2, 3, 2), AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE),
        ((NOW - 60, 5400, 2, 1, 2), TIMESTAMP_OUT_OF_RANGE),
        ((EVENING * 1000, 5400, 2, 1, 2), TIMESTAMP_OUT_OF_RANGE),
        ((EVENING, 0, 2, 1, 2), DURATION_OUT_OF_RANGE),
        ((EVENING, 5400, 0, 1, 2), SCHEMA_VIOLATION),
        ((EVENING, 5400.0, 2, 1, 2), SCHEMA_VIOLATION),
        ((EVENING, 5400, 2, True, 2), SCHEMA_VIOLATION),
    ],
)
def test_a_bad_row_fails_with_the_code_its_entry_would_get(
    tmp_path: Path, row: tuple[Any, ...], code: str
) -> None:
    good = (EVENING + 3600, 5400, 4, 1, 1)
    with pytest.raises(FeedError) as raised:
        write_rows(tmp_path / "f.json", [("marlowes", "dining", [good, row])])
    assert raised.value.code == code
    assert not (tmp_path / "f.json").exists()


def test_two_identical_rows_are_refused(tmp_path: Path) -> None:
    row = (EVENING, 5400, 2, 1, 2)
    with pytest.raises(FeedError) as raised:
        write_rows(tmp_path / "f.json", [("marlowes", "dining", [row, row])])
    assert raised.value.code == DUPLICATE_RECORD


# --- the export's day-block path -------------------------------------------------------------


def write_days(path: Path, merchants: Any) -> writer.FileStats:
    return writer.write_availability_days(
        path,
        merchants,
        shard_number=0,
        total_shards=1,
        nonce=None,
        generation_timestamp=GENERATED,
        now_sec=NOW,
    )


SIZES, TURNS, TOTALS = (2, 4, 9), (2700, 4200, 7200), (5, 4, 1)


def block(day: int, spots: int = 1) -> tuple[list[int], list[list[int]]]:
    starts = [EVENING + 86400 * day + 900 * n for n in range(6)]
    return starts, [[min(spots, t) for t in TOTALS] for _ in starts]


def test_day_blocks_are_written_as_the_very_same_bytes_as_their_rows(tmp_path: Path) -> None:
    days = [block(0), block(1, spots=0), block(2, spots=3)]
    merchant = writer.MerchantDays("marlowes", "dining", SIZES, TURNS, TOTALS, days)
    write_days(tmp_path / "days.json", [merchant])
    rows = [
        (start, turn, n, spots, total)
        for starts, opens in days
        for start, row in zip(starts, opens, strict=True)
        for n, turn, total, spots in zip(SIZES, TURNS, TOTALS, row, strict=True)
    ]
    write_rows(tmp_path / "rows.json", [("marlowes", "dining", rows)])
    assert (tmp_path / "days.json").read_bytes() == (tmp_path / "rows.json").read_bytes()
    assert write_days(tmp_path / "again.json", []).entries == 0


@pytest.mark.parametrize(
    ("mangle", "code"),
    [
        (lambda s, o: (s, [[2, 5, 1], *o[1:]]), AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE),
        (lambda s, o: (s, [[-1, 0, 0], *o[1:]]), AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE),
        (lambda s, o: ([NOW - 60, *s[1:]], o), TIMESTAMP_OUT_OF_RANGE),
        (lambda s, o: (s, [[1.0, 1, 1], *o[1:]]), SCHEMA_VIOLATION),
        (lambda s, o: (s, [[True, 1, 1], *o[1:]]), SCHEMA_VIOLATION),
        (lambda s, o: (s, [[1, 1], *o[1:]]), SCHEMA_VIOLATION),  # a column short
        (lambda s, o: (s, [[1, 1, 1, 1], *o[1:]]), SCHEMA_VIOLATION),  # one too many
        # 1 is a value seen in every column, but 2 is more than the last column's total
        (lambda s, o: (s, [[1, 1, 2], *o[1:]]), AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE),
        (
            lambda s, o: (s, [o[0], [4, 4, 1], [4, 5, 1], *o[3:]]),
            AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE,
        ),
        (lambda s, o: ([s[0], s[0], *s[2:]], o), DUPLICATE_RECORD),
    ],
)
def test_a_bad_day_block_fails_with_the_code_its_entries_would_get(
    tmp_path: Path, mangle: Any, code: str
) -> None:
    starts, opens = block(1)
    merchant = writer.MerchantDays(
        "marlowes", "dining", SIZES, TURNS, TOTALS, [block(0), mangle(starts, opens)]
    )
    with pytest.raises(FeedError) as raised:
        write_days(tmp_path / "f.json", [merchant])
    assert raised.value.code == code
    assert not (tmp_path / "f.json").exists()


def test_a_merchant_turn_time_out_of_range_fails_before_any_day(tmp_path: Path) -> None:
    merchant = writer.MerchantDays("m", "dining", SIZES, (2700, 0, 7200), TOTALS, [block(0)])
    with pytest.raises(FeedError) as raised:
        write_days(tmp_path / "f.json", [merchant])
    assert raised.value.code == DURATION_OUT_OF_RANGE
