"""A restaurant's configuration: identity, time zone, opening hours, closures, turn times, floor.

Read from TOML, checked by a pydantic model at this edge and turned into the plain frozen
`Restaurant` in one function (`_to_restaurant`); every bad file is one `ConfigError` line.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import json
import re
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
)

from engine.floor import FloorPlan, FloorPlanError, Table, build_floor
from feed.venue.telephone import e164

# Beside the feed schemas, read through the package (feed/schemas links to schemas/).
SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "restaurant.schema.json"
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
DEFAULT_LAST_SEATING_BEFORE_CLOSE = 60  # minutes
DEFAULT_LARGE_TURN_MINUTES = 120
MAX_PARTY_SIZE_LIMIT = 20  # the partner setting's ceiling
# The walk-in waitlist's default bound. A table turns about twice in the 120 minutes a quote
# is capped at, so 4 parties a table is twice what a Saturday's queue can seat before its
# quotes all say "120" (24 at a 6-table bistro, 160 at a 40-table room); a retry loop or a
# hostile partner stops there instead of slowing every write and read of the restaurant.
WAITLIST_PER_TABLE = 4
WAITLIST_AT_LEAST = 10
# Every write and read walks the queue: 1,000 keeps each of them within tens of ms.
MAX_WAITLIST_LIMIT = 1000


def waitlist_default(floor: FloorPlan) -> int:
    """`max_waitlist` when the file leaves it out: WAITLIST_PER_TABLE per table, at least
    WAITLIST_AT_LEAST."""
    return max(WAITLIST_AT_LEAST, WAITLIST_PER_TABLE * len(floor.tables))


def partner_waitlist_default(limit: int) -> int:
    """`max_partner_waitlist` when the file leaves it out: half the waitlist's `limit`
    (rounded up), so a partner's retry loop fills half at most and the host keeps the other
    half for the guests at the door."""
    return (limit + 1) // 2


_DAY = 24 * 60
_TIME_PATTERN = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"


class ConfigError(Exception):
    """A restaurant file that cannot be used; str() is one line per problem: file, field,
    what is wrong (all of a file's schema errors at once, so one edit can fix them all)."""

    def __init__(
        self, source: str, field: str, problem: str, more: Sequence[tuple[str, str]] = ()
    ) -> None:
        self.source, self.field, self.problem = source, field, problem
        self.more = list(more)  # further (field, problem) of the same file

        def line(field: str, problem: str) -> str:
            return f"{source}: {field}: {problem}" if field else f"{source}: {problem}"

        lines = [line(field, problem)] + [line(f, p) for f, p in self.more]
        super().__init__("\n".join(lines))


# ---------------------------------------------------------------- plain values (the model)


@dataclass(frozen=True)
class Service:
    """One sitting of a day (lunch, dinner). Times are local wall clock; a close or last
    seating earlier than `open` falls on the next calendar day."""

    open: time
    close: time
    last_seating: time
    # Turn minutes per party size (index n - 1) when this service has its own turn_minutes
    # (lunch turns faster than dinner); empty: the restaurant's.
    turns: tuple[int, ...] = ()
    # Pacing: covers / parties of bookings starting in one slot of this service (None: no cap).
    max_covers: int | None = None
    max_parties: int | None = None

    @property
    def paced(self) -> bool:
        return self.max_covers is not None or self.max_parties is not None

    @property
    def crosses_midnight(self) -> bool:
        return self.close <= self.open

    # Offsets in wall-clock minutes from the service day's midnight (>= 1440: next day).
    @property
    def open_offset(self) -> int:
        return _minutes(self.open)

    @property
    def close_offset(self) -> int:
        return _offset_after(self.open, self.close, allow_equal=False)

    @property
    def last_seating_offset(self) -> int:
        return _offset_after(self.open, self.last_seating, allow_equal=True)


@dataclass(frozen=True)
class Address:
    street_address: str
    locality: str
    region: str | None  # optional in the merchant feed: absent, never an empty string
    country: str
    postal_code: str


@dataclass(frozen=True)
class Geo:
    latitude: float
    longitude: float


@dataclass(frozen=True)
class Area:
    """A seating area (issue #14): its tables, and the combos that count in it (those whose
    first table is here, a `cross_area` combo included). Partners see it as a room."""

    id: str
    name: str
    tables: tuple[str, ...]
    combos: tuple[str, ...]  # combo ids, "T1+T2"

    @functools.cached_property
    def units(self) -> frozenset[str]:
        """Table and combo ids a booking in this area may take."""
        return frozenset(self.tables) | frozenset(self.combos)


@dataclass(frozen=True)
class Restaurant:
    merchant_id: str
    name: str
    service_id: str
    tz: ZoneInfo
    telephone: str
    url: str
    address: Address
    geo: Geo
    hours: Mapping[int, tuple[Service, ...]]  # weekday (0 = Monday) -> services in order
    closed: frozenset[date]
    slot_minutes: int
    horizon_days: int
    turn_minutes: Mapping[int, int]  # party class (table seats) -> minutes, every class
    large_turn_minutes: int
    max_party_size: int
    floor: FloorPlan
    # A party past its turn is expected to leave within this many minutes (PRODUCT.md 3).
    overstay_minutes: int = 15
    min_advance_minutes: int = 0  # no booking closer than this to its start
    # Table id -> (x, y) on the host's floor picture, grid units; empty: a grid in floor order.
    positions: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # Seating areas (issue #14), in file order; empty: one area, the whole floor.
    areas: tuple[Area, ...] = ()
    # Tables kept for the door: never sold online (partners' spots leave them out).
    walk_in_only: frozenset[str] = frozenset()
    # A partner may not cancel later than this many minutes before the start (0: any time).
    cancel_cutoff_minutes: int = 0
    # Parties above this book by phone (None: max_party_size).
    max_online_party_size: int | None = None
    # Parties the walk-in waitlist holds at most (None: waitlist_default(floor)).
    max_waitlist: int | None = None
    # Places on it partners' entries, all partners together, take at most (None: half).
    max_partner_waitlist: int | None = None
    # Dates with their own services, in place of the weekday's hours.
    special_days: Mapping[date, tuple[Service, ...]] = field(default_factory=dict)
    # Derived values worked out once (e.g. a day's slots): never part of equality or repr.
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def online_limit(self) -> int:
        """The largest party partners can book (larger ones call the restaurant)."""
        if self.max_online_party_size is None:
            return self.max_party_size
        return min(self.max_online_party_size, self.max_party_size)

    @property
    def waitlist_limit(self) -> int:
        """The most parties the waitlist holds: a party that would wait behind that many is
        turned away (one a table is free for now is seated as ever)."""
        if self.max_waitlist is None:
            return waitlist_default(self.floor)
        return self.max_waitlist

    @property
    def partner_waitlist_limit(self) -> int:
        """The most partners' entries (all partners together) the waitlist holds: one more
        is refused, and the host's walk-ins keep the rest of `waitlist_limit`."""
        if self.max_partner_waitlist is None:
            return partner_waitlist_default(self.waitlist_limit)
        return self.max_partner_waitlist

    @functools.cached_property
    def online_floor(self) -> FloorPlan:
        """The floor partners book: without the walk-in tables and the combos that use
        them. Large parties start at the same size as on the whole floor."""
        if not self.walk_in_only:
            return self.floor
        f = self.floor
        return FloorPlan(
            tables=tuple(t for t in f.tables if t.id not in self.walk_in_only),
            combos=tuple(c for c in f.combos if not set(c.tables) & self.walk_in_only),
            large_from=f.large_from,
            max_party=f.max_party,
            dwell_minutes=f.dwell_minutes,
            quote_cap=f.quote_cap,
            large_quote_minutes=f.large_quote_minutes,
            large_turn_minutes=f.large_turn_minutes,
            protect_reservations=f.protect_reservations,
        )

    @functools.cached_property
    def all_services(self) -> tuple[Service, ...]:
        """Every service of the week and of the special days."""
        out = [s for services in self.hours.values() for s in services]
        out += [s for services in self.special_days.values() for s in services]
        return tuple(out)

    @functools.cached_property
    def paced(self) -> bool:
        """Does any service cap what partners book per slot?"""
        return any(s.paced for s in self.all_services)

    @functools.cached_property
    def varied_turns(self) -> bool:
        """Does any service have turn times of its own?"""
        return any(s.turns for s in self.all_services)

    def service_turns(self, service: Service | None) -> Mapping[int, int]:
        """Party size -> turn minutes in `service` (the restaurant's unless it has its own)."""
        if service is None or not service.turns:
            return self.turns
        known = self.memo.setdefault("service_turns", {})
        found = known.get(service.turns)
        if found is None:
            found = known[service.turns] = dict(enumerate(service.turns, start=1))
        return found  # type: ignore[no-any-return]

    @functools.cached_property
    def turns(self) -> dict[int, int]:
        """Party size -> turn in minutes, for every size the restaurant takes."""
        return {n: self.duration_minutes(n) for n in range(1, self.max_party_size + 1)}

    def unit_turn(self, unit: str) -> int:
        """The turn of whoever sits at a unit when the party's size is not known: the
        class of the table (its seats), or the large turn on a combo."""
        if "+" in unit:
            return self.large_turn_minutes
        seats = next((t.seats for t in self.floor.tables if t.id == unit), None)
        return self.turn_minutes.get(seats or 0, max(self.turn_minutes.values(), default=0))

    def turn_of(self, party_size: Any, unit: str, turns: Mapping[int, int] | None = None) -> int:
        """turn(m) for a party of `party_size` (its unit's turn when the size is unknown);
        `turns`: the turns of the service its slot is in (default: the restaurant's)."""
        if isinstance(party_size, int) and 1 <= party_size <= self.max_party_size:
            return (self.turns if turns is None else turns)[party_size]
        return self.unit_turn(unit)

    # -- seating areas (issue #14) --------------------------------------------------------

    @property
    def rooms(self) -> tuple[Area, ...]:
        """The areas partners see (room_id, room_name): only where there are two or more;
        with one area the feed and the lookups are those of the whole floor."""
        return self.areas if len(self.areas) > 1 else ()

    def area(self, area_id: str) -> Area | None:
        return next((a for a in self.areas if a.id == area_id), None)

    def area_of(self, unit: str) -> Area | None:
        """The area a table or combo id belongs to (a combo: its first table's area)."""
        first = unit.split("+", 1)[0]
        return next((a for a in self.areas if first in a.tables), None)

    # -- turns ----------------------------------------------------------------------------

    def duration_minutes(self, party_size: int) -> int:
        """Turn time of a party: its class's (smallest table that fits), or the large one."""
        if not 1 <= party_size <= self.max_party_size:
            raise ValueError(f"party size {party_size} is not in 1..{self.max_party_size}")
        if self.floor.is_large(party_size):
            return self.large_turn_minutes
        cls = self.floor.quote_class(party_size)
        if cls is None:  # ruled out when loading: large_party_from <= largest table + 1
            raise ValueError(f"no table seats a party of {party_size}")
        return self.turn_minutes[cls]


def _minutes(t: time) -> int:
    return t.hour * 60 + t.minute


def _offset_after(start: time, t: time, *, allow_equal: bool) -> int:
    """Wall-clock minutes of `t` from the day's midnight, read as the next day when it
    comes before `start` (a close at "01:00" after an open at "17:00")."""
    m = _minutes(t)
    if m < _minutes(start) or (m == _minutes(start) and not allow_equal):
        m += _DAY
    return m


# ---------------------------------------------------------------- the file's schema (the edge)


def _check_time(value: str) -> str:
    if not re.match(_TIME_PATTERN, value):
        raise ValueError(f"must be a time HH:MM from 00:00 to 23:59 (got {value!r})")
    return value


# Files in the zone database that ZoneInfo opens but that name no place: "localtime" is the
# server's own zone (a Berlin restaurant on a UTC machine would open an hour late), the
# others are the database's variants and its placeholder.
_NOT_A_PLACE = ("localtime", "posixrules", "Factory")
_NOT_A_PLACE_PREFIXES = ("posix/", "right/")


def _check_timezone(value: str) -> str:
    if value in _NOT_A_PLACE or value.startswith(_NOT_A_PLACE_PREFIXES):
        what = "the server's own zone" if value == "localtime" else "a file of the zone database"
        raise ValueError(
            f"{value!r} is {what}, not the restaurant's: use the IANA name of the place, "
            "such as 'Europe/London'"
        )
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown time zone {value!r} (use an IANA name such as 'Europe/London')"
        ) from None
    return value


def _to_date(value: Any) -> Any:
    # TOML gives a date for 2026-12-25 and a str for "2026-12-25"; accept both, nothing else.
    if isinstance(value, datetime):
        raise ValueError(f"must be a date YYYY-MM-DD, not a date and time ({value})")
    if isinstance(value, str):
        if re.match(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", value):
            try:
                return date.fromisoformat(value)
            except ValueError:
                pass
        raise ValueError(f"must be a date YYYY-MM-DD (got {value!r})")
    return value


def _check_url(value: str) -> str:
    if not re.match(r"^https?://[^\s/]+\.[^\s]+$", value):
        raise ValueError(f"must be an http(s) URL such as 'https://example.com/' (got {value!r})")
    return value


def _check_merchant_id(value: str) -> str:
    # It names the restaurant in URL paths (/api/v1/restaurants/{merchant_id}/...) and
    # heads its records' keys in the store ("<merchant_id>/<...>"): a "/" would make it
    # unreachable there and let one restaurant read another's records ("m" and "m/x").
    # Spaces, quotes and other characters are sent percent-encoded and escaped: kept.
    if re.search(r"[/\x00-\x1f\x7f]", value):
        raise ValueError(f"must have no '/' or control characters (got {value!r})")
    return value


def _check_telephone(value: str) -> str:
    e164(value)  # the merchant feed sends it reduced to E.164: it must reduce
    return value


def _check_class_key(value: str) -> str:
    if value != "large" and not re.match(r"^[1-9][0-9]*$", value):
        raise ValueError(f"key {value!r} must be a table size such as '4', or 'large'")
    return value


_Fail = Callable[[str, str], "ConfigError"]

TimeStr = Annotated[
    str, AfterValidator(_check_time), Field(json_schema_extra={"pattern": _TIME_PATTERN})
]
NonEmpty = Annotated[str, Field(min_length=1)]
ClassKey = Annotated[
    str,
    AfterValidator(_check_class_key),
    Field(json_schema_extra={"pattern": r"^([1-9][0-9]*|large)$"}),
]
Minutes = Annotated[int, Field(ge=1, le=_DAY)]
# A seating area's id, sent to partners as room_id: short, plain, no spaces.
AreaId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]


class _Model(BaseModel):
    # strict: a quoted "10" or a true is a mistake in a hand-written file, not a number
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


Cap = Annotated[int, Field(ge=1, le=10_000)]


class ServiceModel(_Model):
    open: TimeStr
    close: TimeStr
    last_seating: TimeStr | None = Field(
        default=None, description="Last time a table is booked; default: close minus 60 minutes"
    )
    turn_minutes: dict[ClassKey, Minutes] | None = Field(
        default=None,
        description="This service's own turn times (same keys as the restaurant's "
        "turn_minutes; a key left out keeps the restaurant's): a booking's turn follows the "
        "service its slot is in",
    )
    max_covers_per_slot: Cap | None = Field(
        default=None, description="Pacing for this service: overrides [pacing]'s value"
    )
    max_parties_per_slot: Cap | None = Field(
        default=None, description="Pacing for this service: overrides [pacing]'s value"
    )


class PacingModel(_Model):
    """Caps on what partners book per slot, counting every still-booked reservation that
    starts in the slot whatever its source; a service entry in [hours] may override them."""

    max_covers_per_slot: Cap | None = Field(
        default=None, description="Most guests (covers) of bookings starting in one slot"
    )
    max_parties_per_slot: Cap | None = Field(
        default=None, description="Most bookings (parties) starting in one slot"
    )


DateField = Annotated[date, BeforeValidator(_to_date)]


class SpecialDayModel(_Model):
    date: DateField = Field(
        description="The service day (YYYY-MM-DD); its services replace the weekday's hours"
    )
    services: Annotated[list[ServiceModel], Field(min_length=1)] = Field(
        description="The day's services, as in [hours] (e.g. New Year's Eve 18:00-01:00)"
    )


class HoursModel(_Model):
    monday: list[ServiceModel] = []
    tuesday: list[ServiceModel] = []
    wednesday: list[ServiceModel] = []
    thursday: list[ServiceModel] = []
    friday: list[ServiceModel] = []
    saturday: list[ServiceModel] = []
    sunday: list[ServiceModel] = []


class AddressModel(_Model):
    street_address: NonEmpty
    locality: NonEmpty
    region: NonEmpty | None = None
    country: Annotated[str, Field(pattern=r"^[A-Z]{2}$", description="ISO 3166-1 alpha-2")]
    postal_code: NonEmpty


class GeoModel(_Model):
    latitude: Annotated[float, Field(ge=-90, le=90)]
    longitude: Annotated[float, Field(ge=-180, le=180)]


class TableModel(_Model):
    id: Annotated[str, Field(min_length=1, pattern=r"^[^+]+$")]
    seats: Annotated[int, Field(ge=1)]
    min_party: Annotated[int, Field(ge=1)] | None = None
    # Where the table stands on the host's floor picture, in grid units (optional: without
    # them the tablet draws a tidy grid in floor-plan order). Give both or neither.
    x: Annotated[int, Field(ge=0, le=50)] | None = None
    y: Annotated[int, Field(ge=0, le=50)] | None = None
    area: AreaId | None = Field(
        default=None, description="The seating area the table stands in (a key of [areas])"
    )
    walk_in_only: bool = Field(
        default=False,
        description="Kept for the door: never sold online (not in partners' spots), "
        "still booked by the host and used by the waitlist",
    )


class ComboModel(_Model):
    tables: Annotated[list[NonEmpty], Field(min_length=2, max_length=2)]
    capacity: Annotated[int, Field(ge=1)] | None = None
    min_party: Annotated[int, Field(ge=1)] | None = None
    cross_area: bool = Field(
        default=False,
        description="Allow the two tables to stand in different areas (the combo then "
        "counts in its first table's area)",
    )


class RestaurantModel(_Model):
    """A restaurant file (TOML). Unknown keys are errors, so typos are caught."""

    merchant_id: Annotated[
        NonEmpty,
        AfterValidator(_check_merchant_id),
        Field(json_schema_extra={"pattern": r"^[^/\x00-\x1f\x7f]+$"}),  # as checked
    ]
    name: NonEmpty
    service_id: NonEmpty = "1000"
    timezone: Annotated[str, AfterValidator(_check_timezone)]
    telephone: Annotated[str, AfterValidator(_check_telephone)]
    url: Annotated[str, AfterValidator(_check_url)]
    address: AddressModel
    geo: GeoModel
    hours: HoursModel
    closed: list[Annotated[date, BeforeValidator(_to_date)]] = []
    slot_minutes: Annotated[int, Field(ge=5, le=120)] = 15
    horizon_days: Annotated[int, Field(ge=1, le=366)] = 30
    turn_minutes: dict[ClassKey, Minutes] = Field(
        default={},
        description="Minutes a party holds its table, by table size ('2', '4', ...) and "
        "'large': every table size, or none (then the seed's 2: 45, 4: 70, 6: 90, other sizes "
        "the nearest of these; large: 120)",
    )
    max_party_size: Annotated[int, Field(ge=1, le=MAX_PARTY_SIZE_LIMIT)] = Field(
        default=10,
        description="Largest party the host takes (walk-ins, phone bookings): at most what "
        "the largest table or combo seats",
    )
    overstay_minutes: Annotated[int, Field(ge=0, le=240)] = Field(
        default=15,
        description="Minutes a party past its turn is still expected at its table "
        "(availability keeps its table that long after now)",
    )
    min_advance_minutes: Annotated[int, Field(ge=0, le=7 * 24 * 60)] = Field(
        default=0, description="No booking closer than this many minutes to its start"
    )
    cancel_cutoff_minutes: Annotated[int, Field(ge=0, le=7 * 24 * 60)] = Field(
        default=0,
        description="A partner may not cancel later than this many minutes before the start "
        "(0: any time); the host always may",
    )
    max_online_party_size: Annotated[int, Field(ge=1, le=MAX_PARTY_SIZE_LIMIT)] | None = Field(
        default=None,
        description="Largest party partners can book (larger ones call the restaurant); "
        "default: max_party_size",
    )
    max_waitlist: Annotated[int, Field(ge=1, le=MAX_WAITLIST_LIMIT)] | None = Field(
        default=None,
        description="Most parties on the walk-in waitlist (host walk-ins and partners' "
        f"entries alike); default: {WAITLIST_PER_TABLE} per table, at least "
        f"{WAITLIST_AT_LEAST}",
    )
    max_partner_waitlist: Annotated[int, Field(ge=0, le=MAX_WAITLIST_LIMIT)] | None = Field(
        default=None,
        description="Most places on the walk-in waitlist partners' entries take, all partners "
        "together (0: partners cannot join it); the host's walk-ins keep the rest. At most "
        "max_waitlist; default: half of max_waitlist, rounded up",
    )
    pacing: PacingModel = Field(
        default=PacingModel(),
        description="Caps per slot on partner bookings (host bookings may exceed them only "
        "when the host says so)",
    )
    special_days: list[SpecialDayModel] = Field(
        default=[], description="Dates with their own services, overriding the weekday's hours"
    )
    large_party_from: Annotated[int, Field(ge=2)] | None = None
    tables: Annotated[list[TableModel], Field(min_length=1)]
    combos: list[ComboModel] = []
    protect_reservations: bool = Field(
        default=True,
        description="Keep the waitlist off a table whose next reservation starts before "
        "the party's turn is over",
    )
    # -- seating areas (issue #14)
    areas: dict[AreaId, NonEmpty] = Field(
        default={},
        description='Seating areas: area id -> display name (e.g. patio = "Patio"); '
        "every table's `area` must be one of them",
    )


# ---------------------------------------------------------------- loading


def load_restaurant(path: Path) -> Restaurant:
    """Read, parse and check a restaurant file; every failure is a ConfigError."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(source, "", "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, "", f"cannot read the file ({exc})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(source, "", f"not valid TOML: {exc}") from None
    return parse_restaurant(data, source)


def parse_restaurant(data: Mapping[str, Any], source: str) -> Restaurant:
    """Check parsed TOML (`source` names it in errors) and build the Restaurant."""
    try:
        model = RestaurantModel.model_validate(data)
    except ValidationError as exc:
        raise _config_error(exc, source, data) from None
    return _to_restaurant(model, source)


def _config_error(exc: ValidationError, source: str, data: Mapping[str, Any]) -> ConfigError:
    # A misspelt key also makes its real key "missing": report the cause (the unknown key)
    # and not that echo of it; then every other problem, one line each.
    errors = sorted(exc.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
    misspelt_in = {tuple(e["loc"])[:-1] for e in errors if e["type"] == "extra_forbidden"}
    ids = _table_ids(data.get("tables"))
    problems = [
        (field, _problem(e) + _which_table(field, ids))
        for e in errors
        if not (e["type"] == "missing" and tuple(e["loc"])[:-1] in misspelt_in)
        for field in [_dotted(tuple(e["loc"]))]
    ]
    (field, problem), *more = problems
    return ConfigError(source, field, problem, more)


def _table_ids(tables: Any) -> list[Any]:
    """Each [[tables]] entry's id as written (None where it has none), for `_which_table`."""
    if not isinstance(tables, list):
        return []
    return [t.get("id") if isinstance(t, Mapping) else None for t in tables]


def _which_table(field: str, ids: Sequence[Any]) -> str:
    """Which table `tables[i]...` means, in the file's words: the index counts from 0, and
    with tables numbered from 1 "tables[4]" reads as table 4 when it is table "5"."""
    found = re.match(r"tables\[(\d+)\]", field)
    if found is None:
        return ""
    i = int(found.group(1))
    named = f"table {ids[i]!r}, " if i < len(ids) and isinstance(ids[i], str) else ""
    return f"; {found.group(0)} is {named}the {_ordinal(i + 1)} [[tables]] of the file"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _problem(error: Any) -> str:
    loc = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        return "unknown key" + _did_you_mean(loc)
    if error["type"] == "missing":
        return "required but missing"
    problem = str(error["msg"]).removeprefix("Value error, ").replace("Input should", "should")
    if error["type"] not in ("value_error",) and "input" in error:
        problem += f" (got {_short(error['input'])})"
    return problem


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _dotted(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _did_you_mean(loc: Sequence[int | str]) -> str:
    """Suggest the allowed key closest to a misspelt one, from the model at that place."""
    model: type[BaseModel] | None = RestaurantModel
    for part in loc[:-1]:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(part)
        model = _model_in(field.annotation) if field is not None else None
    if model is None:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _to_restaurant(m: RestaurantModel, source: str) -> Restaurant:
    """The one place the file's model becomes plain values; checks that span fields."""

    ids = [t.id for t in m.tables]

    def fail(field: str, problem: str) -> ConfigError:
        return ConfigError(source, field, problem + _which_table(field, ids))

    floor = _floor(m, fail)
    hours = _services(m, floor, fail)
    special = _special_days(m, floor, hours, fail)
    walk_in = frozenset(t.id for t in m.tables if t.walk_in_only)
    if m.max_online_party_size is not None and m.max_online_party_size > m.max_party_size:
        raise fail("max_online_party_size", f"must be at most max_party_size ({m.max_party_size})")
    if m.max_partner_waitlist is not None:
        limit = m.max_waitlist if m.max_waitlist is not None else waitlist_default(floor)
        of = (
            ""
            if m.max_waitlist is not None
            else (f": the default, {WAITLIST_PER_TABLE} per table, at least {WAITLIST_AT_LEAST}")
        )
        if m.max_partner_waitlist > limit:
            raise fail("max_partner_waitlist", f"must be at most max_waitlist ({limit}{of})")
    return Restaurant(
        merchant_id=m.merchant_id,
        name=m.name,
        service_id=m.service_id,
        tz=ZoneInfo(m.timezone),
        telephone=m.telephone,
        url=m.url,
        address=Address(**m.address.model_dump()),
        geo=Geo(m.geo.latitude, m.geo.longitude),
        hours=hours,
        closed=frozenset(m.closed),
        slot_minutes=m.slot_minutes,
        horizon_days=m.horizon_days,
        turn_minutes=dict(floor.dwell_minutes),
        large_turn_minutes=m.turn_minutes.get("large", DEFAULT_LARGE_TURN_MINUTES),
        max_party_size=m.max_party_size,
        floor=floor,
        overstay_minutes=m.overstay_minutes,
        min_advance_minutes=m.min_advance_minutes,
        positions=_positions(m, fail),
        areas=_areas(m, fail),
        walk_in_only=walk_in,
        cancel_cutoff_minutes=m.cancel_cutoff_minutes,
        max_online_party_size=m.max_online_party_size,
        max_waitlist=m.max_waitlist,
        max_partner_waitlist=m.max_partner_waitlist,
        special_days=special,
    )


def _positions(m: RestaurantModel, fail: _Fail) -> dict[str, tuple[int, int]]:
    """Table positions for the floor picture: every table has x and y, or none has."""
    placed = {t.id: (t.x, t.y) for t in m.tables if t.x is not None and t.y is not None}
    for i, t in enumerate(m.tables):
        if (t.x is None) != (t.y is None):
            raise fail(f"tables[{i}]", "give both x and y, or neither")
        if placed and t.id not in placed:
            raise fail(f"tables[{i}]", "some tables have x and y: give them to every table")
    return placed


# ---------------------------------------------------------------- seating areas (issue #14)


def _areas(m: RestaurantModel, fail: _Fail) -> tuple[Area, ...]:
    """The file's areas in [areas] order. Every table has an area or none has (then: one
    area, the whole floor); an area a table names must be named in [areas], and a named area
    must have a table. A combo stays within one area unless it says `cross_area = true`; it
    counts in its first table's area."""
    area_of: dict[str, str] = {}
    for i, t in enumerate(m.tables):
        if t.area is None:
            if any(other.area is not None for other in m.tables):
                raise fail(f"tables[{i}].area", "some tables have an area: give one to every table")
            continue
        if t.area not in m.areas:
            raise fail(
                f"tables[{i}].area",
                f"no area {t.area!r} in [areas] (name it there: its display name)",
            )
        area_of[t.id] = t.area
    if not area_of:
        if m.areas:
            raise fail("areas", "no table has an area: give each table one (tables[].area)")
        return ()
    combos: dict[str, list[str]] = {a: [] for a in m.areas}
    for i, c in enumerate(m.combos):
        first, second = area_of[c.tables[0]], area_of[c.tables[1]]
        if first != second and not c.cross_area:
            raise fail(
                f"combos[{i}].tables",
                f"{c.tables[0]} is in {first!r} and {c.tables[1]} in {second!r}: a combo stays "
                "in one area (set cross_area = true to allow it)",
            )
        combos[first].append("+".join(c.tables))
    out = []
    for area_id, name in m.areas.items():
        tables = tuple(t.id for t in m.tables if area_of[t.id] == area_id)
        if not tables:
            raise fail(f"areas.{area_id}", "no table is in this area")
        out.append(Area(area_id, name, tables, tuple(combos[area_id])))
    return tuple(out)


def _services(m: RestaurantModel, floor: FloorPlan, fail: _Fail) -> dict[int, tuple[Service, ...]]:
    out: dict[int, tuple[Service, ...]] = {}
    for wd, day in enumerate(WEEKDAYS):
        out[wd] = _service_list(getattr(m.hours, day), f"hours.{day}", day, m, floor, fail)
    # A service running past midnight must end before the next day's first one opens.
    for wd, day in enumerate(WEEKDAYS):
        following = out[(wd + 1) % 7]
        if out[wd] and following and out[wd][-1].close_offset > _DAY + following[0].open_offset:
            last, nxt = len(out[wd]) - 1, WEEKDAYS[(wd + 1) % 7]
            raise fail(
                f"hours.{day}[{last}].close",
                f"runs into the first service of {nxt}: it closes at"
                f" {out[wd][-1].close:%H:%M} on {nxt}, after that service opens"
                f" ({following[0].open:%H:%M})",
            )
    return out


def _special_days(
    m: RestaurantModel, floor: FloorPlan, hours: Mapping[int, tuple[Service, ...]], fail: _Fail
) -> dict[date, tuple[Service, ...]]:
    out: dict[date, tuple[Service, ...]] = {}
    for i, special in enumerate(m.special_days):
        where = f"special_days[{i}]"
        if special.date in out:
            raise fail(f"{where}.date", f"{special.date} is listed twice")
        if special.date in m.closed:
            raise fail(f"{where}.date", f"{special.date} is also in closed")
        out[special.date] = _service_list(
            special.services, f"{where}.services", special.date.isoformat(), m, floor, fail
        )
    closed = frozenset(m.closed)

    def services_on(day: date) -> tuple[Service, ...]:
        return () if day in closed else out.get(day, hours[day.weekday()])

    # As the weekdays are: a service past midnight must end before the next day's first
    # opens, whichever of the two is the special day (the hours would belong to both).
    for i, special in enumerate(m.special_days):
        day, services = special.date, out[special.date]
        before, after = day - timedelta(days=1), day + timedelta(days=1)
        earlier, later = services_on(before), services_on(after)
        if earlier and earlier[-1].close_offset > _DAY + services[0].open_offset:
            raise fail(
                f"special_days[{i}].services[0].open",
                f"{day} opens at {services[0].open:%H:%M}, before the last service of"
                f" {before} closes ({earlier[-1].close:%H:%M}): the days would overlap",
            )
        if later and services[-1].close_offset > _DAY + later[0].open_offset:
            raise fail(
                f"special_days[{i}].services[{len(services) - 1}].close",
                f"{day}'s last service closes at {services[-1].close:%H:%M}, after the first"
                f" service of {after} opens ({later[0].open:%H:%M}): the days would overlap",
            )
    return out


def _service_list(
    entries: Sequence[ServiceModel],
    place: str,
    day: str,
    m: RestaurantModel,
    floor: FloorPlan,
    fail: _Fail,
) -> tuple[Service, ...]:
    services: list[Service] = []
    for i, s in enumerate(entries):
        where = f"{place}[{i}]"
        opens, closes = _parse_time(s.open), _parse_time(s.close)
        if opens == closes:
            raise fail(f"{where}.close", "must differ from open (a service cannot be 24 hours)")
        close_at = _offset_after(opens, closes, allow_equal=False)
        if s.last_seating is None:
            last = close_at - DEFAULT_LAST_SEATING_BEFORE_CLOSE
            if last < _minutes(opens):
                raise fail(
                    f"{where}.last_seating",
                    "the default (close minus 60 minutes) is before open; set it",
                )
            last_seating = time(last % _DAY // 60, last % 60)
        else:
            last_seating = _parse_time(s.last_seating)
            if _offset_after(opens, last_seating, allow_equal=True) > close_at:
                raise fail(f"{where}.last_seating", f"must be between open and close ({s.close})")
        service = Service(
            opens,
            closes,
            last_seating,
            turns=_service_turns(s, m, floor, where, fail),
            max_covers=_or(s.max_covers_per_slot, m.pacing.max_covers_per_slot),
            max_parties=_or(s.max_parties_per_slot, m.pacing.max_parties_per_slot),
        )
        if services and service.open_offset < services[-1].close_offset:
            before = services[-1]
            raise fail(
                f"{where}.open",
                f"overlaps or comes before the previous service of {day}: it opens at"
                f" {opens:%H:%M}, before that one closes ({before.close:%H:%M}"
                + (" the next day" if before.crosses_midnight else "")
                + "); services must be in order and not overlap",
            )
        services.append(service)
    return tuple(services)


def _or(value: int | None, default: int | None) -> int | None:
    return default if value is None else value


def _service_turns(
    s: ServiceModel, m: RestaurantModel, floor: FloorPlan, where: str, fail: _Fail
) -> tuple[int, ...]:
    """Turn minutes per party size 1..max_party_size in a service with turn_minutes of its
    own (a class it leaves out keeps the restaurant's); () without them."""
    if not s.turn_minutes:
        return ()
    seats = {t.seats for t in floor.tables}
    for key in s.turn_minutes:
        if key != "large" and int(key) not in seats:
            raise fail(f"{where}.turn_minutes.{key}", f"no table has {key} seats")
    large = s.turn_minutes.get("large", m.turn_minutes.get("large", DEFAULT_LARGE_TURN_MINUTES))
    out: list[int] = []
    for n in range(1, m.max_party_size + 1):
        cls = floor.quote_class(n)
        if floor.is_large(n) or cls is None:
            out.append(large)
        else:
            out.append(s.turn_minutes.get(str(cls), floor.dwell_minutes[cls]))
    return tuple(out)


def _parse_time(value: str) -> time:
    hh, mm = value.split(":")
    return time(int(hh), int(mm))


def _floor(m: RestaurantModel, fail: _Fail) -> FloorPlan:
    seats: dict[str, int] = {}
    for i, t in enumerate(m.tables):
        if t.id in seats:
            first = next(j for j, other in enumerate(m.tables) if other.id == t.id)
            raise fail(
                f"tables[{i}].id",
                f"table {t.id!r} is listed twice (the {_ordinal(first + 1)} [[tables]] has it too)",
            )
        if t.min_party is not None and t.min_party > t.seats:
            raise fail(f"tables[{i}].min_party", f"must be at most its seats ({t.seats})")
        seats[t.id] = t.seats
    capacity: dict[str, int] = {}
    capacities: dict[str, int] = {}  # every combo's, given or the sum of its seats
    min_party: dict[str, int] = {}
    seen: set[frozenset[str]] = set()
    for i, c in enumerate(m.combos):
        for j, tid in enumerate(c.tables):
            if tid not in seats:
                raise fail(f"combos[{i}].tables[{j}]", f"no table {tid!r} on the floor plan")
        if c.tables[0] == c.tables[1]:
            raise fail(f"combos[{i}].tables", "must name two different tables")
        if frozenset(c.tables) in seen:
            raise fail(f"combos[{i}].tables", "these two tables are already a combo")
        seen.add(frozenset(c.tables))
        cid = "+".join(c.tables)
        cap = c.capacity if c.capacity is not None else seats[c.tables[0]] + seats[c.tables[1]]
        capacities[cid] = cap
        if c.capacity is not None:
            capacity[cid] = c.capacity
        if c.min_party is not None:
            if c.min_party > cap:
                raise fail(f"combos[{i}].min_party", f"must be at most its capacity ({cap})")
            min_party[cid] = c.min_party
    largest = max(seats.values())
    # A size the file names that nothing seats is taken at the door and quoted a wait for a
    # table that never comes (the default, 10, is left to floors that seat fewer).
    unit, most = max([*seats.items(), *capacities.items()], key=lambda item: item[1])
    if "max_party_size" in m.model_fields_set and m.max_party_size > most:
        raise fail(
            "max_party_size",
            f"{m.max_party_size} is more than any table or combo seats (at most {most}, {unit}):"
            f" lower it to {most}, or add a combo that seats {m.max_party_size}",
        )
    if m.large_party_from is not None and m.large_party_from > largest + 1:
        raise fail(
            "large_party_from",
            f"must be at most {largest + 1} (the largest table plus one), "
            "or some party sizes would fit no table",
        )
    dwell: dict[int, int] = {}
    for key, minutes in m.turn_minutes.items():
        if key == "large":
            continue
        if int(key) not in seats.values():
            raise fail(f"turn_minutes.{key}", f"no table has {key} seats")
        dwell[int(key)] = minutes
    # A file giving its own turn times means them for every table: a size left out would
    # quietly turn at Marlowe's (the seed's) minutes, and every slot of those tables with it.
    for size in sorted(set(seats.values())) if dwell else ():
        if size not in dwell:
            ids = ", ".join(repr(t) for t, n in seats.items() if n == size)
            raise fail(
                "turn_minutes",
                f"no turn for the {size}-seat tables ({ids}): add {size} = <minutes>",
            )
    try:
        return build_floor(
            [Table(t.id, t.seats, t.min_party) for t in m.tables],
            [tuple(c.tables) for c in m.combos],
            large_from=m.large_party_from,
            max_party=m.max_party_size,
            dwell_minutes=dwell,
            large_turn_minutes=m.turn_minutes.get("large", DEFAULT_LARGE_TURN_MINUTES),
            protect_reservations=m.protect_reservations,
            combo_capacity=capacity,
            combo_min_party=min_party,
        )
    except FloorPlanError as exc:  # the checks above should leave nothing for this
        raise fail("tables", str(exc)) from None


# ---------------------------------------------------------------- JSON Schema


def restaurant_schema() -> dict[str, Any]:
    """The JSON Schema of a restaurant file, as committed in schemas/."""
    schema = RestaurantModel.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Host Stand restaurant configuration"
    return schema


def schema_text() -> str:
    return json.dumps(restaurant_schema(), indent=2, sort_keys=True) + "\n"


def write_schema(path: Path = SCHEMA_PATH) -> None:
    path.write_text(schema_text(), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m feed.venue.restaurant --schema` writes the schema; with files, checks them."""
    parser = argparse.ArgumentParser(prog="python -m feed.venue.restaurant", description=__doc__)
    parser.add_argument("--schema", action="store_true", help=f"write {SCHEMA_PATH.name}")
    parser.add_argument("files", nargs="*", type=Path, help="restaurant TOML files to check")
    args = parser.parse_args(argv)
    if not args.schema and not args.files:
        parser.error("name the restaurant files to check (e.g. samples/marlowes.toml), or --schema")
    if args.schema:
        write_schema()
        print(f"wrote {SCHEMA_PATH}")
    status = 0
    for path in args.files:
        try:
            r = load_restaurant(path)
        except ConfigError as exc:
            print(exc, file=sys.stderr)
            status = 1
        else:
            print(f"{path}: ok ({r.name}, {len(r.floor.tables)} tables, {r.tz.key})")
    return status


if __name__ == "__main__":
    sys.exit(main())
