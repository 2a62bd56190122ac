"""A set of restaurant files read together: each file's problems and those across files.

Used by `hoststand check` and by a running server's reload, so both refuse the same files
for the same reasons. Every problem is one line, "file: field: reason"; nothing is read
twice and nothing stops at the first bad file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from feed.venue.restaurant import ConfigError, Restaurant, load_restaurant


@dataclass(frozen=True)
class Checked:
    """The restaurants of the files that loaded (in the files' order) and every problem."""

    restaurants: tuple[tuple[Path, Restaurant], ...]
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def check_restaurant_files(paths: Sequence[Path]) -> Checked:
    """Load every file; a file's own problems (all its schema errors at once), then the
    problems across files: two files with the same merchant_id."""
    loaded: list[tuple[Path, Restaurant]] = []
    problems: list[str] = []
    for path in paths:
        try:
            loaded.append((path, load_restaurant(path)))
        except ConfigError as exc:
            problems.extend(str(exc).splitlines())
    first_of: dict[str, Path] = {}
    for path, r in loaded:
        earlier = first_of.get(r.merchant_id)
        if earlier is None:
            first_of[r.merchant_id] = path
        elif earlier == path:
            problems.append(f"{path}: the file is given twice")
        else:
            problems.append(
                f"{path}: merchant_id: {r.merchant_id!r} is also the merchant_id of {earlier}"
                " (each restaurant needs its own)"
            )
    return Checked(tuple(loaded), tuple(problems))
