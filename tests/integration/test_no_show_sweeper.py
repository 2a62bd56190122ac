"""The clock alone turns a booking into a no-show: the sweeper logs it when nobody else does."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

from engine.holds import ReservationStatus
from feed.http.serving import sweep_no_shows
from feed.service.receiver import Receiver
from feed.settings import Settings
from feed.venue import calendar
from feed.venue.restaurant import load_restaurant
from store.sqlite import SQLiteStore

REPO = Path(__file__).resolve().parents[2]
FRIDAY = date(2026, 12, 4)  # Marlowe's, London: GMT, dinner from 17:30


def test_the_sweeper_records_a_no_show_once_the_hold_has_passed(tmp_path: Path) -> None:
    marlowes = load_restaurant(REPO / "samples" / "marlowes.toml")
    clock = [datetime(2026, 12, 4, 12, 0, tzinfo=UTC)]
    store = SQLiteStore(tmp_path / "hoststand.db")
    try:
        receiver = Receiver([marlowes], store, Settings(), lambda: clock[0])
        book = receiver.books[marlowes.merchant_id]
        found = calendar.slot_at(marlowes, datetime(2026, 12, 4, 19, 0))
        assert found is not None
        applied = book.book(FRIDAY, found[1], 4, clock[0])
        booking_id = applied.operation[2]  # type: ignore[union-attr]

        clock[0] = datetime(2026, 12, 4, 19, 14, tzinfo=UTC)  # hold still running
        assert sweep_no_shows(receiver) == 0
        clock[0] = datetime(2026, 12, 4, 19, 15, tzinfo=UTC)  # at + 15: a no-show
        assert sweep_no_shows(receiver) == 1
        assert sweep_no_shows(receiver) == 0  # recorded: nothing left to sweep

        replayed = book.stand(FRIDAY).book.get(booking_id)
        assert replayed is not None and replayed.status is ReservationStatus.NO_SHOW
        last = store.entries(marlowes.merchant_id, FRIDAY)[-1]
        assert last.operation[0] == "board" and last.meta == {"source": "clock"}
    finally:
        store.close()
