"""The merchant and service records' compiled rules (feed.files.compiled) agree with
jsonschema: every record rule of the schema corpus breaks them, and on random damage to a
good record both say the same. validate_document skips jsonschema only for records the
compiled rules pass, so a record they wrongly passed would reach a partner's file."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from feed.files.compiled import compile_rules
from feed.files.documents import MERCHANT, SERVICE, _record_lists, _validator, load_schema
from tests.unit.test_feed_schemas import (
    DELETE,
    MERCHANT_BREAKS,
    MERCHANT_DOC,
    SERVICE_BREAKS,
    SERVICE_DOC,
    changed,
)

GOOD = {MERCHANT: (MERCHANT_DOC, "merchant"), SERVICE: (SERVICE_DOC, "service")}


def compiled(name: str) -> Any:
    (key, check), *rest = _record_lists(name)
    assert key == GOOD[name][1] and not rest
    return check


def schema_says(name: str, record: object) -> bool:
    document, key = GOOD[name]
    return bool(_validator(name).is_valid({**document, key: [record]}))


def test_the_merchant_and_service_records_compile() -> None:
    for name, (document, key) in GOOD.items():
        assert compiled(name)(document[key][0]) is True


def test_every_record_rule_in_the_schema_corpus_breaks_the_compiled_rules() -> None:
    for name, breaks in ((MERCHANT, MERCHANT_BREAKS), (SERVICE, SERVICE_BREAKS)):
        document, key = GOOD[name]
        check = compiled(name)
        prefix = f"{key}/0/"
        record_breaks = [(p, v) for p, v, _code in breaks if p.startswith(prefix)]
        assert len(record_breaks) > 10
        for path, value in record_breaks:
            broken = changed(document, path, value)[key][0]
            assert check(broken) is False, path
            assert schema_says(name, broken) is False, path


def test_a_rule_it_does_not_know_means_no_compiled_rules() -> None:
    schema = load_schema(MERCHANT)
    assert compile_rules({"type": "string", "format": "email"}, schema) is None
    assert compile_rules({"oneOf": [{"type": "string"}]}, schema) is None
    assert compile_rules({"type": "object", "additionalProperties": True}, schema) is None
    assert compile_rules({"$ref": "#/$defs/nowhere"}, schema) is None


def test_types_are_told_apart_as_the_strict_validator_does() -> None:
    schema = load_schema(MERCHANT)
    integer = compile_rules({"type": "integer", "minimum": 0}, schema)
    number = compile_rules({"type": "number", "maximum": 90}, schema)
    assert integer is not None and number is not None
    assert [integer(v) for v in (0, 5, True, 1.0, -1, "1")] == [True, True] + [False] * 4
    assert [number(v) for v in (90, 89.5, 90.5, False, "1")] == [True, True] + [False] * 3


# Values near the rules' edges, besides any JSON value.
EDGES = st.sampled_from(
    [
        "",
        "GB",
        "GB\n",
        "gb",
        "GBR",
        "+442079460000",
        "+0",
        "https://a.example",
        "http:// x",
        "en",
        "en-GB",
        "EN",
        "restaurant",
        -90,
        90,
        90.0,
        180.0000001,
        0,
        -1,
        1.5,
        True,
        [],
        {},
        [{"locale": "en", "value": "x"}],
        [{"locale": "en"}],
    ]
)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)


def paths(value: object, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into `value` (dict keys and list indexes, as tuples: a key may hold "/")."""
    found: list[tuple[Any, ...]] = []
    items: Any = ()
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    for key, sub in items:
        path = (*prefix, key)
        found.append(path)
        found.extend(paths(sub, path))
    return found


def damaged(record: Any, path: tuple[Any, ...], value: object) -> Any:
    """A copy of `record` with the value at `path` replaced (or deleted with DELETE)."""
    result = copy.deepcopy(record)
    *parents, last = path
    node = result
    for key in parents:
        node = node[key]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return result


@settings(max_examples=400, deadline=None)
@given(
    name=st.sampled_from([MERCHANT, SERVICE]),
    damage=st.lists(
        st.tuples(st.integers(0, 1000), st.one_of(EDGES, JSON, st.just(DELETE))), max_size=3
    ),
    extra=st.sampled_from([None, "extra", "region", "rules"]),
)
def test_random_damage_gets_the_same_verdict_from_both(
    name: str, damage: list[tuple[int, object]], extra: str | None
) -> None:
    document, key = GOOD[name]
    record: Any = copy.deepcopy(document[key][0])
    for pick, value in damage:
        where = paths(record)
        if not where:
            break
        record = damaged(record, where[pick % len(where)], value)
    if extra is not None and isinstance(record, dict):
        record[extra] = "x"
    assert compiled(name)(record) == schema_says(name, record)
