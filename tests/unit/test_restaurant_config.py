"""Restaurant files: the samples load, and every kind of bad file is one line naming it."""

from __future__ import annotations

import dataclasses
import json
import tomllib
from datetime import date, time
from pathlib import Path

import jsonschema
import pytest

from engine.floor import MARLOWES
from feed.venue.restaurant import (
    SCHEMA_PATH,
    ConfigError,
    Restaurant,
    Service,
    load_restaurant,
    schema_text,
)
from feed.venue.restaurant import main as restaurant_main

ROOT = Path(__file__).resolve().parents[2]
MARLOWES_FILE = ROOT / "samples" / "marlowes.toml"
GOOGLE_FILE = ROOT / "samples" / "google-floorplan.toml"

MINIMAL = """\
merchant_id = "m1"
name = "Minimal"
timezone = "Europe/London"
telephone = "+44 20 7946 0000"
url = "https://minimal.example.com/"

[address]
street_address = "1 High Street"
locality = "London"
country = "GB"
postal_code = "N1 1AA"

[geo]
latitude = 51.5
longitude = -0.1

[hours]
monday = [{ open = "17:00", close = "23:00" }]

[[tables]]
id = "A"
seats = 4

[[tables]]
id = "B"
seats = 4

[[combos]]
tables = ["A", "B"]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_restaurant(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message


# ---------------------------------------------------------------- the samples


def test_marlowes_sample_is_the_seed_floor_plan() -> None:
    r = load_restaurant(MARLOWES_FILE)
    assert r.floor.tables == MARLOWES.tables
    assert r.floor.combos == MARLOWES.combos
    assert r.floor.large_from == MARLOWES.large_from == 7
    assert dict(r.turn_minutes) == {2: 45, 4: 70, 6: 90}
    assert r.large_turn_minutes == 120
    assert r.tz.key == "Europe/London"
    assert r.closed == frozenset({date(2026, 12, 25), date(2026, 12, 26)})


def test_marlowes_serves_lunch_tuesday_to_sunday_and_dinner_every_day() -> None:
    r = load_restaurant(MARLOWES_FILE)
    lunch = Service(time(12), time(15), time(14))
    dinner = Service(time(17, 30), time(23), time(21, 30))
    assert r.hours[0] == (dinner,)
    for weekday in range(1, 7):
        assert r.hours[weekday] == (lunch, dinner)


def test_google_sample_is_the_partner_guide_floor_plan() -> None:
    r = load_restaurant(GOOGLE_FILE)
    assert [(t.id, t.seats, t.smallest_party) for t in r.floor.tables] == [
        ("R1", 6, 4),
        ("R2", 6, 4),
        ("R3", 6, 4),
        ("L1", 8, 6),
    ]
    assert [(c.id, c.capacity, c.min_party) for c in r.floor.combos] == [
        ("R1+R2", 10, 9),
        ("R1+R3", 10, 9),
        ("R2+R3", 10, 9),
    ]
    assert r.floor.large_from == 9
    assert r.tz.key == "America/Los_Angeles"
    assert all(r.hours[wd] == (Service(time(17), time(22), time(21)),) for wd in range(7))


def test_restaurant_is_a_plain_frozen_dataclass() -> None:
    r = load_restaurant(MARLOWES_FILE)
    assert dataclasses.is_dataclass(r) and isinstance(r, Restaurant)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.name = "other"  # type: ignore[misc]


def test_defaults_fill_what_the_file_leaves_out(tmp_path: Path) -> None:
    r = load_restaurant(write(tmp_path, MINIMAL))
    assert (r.service_id, r.slot_minutes, r.horizon_days, r.max_party_size) == ("1000", 15, 30, 10)
    assert r.hours[0][0].last_seating == time(22)  # close minus 60 minutes
    assert r.hours[1] == ()
    assert r.floor.max_party == 10
    assert dict(r.turn_minutes) == {4: 70}
    assert r.large_turn_minutes == 120


def test_duration_is_the_turn_time_of_the_smallest_table_that_fits() -> None:
    r = load_restaurant(MARLOWES_FILE)
    assert [r.duration_minutes(n) for n in range(1, 11)] == [45, 45, 70, 70, 90, 90] + [120] * 4


def test_a_table_size_without_a_listed_turn_time_takes_the_nearest_class() -> None:
    r = load_restaurant(GOOGLE_FILE)
    assert r.duration_minutes(6) == 90
    assert r.duration_minutes(8) == 90  # 8 seats: nearest listed class is 6
    assert r.duration_minutes(9) == 120  # large: a combo


def test_duration_of_a_party_size_the_restaurant_does_not_take_is_an_error() -> None:
    r = load_restaurant(MARLOWES_FILE)
    with pytest.raises(ValueError):
        r.duration_minutes(11)


def test_a_dinner_may_close_after_midnight(tmp_path: Path) -> None:
    text = MINIMAL.replace('close = "23:00"', 'close = "01:00"')
    service = load_restaurant(write(tmp_path, text)).hours[0][0]
    assert service.crosses_midnight
    assert service.last_seating == time(0)
    assert (service.open_offset, service.last_seating_offset, service.close_offset) == (
        17 * 60,
        24 * 60,
        25 * 60,
    )


def test_configured_turn_minutes_and_large_threshold_reach_the_floor(tmp_path: Path) -> None:
    text = "large_party_from = 5\n" + MINIMAL + "\n[turn_minutes]\n4 = 60\nlarge = 150\n"
    r = load_restaurant(write(tmp_path, text))
    assert r.floor.large_from == 5
    assert r.floor.dwell_minutes == {4: 60}
    assert (r.duration_minutes(4), r.duration_minutes(5)) == (60, 150)


def test_a_table_of_10_to_the_18_seats_loads_and_seats_nobody_the_file_does_not_take(
    tmp_path: Path,
) -> None:
    text = MINIMAL.replace("seats = 4", "seats = 1000000000000000000", 1)
    turns = "\n[turn_minutes]\n4 = 70\n1000000000000000000 = 90\n"
    r = load_restaurant(write(tmp_path, text + turns))
    assert r.floor.quote_class(3) == 4
    assert r.floor.quote_class(5) == 10**18
    assert r.turns == {n: 70 if n <= 4 else 90 for n in range(1, 11)}


def test_a_restaurant_protects_its_reservations_unless_the_file_says_not(
    tmp_path: Path,
) -> None:
    assert load_restaurant(write(tmp_path, MINIMAL)).floor.protect_reservations
    assert load_restaurant(MARLOWES_FILE).floor.protect_reservations
    off = load_restaurant(write(tmp_path, "protect_reservations = false\n" + MINIMAL))
    assert not off.floor.protect_reservations
    assert not MARLOWES.protect_reservations  # the seed's floor stays exact to the seed


def test_the_large_turn_reaches_the_floor_for_protection(tmp_path: Path) -> None:
    assert load_restaurant(write(tmp_path, MINIMAL)).floor.large_turn_minutes == 120
    text = MINIMAL + "\n[turn_minutes]\nlarge = 150\n"
    assert load_restaurant(write(tmp_path, text)).floor.large_turn_minutes == 150


# ---------------------------------------------------------------- bad files: one line each


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (("", "slot_minute = 15\n"), "slot_minute", "unknown key (did you mean 'slot_minutes'?)"),
        (('open = "17:00"', 'opne = "17:00"'), "hours.monday[0].opne", "unknown key"),
        (("Europe/London", "Europe/Londn"), "timezone", "unknown time zone 'Europe/Londn'"),
        (('close = "23:00"', 'close = "25:00"'), "hours.monday[0].close", "'25:00'"),
        (
            ('close = "23:00" }', 'close = "23:00" }, { open = "22:00", close = "23:30" }'),
            "hours.monday[1].open",
            "overlap",
        ),
        (
            ('close = "23:00"', 'close = "23:00", last_seating = "23:30"'),
            "hours.monday[0].last_seating",
            "between open and close",
        ),
        (('tables = ["A", "B"]', 'tables = ["A", "C"]'), "combos[0].tables[1]", "no table 'C'"),
        (('id = "B"\nseats = 4', 'id = "B"\nseats = -2'), "tables[1].seats", "-2"),
        (('id = "B"', 'id = "A"'), "tables[1].id", "listed twice"),
        (("latitude = 51.5", "latitude = 95.0"), "geo.latitude", "90"),
        (("", 'max_party_size = "10"\n'), "max_party_size", "integer"),
        (("", "max_party_size = 21\n"), "max_party_size", "20"),
        (("", "slot_minutes = 3\n"), "slot_minutes", "5"),
        (("", 'protect_reservations = "yes"\n'), "protect_reservations", "boolean"),
        (("", "large_party_from = 9\n"), "large_party_from", "at most 5"),
        (("", 'closed = ["2026-02-30"]\n'), "closed[0]", "YYYY-MM-DD"),
        (('merchant_id = "m1"', 'merchant_id = ""'), "merchant_id", "at least 1 character"),
        (('merchant_id = "m1"', 'merchant_id = "m1/terrace"'), "merchant_id", "no '/'"),
        (('merchant_id = "m1"', 'merchant_id = "m1\\t"'), "merchant_id", "control characters"),
        (('country = "GB"', 'country = "United Kingdom"'), "address.country", "pattern"),
        (("+44 20 7946 0000", "020 7946 0000"), "telephone", "E.164"),
        (("+44 20 7946 0000", "+44 (0)20 7946 0000"), "telephone", "trunk"),
        (("+44 20 7946 0000", "+44 20 79"), "telephone", "E.164"),
        (('locality = "London"', 'locality = "London"\nregion = ""'), "address.region", "1 char"),
        (("[address]", "[adress]"), "adress", "unknown key (did you mean 'address'?)"),
        (('name = "Minimal"\n', ""), "name", "required but missing"),
    ],
)
def test_a_bad_file_is_one_line_naming_the_file_and_the_field(
    tmp_path: Path, change: tuple[str, str], field: str, words: str
) -> None:
    old, new = change
    text = new + MINIMAL if old == "" else MINIMAL.replace(old, new, 1)
    assert text != MINIMAL
    message = error_of(write(tmp_path, text))
    assert f": {field}: " in message
    assert words in message


# Tables numbered from 1, as most restaurants number them: tables[i] counts from 0.
NUMBERED = (
    MINIMAL.replace('id = "A"', 'id = "1"')
    .replace('id = "B"', 'id = "2"')
    .replace('tables = ["A", "B"]', 'tables = ["1", "2"]')
)


@pytest.mark.parametrize(
    ("change", "ends"),
    [
        (
            ("seats = 4\n\n[[combos]]", "seat = 4\n\n[[combos]]"),
            "table '2', the 2nd [[tables]] of the file",
        ),
        (
            ('id = "2"\nseats = 4', 'id = "2"\nseats = 4\nmin_party = 5'),
            "table '2', the 2nd [[tables]] of the file",
        ),
        (('id = "2"', 'id = "1"'), "table '1', the 2nd [[tables]] of the file"),
        (('id = "2"', "id = 2"), "the 2nd [[tables]] of the file"),
    ],
)
def test_a_problem_in_a_table_names_the_table_as_the_file_does(
    tmp_path: Path, change: tuple[str, str], ends: str
) -> None:
    old, new = change
    text = NUMBERED.replace(old, new, 1)
    assert text != NUMBERED
    message = error_of(write(tmp_path, text))
    assert ": tables[1]." in message
    assert message.endswith(f"; tables[1] is {ends}")


def test_a_table_id_listed_twice_says_which_table_had_it_first(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, NUMBERED.replace('id = "2"', 'id = "1"', 1)))
    assert ": tables[1].id: table '1' is listed twice (the 1st [[tables]] has it too);" in message


@pytest.mark.parametrize(
    "zone", ["localtime", "posixrules", "Factory", "posix/Europe/Berlin", "right/Europe/Berlin"]
)
def test_a_time_zone_must_name_a_place_not_the_servers_zone_or_a_database_file(
    tmp_path: Path, zone: str
) -> None:
    message = error_of(write(tmp_path, MINIMAL.replace("Europe/London", zone)))
    assert f": timezone: {zone!r} is " in message
    assert "use the IANA name of the place, such as 'Europe/London'" in message


def test_a_turn_time_for_a_table_size_nobody_has_is_a_typo(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, MINIMAL + "\n[turn_minutes]\n3 = 50\n"))
    assert ": turn_minutes.3: no table has 3 seats" in message


def test_turn_times_given_for_some_table_sizes_must_be_given_for_all(tmp_path: Path) -> None:
    text = MINIMAL.replace("seats = 4", "seats = 6", 1) + "\n[turn_minutes]\n4 = 60\n"
    message = error_of(write(tmp_path, text))
    assert message.endswith(
        ": turn_minutes: no turn for the 6-seat tables ('A'): add 6 = <minutes>"
    )
    # None given: the seed's defaults, as the schema says; 'large' alone is not a table size.
    assert load_restaurant(write(tmp_path, MINIMAL)).turn_minutes == {4: 70}
    large = load_restaurant(write(tmp_path, MINIMAL + "\n[turn_minutes]\nlarge = 150\n"))
    assert large.turn_minutes == {4: 70}


def test_a_service_running_into_the_next_days_opening_is_refused(tmp_path: Path) -> None:
    text = MINIMAL.replace(
        'close = "23:00" }]', 'close = "12:30" }]\ntuesday = [{ open = "12:00", close = "15:00" }]'
    )
    message = error_of(write(tmp_path, text))
    assert ": hours.monday[0].close: runs into the first service of tuesday" in message


def test_a_max_party_size_no_table_or_combo_seats_is_refused(tmp_path: Path) -> None:
    # A and B seat 4 each, A+B 8: a walk-in of 9 or 10 would wait for a table never free.
    message = error_of(write(tmp_path, "max_party_size = 10\n" + MINIMAL))
    assert message.endswith(
        ": max_party_size: 10 is more than any table or combo seats (at most 8, A+B):"
        " lower it to 8, or add a combo that seats 10"
    )
    assert load_restaurant(write(tmp_path, "max_party_size = 8\n" + MINIMAL)).max_party_size == 8
    assert load_restaurant(write(tmp_path, MINIMAL)).max_party_size == 10  # the default


def test_services_that_overlap_say_both_times(tmp_path: Path) -> None:
    # Lunch meant to close at 15:00, typed 18:00, with dinner from 17:30.
    text = MINIMAL.replace(
        '[{ open = "17:00", close = "23:00" }]',
        '[{ open = "11:30", close = "18:00" }, { open = "17:30", close = "23:00" }]',
    )
    assert error_of(write(tmp_path, text)).endswith(
        ": hours.monday[1].open: overlaps or comes before the previous service of monday: it"
        " opens at 17:30, before that one closes (18:00); services must be in order and not"
        " overlap"
    )


def test_a_service_running_into_the_next_day_says_when_each_one_is(tmp_path: Path) -> None:
    text = MINIMAL.replace(
        'close = "23:00" }]', 'close = "12:30" }]\ntuesday = [{ open = "12:00", close = "15:00" }]'
    )
    assert error_of(write(tmp_path, text)).endswith(
        ": hours.monday[0].close: runs into the first service of tuesday: it closes at 12:30"
        " on tuesday, after that service opens (12:00)"
    )


def special_day(day: str, open_: str, close: str) -> str:
    return (
        f'\n[[special_days]]\ndate = "{day}"\n'
        f'services = [{{ open = "{open_}", close = "{close}", last_seating = "{open_}" }}]\n'
    )


def test_a_special_day_opening_before_the_day_befores_late_close_is_refused(
    tmp_path: Path,
) -> None:
    late_monday = MINIMAL.replace(
        'close = "23:00" }]', 'close = "03:00", last_seating = "23:00" }]'
    )
    message = error_of(write(tmp_path, late_monday + special_day("2026-12-08", "02:00", "06:00")))
    assert message.endswith(
        ": special_days[0].services[0].open: 2026-12-08 opens at 02:00, before the last"
        " service of 2026-12-07 closes (03:00): the days would overlap"
    )


def test_a_special_day_running_into_the_next_days_opening_is_refused(tmp_path: Path) -> None:
    early_monday = MINIMAL.replace(
        'open = "17:00", close = "23:00"', 'open = "01:00", close = "05:00"'
    )
    message = error_of(write(tmp_path, early_monday + special_day("2026-12-06", "18:00", "02:00")))
    assert message.endswith(
        ": special_days[0].services[0].close: 2026-12-06's last service closes at 02:00, after"
        " the first service of 2026-12-07 opens (01:00): the days would overlap"
    )
    # Two special days side by side are held to the same rule.
    two = (
        MINIMAL
        + special_day("2026-12-09", "18:00", "02:00")
        + special_day("2026-12-10", "01:00", "04:00")
    )
    assert ": special_days[0].services[0].close: " in error_of(write(tmp_path, two))
    # A closed day after it leaves nothing to run into.
    closed = 'closed = ["2026-12-07"]\n' + early_monday
    assert load_restaurant(write(tmp_path, closed + special_day("2026-12-06", "18:00", "02:00")))


def test_a_toml_syntax_error_names_the_file(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, MINIMAL + "\nslot_minutes = = 15\n"))
    assert "not valid TOML" in message


def test_a_missing_file_names_the_file(tmp_path: Path) -> None:
    message = error_of(tmp_path / "nowhere.toml")
    assert message == f"{tmp_path / 'nowhere.toml'}: no such file"


def test_several_mistakes_are_each_reported_on_a_line_of_their_own(tmp_path: Path) -> None:
    text = MINIMAL.replace("seats = 4", "seats = 0")
    with pytest.raises(ConfigError) as caught:
        load_restaurant(write(tmp_path, text))
    lines = str(caught.value).splitlines()
    assert len(lines) == 2 and all(line.startswith(str(tmp_path)) for line in lines)
    assert ": tables[0].seats: " in lines[0] and ": tables[1].seats: " in lines[1]
    assert "more error" not in "".join(lines)


def test_checking_a_file_with_several_mistakes_prints_them_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = MINIMAL.replace("seats = 4", "seats = 0").replace('name = "M', 'nmae = "M')
    assert restaurant_main([str(write(tmp_path, text))]) == 1
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) >= 3, errors
    assert any("nmae: unknown key (did you mean 'name'?)" in line for line in errors)


def test_checking_without_a_file_says_what_to_give_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        restaurant_main([])
    assert exited.value.code == 2
    assert "name the restaurant files to check" in capsys.readouterr().err


# ---------------------------------------------------------------- the committed schema


def test_the_committed_schema_is_the_models_schema() -> None:
    # Regenerate with: python -m feed.venue.restaurant --schema
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text()


@pytest.mark.parametrize("sample", [MARLOWES_FILE, GOOGLE_FILE])
def test_the_samples_validate_against_the_committed_schema(sample: Path) -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(tomllib.loads(sample.read_text("utf-8")))
