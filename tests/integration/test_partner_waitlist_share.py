"""Partners' entries, all partners together, take at most `max_partner_waitlist` places on
the walk-in waitlist (restaurant file; default half of `max_waitlist`, rounded up), so one
runaway partner (a retry loop with new tokens) cannot fill the list the host needs for the
guests at the door. A partner's entry past its share fails `WAITLIST_FULL` with nothing
written, BatchGetWaitEstimates leaves out the sizes that would wait as that entry would be
refused, and the host's walk-ins are refused only when the list is full counting no
partners' entries beyond their share. Marlowe's Kitchen at Friday 18:00 (dinner), every
table taken: in-process on a real SQLite file, and a real server on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
import requests

from feed.http.statuses import status_of
from feed.service.days import DayBook
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.settings import Partner, Settings
from feed.venue.restaurant import load_restaurant
from store.sqlite import SQLiteStore
from tests.integration.postgres import BACKENDS, database
from tests.integration.server_process import HOST_TOKENS, TIMEOUT, start_server
from tests.integration.test_waitlist_limit import restaurant_file

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "marlowes.toml"
MARLOWES = "marlowes-kitchen"
RUNAWAY = Partner("tablefinder", None, None)
OTHER = Partner("dinerly", None, None)
FRIDAY = date(2026, 12, 4)
NOW = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)
# One party at every table: nobody in line gets a table until one is freed.
FULL_FLOOR = [("A", 4), ("B", 2), ("C", 6), ("D", 2), ("E", 4), ("F", 4)]


@dataclass
class World:
    receiver: Receiver
    api: PartnerApi
    book: DayBook
    store: SQLiteStore

    def walk_in(self, size: int, party_id: str) -> Any:
        meta = {"source": "host", "party_size": size}
        return self.receiver.host_operation(MARLOWES, "walk_in", party_id, size, meta=meta)

    def join(self, user: str, partner: Partner = RUNAWAY, size: int = 4) -> Any:
        return self.api.create_waitlist_entry(
            partner,
            {
                "merchant_id": MARLOWES,
                "party_size": size,
                "user_information": {"user_id": user},
                "idempotency_token": f"t-{partner.id}-{user}",
            },
        )

    def estimates(self, partner: Partner = RUNAWAY) -> Any:
        asked = {"merchant_id": MARLOWES, "party_size": [2, 4]}
        return self.api.wait_estimates(partner, asked).body

    def queue(self) -> list[str]:
        return [p.id for p in self.book.stand(FRIDAY).queue()]

    def written(self) -> tuple[int, list[str]]:
        """The day's log length and its queue: what a refusal must leave as it was."""
        return self.book.length(FRIDAY), self.queue()


def world_on(tmp_path: Path, seat: bool = True, **limits: int) -> Iterator[World]:
    restaurant = load_restaurant(restaurant_file(tmp_path, **limits))
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        receiver = Receiver([restaurant], store, Settings(), lambda: NOW)
        book = receiver.books[MARLOWES]
        api = PartnerApi({MARLOWES: book}, store, lambda: NOW)
        world = World(receiver, api, book, store)
        for pid, size in FULL_FLOOR if seat else ():
            assert world.walk_in(size, pid).body["result"].startswith("seated")
        yield world


@pytest.fixture
def four(tmp_path: Path) -> Iterator[World]:
    """`max_waitlist = 4` (partners' share left out: 2), every table taken."""
    yield from world_on(tmp_path, max_waitlist=4)


def entry_made(reply: Any) -> bool:
    return status_of(reply) == 200 and set(reply.body) == {"waitlist_entry_id"}


def cause(reply: Any) -> str:
    return str(reply.body["waitlist_business_logic_failure"]["cause"])


def test_a_runaway_partner_fills_half_the_waitlist_and_the_host_still_adds_the_guests_at_the_door(
    four: World,
) -> None:
    assert four.book.restaurant.partner_waitlist_limit == 2
    for user in ("u0", "u1"):
        assert entry_made(four.join(user))
    before = four.written()
    refused = four.join("u2")  # a new token, as a retry loop makes
    assert status_of(refused) == 200 and set(refused.body) == {"waitlist_business_logic_failure"}
    assert cause(refused) == "WAITLIST_FULL"
    described = refused.body["waitlist_business_logic_failure"]["description"]
    assert "partners' entries fill their share of the waitlist: 2 waiting, 2 at most" in described
    assert four.written() == before
    assert four.store.recall("v3wait:tablefinder", "t-tablefinder-u2") is None
    # The host's two places are there for the parties at the door; then the list is full.
    assert four.walk_in(4, "door1").body["result"] == "queued 3"
    assert four.walk_in(4, "door2").body["result"] == "queued 4"
    assert four.walk_in(4, "door3").code == "waitlist full"


def test_partners_share_is_of_all_partners_entries_together(four: World) -> None:
    assert entry_made(four.join("u0", RUNAWAY))
    assert entry_made(four.join("u1", OTHER))
    before = four.written()
    assert cause(four.join("u2", OTHER)) == "WAITLIST_FULL"
    assert cause(four.join("u3", RUNAWAY)) == "WAITLIST_FULL"
    assert four.written() == before


def test_a_partner_entry_joins_again_once_a_partners_party_leaves_its_share(four: World) -> None:
    made = [four.join(user).body["waitlist_entry_id"] for user in ("u0", "u1")]
    assert cause(four.join("u2")) == "WAITLIST_FULL"
    assert four.receiver.host_operation(MARLOWES, "leave", made[0]).code is None
    assert entry_made(four.join("u2"))


def test_the_hosts_walk_ins_leave_partners_their_share_until_the_list_is_full(
    four: World,
) -> None:
    """The share is a most, not a reserve: host walk-ins may fill the list."""
    assert four.walk_in(4, "door1").body["result"] == "queued 1"
    assert four.walk_in(4, "door2").body["result"] == "queued 2"
    assert entry_made(four.join("u0"))
    assert four.walk_in(4, "door3").body["result"] == "queued 4"
    assert cause(four.join("u1")) == "WAITLIST_FULL"  # the list itself is full


def test_wait_estimates_leave_out_the_sizes_that_would_wait_once_partners_share_is_full(
    four: World,
) -> None:
    assert four.walk_in(4, "door1").body["result"] == "queued 1"
    assert four.join("u0").body.keys() == {"waitlist_entry_id"}
    assert four.estimates()["waitlist_status"] == "OPEN"  # one partner place left
    assert entry_made(four.join("u1"))
    assert four.estimates() == {"waitlist_status": "CLOSED_OTHER"}
    assert four.estimates(OTHER) == {"waitlist_status": "CLOSED_OTHER"}
    four.receiver.host_operation(MARLOWES, "free", "T2")  # a 2 walks right in, a 4 waits
    assert four.estimates() == {"waitlist_status": "CLOSED_NO_WAIT"}
    assert four.join("u2", size=2).body["waitlist_business_logic_failure"]["cause"] == "NO_WAIT"


def test_max_partner_waitlist_0_keeps_partners_off_the_waitlist(tmp_path: Path) -> None:
    for world in world_on(tmp_path, max_partner_waitlist=0):
        before = world.written()
        assert cause(world.join("u0")) == "WAITLIST_FULL"
        assert world.estimates() == {"waitlist_status": "CLOSED_OTHER"}
        assert world.written() == before
        assert world.walk_in(4, "door1").body["result"] == "queued 1"


def test_the_host_is_never_refused_for_partners_entries_beyond_a_share_lowered_since(
    tmp_path: Path,
) -> None:
    """Partners filled 3 of 4 places; the file then gives them 1: the host's walk-ins count
    1 of theirs, so 3 of the host's still join (6 wait), and partners' none."""
    for world in world_on(tmp_path, max_waitlist=4, max_partner_waitlist=4):
        for user in ("u0", "u1", "u2"):
            assert entry_made(world.join(user))
    for world in world_on(tmp_path, seat=False, max_waitlist=4, max_partner_waitlist=1):
        assert len(world.queue()) == 3
        assert cause(world.join("u3")) == "WAITLIST_FULL"
        for i in range(3):
            assert world.walk_in(4, f"door{i}").body["result"] == f"queued {4 + i}"
        refused = world.walk_in(4, "door3")
        assert refused.code == "waitlist full"
        assert "6 parties waiting, 4 at most" in refused.body["error"]["message"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_real_server_keeps_the_hosts_places_when_a_partners_entries_fill_their_share(
    tmp_path: Path, backend: str
) -> None:
    with database(backend, tmp_path, "wshare") as db:
        config = restaurant_file(tmp_path, max_waitlist=3, max_partner_waitlist=1)
        server = start_server(db, workdir=tmp_path, configs=[config])
        try:
            share_over_http(server.base)
        finally:
            server.stop()


def share_over_http(base: str) -> None:
    walk_ins = f"{base}/api/v1/restaurants/{MARLOWES}/walk-ins"
    host = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
    partner = ("tablefinder", "sample-basic-password")

    def walk_in(size: int, pid: str) -> requests.Response:
        body = {"size": size, "party_id": pid}
        return requests.post(walk_ins, json=body, headers=host, timeout=TIMEOUT)

    def join(user: str) -> dict[str, Any]:
        body = {
            "merchant_id": MARLOWES,
            "party_size": 4,
            "user_information": {"user_id": user},
            "idempotency_token": f"t-{user}",
        }
        made = requests.post(
            f"{base}/v3/CreateWaitlistEntry", json=body, auth=partner, timeout=TIMEOUT
        )
        assert made.status_code == 200, made.text
        return dict(made.json())

    def estimates() -> dict[str, Any]:
        body = {"merchant_id": MARLOWES, "party_size": [4]}
        asked = requests.post(
            f"{base}/v3/BatchGetWaitEstimates", json=body, auth=partner, timeout=TIMEOUT
        )
        assert asked.status_code == 200, asked.text
        return dict(asked.json())

    for pid, size in FULL_FLOOR:
        assert walk_in(size, pid).status_code == 200
    assert estimates()["waitlist_status"] == "OPEN"
    first = join("u0")
    assert set(first) == {"waitlist_entry_id"}
    assert estimates() == {"waitlist_status": "CLOSED_OTHER"}
    assert join("u1")["waitlist_business_logic_failure"]["cause"] == "WAITLIST_FULL"
    for pid in ("door1", "door2"):
        made = walk_in(4, pid)
        assert made.status_code == 200, made.text
    refused = walk_in(4, "door3")
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "waitlist full"
    board = requests.get(
        f"{base}/api/v1/restaurants/{MARLOWES}/board", headers=host, timeout=TIMEOUT
    )
    assert board.json()["result"]["waiting"] == [first["waitlist_entry_id"], "door1", "door2"]
