"""Fuzzing: schemathesis against a real server's /openapi.json finds no 5xx and no response
outside the schema (body or status code).

One `hoststand serve` process on a free port, its clock pinned on a Friday evening while
Marlowe's Kitchen is open (so host operations really run), a fresh database: an SQLite file,
then PostgreSQL (the module runs once on each). Each pass runs
in positive and negative mode, a bounded number of examples per operation (a subtest each):

- every operation as schemathesis generates it (host routes mostly stop at 401);
- the host routes with Marlowe's bearer token and merchant id, so fuzzing gets past 401;
- the partner v3 routes with a partner's Basic credentials;
- the webhook signed with a partner's secret, its body either the generated object or an
  event around it, so fuzzing gets past the signature into the event handling.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import APIOperation, BaseSchema, Case, GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from feed.service.signing import HEADER as SIGNATURE_HEADER
from feed.service.signing import sign
from tests.integration.postgres import BACKENDS, database

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
NOW = datetime(2026, 12, 4, 19, 0, tzinfo=UTC)  # a Friday, 19:00 in London: dinner service
MARLOWES = "marlowes-kitchen"
HOST_TOKEN = "sample-host-token-marlowes"  # samples/server.toml
PARTNERS = {
    "tablefinder": "sample-webhook-secret-tablefinder",
    "dinerly": "sample-webhook-secret-dinerly",  # may use marlowes-kitchen only
}
BASIC_USER, BASIC_PASSWORD = "tablefinder", "sample-basic-password"  # samples/server.toml
PARTNER_V3_TAG = "partner v3"
MODES = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
PATH_VALUES = {"merchant_id": MARLOWES, "partner_id": "tablefinder"}
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance]
# Examples per operation and mode. Negative cases (inputs the schema forbids) cost schemathesis
# about ten draws each to generate, so fewer of them keep the module within about a minute.
EXAMPLES = {GenerationMode.POSITIVE: 30, GenerationMode.NEGATIVE: 10}


def fuzz_settings(mode: GenerationMode, examples: int | None = None) -> settings:
    return settings(
        max_examples=examples or EXAMPLES[mode],
        deadline=None,
        database=None,  # a run leaves nothing behind; each run is its own bounded sample
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _command() -> str:
    beside = Path(sys.executable).parent / "hoststand"
    command = str(beside) if beside.exists() else shutil.which("hoststand")
    assert command is not None, "the hoststand console script is not installed"
    return command


@pytest.fixture(scope="module", params=BACKENDS)
def base_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A real `hoststand serve` process on each store (an SQLite file, then PostgreSQL: a
    value one keeps may be one the other refuses); its base URL."""
    work = tmp_path_factory.mktemp("fuzz")
    with database(request.param, work, "fuzz") as db:
        yield from _serve(work, db)


def _serve(work: Path, db: str) -> Iterator[str]:
    port = _free_port()
    args = [
        _command(),
        "--now",
        NOW.isoformat(),
        "serve",
        "--config",
        str(SAMPLES / "marlowes.toml"),
        "--config",
        str(SAMPLES / "google-floorplan.toml"),
        "--db",
        db,
        "--settings",
        str(SAMPLES / "server.toml"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    log = (work / "server.log").open("w+", encoding="utf-8")
    server = subprocess.Popen(args, cwd=work, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            if server.poll() is not None:
                log.seek(0)
                pytest.fail(f"the server exited with {server.returncode}:\n{log.read()}")
            try:
                if requests.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except (requests.ConnectionError, requests.Timeout):  # bound, not yet serving
                pass
            if time.monotonic() > deadline:
                pytest.fail("the server did not answer /healthz within 20 s")
            time.sleep(0.05)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def api_schema(base_url: str) -> BaseSchema:
    return schemathesis.openapi.from_url(f"{base_url}/openapi.json")


@pytest.fixture(scope="module")
def session() -> Iterator[requests.Session]:
    with requests.Session() as s:
        yield s


def operations(api_schema: BaseSchema, tag: str | None = None) -> list[APIOperation]:
    found = [result.ok() for result in api_schema.get_all_operations()]
    return [op for op in found if tag is None or tag in (op.tags or [])]


def fuzz_each(
    subtests: pytest.Subtests,
    ops: list[APIOperation],
    mode: GenerationMode,
    send: Callable[[Case], None],
) -> None:
    """Fuzz every operation in `mode`, each a subtest (reported by its method and path).

    Not `schemathesis.pytest.from_fixture`: its lazy loader sets `request.node._nodeid`,
    which pytest 9.2 no longer has (AttributeError, schemathesis 4.32.5).
    """
    assert ops, "no operation to fuzz"
    for op in ops:
        if mode is GenerationMode.NEGATIVE and not has_inputs(op):
            continue  # nothing negative mode can make invalid (the path is kept valid)

        @given(case=strategy(op, mode))
        @fuzz_settings(mode)
        def fuzz(case: Case) -> None:
            send(case)

        with subtests.test(msg=op.label):
            fuzz()


def has_inputs(op: APIOperation) -> bool:
    # Not headers: the only one is an optional string (Authorization), and nothing sent in
    # a header is outside "a string", so schemathesis cannot make it invalid.
    return bool(op.query or op.body)


def strategy(op: APIOperation, mode: GenerationMode) -> st.SearchStrategy[Case]:
    """Negative cases keep the path valid: schemathesis takes seconds per operation to make
    invalid path parameters (long strings), and they only ever exercise the router's 404."""
    if mode is GenerationMode.POSITIVE:
        return op.as_strategy(mode)
    path = {name: PATH_VALUES.get(name, "x1") for name in re.findall(r"{(\w+)}", op.path)}
    return op.as_strategy(mode, path_parameters=path)


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_every_operation_as_generated(
    api_schema: BaseSchema,
    session: requests.Session,
    subtests: pytest.Subtests,
    mode: GenerationMode,
) -> None:
    """Without credentials the host and partner routes mostly stop at 401."""

    def send(case: Case) -> None:
        case.call_and_validate(session=session, checks=CHECKS, timeout=10)

    fuzz_each(subtests, operations(api_schema), mode, send)


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_host_routes_with_the_bearer_token(
    api_schema: BaseSchema,
    session: requests.Session,
    subtests: pytest.Subtests,
    mode: GenerationMode,
) -> None:
    """Marlowe's merchant id and host token, so the operations really run."""

    def send(case: Case) -> None:
        case.path_parameters = {**(case.path_parameters or {}), "merchant_id": MARLOWES}
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {HOST_TOKEN}"}
        case.call_and_validate(session=session, checks=CHECKS, timeout=10)

    fuzz_each(subtests, operations(api_schema, "host"), mode, send)


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_partner_v3_routes_with_basic_auth(
    api_schema: BaseSchema,
    session: requests.Session,
    subtests: pytest.Subtests,
    mode: GenerationMode,
) -> None:
    """A partner's Basic credentials, so the v3 booking server reads the body."""
    ops = operations(api_schema, PARTNER_V3_TAG)
    if not ops:
        pytest.skip(f"no operation tagged {PARTNER_V3_TAG!r}")
    basic = base64.b64encode(f"{BASIC_USER}:{BASIC_PASSWORD}".encode()).decode()

    def send(case: Case) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Basic {basic}"}
        case.call_and_validate(session=session, checks=CHECKS, timeout=10)

    fuzz_each(subtests, ops, mode, send)


# -- signed webhooks ----------------------------------------------------------------------

_SLOT = datetime(2026, 12, 5, 19, 0, tzinfo=UTC)  # Saturday dinner, in the pinned future
_STARTS = st.one_of(
    st.sampled_from([_SLOT + timedelta(minutes=15 * i) for i in range(-2, 12)]).map(
        lambda t: t.isoformat()
    ),
    st.sampled_from(["2026-12-05T19:00:00", "2026-12-04T18:00:00Z", "2026-12-25T19:00:00Z"]),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.text(max_size=30),
)
_DATA = st.fixed_dictionaries(
    {},
    optional={
        "party_size": st.one_of(st.integers(-2, 25), st.text(max_size=3), st.none()),
        "start": _STARTS,
        "reservation_id": st.one_of(st.sampled_from(["bk-0", ""]), st.text(max_size=20)),
        "name": st.text(max_size=20),
    },
)
_EVENTS = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["ev-1", "ev-2", "ev-3", ""]),  # repeats: replays, id reuse
        "type": st.sampled_from(
            [
                "reservation.requested",
                "reservation.checked_in",
                "reservation.cancelled",
                "reservation.other",
            ]
        ),
        "merchant_id": st.sampled_from([MARLOWES, "merch1", "nobody"]),
        "data": _DATA,
    }
)


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_signed_webhooks(
    api_schema: BaseSchema, base_url: str, session: requests.Session, mode: GenerationMode
) -> None:
    """The generated body is sent as it is, or merged into an event's data (unknown keys)."""
    cases = strategy(api_schema["/webhooks/{partner_id}"]["POST"], mode)

    @given(case=cases, partner=st.sampled_from(sorted(PARTNERS)), event=st.none() | _EVENTS)
    @fuzz_settings(mode, examples=60 if mode is GenerationMode.POSITIVE else 20)
    def fuzz(case: Case, partner: str, event: dict[str, Any] | None) -> None:
        generated = case.body if isinstance(case.body, dict) else {}
        if event is not None:
            event = {**event, "data": {**generated, **event["data"]}}
        body = json.dumps(event if event is not None else generated).encode()
        path = case.formatted_path.rsplit("/", 1)[0] + "/" + partner
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: sign(PARTNERS[partner], int(NOW.timestamp()), body),
        }
        response = session.post(base_url + path, data=body, headers=headers, timeout=10)
        case.validate_response(response, checks=CHECKS)

    fuzz()
