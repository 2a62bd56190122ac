"""The stores: the operation log interface and its backends (SQLite, PostgreSQL).

The one place the host stand touches a database; imported by the service layer, never by
the engine's rules. `open_store` picks the backend from what `--db` names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from store.log import LogStore

_URL = re.compile(r"^postgres(ql)?://", re.IGNORECASE)


def is_url(db: str | Path) -> bool:
    """Does `db` name a PostgreSQL database (postgresql:// or postgres://) rather than a file?"""
    return isinstance(db, str) and _URL.match(db) is not None


def open_store(db: str | Path, on_upgrade: Callable[[str], None] | None = None) -> LogStore:
    """The store `db` names: a PostgreSQL URL opens PostgresStore, anything else is the path
    of an SQLite file. psycopg is imported only for a URL (it is the `postgres` extra).
    `on_upgrade` hears, a line at a time, how the upgrade of a database written by an
    older version goes (a big one takes minutes)."""
    if is_url(db):
        try:
            from store.postgres import PostgresStore
        except ImportError as exc:
            from store.log import StoreError

            raise StoreError("PostgreSQL needs psycopg: pip install 'hoststand[postgres]'") from exc
        return PostgresStore(str(db), on_upgrade=on_upgrade)
    from store.sqlite import SQLiteStore

    return SQLiteStore(db, on_upgrade=on_upgrade)


def redact(db: str | Path) -> str:
    """`db` fit to print: a URL's password replaced by ***, in its user part and in its
    query (libpq reads `?password=` and `?sslpassword=` too, and those were printed whole)."""
    text = re.sub(r"^([a-z]+://[^:/@]*):[^@]*@", r"\1:***@", str(db), flags=re.IGNORECASE)
    if not is_url(text):
        return text
    return re.sub(r"([?&](?:ssl)?password=)[^&#]*", r"\1***", text, flags=re.IGNORECASE)
