"""A schema's record rules compiled to one Python predicate: a quick "valid" for the records
of the merchant and service feeds, where jsonschema costs ~300 us a record (a platform's
merchant feed holds one record per restaurant, every export).

`compile_rules(node, schema)` reads the JSON Schema subset our schemas use for records (type,
const, required, properties with additionalProperties false, items, minItems, minLength,
minimum, maximum, pattern, $ref into $defs) and gives a predicate that says True only where
jsonschema (with our strict integer) says valid. Any other keyword and it gives None: no
quick path, jsonschema reads everything. A False is not a verdict: the caller hands the whole
document to jsonschema, whose error (and partner code) is the one reported. So the predicate
only has to be sound; a test holds it to jsonschema's verdict both ways on a corpus.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

_IGNORED = frozenset({"description", "title", "$comment"})
# What each JSON type is here: bool is never a number, 1.0 never an integer (the strict
# integer of documents._STRICT_TYPES); a number is an int or a float, nothing more exotic.
_TYPES: dict[str, Check] = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}


def compile_rules(node: Mapping[str, Any], schema: Mapping[str, Any]) -> Check | None:
    """The predicate for `node` (a part of `schema`), or None when it uses a rule not here."""
    ref = node.get("$ref")
    if ref is not None:
        if not (isinstance(ref, str) and ref.startswith("#/$defs/")) or node.keys() - {
            "$ref",
            *_IGNORED,
        }:
            return None
        target = schema.get("$defs", {}).get(ref.removeprefix("#/$defs/"))
        return compile_rules(target, schema) if isinstance(target, dict) else None
    kind = node.get("type")
    if not isinstance(kind, str) or kind not in _TYPES:  # the rules below need the type
        return None if "const" not in node or node.keys() - {"const", *_IGNORED} else _const(node)
    is_type = _TYPES[kind]
    checks: list[Check] = []
    for key, value in node.items():
        if key in _IGNORED or key == "type":
            continue
        check = _rule(key, value, kind, node, schema)
        if check is None:
            return None
        checks.append(check)
    return _all(is_type, checks)


def _rule(
    key: str, value: Any, kind: str, node: Mapping[str, Any], schema: Mapping[str, Any]
) -> Check | None:
    if key == "const":
        return _const(node)
    if kind == "string":
        if key == "minLength" and type(value) is int:
            return lambda v: len(v) >= value
        if key == "pattern" and isinstance(value, str):
            search = re.compile(value).search  # jsonschema searches too (not fullmatch)
            return lambda v: search(v) is not None
    if kind in ("number", "integer"):
        if key == "minimum" and type(value) in (int, float):
            return lambda v: v >= value
        if key == "maximum" and type(value) in (int, float):
            return lambda v: v <= value
    if kind == "array":
        if key == "minItems" and type(value) is int:
            return lambda v: len(v) >= value
        if key == "items" and isinstance(value, dict):
            item = compile_rules(value, schema)
            return None if item is None else (lambda v: all(map(item, v)))
    if kind == "object":
        if key == "required" and isinstance(value, list):
            needed = tuple(value)
            return lambda v: all(k in v for k in needed)
        if key == "additionalProperties" and value is False:
            allowed = frozenset(node.get("properties", {}))
            return lambda v: v.keys() <= allowed
        if key == "properties" and isinstance(value, dict):
            return _properties(value, schema)
    return None


def _properties(properties: Mapping[str, Any], schema: Mapping[str, Any]) -> Check | None:
    fields: list[tuple[str, Check]] = []
    for name, sub in properties.items():
        check = compile_rules(sub, schema) if isinstance(sub, dict) else None
        if check is None:
            return None
        fields.append((name, check))
    return lambda v: all(name not in v or check(v[name]) for name, check in fields)


def _const(node: Mapping[str, Any]) -> Check:
    wanted = node["const"]
    # Type and value: jsonschema's const tells True from 1 and 1.0 from 1 only partly.
    return lambda v: type(v) is type(wanted) and v == wanted


def _all(is_type: Check, checks: list[Check]) -> Check:
    rules = tuple(checks)
    return lambda v: is_type(v) and all(check(v) for check in rules)
