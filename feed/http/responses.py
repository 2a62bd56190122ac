"""JSON responses with sorted keys, so a replayed reply is byte for byte the first one.

Stored replies come back from the store with sorted keys; sending every reply that way
makes a retried delivery indistinguishable from the original.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import JSONResponse

from feed.http.statuses import status_of
from feed.service.replies import Reply


def render(content: Any) -> bytes:
    """A reply body as sent: compact JSON with sorted keys, UTF-8."""
    return json.dumps(
        content, sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(",", ":")
    ).encode("utf-8")


class SortedJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return render(content)


def send(
    reply: Reply, headers: dict[str, str] | None = None, status: int | None = None
) -> SortedJSONResponse:
    """The reply as an HTTP response; its status by its code unless the edge names one."""
    code = status_of(reply) if status is None else status
    return SortedJSONResponse(reply.body, status_code=code, headers=headers)
