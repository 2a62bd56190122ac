"""The feed schemas: a good document passes, and every rule has a document that breaks it.

The availability entry corpus also holds the fast entry check to jsonschema's verdict.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from feed.files.documents import (
    AVAILABILITY,
    AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE,
    DURATION_OUT_OF_RANGE,
    ENTRY_KEY_ORDER,
    MERCHANT,
    MISSING_REQUIRED_FIELD,
    MISSING_RESOURCES,
    OVERRIDES_KEY_ORDER,
    RESOURCES_KEY_ORDER,
    SCHEMA_DIR,
    SCHEMA_VIOLATION,
    SERVICE,
    TIMESTAMP_OUT_OF_RANGE,
    FeedError,
    check_entry_shape,
    load_schema,
    validate_document,
)

DELETE = object()
START = 1_800_000_000


def changed(document: dict[str, Any], path: str, value: object) -> dict[str, Any]:
    """A copy of `document` with the value at "a/0/b" replaced (or deleted with DELETE)."""
    result = copy.deepcopy(document)
    *parents, last = path.split("/")
    node: Any = result
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    key: Any = int(last) if isinstance(node, list) else last
    if value is DELETE:
        del node[key]
    else:
        node[key] = value
    return result


def code_of(name: str, document: object) -> str | None:
    try:
        validate_document(name, document)
    except FeedError as error:
        return error.code
    return None


METADATA = {
    "processing_instruction": "PROCESS_AS_COMPLETE",
    "shard_number": 0,
    "total_shards": 1,
    "nonce": "11203880",
    "generation_timestamp": 1_767_225_600,
}
ENTRY = {
    "merchant_id": "marlowes",
    "service_id": "dining",
    "start_sec": START,
    "duration_sec": 5400,
    "spots_total": 3,
    "spots_open": 1,
    "resources": {"party_size": 4},
    "confirmation_mode": "CONFIRMATION_MODE_SYNCHRONOUS",
}
AVAILABILITY_DOC = {"metadata": METADATA, "service_availability": [{"availability": [ENTRY]}]}
MERCHANT_DOC = {
    "metadata": METADATA,
    "merchant": [
        {
            "merchant_id": "marlowes",
            "name": "Marlowe's",
            "category": "restaurant",
            "geo": {
                "latitude": 51.5072,
                "longitude": -0.1276,
                "address": {
                    "street_address": "1 Example Street",
                    "locality": "London",
                    "region": "Greater London",
                    "country": "GB",
                    "postal_code": "SW1A 1AA",
                },
            },
            "telephone": "+442079460000",
            "url": "https://marlowes.example",
        }
    ],
}
SERVICE_DOC = {
    "metadata": METADATA,
    "service": [
        {
            "merchant_id": "marlowes",
            "service_id": "dining",
            "localized_service_name": {
                "value": "Dining",
                "localized_value": [{"locale": "en", "value": "Dining"}],
            },
            "rules": {"min_advance_booking": 3600, "min_advance_online_canceling": 7200},
        }
    ],
}


@pytest.mark.parametrize(
    ("name", "document"),
    [(AVAILABILITY, AVAILABILITY_DOC), (MERCHANT, MERCHANT_DOC), (SERVICE, SERVICE_DOC)],
)
def test_a_good_document_passes_both_our_validator_and_a_plain_one(
    name: str, document: dict[str, Any]
) -> None:
    validate_document(name, document)
    Draft202012Validator(load_schema(name)).validate(document)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("metadata/nonce", DELETE),  # one shard needs no nonce
        ("metadata/nonce", 11203880),  # a uint64 may be written as a number
        ("service_availability", []),  # an empty snapshot clears the partner's availability
        ("service_availability/0/availability", []),
        ("service_availability/0/start_timestamp_restrict", START),
        ("service_availability/0/resources_restrict", {"party_size": 2}),
    ],
)
def test_other_good_availability_documents_pass(path: str, value: object) -> None:
    validate_document(AVAILABILITY, changed(AVAILABILITY_DOC, path, value))


# (path in AVAILABILITY_DOC, new value, code)
AVAILABILITY_BREAKS = [
    ("metadata", DELETE, MISSING_REQUIRED_FIELD),
    ("service_availability", DELETE, MISSING_REQUIRED_FIELD),
    ("extra", 1, SCHEMA_VIOLATION),
    ("metadata/processing_instruction", "PROCESS_AS_INCREMENTAL", SCHEMA_VIOLATION),
    ("metadata/processing_instruction", DELETE, MISSING_REQUIRED_FIELD),
    ("metadata/shard_number", -1, SCHEMA_VIOLATION),
    ("metadata/shard_number", DELETE, MISSING_REQUIRED_FIELD),
    ("metadata/total_shards", 0, SCHEMA_VIOLATION),
    ("metadata/total_shards", DELETE, MISSING_REQUIRED_FIELD),
    ("metadata/generation_timestamp", 1_767_225_600_000, TIMESTAMP_OUT_OF_RANGE),
    ("metadata/generation_timestamp", DELETE, MISSING_REQUIRED_FIELD),
    ("metadata/nonce", "11x", SCHEMA_VIOLATION),
    ("metadata/nonce", -1, SCHEMA_VIOLATION),
    ("metadata/nonce", 2**64, SCHEMA_VIOLATION),
    ("metadata/extra", 1, SCHEMA_VIOLATION),
    ("service_availability/0", [], SCHEMA_VIOLATION),
    ("service_availability/0/availability", DELETE, MISSING_REQUIRED_FIELD),
    ("service_availability/0/extra", 1, SCHEMA_VIOLATION),
    ("service_availability/0/start_timestamp_restrict", START * 1000, TIMESTAMP_OUT_OF_RANGE),
    ("service_availability/0/end_timestamp_restrict", "soon", SCHEMA_VIOLATION),
    ("service_availability/0/merchant_id_restrict", "", SCHEMA_VIOLATION),
    ("service_availability/0/service_id_restrict", 5, SCHEMA_VIOLATION),
    ("service_availability/0/duration_restrict_sec", 0, DURATION_OUT_OF_RANGE),
    ("service_availability/0/resources_restrict", {"staff_id": "x"}, SCHEMA_VIOLATION),
    ("service_availability/0/resources_restrict", {"party_size": 21}, SCHEMA_VIOLATION),
]


@pytest.mark.parametrize(("path", "value", "code"), AVAILABILITY_BREAKS)
def test_each_availability_document_rule_has_a_document_that_breaks_it(
    path: str, value: object, code: str
) -> None:
    assert code_of(AVAILABILITY, changed(AVAILABILITY_DOC, path, value)) == code


def test_a_nonce_is_required_when_there_is_more_than_one_shard() -> None:
    document = changed(AVAILABILITY_DOC, "metadata/total_shards", 2)
    validate_document(AVAILABILITY, document)
    assert code_of(AVAILABILITY, changed(document, "metadata/nonce", DELETE)) == (
        MISSING_REQUIRED_FIELD
    )


# Entries: (entry or None for "not an object", path in ENTRY, value, code)
GOOD_ENTRIES: list[dict[str, Any]] = [
    ENTRY,
    changed(ENTRY, "confirmation_mode", DELETE),
    changed(ENTRY, "spots_open", 0),
    changed(ENTRY, "spots_total", 0),
    changed(ENTRY, "duration_sec", 604_799),
    changed(ENTRY, "duration_sec", 1),
    changed(ENTRY, "start_sec", 946_684_800),
    changed(ENTRY, "start_sec", 4_102_444_800),
    changed(ENTRY, "resources", {"party_size": 20}),
    changed(ENTRY, "resources", {"party_size": 1, "room_id": "bar", "room_name": "Bar"}),
    changed(ENTRY, "confirmation_mode", "CONFIRMATION_MODE_ASYNCHRONOUS"),
    changed(ENTRY, "availability_tag", "t-1"),
    changed(ENTRY, "scheduling_rule_overrides", {}),
    changed(
        ENTRY,
        "scheduling_rule_overrides",
        {
            "first_bookable_sec": START - 86_400,
            "last_bookable_sec": START - 3600,
            "last_online_cancellable_sec": START - 7200,
        },
    ),
]
ENTRY_BREAKS: list[tuple[str, object, str]] = [
    *((field, DELETE, MISSING_REQUIRED_FIELD) for field in ENTRY_KEY_ORDER[:6]),
    ("resources", DELETE, MISSING_RESOURCES),
    ("extra", 1, SCHEMA_VIOLATION),
    ("deposit", {}, SCHEMA_VIOLATION),  # the partner knows it; we never write it
    ("merchant_id", "", SCHEMA_VIOLATION),
    ("merchant_id", 7, SCHEMA_VIOLATION),
    ("service_id", None, SCHEMA_VIOLATION),
    ("start_sec", START * 1000, TIMESTAMP_OUT_OF_RANGE),  # milliseconds
    ("start_sec", 946_684_799, TIMESTAMP_OUT_OF_RANGE),
    ("start_sec", str(START), SCHEMA_VIOLATION),
    ("start_sec", float(START), SCHEMA_VIOLATION),
    ("start_sec", True, SCHEMA_VIOLATION),
    ("duration_sec", 0, DURATION_OUT_OF_RANGE),
    ("duration_sec", -60, DURATION_OUT_OF_RANGE),
    ("duration_sec", 604_800, DURATION_OUT_OF_RANGE),
    ("duration_sec", 5400.0, SCHEMA_VIOLATION),
    ("spots_total", -1, AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE),
    ("spots_total", "3", SCHEMA_VIOLATION),
    ("spots_open", -1, AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE),
    ("spots_open", None, SCHEMA_VIOLATION),
    ("resources", [], SCHEMA_VIOLATION),
    ("resources", {}, MISSING_RESOURCES),
    ("resources", {"room_id": "bar", "room_name": "Bar"}, MISSING_RESOURCES),
    ("resources/party_size", 0, SCHEMA_VIOLATION),
    ("resources/party_size", 21, SCHEMA_VIOLATION),
    ("resources/party_size", "4", SCHEMA_VIOLATION),
    ("resources/staff_id", "x", SCHEMA_VIOLATION),
    ("resources/room_id", "bar", MISSING_REQUIRED_FIELD),
    ("resources/room_name", "Bar", MISSING_REQUIRED_FIELD),
    ("resources", {"party_size": 2, "room_id": "", "room_name": "Bar"}, SCHEMA_VIOLATION),
    ("resources", {"party_size": 2, "room_id": "bar", "room_name": 3}, SCHEMA_VIOLATION),
    ("confirmation_mode", "CONFIRMATION_MODE_UNSPECIFIED", SCHEMA_VIOLATION),
    ("availability_tag", "", SCHEMA_VIOLATION),
    ("availability_tag", 5, SCHEMA_VIOLATION),
    ("scheduling_rule_overrides", [], SCHEMA_VIOLATION),
    ("scheduling_rule_overrides", {"first_bookable": START}, SCHEMA_VIOLATION),
    ("scheduling_rule_overrides", {"last_bookable_sec": START * 1000}, TIMESTAMP_OUT_OF_RANGE),
    ("scheduling_rule_overrides", {"first_bookable_sec": "x"}, SCHEMA_VIOLATION),
]
BAD_ENTRIES: list[tuple[object, str]] = [
    *((changed(ENTRY, path, value), code) for path, value, code in ENTRY_BREAKS),
    ("not an object", SCHEMA_VIOLATION),
    ([ENTRY], SCHEMA_VIOLATION),
]


def in_document(entry: object) -> dict[str, Any]:
    return {"metadata": METADATA, "service_availability": [{"availability": [entry]}]}


def fast_code(entry: object) -> str | None:
    try:
        check_entry_shape(entry)
    except FeedError as error:
        return error.code
    return None


@pytest.mark.parametrize("entry", GOOD_ENTRIES)
def test_good_entries_pass_the_schema_and_the_fast_check(entry: dict[str, Any]) -> None:
    assert code_of(AVAILABILITY, in_document(entry)) is None
    assert fast_code(entry) is None


@pytest.mark.parametrize(("entry", "code"), BAD_ENTRIES)
def test_each_entry_rule_breaks_the_schema_and_the_fast_check_with_the_same_code(
    entry: object, code: str
) -> None:
    assert code_of(AVAILABILITY, in_document(entry)) == code
    assert fast_code(entry) == code


def test_entries_with_two_faults_get_the_same_verdict_from_both_checks() -> None:
    # Two faults can cancel out (room_id alone, then room_name alone), hence "same verdict".
    checked = 0
    for number, (path, value, _) in enumerate(ENTRY_BREAKS):
        once = changed(ENTRY, path, value)
        for other_path, other_value, _ in ENTRY_BREAKS[number + 1 :]:
            try:
                twice = changed(once, other_path, other_value)
            except (KeyError, TypeError, IndexError, ValueError):
                continue  # the first fault removed what the second one changes
            schema_accepts = code_of(AVAILABILITY, in_document(twice)) is None
            assert schema_accepts == (fast_code(twice) is None), twice
            checked += 1
    assert checked > 500


def test_the_entry_schema_lists_properties_in_the_order_entries_are_written() -> None:
    defs = load_schema(AVAILABILITY)["$defs"]
    assert tuple(defs["availability"]["properties"]) == ENTRY_KEY_ORDER
    assert tuple(defs["resources"]["properties"]) == RESOURCES_KEY_ORDER
    overrides = defs["availability"]["properties"]["scheduling_rule_overrides"]
    assert tuple(overrides["properties"]) == OVERRIDES_KEY_ORDER


def test_the_three_feeds_share_one_metadata_definition() -> None:
    texts = {
        json.dumps(load_schema(name)["$defs"]["metadata"], sort_keys=True)
        for name in (AVAILABILITY, MERCHANT, SERVICE)
    }
    assert len(texts) == 1


def test_every_schema_file_is_a_valid_draft_2020_12_schema() -> None:
    paths = sorted(SCHEMA_DIR.glob("*_feed.schema.json"))
    assert len(paths) == 3
    for path in paths:
        schema = json.loads(path.read_text("utf-8"))
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        Draft202012Validator.check_schema(schema)


MERCHANT_BREAKS = [
    *(
        (f"merchant/0/{field}", DELETE, MISSING_REQUIRED_FIELD)
        for field in ("merchant_id", "name", "category", "geo", "telephone", "url")
    ),
    ("merchant/0/extra", 1, SCHEMA_VIOLATION),
    ("merchant/0/merchant_id", "", SCHEMA_VIOLATION),
    ("merchant/0/name", "", SCHEMA_VIOLATION),
    ("merchant/0/category", "bar", SCHEMA_VIOLATION),
    ("merchant/0/telephone", "020 7946 0000", SCHEMA_VIOLATION),
    ("merchant/0/url", "ftp://marlowes.example", SCHEMA_VIOLATION),
    ("merchant/0/geo/latitude", 90.5, SCHEMA_VIOLATION),
    ("merchant/0/geo/longitude", -180.5, SCHEMA_VIOLATION),
    ("merchant/0/geo/latitude", "51.5", SCHEMA_VIOLATION),
    ("merchant/0/geo/address", DELETE, MISSING_REQUIRED_FIELD),
    ("merchant/0/geo/extra", 1, SCHEMA_VIOLATION),
    *(
        (f"merchant/0/geo/address/{field}", DELETE, MISSING_REQUIRED_FIELD)
        for field in ("street_address", "locality", "country", "postal_code")
    ),
    ("merchant/0/geo/address/region", "", SCHEMA_VIOLATION),
    ("merchant/0/geo/address/country", "GBR", SCHEMA_VIOLATION),
    ("merchant/0/geo/address/locality", "", SCHEMA_VIOLATION),
    ("merchant/0/geo/address/extra", "x", SCHEMA_VIOLATION),
    ("merchant", DELETE, MISSING_REQUIRED_FIELD),
    ("metadata/total_shards", 0, SCHEMA_VIOLATION),
]


@pytest.mark.parametrize(("path", "value", "code"), MERCHANT_BREAKS)
def test_each_merchant_feed_rule_has_a_document_that_breaks_it(
    path: str, value: object, code: str
) -> None:
    assert code_of(MERCHANT, changed(MERCHANT_DOC, path, value)) == code


SERVICE_BREAKS = [
    ("service/0/merchant_id", DELETE, MISSING_REQUIRED_FIELD),
    ("service/0/service_id", DELETE, MISSING_REQUIRED_FIELD),
    ("service/0/localized_service_name", DELETE, MISSING_REQUIRED_FIELD),
    ("service/0/extra", 1, SCHEMA_VIOLATION),
    ("service/0/service_id", "", SCHEMA_VIOLATION),
    ("service/0/localized_service_name/value", DELETE, MISSING_REQUIRED_FIELD),
    ("service/0/localized_service_name/value", "", SCHEMA_VIOLATION),
    ("service/0/localized_service_name/localized_value", DELETE, MISSING_REQUIRED_FIELD),
    ("service/0/localized_service_name/localized_value", [], SCHEMA_VIOLATION),
    ("service/0/localized_service_name/extra", 1, SCHEMA_VIOLATION),
    ("service/0/localized_service_name/localized_value/0/locale", "English", SCHEMA_VIOLATION),
    ("service/0/localized_service_name/localized_value/0/locale", DELETE, MISSING_REQUIRED_FIELD),
    ("service/0/localized_service_name/localized_value/0/value", DELETE, MISSING_REQUIRED_FIELD),
    ("service/0/localized_service_name/localized_value/0/extra", 1, SCHEMA_VIOLATION),
    ("service/0/rules/min_advance_booking", -1, SCHEMA_VIOLATION),
    ("service/0/rules/min_advance_online_canceling", 1.5, SCHEMA_VIOLATION),
    ("service/0/rules/extra", 1, SCHEMA_VIOLATION),
    ("service", DELETE, MISSING_REQUIRED_FIELD),
    ("metadata/processing_instruction", "X", SCHEMA_VIOLATION),
]


@pytest.mark.parametrize(("path", "value", "code"), SERVICE_BREAKS)
def test_each_service_feed_rule_has_a_document_that_breaks_it(
    path: str, value: object, code: str
) -> None:
    assert code_of(SERVICE, changed(SERVICE_DOC, path, value)) == code


def test_a_merchant_address_without_a_region_is_accepted() -> None:
    validate_document(MERCHANT, changed(MERCHANT_DOC, "merchant/0/geo/address/region", DELETE))


def test_locales_with_a_region_are_accepted() -> None:
    document = changed(
        SERVICE_DOC, "service/0/localized_service_name/localized_value/0/locale", "en-GB"
    )
    validate_document(SERVICE, document)
