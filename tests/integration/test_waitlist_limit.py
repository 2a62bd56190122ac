"""The walk-in waitlist holds at most `max_waitlist` parties (restaurant file; default 4 per
table, at least 10). A party that would wait behind that many is turned away on every path
that joins it, with nothing written: the host's API (409 `waitlist full`, saying how many
wait), its CLI (exit 1) and a partner's CreateWaitlistEntry (`WAITLIST_FULL`). A party a
table is free for now is seated as ever, and a retry of an accepted walk-in or entry is
answered as before. Marlowe's Kitchen on a real SQLite file at Friday 18:00 (dinner)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner

from feed.cli import main
from feed.http.statuses import status_of
from feed.service.days import DayBook
from feed.service.partner_api import PartnerApi
from feed.service.receiver import Receiver
from feed.settings import Partner, Settings
from feed.venue.restaurant import Restaurant, load_restaurant
from store.sqlite import SQLiteStore
from tests.integration.postgres import BACKENDS, database
from tests.integration.server_process import HOST_TOKENS, TIMEOUT, start_server

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "marlowes.toml"
MARLOWES = "marlowes-kitchen"
PARTNER = Partner("tablefinder", None, None)
FRIDAY = date(2026, 12, 4)
NOW = datetime(2026, 12, 4, 18, 0, tzinfo=UTC)
# One party at every table: nobody in line gets a table until one is freed.
FULL_FLOOR = [("A", 4), ("B", 2), ("C", 6), ("D", 2), ("E", 4), ("F", 4)]


def restaurant_file(tmp_path: Path, **limits: int) -> Path:
    """Marlowe's with `limits` (max_waitlist, max_partner_waitlist) in its file."""
    text = SAMPLE.read_text(encoding="utf-8")
    lines = "".join(f"{key} = {value}\n" for key, value in limits.items())
    text = text.replace("max_party_size = 10\n", f"max_party_size = 10\n{lines}")
    path = tmp_path / "marlowes.toml"
    path.write_text(text, encoding="utf-8")
    return path


@dataclass
class World:
    receiver: Receiver
    api: PartnerApi
    book: DayBook
    store: SQLiteStore

    def walk_in(self, size: int, party_id: str, key: str | None = None) -> Any:
        meta = {"source": "host", "party_size": size}
        asked = {"size": size, "party_id": party_id}
        return self.receiver.host_operation(
            MARLOWES, "walk_in", party_id, size, meta=meta, key=(key, asked) if key else None
        )

    def join(self, user: str, token: str, size: int = 4) -> Any:
        return self.api.create_waitlist_entry(
            PARTNER,
            {
                "merchant_id": MARLOWES,
                "party_size": size,
                "user_information": {"user_id": user},
                "idempotency_token": token,
            },
        )

    def queue(self) -> list[str]:
        return [p.id for p in self.book.stand(FRIDAY).queue()]

    def written(self) -> tuple[int, list[str]]:
        """The day's log length and its queue: what a refusal must leave as it was."""
        return self.book.length(FRIDAY), self.queue()


def world_on(tmp_path: Path, max_waitlist: int | None) -> Iterator[World]:
    restaurant: Restaurant = load_restaurant(
        restaurant_file(tmp_path)
        if max_waitlist is None
        else restaurant_file(tmp_path, max_waitlist=max_waitlist)
    )
    with SQLiteStore(tmp_path / "hoststand.db") as store:
        receiver = Receiver([restaurant], store, Settings(), lambda: NOW)
        book = receiver.books[MARLOWES]
        api = PartnerApi({MARLOWES: book}, store, lambda: NOW)
        world = World(receiver, api, book, store)
        for pid, size in FULL_FLOOR:
            assert world.walk_in(size, pid).body["result"].startswith("seated")
        yield world


@pytest.fixture
def three(tmp_path: Path) -> Iterator[World]:
    """`max_waitlist = 3`, every table taken."""
    yield from world_on(tmp_path, 3)


def fill(world: World, count: int) -> None:
    for i in range(count):
        assert world.walk_in(4, f"Q{i}").body["result"] == f"queued {i + 1}"


def test_a_host_walk_in_that_would_wait_behind_a_full_waitlist_is_refused_409_saying_how_many_wait(
    three: World,
) -> None:
    fill(three, 3)
    before = three.written()
    reply = three.walk_in(4, "late")
    assert status_of(reply) == 409
    assert reply.body["error"]["code"] == "waitlist full"
    message = reply.body["error"]["message"]
    assert "the waitlist is full: 3 parties waiting" in message and "3 at most" in message
    assert three.written() == before
    # Nothing was kept of it: the id is free, and once a party leaves it joins.
    assert three.receiver.host_operation(MARLOWES, "leave", "Q0").code is None
    assert three.walk_in(4, "late").body["result"] == "queued 3"


def test_a_walk_in_a_free_table_fits_is_seated_when_the_waitlist_is_full(three: World) -> None:
    fill(three, 3)  # parties of 4: the 2-top freed below fits none of them
    assert three.receiver.host_operation(MARLOWES, "free", "T2").body["result"] == []
    assert three.walk_in(2, "pair").body["result"] == "seated T2"
    assert three.queue() == ["Q0", "Q1", "Q2"]


def test_a_host_walk_in_sent_again_with_its_idempotency_key_is_answered_as_before_when_full(
    three: World,
) -> None:
    fill(three, 2)
    first = three.walk_in(4, "keyed", key="k-1")
    assert first.body["result"] == "queued 3"
    before = three.written()
    again = three.walk_in(4, "keyed", key="k-1")
    assert (status_of(again), again.body) == (200, first.body)
    assert three.written() == before


def test_a_partner_entry_that_would_join_a_full_waitlist_fails_with_waitlist_full(
    three: World,
) -> None:
    fill(three, 3)
    before = three.written()
    reply = three.join("guest", "t-full")
    assert status_of(reply) == 200  # a business failure, as the format has it
    failure = reply.body["waitlist_business_logic_failure"]
    assert failure["cause"] == "WAITLIST_FULL"
    assert "3 parties waiting" in failure["description"]
    assert set(reply.body) == {"waitlist_business_logic_failure"}
    assert three.written() == before
    assert three.store.recall("v3wait:tablefinder", "t-full") is None  # a retry tries again


def test_a_partner_entry_retried_with_its_token_gets_the_same_entry_when_the_list_is_full(
    three: World,
) -> None:
    fill(three, 2)
    made = three.join("guest", "t-1").body
    assert set(made) == {"waitlist_entry_id"}
    before = three.written()
    assert three.join("guest", "t-1").body == made
    assert three.written() == before


def test_wait_estimates_leave_out_the_sizes_that_would_wait_while_the_waitlist_is_full(
    three: World,
) -> None:
    asked = {"merchant_id": MARLOWES, "party_size": [2, 4]}
    assert three.api.wait_estimates(PARTNER, asked).body["waitlist_status"] == "OPEN"
    fill(three, 3)
    assert three.api.wait_estimates(PARTNER, asked).body == {"waitlist_status": "CLOSED_OTHER"}
    three.receiver.host_operation(MARLOWES, "free", "T2")  # a 2 walks right in, a 4 waits
    assert three.api.wait_estimates(PARTNER, asked).body == {"waitlist_status": "CLOSED_NO_WAIT"}


def test_the_waitlist_holds_4_parties_a_table_when_the_file_leaves_max_waitlist_out(
    tmp_path: Path,
) -> None:
    for world in world_on(tmp_path, None):
        assert world.book.restaurant.waitlist_limit == 24  # Marlowe's 6 tables
        fill(world, 24)
        reply = world.walk_in(4, "late")
        assert reply.code == "waitlist full"
        assert "24 parties waiting, 24 at most" in reply.body["error"]["message"]


def test_the_hosts_cli_refuses_a_walk_in_to_a_full_waitlist_with_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOSTSTAND_DB", raising=False)
    monkeypatch.delenv("HOSTSTAND_SETTINGS", raising=False)
    config = str(restaurant_file(tmp_path, max_waitlist=3))
    db = str(tmp_path / "cli.db")

    def host(*args: str) -> Any:
        return CliRunner().invoke(
            main, ["--now", NOW.isoformat(), "host", *args, "--config", config, "--db", db]
        )

    for pid, size in [*FULL_FLOOR, ("Q0", 4), ("Q1", 4), ("Q2", 4)]:
        assert host("walk-in", str(size), "--id", pid).exit_code == 0
    board = host("board", "--json").output
    refused = host("walk-in", "4", "--id", "late")
    assert refused.exit_code == 1
    assert "the waitlist is full: 3 parties waiting" in refused.output
    assert host("board", "--json").output == board


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_real_server_answers_a_full_waitlist_409_to_the_host_and_waitlist_full_to_a_partner(
    tmp_path: Path, backend: str
) -> None:
    with database(backend, tmp_path, "wlimit") as db:
        server = start_server(
            db, workdir=tmp_path, configs=[restaurant_file(tmp_path, max_waitlist=1)]
        )
        try:
            full_waitlist_over_http(server.base)
        finally:
            server.stop()


def full_waitlist_over_http(base: str) -> None:
    """Every table taken and one party waiting (max_waitlist = 1): one more is refused."""
    walk_ins = f"{base}/api/v1/restaurants/{MARLOWES}/walk-ins"
    auth = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}
    for pid, size in [*FULL_FLOOR, ("Q0", 4)]:
        made = requests.post(
            walk_ins, json={"size": size, "party_id": pid}, headers=auth, timeout=TIMEOUT
        )
        assert made.status_code == 200, made.text
    refused = requests.post(
        walk_ins, json={"size": 4, "party_id": "late"}, headers=auth, timeout=TIMEOUT
    )
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "waitlist full"
    assert "1 party waiting, 1 at most" in refused.json()["error"]["message"]
    entry = requests.post(
        f"{base}/v3/CreateWaitlistEntry",
        json={
            "merchant_id": MARLOWES,
            "party_size": 4,
            "user_information": {"user_id": "u"},
            "idempotency_token": "t",
        },
        auth=("tablefinder", "sample-basic-password"),
        timeout=TIMEOUT,
    )
    assert entry.status_code == 200
    assert entry.json()["waitlist_business_logic_failure"]["cause"] == "WAITLIST_FULL"
    board = requests.get(
        f"{base}/api/v1/restaurants/{MARLOWES}/board", headers=auth, timeout=TIMEOUT
    )
    assert board.json()["result"]["waiting"] == ["Q0"]
