"""A server still on the old file (another server on the store reloaded a file without T5)
reads its days on the floor in force, as it writes them: its board, the tablet's floor and
a partner's waitlist entry never show a party seated at T5, which every replay on the floor
in force, its own after a reload or restart included, has waiting."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import requests

from feed.http.serving import SWEEP_SECONDS
from feed.venue.restaurant import load_restaurant
from store import open_store
from store.turns import Turns, served_by
from tests.integration.floor_copies import MARLOWES, MID, T5, T5_T6, reload_on
from tests.integration.server_process import (
    CONFIGS,
    HOST_TOKENS,
    NOW,
    TIMEOUT,
    ServerProcess,
    start_server,
)

HOST = {"Authorization": f"Bearer {HOST_TOKENS[MID]}"}
BASIC = ("tablefinder", "sample-basic-password")


def no_sweep_for(db: str, configs: Sequence[Path], seconds: float) -> None:
    """No server on `db` serving `configs`' restaurants runs its clock's sweep for the next
    `seconds`: their turns are taken by none of them. A server whose pinned clock is 18:31
    sweeping before the reload below seats W at T5, as it should (W has waited 30 minutes),
    and the reload is then rightly refused; the sweep is not what the test is about, and
    whether a server's sweep came first hung on the machine's load."""
    ids = [load_restaurant(path).merchant_id for path in configs]
    store = open_store(db)
    try:
        turns = Turns(store, served_by("sweep", ids), SWEEP_SECONDS)
        now = time.time()
        for k in range(int(seconds // SWEEP_SECONDS) + 2):
            turns.mine(now + k * SWEEP_SECONDS)
    finally:
        store.close()


def host(server: ServerProcess, method: str, path: str, **body: Any) -> dict[str, Any]:
    reply = requests.request(
        method, f"{server.base}/api/v1/restaurants/{MID}{path}", headers=HOST,
        json=body or None, timeout=TIMEOUT,
    )  # fmt: skip
    assert reply.status_code == 200, reply.text
    answer: dict[str, Any] = reply.json()
    return answer


def v3(server: ServerProcess, name: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = requests.post(f"{server.base}/v3/{name}", json=body, auth=BASIC, timeout=TIMEOUT)
    assert reply.status_code == 200, reply.text
    answer: dict[str, Any] = reply.json()
    return answer


def entry_state(server: ServerProcess, entry: str) -> str:
    """What a partner is told of its waitlist entry."""
    said = v3(server, "GetWaitlistEntry", {"waitlist_entry_id": entry})
    return str(said["waitlist_entry"]["waitlist_entry_state"])


def board(server: ServerProcess) -> Any:
    return host(server, "GET", "/board")["result"]


def floor(server: ServerProcess) -> tuple[dict[str, str], list[str]]:
    """The tablet's floor: who sits at each table, and who waits."""
    doc = host(server, "GET", "/floor")
    sat = {t["id"]: t["occupant"]["party_id"] for t in doc["tables"] if t.get("occupant")}
    return sat, [w["party_id"] for w in doc["queue"]]


def test_a_server_on_the_old_file_reads_its_day_on_the_floor_in_force(
    any_db: str, tmp_path: Path
) -> None:
    """At 18:00 every table is taken and a partner's waitlist entry W (1) waits; Y leaves
    T5, which W may not have (too few for a 4-top) until it has waited 30 minutes. Server
    B, started at 18:31 on the same file, has read the day. Server A then reloads a file
    without T5, and a server on the new file takes a walk-in, V, at 18:31. B, not reloaded
    (its file still has T5), showed W seated at T5 on its board and the tablet's floor and
    told the partner W was SEATED: its replay (V's pass) and its reading pass ran on its
    file's floor. Any replay on the floor in force has W waiting: so does B now, and T5
    is on none of them."""
    current = tmp_path / "marlowes.toml"
    current.write_text(MARLOWES.read_text(encoding="utf-8"), encoding="utf-8")
    configs = (current, CONFIGS[1])
    a = start_server(any_db, configs=configs, extra=["--no-export"], workdir=tmp_path)
    servers = [a]
    try:
        for party, size in (("A", 2), ("B", 2), ("X", 4), ("Y", 4), ("Q", 4), ("Z", 6)):
            host(a, "POST", "/walk-ins", size=size, party_id=party)
        user = {"user_id": "u-1", "given_name": "Wes"}
        asked = {"merchant_id": MID, "party_size": 1, "user_information": user}
        w = v3(a, "CreateWaitlistEntry", asked)["waitlist_entry_id"]
        assert host(a, "POST", "/tables/T5/free")["result"] == []  # nobody seated there
        before = board(a)
        assert before["tables"]["T5"] == "free" and before["waiting"] == [w], before
        later = NOW + timedelta(minutes=31)
        no_sweep_for(any_db, configs, 120)  # until the reload is done
        b = start_server(
            any_db, later, configs=(MARLOWES, CONFIGS[1]), extra=["--no-export"],
            workdir=tmp_path,
        )  # fmt: skip
        servers.append(b)
        board(b)  # B has the day replayed
        floor(b)

        text = current.read_text(encoding="utf-8")
        reload_on(a, current, text.replace(T5, "").replace(T5_T6, ""))
        c = start_server(any_db, later, configs=configs, extra=["--no-export"], workdir=tmp_path)
        servers.append(c)
        host(c, "POST", "/walk-ins", size=2, party_id="V")

        truth = board(c)
        assert truth["waiting"] == [w, "V"] and "T5" not in truth["tables"], truth
        said = board(b)
        assert said == truth, (said, truth)
        assert floor(b) == floor(c)
        sat, waiting = floor(c)
        assert waiting == [w, "V"] and w not in sat.values() and "T5" not in sat, sat
        assert entry_state(b, w) == entry_state(c, w) == "WAITING"
    finally:
        for server in servers:
            server.stop()
