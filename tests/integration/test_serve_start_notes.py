"""What `hoststand serve` says as it starts: where the tablet is, and any restaurant its
settings leave without a host token (its tablet could not sign in, and would only say
"wrong token" on the night)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import requests

from tests.integration.server_process import (
    HOSTSTAND,
    NOW,
    SAMPLES,
    ServerProcess,
    _clean_env,
    free_port,
    start_server,
    wait_healthy,
)
from tests.integration.server_process import SETTINGS as SETTINGS_FILE

# The sample settings with the new restaurant's [[hosts]] entry misspelt (merch1 for the
# second sample restaurant, merch-1 written), and a partner limited to a misspelt id.
SETTINGS = """\
[[partners]]
id = "tischfinder"
secret = "tischfinder-webhook-secret-01"
merchants = ["marlowes-kitchen", "marlowes_kitchen"]

[[hosts]]
merchant_id = "marlowes-kitchen"
token = "sample-host-token-marlowes"

[[hosts]]
merchant_id = "merch-1"
token = "sample-host-token-merch1"
"""


def test_serve_names_the_tablet_and_each_restaurant_its_settings_leave_unreachable(
    tmp_path: Path,
) -> None:
    settings = tmp_path / "server.toml"
    settings.write_text(SETTINGS, encoding="utf-8")
    server = start_server(tmp_path / "hoststand.db", settings=settings, extra=["--no-export"])
    try:
        reply = requests.get(
            f"{server.base}/api/v1/restaurants/merch1/board",
            headers={"Authorization": "Bearer sample-host-token-merch1"},
            timeout=10,
        )
        assert reply.status_code == 401  # what the host would meet, with no word of why
        said = server.output()
    finally:
        assert server.stop() == 0
    assert f"  tablet: {server.base}/  (sign in with the restaurant's host token)" in said
    notes = [line.strip() for line in said.splitlines() if line.startswith("  note:")]
    assert notes == [
        'note:   no host token for merch1 (a [[hosts]] entry, merchant_id = "merch1", its'
        " token there or in HOSTSTAND_HOST_TOKEN_MERCH1): its tablet cannot sign in",
        "note:   [[hosts]] names merch-1, none of the restaurants here",
        "note:   partner tischfinder's merchants name marlowes_kitchen, none of the"
        " restaurants here",
    ]


def test_the_sample_settings_reach_both_sample_restaurants_without_a_note(
    tmp_path: Path,
) -> None:
    server = start_server(tmp_path / "hoststand.db", extra=["--no-export"])
    said = server.output()
    assert server.stop() == 0
    assert "  tablet: " in said
    assert "note:" not in said, said


def test_serve_reads_its_settings_file_from_hoststand_settings_as_the_host_commands_do(
    tmp_path: Path,
) -> None:
    """`hoststand reserve` and `hoststand host ...` read serve's settings file from
    HOSTSTAND_SETTINGS, but serve itself ignored it: an operator who set it once for all of
    them started a server with no partners, no admin token and no host tokens (every tablet
    'wrong token', every partner refused), the only clue a note per restaurant."""
    port = free_port()
    args = [str(HOSTSTAND), "--now", NOW.isoformat(), "serve", "--no-export"]
    for config in ("marlowes.toml", "google-floorplan.toml"):
        args += ["--config", str(SAMPLES / config)]
    args += ["--db", str(tmp_path / "h.db")]
    args += ["--port", str(port)]
    env = {**_clean_env(), "HOSTSTAND_SETTINGS": str(SETTINGS_FILE)}
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=tmp_path
        )
    server = ServerProcess(process, f"http://127.0.0.1:{port}", tmp_path / "h.db", log)
    try:
        wait_healthy(server)
        reply = requests.get(
            f"{server.base}/api/v1/restaurants/marlowes-kitchen/board",
            headers={"Authorization": "Bearer sample-host-token-marlowes"},
            timeout=10,
        )
        said = server.output()
    finally:
        assert server.stop() == 0
    assert reply.status_code == 200, reply.text
    assert "note:" not in said, said
