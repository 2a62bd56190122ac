"""/docs and /openapi.json of a real `hoststand serve` on 127.0.0.1: the docs page works
with no network (every asset it names is ours), and every request body is documented."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
import requests

from tests.integration.server_process import TIMEOUT, ServerProcess, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with running_server(tmp_path_factory.mktemp("docs") / "hoststand.db") as running:
        yield running


@pytest.fixture(scope="module")
def openapi(server: ServerProcess) -> dict[str, Any]:
    reply = requests.get(f"{server.base}/openapi.json", timeout=TIMEOUT)
    assert reply.status_code == 200
    document: dict[str, Any] = reply.json()
    return document


def test_the_docs_page_names_no_external_host_and_its_assets_are_served(
    server: ServerProcess,
) -> None:
    page = requests.get(f"{server.base}/docs", timeout=TIMEOUT)
    assert page.status_code == 200
    assert re.findall(r"(?:https?:)?//[\w.-]+", page.text) == []
    assets = re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", page.text)
    assert {"/docs/assets/swagger-ui-bundle.js", "/docs/assets/swagger-ui.css"} <= set(assets)
    for asset in assets:
        reply = requests.get(f"{server.base}{asset}", timeout=TIMEOUT)
        assert reply.status_code == 200, asset
        assert len(reply.content) > 1000
    bundle = requests.get(f"{server.base}/docs/assets/swagger-ui-bundle.js", timeout=TIMEOUT)
    assert "SwaggerUIBundle" in bundle.text
    missing = requests.get(f"{server.base}/docs/assets/swagger-editor.js", timeout=TIMEOUT)
    assert missing.status_code == 404
    assert requests.get(f"{server.base}/redoc", timeout=TIMEOUT).status_code == 404


def test_every_request_body_is_documented_with_an_example_that_fits_it(
    openapi: dict[str, Any],
) -> None:
    posts = {path: ops["post"] for path, ops in openapi["paths"].items() if "post" in ops}
    with_body = [p for p in posts if p.startswith(("/v3/", "/webhooks/"))]
    with_body += [p for p in posts if p.endswith(("/walk-ins", "/reservations"))]
    assert len(with_body) == 12
    for path in with_body:
        content = posts[path]["requestBody"]["content"]["application/json"]
        schema = content["schema"]
        assert schema.get("properties"), path  # not a bare {"type": "object"}
        assert "$defs" not in str(schema), path  # refs that resolve in the document
        examples = [content["example"]] if "example" in content else []
        examples += [e["value"] for e in content.get("examples", {}).values()]
        assert examples, path
        for example in examples:
            jsonschema.validate(example, schema)


def test_the_webhook_body_documents_each_event_type(openapi: dict[str, Any]) -> None:
    body = openapi["paths"]["/webhooks/{partner_id}"]["post"]["requestBody"]
    content = body["content"]["application/json"]
    assert set(content["examples"]) == {"requested", "checked_in", "cancelled"}
    assert len(content["schema"]["properties"]["data"]["anyOf"]) == 2


def test_host_writes_document_their_idempotency_key(openapi: dict[str, Any]) -> None:
    free = openapi["paths"]["/api/v1/restaurants/{merchant_id}/tables/{table_id}/free"]["post"]
    assert "Idempotency-Key" in [p["name"] for p in free["parameters"]]
