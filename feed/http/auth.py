"""Bearer tokens as the host and admin routes read them from an Authorization header."""

from __future__ import annotations


def bearer(authorization: str | None) -> str | None:
    """The token of `Authorization: Bearer <token>`, or None for anything else."""
    if authorization is None:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None
