"""The host tablet's API at its edges, through a real `hoststand serve` on 127.0.0.1: the
token is checked before anything of the request is read, bodies are capped and parsed into
400 (not JSON) or 422 (not the route's shape), ids we accept can be used in every route,
and a write sent again with its Idempotency-Key is answered from the first, acting once."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from tests.integration.server_process import (
    HOST_TOKENS,
    TIMEOUT,
    ServerProcess,
    running_server,
)
from tests.integration.test_hostile_input import assert_error, snapshot

MARLOWES = "marlowes-kitchen"
HOST = f"/api/v1/restaurants/{MARLOWES}"
AUTH = {"Authorization": f"Bearer {HOST_TOKENS[MARLOWES]}"}


@pytest.fixture
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("host") / "hoststand.db") as running:
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("host-shared") / "hoststand.db") as running:
        yield running


def post(
    server: ServerProcess, path: str, body: Any = None, key: str | None = None, **kw: Any
) -> requests.Response:
    headers = {**AUTH, **({"Idempotency-Key": key} if key else {}), **kw.pop("headers", {})}
    url = f"{server.base}{HOST}{path}"
    return requests.post(url, json=body, headers=headers, timeout=TIMEOUT, **kw)


def fill_the_floor(server: ServerProcess) -> None:
    for i, size in enumerate([4, 2, 6, 2, 4, 4]):
        assert post(server, "/walk-ins", {"size": size, "party_id": f"w-{i}"}).status_code == 200


# -- credentials first, then the body -------------------------------------------------------


def raw_post(server: ServerProcess, path: str, head: dict[str, str], body_bytes: int) -> bytes:
    """POST with a declared body of `body_bytes` bytes, sending none of it: the answer
    comes back only if the server did not wait to read the body."""
    host, port = server.base.removeprefix("http://").split(":")
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}", f"Content-Length: {body_bytes}"]
    lines += [f"{k}: {v}" for k, v in head.items()]
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as conn:
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return conn.recv(65536)


@pytest.mark.parametrize("path", ["/walk-ins", "/reservations"])
def test_a_10_mb_body_without_a_token_gets_401_before_a_byte_of_it_is_read(
    server: ServerProcess, path: str
) -> None:
    answer = raw_post(server, HOST + path, {"Content-Type": "application/json"}, 10_000_000)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]


@pytest.mark.parametrize("path", ["/walk-ins", "/reservations"])
def test_a_10_mb_body_with_the_token_gets_413_unread(server: ServerProcess, path: str) -> None:
    answer = raw_post(server, HOST + path, AUTH, 10_000_000)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_a_bad_query_without_a_token_is_401_not_422(server: ServerProcess) -> None:
    reply = requests.get(f"{server.base}{HOST}/quote", params={"size": "many"}, timeout=TIMEOUT)
    assert_error(reply, 401, "unauthorized")


@pytest.mark.parametrize("path", ["/walk-ins", "/reservations"])
@pytest.mark.parametrize("body", [b"{", b"", b"\xff", b'{"size": NaN}', b"[" * 50 + b"]" * 50])
def test_malformed_json_is_refused_with_400_on_the_host_api(
    server: ServerProcess, path: str, body: bytes
) -> None:
    before = snapshot(server)
    reply = post(server, path, data=body, headers={"Content-Type": "application/json"})
    assert_error(reply, 400, "bad json")
    assert snapshot(server) == before


@pytest.mark.parametrize(
    "body",
    [[2], {"size": "2"}, {"size": 2, "extra": 1}, {"size": True}, {"party_id": "x"}],
    ids=["list", "string", "extra", "bool", "no-size"],
)
def test_json_of_the_wrong_shape_is_refused_with_422(server: ServerProcess, body: Any) -> None:
    assert_error(post(server, "/walk-ins", body), 422, "invalid request")


def test_a_walk_in_larger_than_the_restaurant_seats_says_its_limit(server: ServerProcess) -> None:
    message = assert_error(post(server, "/walk-ins", {"size": 11}), 422, "bad party size")
    assert "1 to 10" in message and "11" in message
    quote = requests.get(f"{server.base}{HOST}/quote", params={"size": 11}, headers=AUTH)
    assert "1 to 10" in assert_error(quote, 422, "bad party size")


def test_a_walk_in_takes_party_size_as_a_phone_booking_spells_it(fresh: ServerProcess) -> None:
    seated = post(fresh, "/walk-ins", {"party_size": 2, "party_id": "w-ps"})
    assert seated.status_code == 200, seated.text
    assert seated.json()["operation"][2:] == ["w-ps", 2]
    both = post(fresh, "/walk-ins", {"party_size": 2, "size": 2, "party_id": "w-both"})
    assert "not both" in assert_error(both, 422, "invalid request")


# -- ids we accept are ids we can address ---------------------------------------------------


@pytest.mark.parametrize("party_id", ["a/b", "a b", "..", ".x", "a?b", "a#b", "%2F", "é"])
def test_a_party_id_that_is_not_url_path_safe_is_refused_at_creation(
    server: ServerProcess, party_id: str
) -> None:
    before = snapshot(server)
    reply = post(server, "/walk-ins", {"size": 2, "party_id": party_id})
    assert "party_id" in assert_error(reply, 422, "invalid request")
    assert snapshot(server) == before


def test_every_party_id_accepted_can_leave_by_its_own_path(fresh: ServerProcess) -> None:
    fill_the_floor(fresh)
    for party_id in ["w.1", "W_2", "w~3", "x-4", "0"]:
        assert post(fresh, "/walk-ins", {"size": 2, "party_id": party_id}).status_code == 200
        left = post(fresh, f"/parties/{party_id}/leave")
        assert left.status_code == 200, (party_id, left.text)


# -- Idempotency-Key -------------------------------------------------------------------------


def test_freeing_a_table_twice_with_one_key_frees_it_once(fresh: ServerProcess) -> None:
    fill_the_floor(fresh)
    post(fresh, "/walk-ins", {"size": 2, "party_id": "w-late"})
    key = str(uuid.uuid4())
    first = post(fresh, "/tables/T2/free", key=key)
    assert first.status_code == 200, first.text
    before = snapshot(fresh)
    again = post(fresh, "/tables/T2/free", key=key)
    assert (again.status_code, again.content) == (200, first.content)
    assert snapshot(fresh) == before
    board = requests.get(f"{fresh.base}{HOST}/board", headers=AUTH, timeout=TIMEOUT).json()
    assert board["result"]["tables"]["T2"] == "w-late"  # still seated: not freed twice


def test_a_retried_phone_booking_books_once(fresh: ServerProcess) -> None:
    body = {"party_size": 4, "start": "2026-12-05T19:00", "name": "Ann"}
    first = post(fresh, "/reservations", body, key="call-1")
    again = post(fresh, "/reservations", body, key="call-1")
    assert first.status_code == 200, first.text
    assert again.content == first.content
    listed = requests.get(
        f"{fresh.base}{HOST}/reservations", params={"date": "2026-12-05"}, headers=AUTH
    ).json()["reservations"]
    assert [r["reservation_id"] for r in listed] == [first.json()["reservation_id"]]


def test_a_retried_check_in_answers_as_the_first(fresh: ServerProcess) -> None:
    booked = post(fresh, "/reservations", {"party_size": 2, "start": "2026-12-04T18:15"})
    rid = booked.json()["reservation_id"]
    first = post(fresh, f"/reservations/{rid}/check-in", key="arrive-1")
    assert first.status_code == 200, first.text
    again = post(fresh, f"/reservations/{rid}/check-in", key="arrive-1")
    assert (again.status_code, again.content) == (200, first.content)
    unkeyed = post(fresh, f"/reservations/{rid}/check-in")
    assert_error(unkeyed, 409, "reservation not active")


def test_a_key_sent_with_another_request_is_refused_and_changes_nothing(
    fresh: ServerProcess,
) -> None:
    post(fresh, "/walk-ins", {"size": 2, "party_id": "w-a"}, key="tap-1")
    before = snapshot(fresh)
    reply = post(fresh, "/walk-ins", {"size": 4, "party_id": "w-b"}, key="tap-1")
    assert_error(reply, 422, "idempotency key reused")
    assert snapshot(fresh) == before


def test_keys_are_scoped_per_route(fresh: ServerProcess) -> None:
    fill_the_floor(fresh)
    post(fresh, "/walk-ins", {"size": 2, "party_id": "w-late"}, key="k")
    left = post(fresh, "/parties/w-late/leave", key="k")
    assert left.status_code == 200, left.text
    assert left.json()["operation"][0] == "leave"


def test_a_refusal_is_not_stored_so_a_retry_with_the_key_tries_again(
    fresh: ServerProcess,
) -> None:
    assert_error(post(fresh, "/tables/T2/free", key="free-2"), 409, "table not occupied")
    post(fresh, "/walk-ins", {"size": 2, "party_id": "w-ada"})
    assert post(fresh, "/tables/T2/free", key="free-2").status_code == 200


# -- the tablet's event stream ----------------------------------------------------------------


def _events(reply: requests.Response) -> Iterator[tuple[str, str]]:
    """The (event, data) pairs of a server-sent event stream, as they come."""
    name, data = "", ""
    for line in reply.iter_lines(decode_unicode=True):
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            data = line.removeprefix("data: ")
        elif not line and name:
            yield name, data
            name, data = "", ""


def test_the_stream_says_when_another_days_bookings_change(fresh: ServerProcess) -> None:
    """A tablet listing Tuesday's reservations opens the stream with day=: it is told at
    once (a change made while it was offline) and after each booking or cancellation of
    that day, wherever made."""
    url = f"{fresh.base}{HOST}/events"
    params = {"token": HOST_TOKENS[MARLOWES], "day": "2026-12-08"}
    with requests.get(url, params=params, stream=True, timeout=TIMEOUT) as reply:
        assert reply.status_code == 200, reply.text
        events = _events(reply)
        first = [next(events), next(events)]
        assert [name for name, _ in first] == ["floor", "bookings"]
        assert first[1][1] == '{"day": "2026-12-08"}'
        tuesday = {"party_size": 2, "start": "2026-12-08T19:00", "name": "Bo"}
        booked = post(fresh, "/reservations", tuesday)
        assert booked.status_code == 200, booked.text
        assert next(events) == ("bookings", '{"day": "2026-12-08"}')
        bo = booked.json()["reservation_id"]
        assert post(fresh, f"/reservations/{bo}/cancel").status_code == 200
        assert next(events) == ("bookings", '{"day": "2026-12-08"}')


@pytest.mark.parametrize(
    "day",
    ["1200-01-01", "Tuesday", ""],
)
def test_a_stream_asked_for_a_day_that_is_no_date_is_refused(
    server: ServerProcess, day: str
) -> None:
    params = {"token": HOST_TOKENS[MARLOWES], "day": day}
    reply = requests.get(f"{server.base}{HOST}/events", params=params, timeout=TIMEOUT)
    assert_error(reply, 422, "invalid request")


def test_the_floor_asked_for_another_day_marks_where_its_bookings_stand(
    fresh: ServerProcess,
) -> None:
    """A tablet polling while its stream is down (a proxy that cuts it) and listing Tuesday
    asks the floor with day=: its Bookings-Mark moves when Tuesday's bookings do, as the
    stream's `bookings` event does, and only then, so Tuesday's list is read again only
    when it changed."""

    def mark() -> str:
        reply = requests.get(
            f"{fresh.base}{HOST}/floor", params={"day": "2026-12-08"}, headers=AUTH,
            timeout=TIMEOUT,
        )  # fmt: skip
        assert reply.status_code == 200, reply.text
        return str(reply.headers["Bookings-Mark"])

    first = mark()
    assert first.startswith("2026-12-08/")
    today = requests.get(f"{fresh.base}{HOST}/floor", headers=AUTH, timeout=TIMEOUT)
    assert "Bookings-Mark" not in today.headers
    assert post(fresh, "/walk-ins", {"size": 2}).status_code == 200  # today's, not Tuesday's
    assert mark() == first
    tuesday = {"party_size": 2, "start": "2026-12-08T19:00", "name": "Bo"}
    booked = post(fresh, "/reservations", tuesday)
    assert booked.status_code == 200, booked.text
    second = mark()
    assert second != first
    assert post(fresh, f"/reservations/{booked.json()['reservation_id']}/cancel").status_code == 200
    assert mark() not in (first, second)


@pytest.mark.parametrize("day", ["1200-01-01", "Tuesday", ""])
def test_a_floor_asked_for_a_day_that_is_no_date_is_refused(
    server: ServerProcess, day: str
) -> None:
    reply = requests.get(
        f"{server.base}{HOST}/floor", params={"day": day}, headers=AUTH, timeout=TIMEOUT
    )
    assert_error(reply, 422, "invalid request")
