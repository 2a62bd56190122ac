"""Every integer field of a v3 body takes a JSON number or a string of digits (int64 often
arrives as a string), and nothing else pydantic's lax mode would make an int of: `true` is
not a party of 1, " 2" or "1_000" is not a number. Such a body is 400 bad arguments naming
the field, and changes nothing (a real `hoststand serve` on 127.0.0.1; the store is compared
around each refusal). A duration of 0 is a duration we never publish, not a duration left out.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from feed.service import partner_api as pa
from feed.service.replies import Reply
from tests.integration.server_process import TIMEOUT, ServerProcess, running_server
from tests.integration.test_hostile_input import snapshot
from tests.integration.test_partner_v3 import BASIC, HOST_AUTH, MARLOWES, SERVICE, fill_floor

DINNER_SEC = int(datetime(2026, 12, 5, 19, 0, tzinfo=UTC).timestamp())  # Saturday
LATER_SEC = int(datetime(2026, 12, 9, 19, 0, tzinfo=UTC).timestamp())  # the next Wednesday
NOT_INTEGERS: list[Any] = [True, False, " 2", "2 ", "+2", "2.0", "1_000", "\uff12", "", "0x2"]


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """Saturday 19:00, every table taken (the waitlist is open)."""
    db = tmp_path_factory.mktemp("v3-integers") / "hoststand.db"
    with running_server(db, datetime(2026, 12, 5, 19, 0, tzinfo=UTC)) as running:
        fill_floor(running)
        yield running


def post(server: ServerProcess, name: str, body: Any) -> requests.Response:
    return requests.post(f"{server.base}/v3/{name}", json=body, auth=BASIC, timeout=TIMEOUT)


def user(user_id: str) -> dict[str, Any]:
    return {"user_id": user_id, "given_name": "Ada"}


def a_booking(server: ServerProcess) -> dict[str, Any]:
    body = {
        "slot": {
            "merchant_id": MARLOWES,
            "service_id": SERVICE,
            "start_sec": str(LATER_SEC),
            "resources": {"party_size": 2},
        },
        "user_information": user("integers-owner"),
        "idempotency_token": "integers-owner-1",  # the same booking whenever asked again
    }
    reply = post(server, "CreateBooking", body)
    assert reply.status_code == 200 and reply.json()["booking"]["status"] == "CONFIRMED"
    return dict(reply.json()["booking"])


def bodies(server: ServerProcess) -> dict[str, tuple[dict[str, Any], list[list[str | int]]]]:
    """Each v3 call with an integer field: a valid body, and where its integer fields are."""
    booking = a_booking(server)
    lookup_slot = {
        "service_id": SERVICE,
        "start_sec": str(LATER_SEC),
        "duration_sec": "2700",
        "resource_ids": {"party_size": 2},
    }
    slot = {
        "merchant_id": MARLOWES,
        "service_id": SERVICE,
        "start_sec": str(LATER_SEC + 1800),
        "duration_sec": "2700",
        "resources": {"party_size": 2},
    }
    same = {**booking["slot"], "start_sec": str(booking["slot"]["start_sec"])}
    return {
        "BatchAvailabilityLookup": (
            {"merchant_id": MARLOWES, "slot_time": [lookup_slot]},
            [
                ["slot_time", 0, "start_sec"],
                ["slot_time", 0, "duration_sec"],
                ["slot_time", 0, "resource_ids", "party_size"],
            ],
        ),
        "CreateBooking": (
            {"slot": slot, "user_information": user("integers-new"), "idempotency_token": "i-1"},
            [["slot", "start_sec"], ["slot", "duration_sec"], ["slot", "resources", "party_size"]],
        ),
        "UpdateBooking": (
            {"booking": {"booking_id": booking["booking_id"], "slot": same}},
            [
                ["booking", "slot", "start_sec"],
                ["booking", "slot", "duration_sec"],
                ["booking", "slot", "resources", "party_size"],
            ],
        ),
        "BatchGetWaitEstimates": (
            {"merchant_id": MARLOWES, "service_id": SERVICE, "party_size": [2, 4]},
            [["party_size", 0]],
        ),
        "CreateWaitlistEntry": (
            {
                "merchant_id": MARLOWES,
                "service_id": SERVICE,
                "party_size": 2,
                "user_information": user("integers-waiting"),
                "idempotency_token": "integers-waiting-1",
            },
            [["party_size"]],
        ),
    }


def with_value(body: dict[str, Any], path: list[str | int], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    node: Any = changed
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return changed


def test_every_integer_field_of_a_v3_body_refuses_a_bool_or_text_that_is_not_digits(
    full: ServerProcess,
) -> None:
    cases = bodies(full)
    for name, (body, paths) in cases.items():
        if name in ("BatchAvailabilityLookup", "UpdateBooking", "BatchGetWaitEstimates"):
            assert post(full, name, body).status_code == 200  # the body itself is good
        for path in paths:
            for value in NOT_INTEGERS:
                before = snapshot(full)
                reply = post(full, name, with_value(body, path, value))
                assert reply.status_code == 400, (name, path, value, reply.text)
                where = ".".join(str(p) for p in path)
                assert reply.json()["error"]["message"].startswith(where), reply.text
                assert snapshot(full) == before, (name, path, value)


def test_a_party_size_of_true_books_nothing_and_queues_nobody(full: ServerProcess) -> None:
    before = snapshot(full)
    lookup = {
        "merchant_id": MARLOWES,
        "slot_time": [
            {
                "service_id": SERVICE,
                "start_sec": str(LATER_SEC),
                "resource_ids": {"party_size": True},
            }
        ],
    }
    assert post(full, "BatchAvailabilityLookup", lookup).status_code == 400
    create = {
        "slot": {
            "merchant_id": MARLOWES,
            "service_id": SERVICE,
            "start_sec": str(LATER_SEC),
            "resources": {"party_size": True},
        },
        "user_information": user("bool-user"),
        "idempotency_token": "bool-1",
    }
    assert post(full, "CreateBooking", create).status_code == 400
    join = {
        "merchant_id": MARLOWES,
        "service_id": SERVICE,
        "party_size": True,
        "user_information": user("bool-waiting"),
        "idempotency_token": "bool-wl",
    }
    assert post(full, "CreateWaitlistEntry", join).status_code == 400
    assert snapshot(full) == before
    board = requests.get(
        f"{full.base}/api/v1/restaurants/{MARLOWES}/board", headers=HOST_AUTH, timeout=TIMEOUT
    ).json()["result"]
    assert board["waiting"] == []


@pytest.mark.parametrize("zero", ["0", 0])
def test_a_duration_of_0_is_a_duration_we_do_not_publish_not_one_left_out(
    full: ServerProcess, zero: Any
) -> None:
    start = LATER_SEC + 3600
    lookup = {
        "merchant_id": MARLOWES,
        "slot_time": [
            {
                "service_id": SERVICE,
                "start_sec": str(start),
                "duration_sec": zero,
                "resource_ids": {"party_size": 2},
            }
        ],
    }
    reply = post(full, "BatchAvailabilityLookup", lookup)
    assert (
        reply.status_code == 200 and reply.json()["slot_time_availability"][0]["available"] is False
    )
    left_out = {
        **lookup,
        "slot_time": [{k: v for k, v in lookup["slot_time"][0].items() if k != "duration_sec"}],
    }
    assert post(full, "BatchAvailabilityLookup", left_out).json()["slot_time_availability"][0][
        "available"
    ]
    before = snapshot(full)
    create = {
        "slot": {
            "merchant_id": MARLOWES,
            "service_id": SERVICE,
            "start_sec": str(start),
            "duration_sec": zero,
            "resources": {"party_size": 2},
        },
        "user_information": user(f"zero-{zero!r}"),
    }
    body = post(full, "CreateBooking", create).json()
    assert body["booking_failure"]["cause"] == "SLOT_UNAVAILABLE", body
    assert snapshot(full) == before


# -- the models themselves, over any value ----------------------------------------------------

_MODELS: list[tuple[type[pa._Req], dict[str, Any], list[str | int]]] = [
    (pa.SlotTime, {"start_sec": 1}, ["start_sec"]),
    (pa.SlotTime, {"start_sec": 1}, ["duration_sec"]),
    (pa.SlotIn, {}, ["start_sec"]),
    (pa.SlotIn, {}, ["duration_sec"]),
    (pa.Resources, {}, ["party_size"]),
    (pa.WaitEstimatesRequest, {"merchant_id": "m", "party_size": [1]}, ["party_size", 0]),
    (
        pa.CreateWaitlistEntryRequest,
        {"merchant_id": "m", "party_size": 1, "user_information": {"user_id": "u"}},
        ["party_size"],
    ),
]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_MODELS),
    st.one_of(
        st.booleans(),
        st.text(max_size=8).filter(lambda s: not pa._DIGITS.fullmatch(s)),
        st.from_regex(r"-?[0-9]{1,8}", fullmatch=True),
    ),
)
def test_an_integer_field_reads_a_string_only_when_it_is_digits(
    model: tuple[type[pa._Req], dict[str, Any], list[str | int]], value: Any
) -> None:
    kind, body, path = model
    read = pa.parse(kind, with_value(body, path, value))
    if isinstance(value, str) and pa._DIGITS.fullmatch(value):
        if isinstance(read, Reply):  # a number out of the field's range
            assert read.body["error"]["message"].startswith(".".join(map(str, path)))
        else:
            node: Any = read
            for key in path:
                node = node[key] if isinstance(key, int) else getattr(node, key)
            assert node == int(value) and type(node) is int
    else:
        assert isinstance(read, Reply), (kind, path, value, read)
        assert read.body["error"]["message"].startswith(".".join(map(str, path)))
