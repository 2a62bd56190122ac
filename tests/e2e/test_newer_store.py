"""A store a newer version of hoststand wrote (its schema is newer than this version reads):
every command, serve too, refuses it in one line saying so and what to do, exit 2, and
writes nothing to it."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
from pathlib import Path

import psycopg

from store import open_store
from tests.integration.server_process import CONFIGS, HOSTSTAND, SETTINGS, _clean_env


def schema_version(db: str, bump: bool = False) -> int:
    """The schema `db` has (after making it the schema after it, with `bump`)."""
    if db.startswith("postgresql://"):
        with psycopg.connect(db, autocommit=True) as conn:
            if bump:
                conn.execute("UPDATE schema_version SET version = version + 1")
            row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    else:
        with contextlib.closing(sqlite3.connect(db)) as conn, conn:
            if bump:
                conn.execute("UPDATE schema_version SET version = version + 1")
            row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    assert row is not None
    return int(row[0])


def test_a_store_a_newer_version_wrote_is_refused_in_one_line_saying_so(
    any_db: str, tmp_path: Path
) -> None:
    """It said only 'the database has schema 5, newer than 4', which an operator reads as
    a broken database: it says a newer hoststand wrote it and to run that one."""
    open_store(any_db).close()
    schema = schema_version(any_db, bump=True)
    serve = ["serve", "--config", str(CONFIGS[0]), "--db", any_db]
    serve += ["--settings", str(SETTINGS), "--host", "127.0.0.1", "--port", "0", "--no-export"]
    commands = [["feed", "status", "--db", any_db], serve]
    for command in commands:
        done = subprocess.run(
            [str(HOSTSTAND), *command], capture_output=True, text=True, timeout=30,
            cwd=tmp_path, env=_clean_env(),
        )  # fmt: skip
        assert done.returncode == 2, (done.stdout, done.stderr)
        [line] = done.stderr.splitlines()
        assert f"has schema {schema}: a newer version of hoststand wrote it" in line, line
        assert line.endswith("; run the newer version)"), line
    assert schema_version(any_db) == schema  # left as the newer version wrote it
