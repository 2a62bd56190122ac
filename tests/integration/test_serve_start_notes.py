"""What `hoststand serve` says as it starts: where the tablet is, and any restaurant its
settings leave without a host token (its tablet could not sign in, and would only say
"wrong token" on the night)."""

from __future__ import annotations

from pathlib import Path

import requests

from tests.integration.server_process import start_server

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
