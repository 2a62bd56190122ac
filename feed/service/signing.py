"""Webhook signatures: `Hoststand-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`.

The MAC covers "<t>.<raw body>" with the partner's secret; a signature older or newer than
the tolerance is refused so a captured delivery cannot be replayed later. Pure: "now" is given.
"""

from __future__ import annotations

import hashlib
import hmac

HEADER = "Hoststand-Signature"
TOLERANCE_SECONDS = 300


class SignatureError(Exception):
    """Why a signature was refused (said to nobody but the log: the partner just gets 401)."""


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The header value a partner sends for `body` at `timestamp`."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def verify(header: str | None, body: bytes, secret: str, now: float) -> None:
    """Raise SignatureError unless `header` signs `body` with `secret` within the tolerance."""
    if not header:
        raise SignatureError("missing signature")
    parts: dict[str, list[str]] = {}
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if sep:
            parts.setdefault(key, []).append(value)
    stamps = parts.get("t", [])
    # ASCII digits only ("²".isdigit() is true, int() refuses it), and no more than a Unix
    # time needs (int() refuses thousands of digits, and compares nothing useful below that).
    if len(stamps) != 1 or not (stamps[0].isascii() and stamps[0].isdigit()):
        raise SignatureError("missing or malformed timestamp")
    if len(stamps[0]) > 12:
        raise SignatureError("missing or malformed timestamp")
    timestamp = int(stamps[0])
    if abs(now - timestamp) > TOLERANCE_SECONDS:
        raise SignatureError("timestamp outside the tolerance")
    expected = sign(secret, timestamp, body).split("v1=", 1)[1]
    # Any v1 may match (a partner rotating secrets sends two); compare in constant time.
    if not any(hmac.compare_digest(expected, given) for given in parts.get("v1", [])):
        raise SignatureError("signature does not match")
