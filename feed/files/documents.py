"""Feed documents: the availability, merchant and service files partners ingest.

Invariants: the same input gives the same bytes; nothing reaches `path` unless the whole
document passed its schema in `schemas/` (plus the rules a schema cannot state); a file at
`path` is always complete, never half-written. No clock here: times come in as arguments.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any, TypeGuard, TypeVar

# jsonschema ships no type information (no py.typed) and types-jsonschema is not a dependency.
import jsonschema  # type: ignore[import-untyped]

from feed.files.compiled import Check, compile_rules
from feed.venue.telephone import e164

T = TypeVar("T")
Record = dict[str, Any]

# Read through the package (feed/schemas, a link to the repository's schemas/ that a wheel
# carries as files) so that hoststand installed from its wheel, away from any checkout, has
# them to validate what it exports.
SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas"
AVAILABILITY = "availability_feed"
MERCHANT = "merchant_feed"
SERVICE = "service_feed"

PROCESS_AS_COMPLETE = "PROCESS_AS_COMPLETE"
CONFIRMATION_MODE_SYNCHRONOUS = "CONFIRMATION_MODE_SYNCHRONOUS"
CONFIRMATION_MODE_ASYNCHRONOUS = "CONFIRMATION_MODE_ASYNCHRONOUS"
CATEGORY_RESTAURANT = "restaurant"

# Plausible Unix seconds (2000-01-01 .. 2100-01-01): a value in milliseconds falls above.
MIN_TIMESTAMP_SEC = 946_684_800
MAX_TIMESTAMP_SEC = 4_102_444_800
MAX_DURATION_SEC = 168 * 3600  # exclusive: the partner wants duration < 168 h
MAX_PARTY_SIZE = 20  # the partner's ceiling; 10 unless the partner setting is raised

# The partner's ingestion error names.
AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE = "AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE"
TIMESTAMP_OUT_OF_RANGE = "TIMESTAMP_OUT_OF_RANGE"
DURATION_OUT_OF_RANGE = "DURATION_OUT_OF_RANGE"
MISSING_RESOURCES = "MISSING_RESOURCES"
MISSING_REQUIRED_FIELD = "MISSING_REQUIRED_FIELD"
# Ours, for what the partner rejects without a name we know, or what we refuse to write.
SCHEMA_VIOLATION = "SCHEMA_VIOLATION"
DUPLICATE_RECORD = "DUPLICATE_RECORD"
MERCHANT_NOT_CONTIGUOUS = "MERCHANT_NOT_CONTIGUOUS"
MERCHANT_ID_MISMATCH = "MERCHANT_ID_MISMATCH"
INVALID_SHARD = "INVALID_SHARD"

# Key order of an entry as written; it is the order of the entry schema's properties.
ENTRY_KEY_ORDER = (
    "merchant_id",
    "service_id",
    "start_sec",
    "duration_sec",
    "spots_total",
    "spots_open",
    "resources",
    "confirmation_mode",
    "availability_tag",
    "scheduling_rule_overrides",
)
RESOURCES_KEY_ORDER = ("party_size", "room_id", "room_name")
OVERRIDES_KEY_ORDER = ("first_bookable_sec", "last_bookable_sec", "last_online_cancellable_sec")
_ENTRY_REQUIRED = frozenset(ENTRY_KEY_ORDER[:7])
_ENTRY_KEYS = frozenset(ENTRY_KEY_ORDER)
_RESOURCES_KEYS = frozenset(RESOURCES_KEY_ORDER)
_OVERRIDES_KEYS = frozenset(OVERRIDES_KEY_ORDER)
_CONFIRMATION_MODES = frozenset({CONFIRMATION_MODE_SYNCHRONOUS, CONFIRMATION_MODE_ASYNCHRONOUS})

# Which partner code a range failure on a field becomes (schema path and fast check alike).
_TIMESTAMP_FIELDS = frozenset({"start_sec", "generation_timestamp", *OVERRIDES_KEY_ORDER})
_TIMESTAMP_FIELDS |= {"start_timestamp_restrict", "end_timestamp_restrict"}
_DURATION_FIELDS = frozenset({"duration_sec", "duration_restrict_sec"})
_SPOT_FIELDS = frozenset({"spots_total", "spots_open"})
_RANGE_KEYWORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})

# One encoder reused: json.dumps with arguments builds a new encoder on every call.
encode_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


class FeedError(Exception):
    """A document we refuse to write, with the partner's error name where it has one."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


# --- schemas ---------------------------------------------------------------------------


def _is_int(value: object) -> TypeGuard[int]:
    # JSON Schema counts 1.0 and (in Python) True as integers; we write neither. `type is`
    # rather than isinstance: it excludes bool and is the cheapest test on the hot path.
    return type(value) is int


_STRICT_TYPES = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, value: _is_int(value)
)
_StrictValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, type_checker=_STRICT_TYPES
)


@cache
def load_schema(name: str) -> Mapping[str, Any]:
    """The schema `schemas/<name>.schema.json`, e.g. load_schema(AVAILABILITY)."""
    schema: dict[str, Any] = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text("utf-8"))
    return schema


@cache
def _validator(name: str) -> Any:
    schema = load_schema(name)
    _StrictValidator.check_schema(schema)
    return _StrictValidator(schema)


def _code_for(keyword: str, field: str | None, missing: Iterable[str] = ()) -> str:
    """The partner code for one failed schema rule: shared by jsonschema and the fast check."""
    if keyword == "required":
        missing = set(missing)
        return (
            MISSING_RESOURCES if missing & {"resources", "party_size"} else MISSING_REQUIRED_FIELD
        )
    if keyword == "dependentRequired":
        return MISSING_REQUIRED_FIELD
    if keyword in _RANGE_KEYWORDS:
        if field in _TIMESTAMP_FIELDS:
            return TIMESTAMP_OUT_OF_RANGE
        if field in _DURATION_FIELDS:
            return DURATION_OUT_OF_RANGE
        if field in _SPOT_FIELDS:
            return AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE
    return SCHEMA_VIOLATION


@cache
def _record_lists(name: str) -> tuple[tuple[str, Check], ...]:
    """The top-level record lists of schema `name` whose record rules compile (see
    feed.files.compiled), each with its predicate: the merchant and service records."""
    schema = load_schema(name)
    lists = []
    for key, node in schema.get("properties", {}).items():
        if node.get("type") == "array" and node.keys() <= {"type", "items", "description"}:
            check = compile_rules(node["items"], schema)
            if check is not None:
                lists.append((key, check))
    return tuple(lists)


def validate_document(name: str, document: object) -> None:
    """Raise FeedError unless `document` is valid against schema `name` (with jsonschema).

    Records that pass their compiled rules are not read again by jsonschema (it reads the
    rest of the document); when one does not, jsonschema reads the whole document, so the
    error reported is always jsonschema's."""
    if isinstance(document, dict):
        for key, check in _record_lists(name):
            records = document.get(key)
            if type(records) is list and all(map(check, records)):
                document = {**document, key: []}
    error = jsonschema.exceptions.best_match(_validator(name).iter_errors(document))
    if error is None:
        return
    fields = [part for part in error.absolute_path if isinstance(part, str)]
    missing: list[str] = []
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [key for key in error.validator_value if key not in error.instance]
    code = _code_for(str(error.validator), fields[-1] if fields else None, missing)
    where = "/".join(str(part) for part in error.absolute_path) or "(document)"
    raise FeedError(code, f"{name} {where}: {error.message}")


# --- the fast entry check ----------------------------------------------------------------
# jsonschema costs ~100 us an entry; a feed holds ~1.5 million. This is the entry schema
# compiled by hand, rule for rule; a test holds it to jsonschema's verdict on a corpus.


def refuse(code: str, message: str) -> FeedError:
    return FeedError(code, f"availability entry: {message}")


def _check_string(value: object, field: str) -> None:
    if not isinstance(value, str) or not value:
        raise refuse(SCHEMA_VIOLATION, f"{field} must be a non-empty string, got {value!r}")


def _check_int(value: object, field: str, low: int, high: int | None = None) -> None:
    """`value` is an integer with low <= value (<= high when given)."""
    if not _is_int(value):
        raise refuse(SCHEMA_VIOLATION, f"{field} must be an integer, got {value!r}")
    if value < low:
        raise refuse(_code_for("minimum", field), f"{field} {value} is below {low}")
    if high is not None and value > high:
        hint = " (milliseconds? write seconds)" if field in _TIMESTAMP_FIELDS else ""
        raise refuse(_code_for("maximum", field), f"{field} {value} is above {high}{hint}")


def check_entry_shape(entry: object) -> None:
    """Raise FeedError unless `entry` satisfies the availability entry schema."""
    if not isinstance(entry, dict):
        raise refuse(SCHEMA_VIOLATION, f"must be an object, got {type(entry).__name__}")
    missing = _ENTRY_REQUIRED.difference(entry)
    if missing:
        raise refuse(_code_for("required", None, missing), f"missing {sorted(missing)}")
    unknown = entry.keys() - _ENTRY_KEYS
    if unknown:
        raise refuse(SCHEMA_VIOLATION, f"unknown fields {sorted(unknown)}")
    _check_string(entry["merchant_id"], "merchant_id")
    _check_string(entry["service_id"], "service_id")
    _check_int(entry["start_sec"], "start_sec", MIN_TIMESTAMP_SEC, MAX_TIMESTAMP_SEC)
    _check_int(entry["duration_sec"], "duration_sec", 1, MAX_DURATION_SEC - 1)
    _check_int(entry["spots_total"], "spots_total", 0)
    _check_int(entry["spots_open"], "spots_open", 0)
    _check_resources(entry["resources"])
    if "confirmation_mode" in entry and entry["confirmation_mode"] not in _CONFIRMATION_MODES:
        raise refuse(SCHEMA_VIOLATION, f"confirmation_mode {entry['confirmation_mode']!r}")
    if "availability_tag" in entry:
        _check_string(entry["availability_tag"], "availability_tag")
    if "scheduling_rule_overrides" in entry:
        overrides = entry["scheduling_rule_overrides"]
        if not isinstance(overrides, dict):
            raise refuse(SCHEMA_VIOLATION, "scheduling_rule_overrides must be an object")
        if overrides.keys() - _OVERRIDES_KEYS:
            raise refuse(
                SCHEMA_VIOLATION, f"unknown fields in scheduling_rule_overrides {overrides}"
            )
        for field, value in overrides.items():
            _check_int(value, field, MIN_TIMESTAMP_SEC, MAX_TIMESTAMP_SEC)


def _check_resources(resources: object) -> None:
    if not isinstance(resources, dict):
        raise refuse(SCHEMA_VIOLATION, f"resources must be an object, got {resources!r}")
    if "party_size" not in resources:
        raise refuse(MISSING_RESOURCES, "resources.party_size is missing")
    if resources.keys() - _RESOURCES_KEYS:
        raise refuse(SCHEMA_VIOLATION, f"unknown fields in resources {sorted(resources)}")
    _check_int(resources["party_size"], "party_size", 1, MAX_PARTY_SIZE)
    for field in ("room_id", "room_name"):
        if field in resources:
            _check_string(resources[field], field)
    if ("room_id" in resources) != ("room_name" in resources):
        raise refuse(MISSING_REQUIRED_FIELD, "resources.room_id and room_name go together")


# --- rules a schema cannot state ----------------------------------------------------------


class FeedChecker:
    """Checks a stream of entries: the entry schema (fast check), open <= total, not in the
    past, and no identical entries. Identical entries share a merchant, so the set of seen
    entries is per merchant and cleared when the merchant changes; that is only sound while
    each merchant's entries are contiguous, which is therefore checked too.
    """

    def __init__(self, *, now_sec: int) -> None:
        self._now_sec = now_sec
        self._merchant: str | None = None
        self._finished: set[str] = set()
        self._seen: set[tuple[Any, ...]] = set()

    def check(self, entry: Mapping[str, Any]) -> None:
        check_entry_shape(entry)
        merchant_id = entry["merchant_id"]
        if merchant_id != self._merchant:
            if merchant_id in self._finished:
                raise refuse(MERCHANT_NOT_CONTIGUOUS, f"{merchant_id!r} appears again after others")
            if self._merchant is not None:
                self._finished.add(self._merchant)
            self._merchant = merchant_id
            self._seen = set()
        if entry["spots_open"] > entry["spots_total"]:
            raise refuse(
                AVAILABILITY_SPOT_COUNT_OUT_OF_RANGE,
                f"spots_open {entry['spots_open']} > spots_total {entry['spots_total']}",
            )
        if entry["start_sec"] < self._now_sec:
            raise refuse(
                TIMESTAMP_OUT_OF_RANGE, f"start_sec {entry['start_sec']} is before {self._now_sec}"
            )
        resources = entry["resources"]
        key = (
            entry["service_id"],
            entry["start_sec"],
            entry["duration_sec"],
            resources["party_size"],
            resources.get("room_id"),
            resources.get("room_name"),
        )
        if key in self._seen:
            raise refuse(DUPLICATE_RECORD, f"identical entry for {merchant_id!r}: {key}")
        self._seen.add(key)


# --- building records ---------------------------------------------------------------------


def feed_metadata(
    *, shard_number: int, total_shards: int, nonce: int | str | None, generation_timestamp: int
) -> Record:
    """The `metadata` object shared by the three feeds; the nonce is written as a string."""
    if not (_is_int(shard_number) and _is_int(total_shards) and 0 <= shard_number < total_shards):
        raise FeedError(INVALID_SHARD, f"shard {shard_number!r} of {total_shards!r}")
    metadata: Record = {
        "processing_instruction": PROCESS_AS_COMPLETE,
        "shard_number": shard_number,
        "total_shards": total_shards,
    }
    if nonce is not None:
        metadata["nonce"] = str(nonce)
    metadata["generation_timestamp"] = generation_timestamp
    return metadata


def availability_entry(
    merchant_id: str,
    service_id: str,
    start_sec: int,
    duration_sec: int,
    party_size: int,
    spots_open: int,
    spots_total: int,
    *,
    room_id: str | None = None,
    room_name: str | None = None,
    overrides: Mapping[str, int] | None = None,
) -> Record:
    """One slot for one party size, keys in the order they are written; `overrides` are
    its scheduling_rule_overrides (left out when empty)."""
    resources: Record = {"party_size": party_size}
    if room_id is not None:
        resources["room_id"] = room_id
    if room_name is not None:
        resources["room_name"] = room_name
    entry: Record = {
        "merchant_id": merchant_id,
        "service_id": service_id,
        "start_sec": start_sec,
        "duration_sec": duration_sec,
        "spots_total": spots_total,
        "spots_open": spots_open,
        "resources": resources,
        "confirmation_mode": CONFIRMATION_MODE_SYNCHRONOUS,
    }
    if overrides:
        entry["scheduling_rule_overrides"] = {
            k: overrides[k] for k in OVERRIDES_KEY_ORDER if k in overrides
        }
    return entry


def merchant_record(
    merchant_id: str,
    name: str,
    telephone: str,
    url: str,
    latitude: float,
    longitude: float,
    address: Mapping[str, str],
) -> Record:
    """A merchant as the merchant feed wants it; the telephone is reduced to E.164 (a
    ValueError if it does not reduce: stripping "+44 (0)20 ..." would give a wrong number)."""
    digits = e164(telephone)
    return {
        "merchant_id": merchant_id,
        "name": name,
        "category": CATEGORY_RESTAURANT,
        "geo": {"latitude": latitude, "longitude": longitude, "address": dict(address)},
        "telephone": digits,
        "url": url,
    }


def service_record(
    merchant_id: str,
    service_id: str,
    name: str,
    *,
    locale: str = "en",
    min_advance_booking: int | None = None,
    min_advance_online_canceling: int | None = None,
) -> Record:
    """The one dining service of a merchant; rules are in seconds before the slot starts."""
    record: Record = {
        "merchant_id": merchant_id,
        "service_id": service_id,
        "localized_service_name": {
            "value": name,
            "localized_value": [{"locale": locale, "value": name}],
        },
    }
    rules: Record = {}
    if min_advance_booking is not None:
        rules["min_advance_booking"] = min_advance_booking
    if min_advance_online_canceling is not None:
        rules["min_advance_online_canceling"] = min_advance_online_canceling
    if rules:
        record["rules"] = rules
    return record


def in_schema_order(value: Any, node: Mapping[str, Any], schema: Mapping[str, Any]) -> Any:
    """`value` with every object's keys in the order of its schema's properties.

    Keys the schema does not know are kept (last) so that validation still rejects them.
    """
    ref = node.get("$ref")
    if isinstance(ref, str):
        node = schema["$defs"][ref.removeprefix("#/$defs/")]
    properties = node.get("properties")
    if isinstance(value, dict) and isinstance(properties, dict):
        ordered = {
            k: in_schema_order(value[k], properties[k], schema) for k in properties if k in value
        }
        ordered.update((k, v) for k, v in value.items() if k not in properties)
        return ordered
    items = node.get("items")
    if isinstance(value, list) and isinstance(items, dict):
        return [in_schema_order(v, items, schema) for v in value]
    return value


def entry_in_order(entry: Mapping[str, Any]) -> Record:
    # The hot path's in_schema_order; valid only after check_entry_shape (no unknown keys).
    ordered = {k: entry[k] for k in ENTRY_KEY_ORDER if k in entry}
    resources = entry["resources"]
    ordered["resources"] = {k: resources[k] for k in RESOURCES_KEY_ORDER if k in resources}
    if "scheduling_rule_overrides" in entry:
        overrides = entry["scheduling_rule_overrides"]
        ordered["scheduling_rule_overrides"] = {
            k: overrides[k] for k in OVERRIDES_KEY_ORDER if k in overrides
        }
    return ordered
