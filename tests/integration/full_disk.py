"""A real SQLite store whose disk fills up inside the write: SQLite itself answers
"database or disk is full" (SQLITE_FULL) after the job's rows are in the transaction, so
a test sees whether any of them survive."""

from __future__ import annotations

import sqlite3

from store.sqlite import SQLiteStore, _Job

NO_LIMIT = 1_073_741_823  # SQLite's default max_page_count


class FullDiskStore(SQLiteStore):
    """`room` is how many more jobs' writes fit: None, the disk has room; 0, full."""

    room: int | None = None

    def _write(self, conn: sqlite3.Connection, job: _Job) -> None:
        super()._write(conn, job)
        if self.room is None:
            return
        if self.room > 0:
            self.room -= 1
            return
        # The file may not grow past its size now; a megabyte needs new pages.
        conn.execute("PRAGMA max_page_count = 1")
        try:
            conn.execute("INSERT INTO idempotency VALUES ('filler', 'disk', zeroblob(1000000))")
        finally:
            conn.execute(f"PRAGMA max_page_count = {NO_LIMIT}")
