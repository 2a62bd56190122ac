"""Service days and slots: minute 0 is the day's opening, slots keep local wall-clock times,
minutes are real elapsed minutes (also across clock changes). Fixed dates only."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from feed.venue.calendar import (
    closing_instant,
    day_span,
    days_ahead,
    in_service,
    minute_of,
    opening_instant,
    service_closing,
    service_day_of,
    slot_at,
    slots,
    why_not_a_slot,
)
from feed.venue.restaurant import Restaurant, load_restaurant, parse_restaurant

ROOT = Path(__file__).resolve().parents[2]
MARLOWES = load_restaurant(ROOT / "samples" / "marlowes.toml")
GOOGLE = load_restaurant(ROOT / "samples" / "google-floorplan.toml")
LONDON = ZoneInfo("Europe/London")
LA = ZoneInfo("America/Los_Angeles")


def restaurant(timezone: str, hours: dict[str, list[dict[str, str]]], **extra: Any) -> Restaurant:
    data: dict[str, Any] = {
        "merchant_id": "late",
        "name": "The Late Bar",
        "timezone": timezone,
        "telephone": "+44 20 7946 0999",
        "url": "https://late.example.com/",
        "address": {
            "street_address": "2 Night Lane",
            "locality": "Town",
            "country": "GB",
            "postal_code": "X1 1XX",
        },
        "geo": {"latitude": 51.5, "longitude": -0.1},
        "hours": hours,
        "tables": [{"id": "A", "seats": 4}],
        **extra,
    }
    return parse_restaurant(data, "test")


def late(timezone: str, weekday: str, open_: str, close: str, last: str) -> Restaurant:
    service = {"open": open_, "close": close, "last_seating": last}
    return restaurant(timezone, {weekday: [service]}, slot_minutes=30)


def grid(r: Restaurant, day: date) -> list[tuple[str, int]]:
    return [(s.local.strftime("%H:%M"), s.minute) for s in slots(r, day)]


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


# ---------------------------------------------------------------- ordinary days


def test_a_normal_day_has_lunch_and_dinner_slots_every_15_minutes_from_opening() -> None:
    day = date(2026, 6, 17)  # a Wednesday, British Summer Time
    got = slots(MARLOWES, day)
    assert opening_instant(MARLOWES, day) == utc(2026, 6, 17, 11, 0)
    lunch = [f"{h}:{m:02d}" for h in (12, 13) for m in (0, 15, 30, 45)] + ["14:00"]
    dinner = ["17:30", "17:45"] + [f"{h}:{m:02d}" for h in (18, 19, 20) for m in (0, 15, 30, 45)]
    dinner += ["21:00", "21:15", "21:30"]
    assert [s.local.strftime("%H:%M") for s in got] == lunch + dinner
    assert [s.minute for s in got[:9]] == list(range(0, 121, 15))
    assert [s.minute for s in got[9:]] == list(range(330, 571, 15))
    assert got[0].start_sec == int(utc(2026, 6, 17, 11, 0).timestamp())
    assert all(s.local.tzinfo is MARLOWES.tz for s in got)


def test_monday_at_marlowes_is_dinner_only_and_opens_at_half_past_five() -> None:
    day = date(2026, 6, 15)
    assert opening_instant(MARLOWES, day) == utc(2026, 6, 15, 16, 30)
    assert grid(MARLOWES, day)[0] == ("17:30", 0)
    assert len(slots(MARLOWES, day)) == 17


def test_a_closed_date_has_no_opening_and_no_slots() -> None:
    for day in (date(2026, 12, 25), date(2026, 12, 26)):
        assert opening_instant(MARLOWES, day) is None
        assert slots(MARLOWES, day) == []


def test_a_weekday_without_services_is_closed() -> None:
    r = late("Europe/London", "friday", "18:00", "23:00", "22:00")
    assert slots(r, date(2026, 6, 18)) == []  # Thursday
    assert opening_instant(r, date(2026, 6, 18)) is None
    assert grid(r, date(2026, 6, 19))[0] == ("18:00", 0)


def test_minute_of_is_floored_real_minutes_and_negative_before_opening() -> None:
    day = date(2026, 6, 17)
    opening = datetime(2026, 6, 17, 12, 0, tzinfo=LONDON)
    assert minute_of(MARLOWES, day, opening) == 0
    assert minute_of(MARLOWES, day, opening + timedelta(seconds=59)) == 0
    assert minute_of(MARLOWES, day, opening - timedelta(seconds=30)) == -1
    assert minute_of(MARLOWES, day, opening - timedelta(days=2)) == -2880
    assert minute_of(MARLOWES, day, datetime(2026, 6, 17, 19, 0, tzinfo=LONDON)) == 420


def test_minute_of_a_closed_day_is_an_error() -> None:
    with pytest.raises(ValueError):
        minute_of(MARLOWES, date(2026, 12, 25), utc(2026, 12, 25, 12))


def test_minute_of_needs_an_aware_instant() -> None:
    with pytest.raises(ValueError):
        minute_of(MARLOWES, date(2026, 6, 17), datetime(2026, 6, 17, 12))


# ---------------------------------------------------------------- dinner past midnight


def test_a_dinner_closing_after_midnight_owns_the_early_hours() -> None:
    r = late("Europe/London", "friday", "18:00", "01:00", "00:00")
    friday = date(2026, 6, 19)
    assert grid(r, friday)[-1] == ("00:00", 360)
    assert slots(r, friday)[-1].local == datetime(2026, 6, 20, 0, 0, tzinfo=LONDON)
    assert closing_instant(r, friday) == utc(2026, 6, 20, 0, 0)
    assert service_day_of(r, datetime(2026, 6, 20, 0, 30, tzinfo=LONDON)) == friday
    assert service_day_of(r, datetime(2026, 6, 20, 1, 0, tzinfo=LONDON)) is None
    assert service_day_of(r, datetime(2026, 6, 19, 17, 59, tzinfo=LONDON)) is None
    assert slot_at(r, datetime(2026, 6, 20, 0, 0)) == (friday, slots(r, friday)[-1])


def test_the_gap_between_lunch_and_dinner_belongs_to_the_day() -> None:
    assert service_day_of(MARLOWES, datetime(2026, 6, 17, 16, 0, tzinfo=LONDON)) == date(
        2026, 6, 17
    )
    assert service_day_of(MARLOWES, datetime(2026, 6, 17, 23, 0, tzinfo=LONDON)) is None


def test_service_closing_is_the_close_of_the_service_running_then_and_none_between() -> None:
    wednesday = date(2026, 6, 17)
    lunch_close = datetime(2026, 6, 17, 15, 0, tzinfo=LONDON)
    assert service_closing(MARLOWES, wednesday, datetime(2026, 6, 17, 13, 0, tzinfo=LONDON)) == (
        lunch_close
    )
    assert service_closing(MARLOWES, wednesday, lunch_close) is None  # the gap
    assert service_closing(MARLOWES, wednesday, datetime(2026, 6, 17, 19, 0, tzinfo=LONDON)) == (
        datetime(2026, 6, 17, 23, 0, tzinfo=LONDON)
    )
    r = late("Europe/London", "friday", "18:00", "01:00", "00:00")
    early = datetime(2026, 6, 20, 0, 30, tzinfo=LONDON)  # Friday's dinner, after midnight
    assert service_closing(r, date(2026, 6, 19), early) == utc(2026, 6, 20, 0, 0)


# ---------------------------------------------------------------- clock changes


def test_london_spring_forward_skips_the_missing_hour_and_counts_real_minutes() -> None:
    # 2026-03-29 01:00 GMT the clocks go to 02:00 BST.
    r = late("Europe/London", "saturday", "22:00", "03:00", "02:30")
    saturday = date(2026, 3, 28)
    assert grid(r, saturday) == [
        ("22:00", 0),
        ("22:30", 30),
        ("23:00", 60),
        ("23:30", 90),
        ("00:00", 120),
        ("00:30", 150),
        ("02:00", 180),  # 01:00 and 01:30 do not exist that night
        ("02:30", 210),
    ]
    assert closing_instant(r, saturday) == utc(2026, 3, 29, 2, 0)  # 03:00 BST


def test_london_spring_forward_on_a_day_that_opens_at_midnight() -> None:
    r = late("Europe/London", "sunday", "00:00", "04:00", "03:00")
    assert grid(r, date(2026, 3, 29)) == [
        ("00:00", 0),
        ("00:30", 30),
        ("02:00", 60),
        ("02:30", 90),
        ("03:00", 120),
    ]
    assert minute_of(r, date(2026, 3, 29), datetime(2026, 3, 29, 4, 0, tzinfo=LONDON)) == 180


def test_an_ordinary_service_on_a_clock_change_day_keeps_its_wall_clock_times() -> None:
    for day in (date(2026, 3, 29), date(2026, 10, 25)):  # both Sundays
        got = grid(MARLOWES, day)
        assert got[0] == ("12:00", 0)
        assert got[-1] == ("21:30", 570)
    assert opening_instant(MARLOWES, date(2026, 3, 29)) == utc(2026, 3, 29, 11, 0)
    assert opening_instant(MARLOWES, date(2026, 10, 25)) == utc(2026, 10, 25, 12, 0)


def test_london_fall_back_gives_the_repeated_hour_one_slot_each_at_its_first_occurrence() -> None:
    # 2026-10-25 02:00 BST the clocks go back to 01:00 GMT.
    r = late("Europe/London", "saturday", "22:00", "03:00", "02:30")
    saturday = date(2026, 10, 24)
    assert grid(r, saturday) == [
        ("22:00", 0),
        ("22:30", 30),
        ("23:00", 60),
        ("23:30", 90),
        ("00:00", 120),
        ("00:30", 150),
        ("01:00", 180),  # BST, the first 01:00
        ("01:30", 210),
        ("02:00", 300),  # GMT: the repeated hour lies between
        ("02:30", 330),
    ]
    first_0130 = datetime(2026, 10, 25, 1, 30, tzinfo=LONDON, fold=0)
    second_0130 = datetime(2026, 10, 25, 1, 30, tzinfo=LONDON, fold=1)
    assert slot_at(r, datetime(2026, 10, 25, 1, 30)) == (saturday, slots(r, saturday)[7])
    assert slot_at(r, first_0130) == (saturday, slots(r, saturday)[7])
    assert slot_at(r, second_0130) is None
    assert minute_of(r, saturday, second_0130) == 270
    assert service_day_of(r, second_0130) == saturday


def test_los_angeles_spring_forward_skips_two_oclock() -> None:
    # 2026-03-08 02:00 PST the clocks go to 03:00 PDT.
    r = late("America/Los_Angeles", "saturday", "20:00", "04:00", "03:00")
    got = grid(r, date(2026, 3, 7))
    assert len(got) == 13
    assert got[-3:] == [("01:00", 300), ("01:30", 330), ("03:00", 360)]
    assert ("02:00", 360) not in got and ("02:30", 390) not in got
    assert opening_instant(r, date(2026, 3, 7)) == utc(2026, 3, 8, 4, 0)


def test_an_opening_time_the_clocks_skip_is_the_moment_they_jump() -> None:
    r = late("America/Los_Angeles", "sunday", "02:30", "06:00", "04:00")
    sunday = date(2026, 3, 8)
    assert opening_instant(r, sunday) == utc(2026, 3, 8, 10, 0)  # 03:00 PDT
    assert grid(r, sunday) == [("03:00", 0), ("03:30", 30), ("04:00", 60)]


def test_los_angeles_fall_back_counts_the_repeated_hour() -> None:
    # 2026-11-01 02:00 PDT the clocks go back to 01:00 PST.
    r = late("America/Los_Angeles", "saturday", "20:00", "04:00", "03:00")
    saturday = date(2026, 10, 31)
    got = grid(r, saturday)
    assert got[0] == ("20:00", 0)
    assert got[10:] == [
        ("01:00", 300),  # PDT, the first 01:00
        ("01:30", 330),
        ("02:00", 420),  # PST
        ("02:30", 450),
        ("03:00", 480),
    ]
    assert opening_instant(r, saturday) == utc(2026, 11, 1, 3, 0)


def test_slots_are_strictly_increasing_every_day_of_the_year() -> None:
    late_la = late("America/Los_Angeles", "saturday", "20:00", "04:00", "03:00")
    for r in (MARLOWES, GOOGLE, late_la):
        for i in range(365):
            got = slots(r, date(2026, 1, 1) + timedelta(days=i))
            starts = [s.start_sec for s in got]
            assert starts == sorted(set(starts))
            assert [s.minute for s in got] == sorted({s.minute for s in got})


# ---------------------------------------------------------------- looking slots up


def test_slot_at_finds_a_booking_time_by_local_wall_clock_or_by_instant() -> None:
    day = date(2026, 6, 17)
    seven = next(s for s in slots(MARLOWES, day) if s.local.hour == 19 and s.local.minute == 0)
    assert slot_at(MARLOWES, datetime(2026, 6, 17, 19, 0)) == (day, seven)
    assert slot_at(MARLOWES, utc(2026, 6, 17, 18, 0)) == (day, seven)
    assert slot_at(MARLOWES, datetime.fromtimestamp(seven.start_sec, UTC)) == (day, seven)


def test_a_time_that_is_not_a_slot_start_is_none() -> None:
    assert slot_at(MARLOWES, datetime(2026, 6, 17, 19, 5)) is None  # between slots
    assert slot_at(MARLOWES, datetime(2026, 6, 17, 22, 0)) is None  # after last seating
    assert slot_at(MARLOWES, datetime(2026, 6, 17, 19, 0, 30)) is None
    assert slot_at(MARLOWES, datetime(2026, 12, 25, 19, 0)) is None  # closed
    assert slot_at(MARLOWES, datetime(2026, 3, 29, 1, 30)) is None  # the clocks skip it


def test_days_ahead_lists_open_days_from_the_local_date_of_now() -> None:
    now = datetime(2026, 12, 23, 23, 30, tzinfo=LA)  # already 07:30 on the 24th in London
    assert days_ahead(MARLOWES, now, 5) == [
        date(2026, 12, 24),
        date(2026, 12, 27),
        date(2026, 12, 28),
    ]
    assert len(days_ahead(GOOGLE, utc(2026, 6, 1, 12), 30)) == 30


def test_days_ahead_includes_yesterdays_service_while_it_is_still_running() -> None:
    r = late("Europe/London", "friday", "18:00", "01:00", "00:00")
    now = datetime(2026, 6, 20, 0, 15, tzinfo=LONDON)
    assert days_ahead(r, now, 7) == [date(2026, 6, 19), date(2026, 6, 26)]


def test_a_restaurant_is_in_service_only_between_a_services_open_and_close() -> None:
    saturday = date(2026, 12, 5)

    def at(hh: int, mm: int) -> datetime:
        return datetime(2026, 12, 5, hh, mm, tzinfo=LONDON)

    assert in_service(MARLOWES, at(12, 0)) == saturday
    assert in_service(MARLOWES, at(14, 59)) == saturday
    assert in_service(MARLOWES, at(15, 0)) is None  # between lunch and dinner
    assert in_service(MARLOWES, at(17, 30)) == saturday
    assert in_service(MARLOWES, at(23, 0)) is None
    assert in_service(MARLOWES, datetime(2026, 12, 25, 19, 0, tzinfo=LONDON)) is None


@pytest.mark.parametrize("restaurant_", [MARLOWES, GOOGLE], ids=["london", "los-angeles"])
def test_the_quick_slots_of_a_day_without_a_clock_change_match_the_slot_by_slot_ones(
    restaurant_: Restaurant,
) -> None:
    from feed.venue.calendar import _slots, _wall_clock_slots

    day = date(2026, 1, 1)
    for _ in range(365):
        opening = opening_instant(restaurant_, day)
        if opening is not None:
            assert _slots(restaurant_, day) == _wall_clock_slots(restaurant_, day, opening)
        day += timedelta(days=1)


@pytest.mark.parametrize("restaurant_", [MARLOWES, GOOGLE], ids=["london", "los-angeles"])
def test_slot_times_are_the_slots_start_minute_and_service_every_day_of_the_year(
    restaurant_: Restaurant,
) -> None:
    from feed.venue.calendar import _slots, slot_times

    day = date(2026, 1, 1)
    for _ in range(365):  # clock changes, closed days and lunch-and-dinner days among them
        every = _slots(restaurant_, day)
        expected = (
            [s.start_sec for s in every],
            [s.minute for s in every],
            [s.service for s in every],
        )
        restaurant_.memo.pop("slots", None)
        assert slot_times(restaurant_, day) == expected  # worked out
        slots(restaurant_, day)
        assert slot_times(restaurant_, day) == expected  # read off the kept slots
        day += timedelta(days=1)


# ---------------------------------------------------------------- why a time is not a slot


BETWEEN_19 = "slots are every 15 minutes: the nearest are 19:00 and 19:15"


@pytest.mark.parametrize(
    "when,why",
    [
        (datetime(2026, 12, 4, 19, 5), BETWEEN_19),
        # an instant (a partner's): the same, with the zone the times are in
        (datetime(2026, 12, 4, 19, 0, 30, tzinfo=UTC), f"{BETWEEN_19} (Europe/London)"),
        (datetime(2026, 12, 4, 16, 0), "that day's slots run 12:00-14:00 and 17:30-21:30"),
        (datetime(2026, 12, 4, 21, 45), "that day's slots run 12:00-14:00 and 17:30-21:30"),
        (datetime(2026, 12, 4, 11, 59), "that day's slots run 12:00-14:00 and 17:30-21:30"),
        (datetime(2026, 12, 7, 12, 0), "that day's slots run 17:30-21:30"),  # dinner only
        (datetime(2026, 12, 25, 19, 0), "closed on Friday 2026-12-25"),
        (datetime(2026, 12, 25, 19, 0, tzinfo=UTC), "closed on Friday 2026-12-25 (Europe/London)"),
    ],
)  # fmt: skip
def test_why_a_time_is_not_a_slot_names_what_is(when: datetime, why: str) -> None:
    assert slot_at(MARLOWES, when) is None
    assert why_not_a_slot(MARLOWES, when) == why


def test_why_not_a_slot_reads_a_dinner_past_midnight_as_the_day_before_s() -> None:
    r = late("Europe/London", "friday", "18:00", "01:00", "00:30")
    # Saturday 00:10 falls between Friday's last two slots (00:00 and 00:30)...
    assert why_not_a_slot(r, datetime(2026, 6, 20, 0, 10)) == (
        "slots are every 30 minutes: the nearest are 00:00 and 00:30"
    )
    # ...and Saturday's own dinner is closed: its date's only slots are Friday's late ones.
    assert why_not_a_slot(r, datetime(2026, 6, 20, 23, 59)) == "that day's slots run 00:00-00:30"
    assert why_not_a_slot(r, datetime(2026, 6, 21, 19, 0)) == "closed on Sunday 2026-06-21"
    # On Friday, before the dinner: Friday's slots (the ones told that date).
    assert why_not_a_slot(r, datetime(2026, 6, 19, 17, 0)) == "that day's slots run 18:00-23:30"


def test_why_not_a_slot_keeps_a_late_dinner_and_the_next_days_lunch_apart() -> None:
    dinner = {"open": "18:00", "close": "01:00", "last_seating": "00:30"}
    lunch = {"open": "12:00", "close": "15:00", "last_seating": "14:00"}
    r = restaurant("Europe/London", {"friday": [dinner], "saturday": [lunch]}, slot_minutes=30)
    # Saturday's date holds Friday's dinner's last slots and Saturday's lunch: two runs.
    assert why_not_a_slot(r, datetime(2026, 6, 20, 10, 0)) == (
        "that day's slots run 00:00-00:30 and 12:00-14:00"
    )
    assert why_not_a_slot(r, datetime(2026, 6, 20, 12, 40)) == (
        "slots are every 30 minutes: the nearest are 12:30 and 13:00"
    )


def test_a_last_seating_the_clocks_skip_gives_no_slot_past_the_jump() -> None:
    # 2026-03-29 01:00 GMT the clocks go to 02:00 BST: a last seating at 01:30 does not
    # exist that night, so the last slot is 00:30, not 01:30 GMT read as 02:30 BST.
    r = late("Europe/London", "saturday", "22:00", "03:00", "01:30")
    saturday = date(2026, 3, 28)
    assert grid(r, saturday) == [
        ("22:00", 0),
        ("22:30", 30),
        ("23:00", 60),
        ("23:30", 90),
        ("00:00", 120),
        ("00:30", 150),
    ]
    assert slot_at(r, datetime(2026, 3, 29, 2, 30)) is None


# ---------------------------------------------------------------- the instants a day owns


def test_a_day_spans_midnight_to_midnight_when_no_service_runs_past_it() -> None:
    assert day_span(MARLOWES, date(2026, 12, 4)) == (utc(2026, 12, 4), utc(2026, 12, 5))
    # Closed, it still owns its hours (a replace of it takes back what partners had).
    assert day_span(MARLOWES, date(2026, 12, 25)) == (utc(2026, 12, 25), utc(2026, 12, 26))
    # Midnight on the local clock: 23:00 UTC in British Summer Time.
    assert day_span(MARLOWES, date(2026, 6, 17)) == (utc(2026, 6, 16, 23), utc(2026, 6, 17, 23))


def test_a_service_past_midnight_belongs_to_its_day_and_the_next_begins_after_it() -> None:
    r = late("Europe/London", "friday", "18:00", "01:00", "00:30")
    friday, saturday = date(2026, 12, 4), date(2026, 12, 5)
    assert day_span(r, friday) == (utc(2026, 12, 4), utc(2026, 12, 5, 1))
    assert day_span(r, saturday) == (utc(2026, 12, 5, 1), utc(2026, 12, 6))


def test_a_day_ends_just_after_a_last_seating_at_its_close() -> None:
    r = late("Europe/London", "friday", "18:00", "01:00", "01:00")
    end = utc(2026, 12, 5, 1) + timedelta(seconds=1)
    assert slots(r, date(2026, 12, 4))[-1].start_sec == int(utc(2026, 12, 5, 1).timestamp())
    assert day_span(r, date(2026, 12, 4)) == (utc(2026, 12, 4), end)
    assert day_span(r, date(2026, 12, 5))[0] == end


def test_why_not_a_slot_says_the_clocks_skip_a_wall_time_that_does_not_exist() -> None:
    # 2026-03-29 01:00 GMT the clocks go to 02:00 BST: 01:30 is never read that night.
    r = late("Europe/London", "saturday", "22:00", "03:00", "02:30")
    assert slot_at(r, datetime(2026, 3, 29, 1, 30)) is None
    assert why_not_a_slot(r, datetime(2026, 3, 29, 1, 30)) == (
        "01:30 does not exist on 2026-03-29 in Europe/London: clocks go forward;"
        " slots are every 30 minutes: the nearest are 00:30 and 02:00"
    )


def test_why_not_a_slot_says_the_second_of_a_repeated_hour_is_not_the_slot() -> None:
    # 2026-10-25 02:00 BST the clocks go back to 01:00 GMT: 01:30 is read twice.
    r = late("Europe/London", "saturday", "22:00", "03:00", "02:30")
    second_0130 = datetime(2026, 10, 25, 1, 30, tzinfo=LONDON, fold=1)
    assert slot_at(r, second_0130) is None
    assert why_not_a_slot(r, second_0130) == (
        "01:30 comes twice on 2026-10-25 in Europe/London: clocks go back;"
        " the slot is the first 01:30 (BST, 00:30 UTC), not the second (GMT)"
    )
    # A repeated time that is no slot either way is told as any other time.
    assert why_not_a_slot(r, datetime(2026, 10, 25, 1, 40, tzinfo=LONDON, fold=1)) == (
        "that day's slots run 00:00-02:30 (Europe/London)"
    )
