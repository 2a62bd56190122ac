"""The reload's refusals that keep the logs true (feed.service.config_reload), on SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from engine.holds import ReservationStatus
from feed.http.serving import sweep_no_shows
from feed.service.config_reload import Reloader
from feed.service.floors import note_floor
from feed.service.notify import BOOKING, Notifier
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.settings import Partner, Settings
from feed.venue.restaurant import load_restaurant
from store import open_store
from store.log import StoreUnwritable
from tests.integration.full_disk import FullDiskStore

MARLOWES = Path(__file__).resolve().parents[2] / "samples" / "marlowes.toml"
NOW = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)
LUNCH = '{ open = "12:00", close = "15:00", last_seating = "14:00" },\n  { open = "17:30"'


@pytest.fixture
def path(tmp_path: Path) -> Path:
    copy = tmp_path / "marlowes.toml"
    copy.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    return copy


@pytest.fixture
def receiver(tmp_path: Path, path: Path) -> Iterator[Receiver]:
    store = open_store(str(tmp_path / "reload.db"))
    yield Receiver([load_restaurant(path)], store, Settings(), clock=lambda: NOW)
    store.close()


def saturday_lunch_opens_at(path: Path, hhmm: str) -> None:
    text = path.read_text(encoding="utf-8")
    at = text.index("saturday = [")
    path.write_text(text[:at] + text[at:].replace('open = "12:00"', f'open = "{hhmm}"', 1))


def test_moving_the_opening_of_a_day_with_bookings_is_refused(
    receiver: Receiver, path: Path
) -> None:
    booked = receiver.host_book("marlowes-kitchen", 2, "2026-12-05T19:00", "Ada", "")
    assert booked.code is None, booked.body
    saturday_lunch_opens_at(path, "11:00")
    outcome = Reloader([path], receiver).reload()
    assert not outcome.applied
    [problem] = outcome.problems
    assert problem.startswith(
        f"{path}: hours: the opening of 2026-12-05 would move from 12:00 to 11:00"
    )
    assert receiver.books["marlowes-kitchen"].restaurant == load_restaurant(MARLOWES)


def test_moving_the_opening_of_days_without_entries_is_applied(
    receiver: Receiver, path: Path
) -> None:
    saturday_lunch_opens_at(path, "11:00")
    outcome = Reloader([path], receiver).reload()
    assert outcome.applied, outcome.problems
    assert outcome.changed == ("marlowes-kitchen",)
    assert receiver.books["marlowes-kitchen"].restaurant == load_restaurant(path)


def test_a_file_that_now_names_another_restaurant_is_refused(
    receiver: Receiver, path: Path
) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('merchant_id = "marlowes-kitchen"', 'merchant_id = "other"'))
    outcome = Reloader([path], receiver).reload()
    assert outcome.problems == (
        f"{path}: merchant_id: 'other' is not served by this server"
        " (adding a restaurant needs a restart)",
        "marlowes-kitchen: no file given to serve holds this restaurant any more"
        " (removing a restaurant needs a restart)",
    )


def test_an_unchanged_file_changes_nothing(receiver: Receiver, path: Path) -> None:
    book = receiver.books["marlowes-kitchen"]
    before = book.restaurant
    outcome = Reloader([path], receiver).reload()
    assert outcome.applied and outcome.changed == () and outcome.replaces == 0
    assert book.restaurant is before and book.generation == 0


def test_changing_the_time_zone_is_refused_naming_the_zones(receiver: Receiver, path: Path) -> None:
    booked = receiver.host_book("marlowes-kitchen", 2, "2026-12-05T19:00", "Ada", "")
    assert booked.code is None, booked.body
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"Europe/London"', '"Europe/Paris"'), encoding="utf-8")
    outcome = Reloader([path], receiver).reload()
    assert not outcome.applied
    [problem] = outcome.problems
    assert problem.startswith(f"{path}: timezone: would change from Europe/London to Europe/Paris")
    assert receiver.books["marlowes-kitchen"].restaurant == load_restaurant(MARLOWES)


SATURDAY_SPECIAL = (
    '\n[[special_days]]\ndate = "2026-12-05"\nservices = [{ open = "%s", close = "23:00" }]\n'
)


def close_saturday(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    old = 'closed = ["2026-12-25", "2026-12-26"]'
    assert old in text
    path.write_text(text.replace(old, 'closed = ["2026-12-05", "2026-12-25", "2026-12-26"]'))


def test_bookings_on_a_day_closed_since_can_still_be_read_cancelled_and_moved(
    receiver: Receiver, path: Path
) -> None:
    """A reload closes Saturday: its bookings are kept (listed for attention), and the host
    and the partner can still see, cancel and move them; nothing new lands there."""
    mid, saturday = "marlowes-kitchen", date(2026, 12, 5)
    api = PartnerApi(receiver.books, receiver.store, receiver.clock)
    partner = Partner("tablefinder", None, None)
    start = int(datetime(2026, 12, 5, 19, 30, tzinfo=UTC).timestamp())
    slot = {"merchant_id": mid, "service_id": "1000", "start_sec": start, "duration_sec": 2700,
            "resources": {"party_size": 2}}  # fmt: skip
    created = api.create_booking(partner, {"slot": slot, "user_information": {"user_id": "u1"}})
    online = created.body["booking"]["booking_id"]
    ada = receiver.host_book(mid, 2, "2026-12-05T19:00", "Ada", "").body["reservation_id"]
    bo = receiver.host_book(mid, 2, "2026-12-05T20:00", "Bo", "").body["reservation_id"]
    close_saturday(path)
    assert Reloader([path], receiver).reload().applied

    listed = receiver.host_reservations(mid, saturday).body["reservations"]
    assert {(r["reservation_id"], r["start"][11:16], r["status"]) for r in listed} == {
        (online, "19:30", "booked"), (ada, "19:00", "booked"), (bo, "20:00", "booked")
    }  # fmt: skip
    status = api.booking_status(partner, {"booking_id": online}).body
    assert status["booking_status"] == "CONFIRMED"
    sunday = int(datetime(2026, 12, 6, 19, 30, tzinfo=UTC).timestamp())
    moved = api.update_booking(
        partner, {"booking": {"booking_id": online, "slot": {"start_sec": sunday}}}
    )
    assert moved.body["booking"]["slot"]["start_sec"] == sunday, moved.body
    assert receiver.host_operation(mid, "cancel", ada).body["status"] == "cancelled"
    changed = receiver.host_change(mid, bo, None, "2026-12-06T20:00")
    assert changed.code is None and changed.body["start"] == "2026-12-06T20:00:00+00:00"
    statuses = {
        r["reservation_id"]: r["status"]
        for r in receiver.host_reservations(mid, saturday).body["reservations"]
    }
    assert statuses[ada] == "cancelled"
    assert {
        r["reservation_id"]
        for r in receiver.host_reservations(mid, date(2026, 12, 6)).body["reservations"]
    } == {online, bo}
    # Nothing new on the closed day, and no move onto it.
    back = api.update_booking(
        partner, {"booking": {"booking_id": online, "slot": {"start_sec": start}}}
    )
    assert back.body["booking_failure"]["cause"] == "SLOT_UNAVAILABLE"
    book = receiver.books[mid]
    assert book.operate(saturday, NOW, "walk_in", "W1", 2).code == "closed"  # type: ignore[union-attr]


def test_reopening_a_closed_day_at_another_opening_is_refused(
    receiver: Receiver, path: Path
) -> None:
    """Saturday's bookings were taken at its weekday opening (12:00) and the day closed:
    reopening it as a special day opening at 18:00 would move them by six hours."""
    booked = receiver.host_book("marlowes-kitchen", 2, "2026-12-05T19:00", "Ada", "")
    assert booked.code is None, booked.body
    closed_text = path.read_text(encoding="utf-8")
    close_saturday(path)
    assert Reloader([path], receiver).reload().applied
    path.write_text(closed_text + SATURDAY_SPECIAL % "18:00", encoding="utf-8")
    outcome = Reloader([path], receiver).reload()
    assert outcome.problems == (
        f"{path}: hours: 2026-12-05 is closed and its bookings count from 12:00, its"
        " weekday's opening; reopening it with an opening at 18:00 would move them: open it"
        " at 12:00, or keep it closed",
    )
    path.write_text(closed_text + SATURDAY_SPECIAL % "12:00", encoding="utf-8")  # the same opening
    assert Reloader([path], receiver).reload().applied
    [row] = receiver.host_reservations("marlowes-kitchen", date(2026, 12, 5)).body["reservations"]
    assert row["start"] == "2026-12-05T19:00:00+00:00"


def test_closing_a_special_day_whose_bookings_count_from_another_opening_is_refused(
    receiver: Receiver, path: Path
) -> None:
    """Saturday is a special day opening at 18:00, with a booking: closing it would read the
    booking from the weekday's 12:00 opening. Once the booking is moved off, it may close."""
    original = path.read_text(encoding="utf-8")
    path.write_text(original + SATURDAY_SPECIAL % "18:00", encoding="utf-8")
    assert Reloader([path], receiver).reload().applied
    mid = "marlowes-kitchen"
    booked = receiver.host_book(mid, 2, "2026-12-05T19:00", "Ada", "").body["reservation_id"]
    path.write_text(original, encoding="utf-8")
    close_saturday(path)
    outcome = Reloader([path], receiver).reload()
    assert outcome.problems == (
        f"{path}: special_days: closing 2026-12-05 would read its bookings from 12:00, its"
        " weekday's opening, not from 18:00, the special day's opening they count from;"
        " cancel or move them first, or keep the special day",
    )
    [row] = receiver.host_reservations(mid, date(2026, 12, 5)).body["reservations"]
    assert row["start"] == "2026-12-05T19:00:00+00:00"  # still read from 18:00
    moved = receiver.host_change(mid, booked, None, "2026-12-06T19:00")
    assert moved.code is None, moved.body
    assert Reloader([path], receiver).reload().applied


def test_a_reload_whose_replaces_the_store_refuses_is_undone_whole(
    tmp_path: Path, path: Path
) -> None:
    partner = Partner("p", None, None, notify_url="http://127.0.0.1:9/")
    settings = Settings(partners={"p": partner})
    store = FullDiskStore(tmp_path / "full.db")
    try:
        # Kept as a start keeps it: the reload, which changes the name only, keeps no floor.
        note_floor(store, "marlowes-kitchen", load_restaurant(path).floor, NOW.timestamp())
        receiver = Receiver(
            [load_restaurant(path)],
            store,
            settings,
            clock=lambda: NOW,
            notifier=Notifier.of(settings),
        )
        heard: list[list[str]] = []
        reloader = Reloader(
            [path], receiver, on_reload=[lambda rs: heard.append([r.name for r in rs])]
        )
        before = receiver.books["marlowes-kitchen"].restaurant
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace('name = "Marlowe\'s Kitchen"', 'name = "Marlowe\'s"'))
        store.room = 0  # the disk is full: the replaces cannot be queued
        with pytest.raises(StoreUnwritable):
            reloader.reload()
        assert receiver.books["marlowes-kitchen"].restaurant == before
        assert heard[-1] == ["Marlowe's Kitchen"]  # the export schedule has the old one back
        store.room = None
        assert store.pending(now=NOW.timestamp() + 3600) == []
        outcome = reloader.reload()  # space freed: the same reload goes through
        assert outcome.applied and outcome.replaces > 0
        assert receiver.books["marlowes-kitchen"].restaurant.name == "Marlowe's"
    finally:
        store.close()


def closed_saturday_receiver(db: str, path: Path, clock: list[datetime]) -> Receiver:
    """Marlowe's on `db`, told to partner "tablefinder" (a notify URL), at `clock[0]`."""
    partner = Partner("tablefinder", None, None, notify_url="http://127.0.0.1:9/n")
    settings = Settings(partners={"tablefinder": partner})
    notifier = Notifier({"tablefinder": partner}, coalesce_seconds=0)
    return Receiver([load_restaurant(path)], open_store(db), settings, lambda: clock[0], notifier)


def told(receiver: Receiver) -> list[tuple[str, str]]:
    """The booking notifications queued: (status, booking id); each marked delivered."""
    out = []
    for item in receiver.store.pending(10**12):
        if item.kind == BOOKING:
            out.append((item.payload["status"], item.payload["name"].rsplit("/", 1)[-1]))
        receiver.store.delivered(item.id, 0)
    return out


def test_a_booking_on_a_day_closed_since_is_cancelled_by_the_clock_once_its_hold_ends(
    any_db: str, path: Path
) -> None:
    """Saturday is closed by a reload with a partner's booking at 19:30 and the host's at
    20:00 and 21:00 on it. Nobody failed to come: the restaurant was closed. Once each hold
    has ended the clock cancels it as the restaurant's (never a no-show): the host's list
    and GetBookingStatus say cancelled, the partner is told CANCELED."""
    mid, saturday = "marlowes-kitchen", date(2026, 12, 5)
    clock = [NOW]
    receiver = closed_saturday_receiver(any_db, path, clock)
    try:
        api = PartnerApi(receiver.books, receiver.store, receiver.clock)
        partner = Partner("tablefinder", None, None)
        start = int(datetime(2026, 12, 5, 19, 30, tzinfo=UTC).timestamp())
        slot = {"merchant_id": mid, "service_id": "1000", "start_sec": start,
                "duration_sec": 2700, "resources": {"party_size": 2}}  # fmt: skip
        body = {"slot": slot, "user_information": {"user_id": "u1"}}
        online = api.create_booking(partner, body).body["booking"]["booking_id"]
        ada = receiver.host_book(mid, 2, "2026-12-05T20:00", "Ada", "").body["reservation_id"]
        bo = receiver.host_book(mid, 2, "2026-12-05T21:00", "Bo", "").body["reservation_id"]
        close_saturday(path)
        assert Reloader([path], receiver).reload().applied
        told(receiver)

        def statuses() -> dict[str, str]:
            rows = receiver.host_reservations(mid, saturday).body["reservations"]
            return {r["reservation_id"]: r["status"] for r in rows}

        def status() -> str:
            return str(api.booking_status(partner, {"booking_id": online}).body["booking_status"])

        clock[0] = datetime(2026, 12, 5, 19, 44, tzinfo=UTC)  # the hold still runs
        assert sweep_no_shows(receiver) == 0
        assert status() == "CONFIRMED"
        clock[0] = datetime(2026, 12, 5, 19, 45, tzinfo=UTC)  # it has ended
        assert status() == "CANCELED"  # as the host's list says, before the sweep writes it
        assert statuses() == {online: "cancelled", ada: "booked", bo: "booked"}
        assert sweep_no_shows(receiver) == 1
        assert sweep_no_shows(receiver) == 0  # written once
        assert status() == "CANCELED"
        assert statuses() == {online: "cancelled", ada: "booked", bo: "booked"}
        last = receiver.store.entries(mid, saturday)[-1]
        assert last.operation[0] == "cancel" and last.operation[1] == 7 * 60 + 44  # 19:44
        assert last.meta == {
            "source": "clock", "reason": "closed: Marlowe's Kitchen is closed on 2026-12-05"
        }  # fmt: skip
        assert told(receiver) == [("CANCELED", online)]

        # The host cancels Bo at 20:30, Ada's hold over and not swept yet: Ada is cancelled
        # by the clock first, not written a no-show by the host's cancel.
        clock[0] = datetime(2026, 12, 5, 20, 30, tzinfo=UTC)
        assert receiver.host_operation(mid, "cancel", bo).body["status"] == "cancelled"
        assert statuses() == {online: "cancelled", ada: "cancelled", bo: "cancelled"}
        book = receiver.books[mid]
        assert {r.id: r.status for r in book.stand(saturday).book.by_id.values()} == dict.fromkeys(
            (online, ada, bo), ReservationStatus.CANCELLED
        )
        assert [e.meta.get("source") for e in receiver.store.entries(mid, saturday)[-2:]] == [
            "clock", "host"
        ]  # fmt: skip
    finally:
        receiver.store.close()


def test_catching_up_cancels_a_booking_on_a_day_closed_since_never_a_no_show(
    any_db: str, path: Path
) -> None:
    """No server ran from Saturday, closed by a reload with a partner's booking at 19:30,
    until Monday: the catch-up cancels it (as of its hold's last minute) and tells the
    partner CANCELED; `left_behind` passes the day by (it has no close to judge it at)."""
    mid, saturday = "marlowes-kitchen", date(2026, 12, 5)
    clock = [NOW]
    receiver = closed_saturday_receiver(any_db, path, clock)
    try:
        api = PartnerApi(receiver.books, receiver.store, receiver.clock)
        partner = Partner("tablefinder", None, None)
        start = int(datetime(2026, 12, 5, 19, 30, tzinfo=UTC).timestamp())
        slot = {"merchant_id": mid, "service_id": "1000", "start_sec": start,
                "duration_sec": 2700, "resources": {"party_size": 2}}  # fmt: skip
        body = {"slot": slot, "user_information": {"user_id": "u1"}}
        online = api.create_booking(partner, body).body["booking"]["booking_id"]
        close_saturday(path)
        assert Reloader([path], receiver).reload().applied
        told(receiver)

        clock[0] = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)  # Monday morning
        assert api.booking_status(partner, {"booking_id": online}).body["booking_status"] == (
            "CANCELED"
        )
        assert sweep_no_shows(receiver) == 0  # Saturday is nobody's today or yesterday
        assert sweep_no_shows(receiver, {}) == 1
        assert sweep_no_shows(receiver, {}) == 0
        [row] = receiver.host_reservations(mid, saturday).body["reservations"]
        assert row["status"] == "cancelled"
        last = receiver.store.entries(mid, saturday)[-1]
        assert last.operation == ["cancel", 7 * 60 + 44, online]
        assert last.meta["source"] == "clock"
        assert told(receiver) == [("CANCELED", online)]
    finally:
        receiver.store.close()


def test_a_misfit_the_host_has_settled_drops_off_the_attention_list(
    receiver: Receiver, path: Path
) -> None:
    """Friday's last seating moves from 21:30 to 21:00: four bookings at 21:15 no longer
    fit. The host cancels Ada's, moves Bo's to 20:00 and seats Cy early; only Dee's is
    still to be sorted out, on the list and on the day's rows. Bo's row (the same booking
    id, now at 20:00) fits: it says nothing of 21:15."""
    mid, friday = "marlowes-kitchen", date(2026, 12, 4)
    ids = {}
    for name in ("Ada", "Bo", "Cy", "Dee"):
        booked = receiver.host_book(mid, 2, "2026-12-04T21:15", name, "")
        assert booked.code is None, booked.body
        ids[name] = booked.body["reservation_id"]
    text = path.read_text(encoding="utf-8")
    at = text.index("friday = [")
    path.write_text(
        text[:at] + text[at:].replace('last_seating = "21:30"', 'last_seating = "21:00"', 1)
    )
    outcome = Reloader([path], receiver).reload()
    assert outcome.applied, outcome.problems
    assert {row["reservation_id"] for row in outcome.attention} == set(ids.values())

    assert receiver.host_operation(mid, "cancel", ids["Ada"]).code is None
    assert receiver.host_change(mid, ids["Bo"], None, "2026-12-04T20:00").code is None
    seated = receiver.host_hand(mid, "seat", ids["Cy"], "T4")
    assert seated.code is None, seated.body

    outside = "no longer fits: 21:15 is now outside the hours"
    rows = receiver.host_reservations(mid, friday).body["reservations"]
    assert {r["reservation_id"]: (r["status"], r["attention"]) for r in rows} == {
        ids["Ada"]: ("cancelled", None),
        ids["Bo"]: ("booked", None),
        ids["Cy"]: ("seated", None),
        ids["Dee"]: ("booked", outside),
    }
    assert [m.booking_id for m in receiver.attention_now(mid)] == [ids["Dee"]]


def replaced_days(receiver: Receiver) -> list[date]:
    """The days an availability replace is queued for (each marked delivered)."""
    out = []
    for item in receiver.store.pending(10**12):
        if item.kind != BOOKING:
            out.append(date.fromisoformat(item.payload["day"]))
        receiver.store.delivered(item.id, 0)
    return sorted(out)


def with_horizon(path: Path, days: int) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("horizon_days = 30", f"horizon_days = {days}"))


@pytest.mark.parametrize(
    ("horizon", "last"),
    [
        (30, date(2027, 1, 2)),  # unchanged: today and the 29 days after it
        (40, date(2027, 1, 12)),  # longer: the new days are published now
        (14, date(2027, 1, 2)),  # shorter: the days dropped were published, told nothing open
    ],
)
def test_a_reload_replaces_the_days_published_and_none_past_them(
    tmp_path: Path, path: Path, horizon: int, last: date
) -> None:
    """A reload (here a new name, and maybe a new horizon) sends partners a replace of the
    days the feed publishes: from today to horizon_days - 1 after it (calendar.
    within_horizon), under the old horizon or the new. None past both: such a day's
    replace would say every slot of it is full (nothing is bookable there yet), and the
    partner would show it so once it comes within the horizon, until the next feed."""
    partner = Partner("tablefinder", None, None, notify_url="http://127.0.0.1:9/n")
    settings = Settings(partners={"tablefinder": partner})
    notifier = Notifier({"tablefinder": partner}, coalesce_seconds=0)
    store = open_store(str(tmp_path / "replaces.db"))
    try:
        receiver = Receiver([load_restaurant(path)], store, settings, lambda: NOW, notifier)
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace('name = "Marlowe\'s Kitchen"', 'name = "Marlowe\'s"'))
        with_horizon(path, horizon)
        outcome = Reloader([path], receiver).reload()
        assert outcome.applied, outcome.problems
        days = replaced_days(receiver)
        assert days[0] == NOW.date() and days[-1] == last, (days[0], days[-1])
        assert outcome.replaces == len(days) == (last - NOW.date()).days + 1
    finally:
        store.close()
