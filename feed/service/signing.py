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


class UnusableSignature(SignatureError):
    """A header that could sign nothing now (missing, without a timestamp, or stamped outside
    the tolerance), whoever sent it: said to the sender, as it tells nothing about partners
    or secrets, and a sender's clock a few minutes off was otherwise told only "bad
    signature", with nothing to say what to fix."""


FORM = 't=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">'


def usable_timestamp(header: str | None, now: float) -> int:
    """The header's timestamp, or UnusableSignature saying what is wrong with the header.
    Decided before the partner is known, so what it says is the same for every partner."""
    if not header:
        raise UnusableSignature(f"no {HEADER} header: sign each request, {HEADER}: {FORM}")
    stamps = [
        value
        for key, sep, value in (item.strip().partition("=") for item in header.split(","))
        if sep and key == "t"
    ]
    # ASCII digits only ("²".isdigit() is true, int() refuses it), and no more than a Unix
    # time needs (int() refuses thousands of digits, and compares nothing useful below that).
    if len(stamps) != 1 or not (stamps[0].isascii() and stamps[0].isdigit()):
        raise UnusableSignature(f"{HEADER} needs one t=<unix seconds>: {FORM}")
    if len(stamps[0]) > 12:
        raise UnusableSignature(f"{HEADER} needs one t=<unix seconds>: {FORM}")
    timestamp = int(stamps[0])
    if abs(now - timestamp) > TOLERANCE_SECONDS:
        raise UnusableSignature(
            f"{HEADER} t={timestamp} is {abs(int(now) - timestamp)} seconds from our clock"
            f" ({int(now)}): a signature is good for {TOLERANCE_SECONDS} seconds either way;"
            " check the sender's clock, and sign each delivery (a retry too) when it is sent"
        )
    return timestamp


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The header value a partner sends for `body` at `timestamp`."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def verify(header: str | None, body: bytes, secret: str, now: float) -> None:
    """Raise SignatureError unless `header` signs `body` with `secret` within the tolerance."""
    timestamp = usable_timestamp(header, now)
    assert header is not None
    parts: dict[str, list[str]] = {}
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if sep:
            parts.setdefault(key, []).append(value)
    expected = sign(secret, timestamp, body).split("v1=", 1)[1]
    # Any v1 may match (a partner rotating secrets sends two); compare in constant time.
    if not any(hmac.compare_digest(expected, given) for given in parts.get("v1", [])):
        raise SignatureError("signature does not match")
