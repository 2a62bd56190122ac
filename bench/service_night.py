"""Service-night simulation: the old booking rule against the new one (issue #11).

Many seeded dinner services at Marlowe's (samples/marlowes.toml, 6 tables) and at a 40-table
floor, each played twice on the same draws (same requests, walk-ins, no-shows, arrival
times and dwell times), once per booking rule, by the engine itself (`HostStand.apply`,
minute by minute, no HTTP, no SQLite):

- OLD rule: a table is bookable for (at, n) unless a still-booked reservation on it is
  within 29 minutes (`choose_unit` over `still_booked` Booking tuples, `turns=None`); seated
  parties and turn times are ignored; the floor's `protect_reservations` is off; the host
  has no `arrive`, only `check_in` once a minute until the reservation is no longer active.
- NEW rule: PRODUCT.md section 3 as `DayBook.book` does it: `choose_unit` over
  `occupied(...)` with the restaurant's turns; `protect_reservations` on; on `table busy`
  the host marks the guests arrived and seats them at the first fitting free unit.

The model (every number is a constant below or an argument):

- Dinner only: minute 0 is 17:30 (open), slots every 15 minutes 17:30-21:30 (last
  seating), close 23:00. Utilisation is table-minutes occupied during 17:30-23:00.
- Bookings are made in the days before (no live floor yet). Requests per night are Poisson
  around a demand level per floor: Marlowe's 30, 40 tables 200 (about 5 per table, a busy
  night). That is where the old rule fills the book: it still books some 93% of requests,
  but only about 70% of those asking 19:00-20:00 get the slot they asked (the peak is sold
  out). `--demand` scales both. Requests come in random order; the asked time is normal
  around 19:30 with sd 60 minutes, rounded to the slot grid and redrawn outside
  17:30-21:30. Party sizes: 2 50%, 4 30%, 3 10%, 5 3.5%, 6 3.5%, 7-10 3% (0.75% each).
  A request finds its slot through the rule's `choose_unit`; when the slot is full it
  tries the nearest open slot within +/-30 minutes (15 before 30; a coin per request says
  earlier or later first) and otherwise gives up. `--flex M` lets it reach M minutes
  instead (the partner shows the evening's open times; some guests take 18:00 for 19:30).
- 10% of booked parties never come. The others arrive at `at` plus round(N(0, 3))
  minutes, clipped to +/-10. A booked party's wait is measured from max(arrival, at); the
  door promise holds when it is seated within 10 minutes of that.
- Walk-ins: Poisson at a constant rate over 17:30-21:30 (Marlowe's 2 parties an hour,
  40 tables 14 an hour), the same size mix. The host quotes each walk-in (`quote`) before
  `walk_in`; a walk-in quoted more than 90 minutes goes elsewhere, one that is queued waits
  up to its quote + 30 minutes and then leaves (`leave`). Quote error = |actual wait -
  quote| over the queued walk-ins that were seated.
- Dwell: log-normal with median turn(n) (the restaurant's turn for the party's size) and
  sigma `--sigma` (default 0.25: half the parties stay past their turn, 1 in 4 by more than
  a sixth of it). The party's first table is freed when its dwell is over.
  `--dwell-median F` draws around F x turn(n) instead, for both rules: a restaurant whose
  turn times are set above what its guests usually stay (F 0.9: turns 11% above the median).
- A booked party left standing gives up 60 minutes after max(arrival, at) (new rule: the
  host cancels its reservation; old rule: it leaves the waitlist). Under the old rule a
  party whose reservation became a no-show while it stood at the door is put on the
  waitlist (a host would), counted as "no-show while present" and never as on time.
- The host's choice for arrived guests whose table is busy (new rule), `--host`: "board"
  (default) a fitting unit the board shows free (nobody sits there, no other reservation's
  hold), fewest seats then floor-plan order: the first unit a busy check-in names
  (`DayBook.free_units`); "api" the first fitting unit nobody sits at, held or not (what
  that check-in named before it left held tables out); "turn" a unit free
  for (now, n) by PRODUCT.md 3, chosen by `choose_unit` as a booking for now would be. The
  engine's pass runs first at every operation, so a freed table nobody holds goes to the
  waitlist before the host acts.
- Lookahead hosts (`--host look...`): arrived guests at a busy table go to the first empty
  unit that seats them (fewest seats; roominess overridden, as `seat` allows) where no
  booking is hurt: no other reservation there starts within their turn, or else every such
  reservation (none held yet, none arrived) gets another unit at its own `at` by PRODUCT.md
  3 (`choose_unit` over `occupied`, overstay included, with the guests sitting there and
  their own booked meal gone). "look-late" also takes what "board" would at the promise's
  last minute; "-walk" also seats, once a minute, waiting walk-ins the pass leaves out at
  such a unit (the walk-in's turn by its size).
- Once a minute the host reads the board: time's own changes (no-shows, roominess after
  30 minutes, claims) apply as the clock's sweep would write them.

Besides the targets' figures the table splits the door promise into bookings that come
back to back (a booked meal on their table ends less than 15 minutes before `at`) and the
others, and says what sat at the table when guests found it busy: a party past its turn
(seated + turn <= now) or one within it (seated late itself, or a walk-in let in).

Why promises break (new rule), read at the minute a promise breaks (guests standing 11
minutes after max(arrival, at)): was a fitting unit empty (held for another booking, and
could that booking be re-homed), only a larger table, or nothing; could a seated party move
to an empty table to make room (one seated in the last 15 minutes: "fresh"); how long until
the guests' own table frees. Who sat there within its turn: a walk-in, the table's booking
seated late, or a booking the host moved there. For walk-ins: table-minutes a table stood
empty while a waiting walk-in it seats waited, by what kept the pass off it (a hold,
protection, roominess, a claim), and how many walk-ins that left the queue had waited by a
protected table.

What-if table choices (`--choice`, new rule only; default `contract`, PRODUCT.md 3 as it
is): the contract's candidates tied on fewest seats and most spots left for the other sizes
(so each still lowers spots_open(at, n) by exactly one) are re-ranked, not the floor order:
"slack" the unit with the most free minutes before `at` (since the previous meal on it ends;
none: infinite), "slack-both" the largest min(gap before, gap after the meal), then the
largest max, "pack" the least free minutes before `at`. Then floor-plan / COMBOS order.
"unstack" ranks all of choose_unit's candidates (more seats allowed): first a unit whose
meal is at least 15 minutes clear of the meals before and after it, then the contract's
keys, then as "slack-both".
Measures what a contract change would buy; the contract is the product owner's.

Targets reported (not asserted): the door promise at least 95% under the new rule, and its
covers within 5% of the old rule's.

`--sweep` prints, instead of the full table, one row per setting of the levers a restaurant
has against broken promises (a changeover of 5-20 minutes; turn times set 11-25% above the
median stay), each with the door promise, both rules' covers and which target it meets:
the trade-off the product owner chooses on, in one run (about 4 minutes). Seven "(model)"
rows then change the model's assumptions instead (half and a third of the demand; the
dwell's sigma x0.6 and x0.4; guests who take a time up to two hours from the one they
asked, alone and with turns set above the median stay): how far from a busy night both
targets are met.

Run: `.venv/bin/python bench/service_night.py [--nights 200] [--nights-40 50] [--seed 1]
[--sigma 0.25] [--demand 1.0] [--changeover 0] [--dwell-median 1.0] [--flex 30]
[--host board|api|turn|look|look-late|look-walk|look-late-walk]
[--choice contract|slack|slack-both|pack|unstack] [--check-choice] [--sweep]` (about 15 s
by default; the "-walk" hosts about 45 s).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import statistics
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import HostStand, PartyState, Rejected, errors
from engine.floor import FloorPlan
from feed.floor.availability import Booking, Taken, choose_unit, scored_units
from feed.service.days import occupied, still_booked
from feed.venue.restaurant import Restaurant, load_restaurant, parse_restaurant

ROOT = Path(__file__).resolve().parents[1]
MARLOWES_FILE = ROOT / "samples" / "marlowes.toml"

OPEN, LAST_SEATING, CLOSE = 0, 240, 330  # 17:30, 21:30, 23:00 in minutes of the service
SLOT_MINUTES = 15
SLOTS = range(OPEN, LAST_SEATING + 1, SLOT_MINUTES)
PEAK, PEAK_SD = 120, 60.0  # demand: normal around 19:30, sd 60 minutes
# A full slot: try these offsets, earlier or later first (set by --flex)
NEARBY: tuple[int, ...] = (15, 30)
SIZE_MIX = {2: 0.50, 4: 0.30, 3: 0.10, 5: 0.035, 6: 0.035}  # party size -> share
SIZE_MIX |= {n: 0.03 / 4 for n in (7, 8, 9, 10)}  # large parties: 3% in all
NO_SHOW = 0.10
ARRIVAL_SD, ARRIVAL_CLIP = 3.0, 10
PROMISE_MINUTES = 10
PEAK_HOUR = range(90, 151)  # 19:00-20:00: "the old rule fills the book" is read here
TIGHT_SLACK = 15  # a booking this close after another meal on its table is back to back
BALK_QUOTE = 90  # a walk-in quoted more than this goes elsewhere
WALK_IN_PATIENCE = 30  # minutes past its quote a queued walk-in still waits
BOOKED_PATIENCE = 60  # minutes a booked party stands at the door before it leaves
BOOKING_TS = -10_000  # bookings are made in the days before the service
# Where the host seats arrived guests whose table is busy (new rule), fewest seats first:
HOST_BOARD = "board"  # a fitting unit the board shows free: nobody sits there, no other hold
HOST_API = "api"  # the first fitting unit nobody sits at, held or not
HOST_FREE_BY_TURN = "turn"  # a unit free for (now, n) by PRODUCT.md 3, as choose_unit picks
# Lookahead hosts (the model of PRODUCT.md 3 as `rehome` reads it): arrived guests at a busy
# table go to any empty unit that seats them (roominess overridden) where no booking would
# be hurt: every still-booked reservation there that starts within their turn can get
# another unit at its own time (the guests' own table included, once its party is gone).
HOST_LOOK = "look"
HOST_LOOK_LATE = "look-late"  # ... and at the last minute of the promise, as "board" does
HOST_LOOK_WALK = "look-walk"  # ... and walk-ins too: a waiting walk-in the pass leaves out
# (protection, roominess, a hold) gets an empty table when the bookings there can be re-homed
HOST_LOOK_LATE_WALK = "look-late-walk"
HOSTS = (
    HOST_BOARD,
    HOST_API,
    HOST_FREE_BY_TURN,
    HOST_LOOK,
    HOST_LOOK_LATE,
    HOST_LOOK_WALK,
    HOST_LOOK_LATE_WALK,
)
HARD_STOP = 24 * 60  # a guard against a loop that never ends (a long dwell is no bug)

SHUFFLE_FRESH = 15  # a seated party the host may still move: sat down this recently

TARGET_PROMISE = 95.0
TARGET_COVERS = 5.0  # percent below the old rule's covers at most


# ---------------------------------------------------------------- the restaurants


@dataclass(frozen=True)
class Venue:
    """A restaurant to simulate, with the demand it sees."""

    name: str
    restaurant: Restaurant
    requests: float  # booking requests per night (Poisson mean)
    walk_ins_per_hour: float


def forty_tables(marlowes: dict[str, Any]) -> Restaurant:
    """Marlowe's file with another floor: 40 tables (12 two-tops, 16 four-tops, 8 six-tops,
    4 eight-tops) and bench/engine_bench.py's 10 combos, which seat every large party
    (9-10 on 4+6, 2+8; 10 on 6+6, 4+8); eight-tops turn in 100 minutes."""
    seats = [2] * 12 + [4] * 16 + [6] * 8 + [8] * 4
    pairs = [(25, 29), (26, 30), (27, 31), (28, 32), (33, 34), (35, 36)]
    pairs += [(11, 37), (12, 38), (23, 39), (24, 40)]
    data = dict(marlowes)
    data["merchant_id"] = "forty-tables"
    data["name"] = "Forty Tables"
    data["tables"] = [{"id": f"T{i}", "seats": s} for i, s in enumerate(seats, start=1)]
    data["combos"] = [{"tables": [f"T{a}", f"T{b}"]} for a, b in pairs]
    data["turn_minutes"] = {**marlowes["turn_minutes"], "8": 100}
    return parse_restaurant(data, "bench: forty tables")


# ---------------------------------------------------------------- one night's draws


@dataclass(frozen=True)
class Request:
    """A partner booking request and, if it is booked, what its party does on the night."""

    rid: str
    slot: int
    size: int
    earlier_first: bool
    shows: bool
    offset: int  # arrival minus `at`
    dwell_z: float  # standard normal: dwell = turn * exp(sigma * z)


@dataclass(frozen=True)
class WalkIn:
    pid: str
    minute: int
    size: int
    dwell_z: float


@dataclass(frozen=True)
class Night:
    requests: list[Request]
    walk_ins: list[WalkIn]


SIZES, WEIGHTS = list(SIZE_MIX), list(SIZE_MIX.values())


def draw_night(rng: random.Random, venue: Venue) -> Night:
    """Everything random about one night, drawn once and played under both rules."""
    requests: list[Request] = []
    for i in range(poisson(rng, venue.requests)):
        slot = -1
        while slot not in SLOTS:
            slot = round(rng.gauss(PEAK, PEAK_SD) / SLOT_MINUTES) * SLOT_MINUTES
        offset = max(-ARRIVAL_CLIP, min(ARRIVAL_CLIP, round(rng.gauss(0, ARRIVAL_SD))))
        requests.append(
            Request(
                rid=f"R{i}",
                slot=slot,
                size=rng.choices(SIZES, WEIGHTS)[0],
                earlier_first=rng.random() < 0.5,
                shows=rng.random() >= NO_SHOW,
                offset=offset,
                dwell_z=rng.gauss(0, 1),
            )
        )
    walk_ins: list[WalkIn] = []
    rate = venue.walk_ins_per_hour / 60
    minute = rng.expovariate(rate) if rate > 0 else math.inf
    while minute <= LAST_SEATING:
        size = rng.choices(SIZES, WEIGHTS)[0]
        walk_ins.append(WalkIn(f"W{len(walk_ins)}", int(minute), size, rng.gauss(0, 1)))
        minute += rng.expovariate(rate)
    return Night(requests, walk_ins)


def poisson(rng: random.Random, mean: float) -> int:
    """Arrivals of a unit-rate process in [0, mean): any mean, no underflow."""
    count, t = 0, rng.expovariate(1.0)
    while t < mean:
        count += 1
        t += rng.expovariate(1.0)
    return count


def asked_slots(request: Request) -> list[int]:
    """The asked slot, then the nearest ones within +/-30 minutes, on the grid."""
    out = [request.slot]
    for step in NEARBY:
        pair = (-step, step) if request.earlier_first else (step, -step)
        out += [request.slot + d for d in pair if request.slot + d in SLOTS]
    return out


# ---------------------------------------------------------------- the two rules


Chooser = Callable[[Restaurant, HostStand, dict[str, dict[str, Any]], int, int, int], str | None]


def choose_old(
    r: Restaurant, stand: HostStand, meta: dict[str, dict[str, Any]], ts: int, at: int, n: int
) -> str | None:
    """Conflict only: still-booked reservations as Booking tuples, no turns, no floor."""
    taken: list[Booking] = still_booked(stand, ts)
    return choose_unit(stand.floor, taken, at, n, None)


def choose_new(
    r: Restaurant, stand: HostStand, meta: dict[str, dict[str, Any]], ts: int, at: int, n: int
) -> str | None:
    """PRODUCT.md 3, as DayBook.book builds it: the occupied floor and the turns. With
    `--changeover C`, every meal is booked as if it lasted C minutes longer (a reset buffer
    between parties: what it would buy, not a restaurant setting yet)."""
    taken: list[Taken] = occupied(r, stand, meta, ts)
    turns: dict[int, int] = dict(r.turns)
    if CHANGEOVER:
        taken = [Taken(t.tables, t.start, t.end + CHANGEOVER, t.at) for t in taken]
        turns = {size: minutes + CHANGEOVER for size, minutes in turns.items()}
    if CHOICE == CHOICE_CONTRACT:
        return choose_unit(r.floor, taken, at, n, turns)
    return choose_what_if(r.floor, taken, at, n, turns, CHOICE)


CHANGEOVER = 0  # minutes; set by --changeover
DWELL_MEDIAN = 1.0  # median dwell / turn time; set by --dwell-median (both rules)
CHOICE = "contract"  # the NEW rule's table choice for a booking; set by --choice


# ---------------------------------------------------------------- what-if table choices
# PRODUCT.md 3 breaks the last tie in floor-plan / COMBOS order, which stacks bookings back
# to back on the first table while an equal one may stay empty all evening. The variants
# below measure other last tie-breaks (a contract change is the product owner's to make):
# they re-rank only the contract's tied candidates (fewest seats, then most spots left for
# the other sizes), so each still lowers spots_open(at, n) by exactly one: the promise holds.

CHOICE_CONTRACT = "contract"  # PRODUCT.md 3 as it is: floor-plan / COMBOS order
CHOICE_SLACK = "slack"  # most free minutes before `at` on the unit, then floor order
CHOICE_SLACK_BOTH = "slack-both"  # the larger min(gap before, gap after), then the larger max
CHOICE_PACK = "pack"  # least free minutes before `at` first: the opposite direction
# Beyond the last tie-break: among all of choose_unit's candidates (any fitting bookable
# table, any combo in some maximum matching: each lowers spots_open(at, n) by one), first a
# unit whose meal sits at least 15 minutes clear of the meals before and after it there,
# then the contract's keys (fewest seats, most spots left for others), then "slack-both".
CHOICE_UNSTACK = "unstack"
CHOICES = (CHOICE_CONTRACT, CHOICE_SLACK, CHOICE_SLACK_BOTH, CHOICE_PACK, CHOICE_UNSTACK)


Scored = tuple[int, int, str, tuple[str, ...]]  # seats, spots left for others, unit, tables


def tied_candidates(
    floor: FloorPlan,
    taken: Sequence[Taken],
    at: int,
    n: int,
    turns: Mapping[int, int],
    every: bool = False,
) -> list[Scored]:
    """`choose_unit`'s candidates that tie on its first two keys (fewest seats, then the
    most spots left for the other party sizes at `at`), in floor-plan / COMBOS order: the
    first is `choose_unit`'s pick; with `every`, all its candidates, scored. Read from
    feed/floor/availability.py's `scored_units`; `choose_what_if --check-choice` checks
    the pick."""

    def tables_of(unit: str) -> tuple[str, ...]:
        combo = floor.combo(unit)
        return combo.tables if combo is not None else (unit,)

    scored = [
        (seats, left, unit, tables_of(unit))
        for seats, left, _, unit, _ in scored_units(floor, taken, at, n, turns, every=every)
    ]
    if every or not scored:
        return scored
    most = max(c[1] for c in scored)
    return [c for c in scored if c[1] == most]


def gaps(taken: Sequence[Taken], tables: tuple[str, ...], at: int, end: int) -> tuple[float, float]:
    """Free minutes on `tables` before `at` (since the previous occupation there ends) and
    after `end` (until the next one starts); math.inf where there is none."""
    before = after = math.inf
    for item in taken:
        if not any(x in item.tables for x in tables):
            continue
        if item.start < at:
            before = min(before, at - item.end)
        else:
            after = min(after, item.start - end)
    return before, after


def choose_what_if(
    floor: FloorPlan,
    taken: Sequence[Taken],
    at: int,
    n: int,
    turns: Mapping[int, int],
    choice: str,
) -> str | None:
    """The contract's tied candidates (with "unstack", all its candidates) ranked by
    `choice` (see CHOICES); an equal key goes to floor-plan / COMBOS order (max and min
    keep the first)."""
    ranked = tied_candidates(floor, taken, at, n, turns, every=choice == CHOICE_UNSTACK)
    if not ranked:
        return None
    # the contract's pick: fewest seats, then most spots left for others, then the first
    pick = min(ranked, key=lambda c: (c[0], -c[1]))[2]
    if CHECK_CHOICE:
        assert pick == choose_unit(floor, taken, at, n, turns), (at, n)
    CHOICE_COUNTS["booked"] += 1
    if len(ranked) == 1:
        return pick
    CHOICE_COUNTS["tied"] += 1
    end = at + turns.get(n, 0)
    keyed = [(gaps(taken, c[3], at, end), c) for c in ranked]
    if choice == CHOICE_SLACK:
        unit = max(keyed, key=lambda k: k[0][0])[1][2]
    elif choice == CHOICE_SLACK_BOTH:
        unit = max(keyed, key=lambda k: (min(k[0]), max(k[0])))[1][2]
    elif choice == CHOICE_PACK:
        unit = min(keyed, key=lambda k: k[0][0])[1][2]
    elif choice == CHOICE_UNSTACK:
        unit = min(
            keyed,
            key=lambda k: (
                min(k[0]) < TIGHT_SLACK,
                k[1][0],
                -k[1][1],
                -min(k[0]),
                -max(k[0]),
            ),
        )[1][2]
    else:
        raise ValueError(f"unknown choice {choice!r}")
    CHOICE_COUNTS["moved"] += unit != pick
    return unit


CHECK_CHOICE = False  # --check-choice: assert the mirror's first candidate is choose_unit's
# New-rule bookings a what-if choice made (per floor): all, those where it had more than one
# candidate to rank (the contract's tie; "unstack": all), those given another unit.
CHOICE_COUNTS = {"booked": 0, "tied": 0, "moved": 0}


@dataclass(frozen=True)
class Rule:
    name: str
    choose: Chooser
    arrive: bool  # does the host have `arrive` and `seat` for guests at a busy table?
    protect: bool  # the floor's protect_reservations


OLD = Rule("old", choose_old, arrive=False, protect=False)
NEW = Rule("new", choose_new, arrive=True, protect=True)


# ---------------------------------------------------------------- one night under one rule


@dataclass
class Tally:
    """Figures of one rule on one floor, summed over nights."""

    nights: int = 0
    asked: int = 0
    booked: int = 0
    covers: int = 0
    booked_covers: int = 0
    walk_in_covers: int = 0
    shown: int = 0
    on_time: int = 0
    waits: list[int] = field(default_factory=list)
    turned_away: int = 0  # booked parties that left the door unseated
    no_show_present: int = 0  # old rule: marked no-show while standing at the door
    quote_errors: list[int] = field(default_factory=list)
    walk_ins: int = 0
    balked: int = 0
    walked_out: int = 0
    table_minutes: int = 0
    capacity_minutes: int = 0
    peak_asked: int = 0  # requests asking a slot of the peak hour, 19:00-20:00
    peak_got: int = 0  # ... that were booked at the slot they asked
    tight_shown: int = 0  # came, and its table has a booked meal ending < 15 min before `at`
    tight_on_time: int = 0
    seated_elsewhere: int = 0  # new rule: the host seated arrived guests at another unit
    walk_ins_by_host: int = 0  # lookahead host: waiting walk-ins it seated by hand
    # Broken promises by what sat at the booked table when the guests came: a party past
    # its turn, or one still inside its turn (seated late, or a walk-in the rule let in).
    broken_overstay: int = 0
    broken_within_turn: int = 0
    # At the minute a promise breaks (new rule: guests still standing 11 minutes after
    # max(arrival, at)), what the floor looked like:
    brk_seen: int = 0
    # Who sat at the table of a broken promise, within its turn: "walk-in", "booked late"
    # (the booking of that table, seated late), "booked moved" (a booking the host seated
    # at a table not its own), "walk-in by host" (a walk-in the host seated).
    blk: dict[str, int] = field(default_factory=dict)
    brk_fit_held: int = 0  # a fitting unit stood empty, held for another reservation
    brk_fit_held_swappable: int = 0  # ... whose reservation the model could re-home
    brk_bigger: int = 0  # no fitting unit empty, but a larger table that seats them was
    brk_nothing: int = 0  # no table that seats them stood empty
    brk_shuffle: int = 0  # nothing empty, but a seated party could move to an empty table
    brk_shuffle_fresh: int = 0  # ... one seated within the last 15 minutes
    brk_fit_free: int = 0  # a fitting unit stood empty and unheld (the host missed it)
    brk_own_frees_in: list[int] = field(default_factory=list)  # minutes until its table frees
    # Walk-ins: table-minutes a table stood empty while a walk-in it seats waited, by what
    # kept the pass off it (the first that applies), and walk-ins that left having seen one.
    idle_held: int = 0
    idle_protected: int = 0
    idle_roomy: int = 0  # the only waiting parties it seats are too small for it (< 30 min)
    idle_claimed: int = 0
    left_saw_protected: int = 0  # walk-ins that left the queue after a protected table idled


@dataclass
class Door:
    """A booked party that has come in and is not seated yet."""

    request: Request
    at: int
    ready: int  # max(arrival, at): its wait starts here
    tight: bool = False  # a booked meal on its table ends less than 15 minutes before `at`
    arrived: bool = False  # `arrive` was applied
    waitlisted: str | None = None  # old rule: its walk-in id once its booking expired
    blocker_overstayed: bool | None = None  # at the first `table busy`: was it past its turn?
    blocker_kind: str = ""  # ... and who sat there (see Tally.blk)


@dataclass
class Queued:
    """A party on the waitlist: a walk-in, or (old rule) booked guests put there."""

    size: int
    since: int
    leave_at: int
    dwell_z: float
    quote: int | None  # None: not a walk-in, no quote to score
    door: Door | None = None


class Evening:
    """One night played under one rule, minute by minute, on a fresh host stand."""

    def __init__(
        self, venue: Venue, rule: Rule, floor: FloorPlan, sigma: float, host: str = HOST_BOARD
    ) -> None:
        self.r = venue.restaurant
        self.rule = rule
        self.sigma = sigma
        self.host = host
        self.stand = HostStand(floor)
        self.meta: dict[str, dict[str, Any]] = {}
        self.tally = Tally()
        self.leaving: dict[int, list[str]] = {}  # minute -> first table of a party to free
        self.seated_parties = 0
        self.doors: dict[str, Door] = {}
        self.queued: dict[str, Queued] = {}
        self.units = host_units(floor)
        self.roomy_units = roomy_units(floor)
        self.tight: set[str] = set()
        self.leaves_at: dict[str, int] = {}  # seated party -> minute its table is freed
        self.host_seated: set[str] = set()  # walk-ins the host seated by hand
        self.saw_protected: set[str] = set()  # walk-ins that waited by an idle protected table

    def apply(self, *operation: Any) -> Any:
        return self.stand.apply(list(operation))

    # -- the days before -----------------------------------------------------------

    def book(self, night: Night) -> dict[int, list[tuple[Request, int]]]:
        """Take the requests in order; return arrivals by minute: (request, its `at`)."""
        arrivals: dict[int, list[tuple[Request, int]]] = {}
        ts = BOOKING_TS
        tally = self.tally
        for req in night.requests:
            ts += 1
            tally.asked += 1
            tally.peak_asked += req.slot in PEAK_HOUR
            for at in asked_slots(req):
                unit = self.rule.choose(self.r, self.stand, self.meta, ts, at, req.size)
                if unit is None:
                    continue
                result = self.apply("reserve", ts, req.rid, unit, at)
                assert result is True, f"the engine refused what availability offered: {result}"
                self.meta[req.rid] = {"party_size": req.size}
                tally.booked += 1
                tally.peak_got += req.slot in PEAK_HOUR and at == req.slot
                if req.shows:  # guests who come before the doors open wait for them
                    arrivals.setdefault(max(OPEN, at + req.offset), []).append((req, at))
                break
        self.tight = self.back_to_back()
        return arrivals

    def back_to_back(self) -> set[str]:
        """Reservations whose table has another booked meal ending < 15 minutes before them."""
        meals: dict[str, list[tuple[int, int]]] = {}
        booked = self.stand.reservations()
        for res in booked:
            end = res.at + self.r.turns[self.meta[res.id]["party_size"]]
            for table in res.tables:
                meals.setdefault(table, []).append((res.at, end))
        return {
            res.id
            for res in booked
            if any(
                at < res.at and end > res.at - TIGHT_SLACK
                for table in res.tables
                for at, end in meals[table]
            )
        }

    # -- the service ----------------------------------------------------------------

    def serve(self, night: Night) -> Tally:
        arrivals = self.book(night)
        walk_ins: dict[int, list[WalkIn]] = {}
        for w in night.walk_ins:
            walk_ins.setdefault(w.minute, []).append(w)
        t = OPEN
        last_arrival = max([*arrivals, *walk_ins, OPEN])
        while t <= last_arrival or self.doors or self.queued or self.leaving:
            if t > HARD_STOP:
                raise RuntimeError(f"{self.rule.name}: parties still here at minute {t}")
            self.apply("board", t)  # the clock's sweep: no-shows, roominess, claims
            for table in self.leaving.pop(t, []):
                freed = self.apply("free", t, table)
                assert isinstance(freed, list), freed
            for req, at in arrivals.get(t, []):
                door = Door(req, at, ready=max(t, at), tight=req.rid in self.tight)
                self.doors[req.rid] = door
                self.tally.shown += 1
                self.tally.tight_shown += door.tight
            for rid in list(self.doors):
                self.at_the_door(t, self.doors[rid])
            for w in walk_ins.get(t, []):
                self.walk_in(t, w)
            for pid in [p for p, q in self.queued.items() if q.leave_at <= t]:
                if self.stand.parties[pid].state is PartyState.WAITING:
                    self.apply("leave", t, pid)
                    self.gone_from_queue(pid)
            self.notice_seated(t)
            if self.rule.arrive and self.host in (HOST_LOOK_WALK, HOST_LOOK_LATE_WALK):
                self.host_walk_ins(t)
            self.idle_tables(t)
            t += 1
        tally = self.tally
        tally.nights = 1
        tally.capacity_minutes = len(self.r.floor.tables) * (CLOSE - OPEN)
        return tally

    def at_the_door(self, t: int, door: Door) -> None:
        rid = door.request.rid
        if door.waitlisted is not None:
            return  # on the waitlist now: the pass seats it or it leaves
        result = self.apply("check_in", t, rid)
        if not isinstance(result, Rejected):
            self.sat(rid, t, door.request.size, door.request.dwell_z, door=door)
            return
        if result.code == errors.TABLE_BUSY:
            if door.blocker_overstayed is None:
                door.blocker_overstayed = self.overstayed(t, rid)
                door.blocker_kind = self.blocker_kind(t, rid)
            if self.rule.arrive:
                if not door.arrived:
                    assert self.apply("arrive", t, rid) is True
                    door.arrived = True
                unit = self.host_unit(t, rid, door.request.size, door.ready)
                if unit is not None:
                    seated = self.apply("seat", t, rid, unit)
                    assert not isinstance(seated, Rejected), seated
                    self.tally.seated_elsewhere += 1
                    self.sat(rid, t, door.request.size, door.request.dwell_z, door=door)
                    return
        elif result.code == errors.RESERVATION_NOT_ACTIVE and not self.rule.arrive:
            # The old system expired the booking of guests standing at the door.
            self.tally.no_show_present += 1
            pid = rid + "/walk-in"
            door.waitlisted = pid
            queued = self.apply("walk_in", t, pid, door.request.size)
            leave_at = door.ready + BOOKED_PATIENCE
            self.queued[pid] = Queued(
                door.request.size, t, leave_at, door.request.dwell_z, None, door
            )
            if isinstance(queued, str) and queued.startswith("seated"):
                self.notice_seated(t)
            return
        else:
            raise AssertionError(f"check_in {rid} at {t}: {result}")
        if self.rule.arrive and t == door.ready + PROMISE_MINUTES + 1:
            self.diagnose_break(t, rid, door.request.size)
        if t >= door.ready + BOOKED_PATIENCE:
            assert self.rule.arrive
            self.apply("cancel", t, rid)
            self.tally.turned_away += 1
            self.broken(door)
            del self.doors[rid]

    def sitting_at(self, rid: str) -> Iterator[tuple[str, Any]]:
        """(party id, party) of each party sitting at `rid`'s tables."""
        reservation = self.stand.book.get(rid)
        assert reservation is not None
        for table in reservation.tables:
            pid = self.stand.occupant[table]
            if pid is not None:
                yield pid, self.stand.parties[pid]

    def overstayed(self, t: int, rid: str) -> bool:
        """Is a party sitting at `rid`'s tables past its turn (seated + turn <= now)?"""
        for pid, party in self.sitting_at(rid):
            size = party.size if party.size is not None else self.meta[pid]["party_size"]
            assert party.seated_at is not None
            if party.seated_at + self.r.turns[size] > t:
                return False
        return True

    def diagnose_break(self, t: int, rid: str, size: int) -> None:
        """The floor at the minute a booked party's promise breaks (see Tally.brk_*)."""
        tally, stand = self.tally, self.stand
        tally.brk_seen += 1
        reservation = stand.book.get(rid)
        assert reservation is not None
        ends = [self.leaves_at[p] for x in reservation.tables if (p := stand.occupant[x])]
        tally.brk_own_frees_in.append(max(ends, default=t) - t)
        empty = [
            (unit, tables)
            for _, _, unit, tables in self.units.get(size, ())
            if all(stand.occupant[x] is None for x in tables)
        ]
        held = [u for u in empty if any(stand.book.holder(x, t) not in (None, rid) for x in u[1])]
        if len(held) < len(empty):
            tally.brk_fit_free += 1
        elif held:
            tally.brk_fit_held += 1
            tally.brk_fit_held_swappable += any(
                self.rehome(t, tables, size, rid) is not None for _, tables in held
            )
        elif any(
            stand.occupant[x.id] is None and x.seats >= size for x in stand.floor.tables
        ) and not stand.floor.is_large(size):
            tally.brk_bigger += 1
        else:
            tally.brk_nothing += 1
            shuffle = self.shuffle(t, size)
            if shuffle is not None:
                tally.brk_shuffle += 1
                tally.brk_shuffle_fresh += t - shuffle[3] <= SHUFFLE_FRESH

    def size_of(self, pid: str) -> int:
        party = self.stand.parties[pid]
        return party.size if party.size is not None else self.meta[pid]["party_size"]

    def shuffle(self, t: int, size: int) -> tuple[str, str, str, int] | None:
        """Nothing empty seats `size`: could a seated party move to an empty table that
        seats it, leaving a table that seats `size`? (party, its table, the empty table,
        seated at), the most recently seated first; single tables only."""
        stand = self.stand
        floor = stand.floor
        if floor.is_large(size):
            return None
        empty = [x for x in floor.tables if stand.occupant[x.id] is None]
        if not empty:
            return None
        best: tuple[str, str, str, int] | None = None
        for table in floor.tables:
            pid = stand.occupant[table.id]
            if pid is None or table.seats < size:
                continue
            party = stand.parties[pid]
            if len(party.tables) != 1 or party.seated_at is None:
                continue
            m = self.size_of(pid)
            to = next((x for x in empty if x.seats >= m), None)
            if to is None:
                continue
            if best is None or party.seated_at > best[3]:
                best = (pid, table.id, to.id, party.seated_at)
        return best

    def rehome(
        self,
        t: int,
        tables: tuple[str, ...],
        size: int,
        own: str | None = None,
        floor_now: list[Taken] | None = None,
    ) -> dict[str, str] | None:
        """If a party of `size` sat down at `tables` now for its turn, could every
        still-booked reservation there that starts within that turn (not arrived, not `own`)
        get another unit at its own `at`, by PRODUCT.md 3 (occupancy with overstay, the
        conflict rule, choose_unit's table choice)? Returns reservation -> new unit, or None.
        Reservations already arrived at the door make it None."""
        stand = self.stand
        end = t + self.r.turns[size]
        displaced = [
            res
            for res in stand.book.booked()
            if res.id != own and res.at < end and set(res.tables) & set(tables)
        ]
        if any(res.arrived for res in displaced):
            return None
        gone = {(res.tables, res.at) for res in displaced}
        mine = stand.book.get(own) if own is not None else None
        if mine is not None:
            gone.add((mine.tables, mine.at))
        taken = [
            x
            for x in (floor_now if floor_now is not None else occupied(self.r, stand, self.meta, t))
            if x.at is None or (x.tables, x.at) not in gone
        ]
        taken.append(Taken(tables, t, end))
        plan: dict[str, str] = {}
        for res in sorted(displaced, key=lambda r: r.at):
            n = self.meta[res.id]["party_size"]
            unit = choose_unit(stand.floor, taken, res.at, n, self.r.turns)
            if unit is None:
                return None
            plan[res.id] = unit
            taken.append(
                Taken(stand._unit(unit) or (unit,), res.at, res.at + self.r.turns[n], res.at)
            )
        return plan

    def idle_tables(self, t: int) -> None:
        """Count this minute's empty tables that a waiting walk-in fits, by what kept the
        pass off them."""
        stand, tally = self.stand, self.tally
        if not stand.waiting:
            return
        floor = stand.floor
        for table in floor.tables:
            if stand.occupant[table.id] is not None:
                continue
            fits = [
                (p, p.size)
                for p in stand.waiting.values()
                if p.size is not None and p.size <= table.seats and not floor.is_large(p.size)
            ]
            if not fits:
                continue
            if stand.book.holder(table.id, t) is not None:
                tally.idle_held += 1
                continue
            nxt = stand.book.next_at(table.id)
            protected = {p.id for p, n in fits if nxt is not None and nxt < t + floor.turn(n)}
            if len(protected) == len(fits):
                tally.idle_protected += 1
                self.saw_protected.update(protected)
            elif all(
                n < table.smallest_party and t - p.arrival < 30
                for p, n in fits
                if p.id not in protected
            ):
                tally.idle_roomy += 1
            else:
                tally.idle_claimed += 1

    def blocker_kind(self, t: int, rid: str) -> str:
        for pid, party in self.sitting_at(rid):
            if not party.reservation:
                return "walk-in by host" if pid in self.host_seated else "walk-in"
            booked = self.stand.book.get(pid)
            assert booked is not None
            return "booked late" if booked.tables == party.tables else "booked moved"
        return "?"

    def broken(self, door: Door) -> None:
        if door.blocker_overstayed:
            self.tally.broken_overstay += 1
        else:
            self.tally.broken_within_turn += 1
            kind = door.blocker_kind
            self.tally.blk[kind] = self.tally.blk.get(kind, 0) + 1

    def host_unit(self, t: int, rid: str, size: int, ready: int) -> str | None:
        """Where the host seats arrived guests whose own table is busy (see the docstring)."""
        if self.host.startswith(HOST_LOOK):
            unit = self.safe_unit(t, size, rid)
            if unit is not None or "late" not in self.host or t < ready + PROMISE_MINUTES:
                return unit
            return self.board_unit(t, rid, size)
        if self.host == HOST_FREE_BY_TURN:  # free for (now, n), as a booking for now is chosen
            taken = occupied(self.r, self.stand, self.meta, t)
            return choose_unit(self.stand.floor, taken, t, size, self.r.turns)
        return self.board_unit(t, rid, size)

    def board_unit(self, t: int, rid: str, size: int) -> str | None:
        stand = self.stand
        for _, _, unit, tables in self.units.get(size, ()):  # fewest seats, floor order
            if any(stand.occupant[x] is not None for x in tables):
                continue
            if self.host != HOST_API and any(
                stand.book.holder(x, t) not in (None, rid) for x in tables
            ):
                continue
            return unit
        return None

    def safe_unit(self, t: int, size: int, own: str | None = None) -> str | None:
        """The empty unit seating `size` (fewest seats, then floor order; roominess
        overridden) where sitting down now hurts no booking: first one with no booking to
        re-home, else one whose bookings `rehome` can place elsewhere."""
        stand = self.stand
        later: str | None = None
        floor_now: list[Taken] | None = None
        for unit, tables in self.roomy_units[size]:
            if any(stand.occupant[x] is not None for x in tables):
                continue
            if self.clear(t, tables, size, own):
                return unit
            if later is not None or any(stand.book.holder(x, t) not in (None, own) for x in tables):
                continue  # a table held now: its booking is due within 15 minutes, never re-homed
            if floor_now is None:
                floor_now = occupied(self.r, stand, self.meta, t)
            if self.rehome(t, tables, size, own, floor_now) is not None:
                later = unit
        return later

    def clear(self, t: int, tables: tuple[str, ...], size: int, own: str | None) -> bool:
        """No still-booked reservation but `own` on `tables` starts within size's turn."""
        end = t + self.r.turns[size]
        for x in tables:
            if self.stand.book.holder(x, t) not in (None, own):
                return False
            for at in self.stand.book._booked_ats.get(x, ()):
                if at >= end:
                    break
                if self.stand.book._booked_at_owner[(x, at)] != own:
                    return False
        return True

    def host_walk_ins(self, t: int) -> None:
        """Lookahead host, walk-ins: seat waiting walk-ins (oldest first) that the pass
        leaves out at a safe empty table."""
        stand = self.stand
        if not stand.waiting or not stand._free:
            return
        for pid, party in list(stand.waiting.items()):
            assert party.size is not None
            if not stand._free:
                return
            unit = self.safe_unit(t, party.size)
            if unit is None:
                continue
            seated = self.apply("seat", t, pid, unit)
            assert not isinstance(seated, Rejected), seated
            self.host_seated.add(pid)
            self.tally.walk_ins_by_host += 1
        self.notice_seated(t)

    def walk_in(self, t: int, w: WalkIn) -> None:
        self.tally.walk_ins += 1
        quote = self.apply("quote", t, w.size)
        assert isinstance(quote, int), quote
        if quote > BALK_QUOTE:
            self.tally.balked += 1
            return
        result = self.apply("walk_in", t, w.pid, w.size)
        assert isinstance(result, str), result
        if result.startswith("seated"):
            self.sat(w.pid, t, w.size, w.dwell_z)
        else:
            self.queued[w.pid] = Queued(w.size, t, t + quote + WALK_IN_PATIENCE, w.dwell_z, quote)

    def notice_seated(self, t: int) -> None:
        """Waitlisted parties the pass seated during this minute's operations."""
        for pid in list(self.queued):
            party = self.stand.parties[pid]
            if party.state is PartyState.SEATED:
                q = self.queued.pop(pid)
                seated_at = party.seated_at
                assert seated_at is not None
                if q.quote is not None:
                    self.tally.quote_errors.append(abs(seated_at - q.since - q.quote))
                door = q.door
                self.sat(pid, seated_at, q.size, q.dwell_z, door=door, walk_in=door is None)

    def gone_from_queue(self, pid: str) -> None:
        q = self.queued.pop(pid)
        if q.door is not None:
            self.tally.turned_away += 1
            self.broken(q.door)
            del self.doors[q.door.request.rid]
        else:
            self.tally.walked_out += 1
            self.tally.left_saw_protected += pid in self.saw_protected

    def sat(
        self,
        pid: str,
        t: int,
        size: int,
        dwell_z: float,
        door: Door | None = None,
        walk_in: bool = True,
    ) -> None:
        """A party sat down at `t`: count it and schedule its table's freeing."""
        tally = self.tally
        party = self.stand.parties[pid]
        median = self.r.turns[size] * DWELL_MEDIAN
        dwell = max(1, round(median * math.exp(self.sigma * dwell_z)))
        self.leaving.setdefault(t + dwell, []).append(party.tables[0])
        self.leaves_at[pid] = t + dwell
        tally.covers += size
        start, end = max(t, OPEN), min(t + dwell, CLOSE)
        tally.table_minutes += len(party.tables) * max(0, end - start)
        if door is not None:
            del self.doors[door.request.rid]
            tally.booked_covers += size
            wait = max(0, t - door.ready)  # guests who came early and sat early waited 0
            tally.waits.append(wait)
            if wait <= PROMISE_MINUTES and door.waitlisted is None:
                tally.on_time += 1
                tally.tight_on_time += door.tight
            else:
                self.broken(door)
        elif walk_in:
            tally.walk_in_covers += size


def roomy_units(floor: FloorPlan) -> dict[int, list[tuple[str, tuple[str, ...]]]]:
    """Party size -> the units the host may seat it at, roominess overridden: any table
    with enough seats (below the large threshold) or any combo with enough capacity, fewest
    seats first, then floor-plan / COMBOS order."""
    out: dict[int, list[tuple[str, tuple[str, ...]]]] = {}
    for n in range(1, floor.max_party + 1):
        units: list[tuple[int, int, str, tuple[str, ...]]] = []
        if not floor.is_large(n):
            for i, t in enumerate(floor.tables):
                if n <= t.seats:
                    units.append((t.seats, i, t.id, (t.id,)))
        else:
            for j, c in enumerate(floor.combos):
                if n <= c.capacity:
                    units.append((c.capacity, len(floor.tables) + j, c.id, c.tables))
        out[n] = [(unit, tables) for _, _, unit, tables in sorted(units)]
    return out


def host_units(floor: FloorPlan) -> dict[int, list[tuple[int, int, str, tuple[str, ...]]]]:
    """Party size -> the units that fit it, as (seats, order, id, tables), fewest seats
    first (PRODUCT.md 3; the order of DayBook.free_units)."""
    out: dict[int, list[tuple[int, int, str, tuple[str, ...]]]] = {}
    for n in range(1, floor.max_party + 1):
        units: list[tuple[int, int, str, tuple[str, ...]]] = []
        if not floor.is_large(n):
            for i, t in enumerate(floor.tables):
                if t.smallest_party <= n <= t.seats:
                    units.append((t.seats, i, t.id, (t.id,)))
        else:
            for j, c in enumerate(floor.combos):
                if c.min_party <= n <= c.capacity:
                    units.append((c.capacity, len(floor.tables) + j, c.id, c.tables))
        out[n] = sorted(units)
    return out


# ---------------------------------------------------------------- many nights


def add(total: Tally, one: Tally) -> None:
    for f in dataclasses.fields(Tally):
        value = getattr(one, f.name)
        if isinstance(value, list):
            getattr(total, f.name).extend(value)
        elif isinstance(value, dict):
            mine = getattr(total, f.name)
            for k, v in value.items():
                mine[k] = mine.get(k, 0) + v
        else:
            setattr(total, f.name, getattr(total, f.name) + value)


def simulate(
    venue: Venue, nights: int, seed: int, sigma: float, host: str = HOST_BOARD
) -> dict[str, Tally]:
    floors = {
        OLD.name: dataclasses.replace(venue.restaurant.floor, protect_reservations=False),
        NEW.name: dataclasses.replace(venue.restaurant.floor, protect_reservations=True),
    }
    totals = {rule.name: Tally() for rule in (OLD, NEW)}
    for i in range(nights):
        night = draw_night(random.Random(f"{seed}:{venue.name}:{i}"), venue)
        for rule in (OLD, NEW):
            evening = Evening(venue, rule, floors[rule.name], sigma, host)
            add(totals[rule.name], evening.serve(night))
    return totals


def p95(values: Sequence[int]) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)])


def mean(values: Sequence[int]) -> float:
    return statistics.fmean(values) if values else math.nan


def report(venue: Venue, totals: dict[str, Tally], seconds: float) -> None:
    old, new = totals[OLD.name], totals[NEW.name]
    n = old.nights

    def per_night(x: int) -> str:
        return f"{x / n:.1f}"

    def pct(a: int, b: int) -> str:
        return f"{100 * a / b:.1f}" if b else "-"

    rows: list[tuple[str, Callable[[Tally], str]]] = [
        ("nights", lambda t: str(t.nights)),
        ("booking requests / night", lambda t: per_night(t.asked)),
        ("booked / asked (%)", lambda t: pct(t.booked, t.asked)),
        ("  asked 19:00-20:00, got that slot (%)", lambda t: pct(t.peak_got, t.peak_asked)),
        ("covers served / night", lambda t: per_night(t.covers)),
        ("  booked covers / night", lambda t: per_night(t.booked_covers)),
        ("  walk-in covers / night", lambda t: per_night(t.walk_in_covers)),
        ("booked parties that came / night", lambda t: per_night(t.shown)),
        ("door promise: seated <= 10 min (%)", lambda t: pct(t.on_time, t.shown)),
        (
            "  back to back (< 15 min after a meal)",
            lambda t: f"{pct(t.tight_on_time, t.tight_shown)} of {pct(t.tight_shown, t.shown)}",
        ),
        (
            "  the others",
            lambda t: pct(t.on_time - t.tight_on_time, t.shown - t.tight_shown),
        ),
        ("booked wait, mean (min)", lambda t: f"{mean(t.waits):.1f}"),
        ("booked wait, p95 (min)", lambda t: f"{p95(t.waits):.0f}"),
        ("  broken: table's party past its turn", lambda t: str(t.broken_overstay)),
        ("  broken: table's party within its turn", lambda t: str(t.broken_within_turn)),
        ("    within: walk-in/booked late/moved", lambda t: blk_row(t)),
        ("  seated at another unit by the host", lambda t: str(t.seated_elsewhere)),
        ("  at the break (new): a fitting unit empty", lambda t: brk_row(t)),
        ("    held, its booking re-homeable / not", lambda t: brk_held_row(t)),
        ("    larger table empty / nothing empty", lambda t: f"{t.brk_bigger}/{t.brk_nothing}"),
        ("    nothing: a seated party could move / fresh", lambda t: shuffle_row(t)),
        ("    own table frees in, median/p95 (min)", lambda t: frees_row(t)),
        ("booked turned away at the door", lambda t: str(t.turned_away)),
        ("walk-ins seated by the host's hand", lambda t: str(t.walk_ins_by_host)),
        ("booked marked no-show while present", lambda t: str(t.no_show_present)),
        ("walk-in quote error, mean abs (min)", lambda t: f"{mean(t.quote_errors):.1f}"),
        ("  walk-ins quoted and seated", lambda t: str(len(t.quote_errors))),
        ("walk-ins / balked at quote / left queue", lambda t: walk_in_row(t)),
        ("  of those left, saw a protected table idle", lambda t: str(t.left_saw_protected)),
        ("table-minutes idle, walk-in it fits waits", lambda t: idle_row(t)),
        ("  held / protected / roomy / claim", lambda t: idle_split(t)),
        ("table utilisation 17:30-23:00 (%)", lambda t: pct(t.table_minutes, t.capacity_minutes)),
    ]
    tables = len(venue.restaurant.floor.tables)
    print(f"\n{venue.name}: {tables} tables, {venue.requests:g} booking requests and "
          f"{venue.walk_ins_per_hour:g} walk-ins/hour per night ({seconds:.1f} s)")  # fmt: skip
    print(f"  {'':40s} {'old rule':>14s} {'new rule':>14s}")
    for label, cell in rows:
        print(f"  {label:40s} {cell(old):>14s} {cell(new):>14s}")
    promise = 100 * new.on_time / new.shown if new.shown else math.nan
    drop = 100 * (old.covers - new.covers) / old.covers if old.covers else math.nan
    ok_promise = "ok" if promise >= TARGET_PROMISE else "MISSED"
    ok_covers = "ok" if drop <= TARGET_COVERS else "MISSED"
    print(f"  target: door promise >= {TARGET_PROMISE:.0f}% (new): {promise:.1f}%  -> {ok_promise}")
    print(f"  target: covers within {TARGET_COVERS:.0f}% of old: {-drop:+.1f}%  -> {ok_covers}")
    if CHOICE != CHOICE_CONTRACT and CHOICE_COUNTS["booked"]:
        c = CHOICE_COUNTS
        print(f"  choice {CHOICE}: of {c['booked']} bookings (new) {pct(c['tied'], c['booked'])}% "
              f"had options, {pct(c['moved'], c['booked'])}% got another unit")  # fmt: skip


def blk_row(t: Tally) -> str:
    kinds = ("walk-in", "booked late", "booked moved")
    return "/".join(str(t.blk.get(k, 0)) for k in kinds)


def shuffle_row(t: Tally) -> str:
    return f"{t.brk_shuffle}/{t.brk_shuffle_fresh}"


def brk_row(t: Tally) -> str:
    return f"{t.brk_fit_free + t.brk_fit_held} of {t.brk_seen}" if t.brk_seen else "-"


def brk_held_row(t: Tally) -> str:
    swappable = t.brk_fit_held_swappable
    return f"{swappable}/{t.brk_fit_held - swappable}" if t.brk_seen else "-"


def frees_row(t: Tally) -> str:
    values = t.brk_own_frees_in
    return f"{statistics.median(values):.0f}/{p95(values):.0f}" if values else "-"


def idle_row(t: Tally) -> str:
    total = t.idle_held + t.idle_protected + t.idle_roomy + t.idle_claimed
    return f"{total / t.nights:.0f}/night"


def idle_split(t: Tally) -> str:
    return f"{t.idle_held}/{t.idle_protected}/{t.idle_roomy}/{t.idle_claimed}"


def walk_in_row(t: Tally) -> str:
    return f"{t.walk_ins}/{t.balked}/{t.walked_out}"


# --sweep: the levers a restaurant has against broken door promises, each run as above,
# then the model's own assumptions (demand, the dwell's spread) that are not levers.
# (label, changeover minutes, median dwell / turn, demand factor, sigma factor); a row per
# setting, both rules each time. Demand and sigma multiply the run's own --demand, --sigma.
# label, changeover, median stay / turn, demand, dwell spread, a guest's reach (minutes)
SWEEP: tuple[tuple[str, int, float, float, float, int], ...] = (
    ("none: turns = median stay", 0, 1.0, 1.0, 1.0, 30),
    ("changeover 5 min", 5, 1.0, 1.0, 1.0, 30),
    ("changeover 10 min", 10, 1.0, 1.0, 1.0, 30),
    ("changeover 15 min", 15, 1.0, 1.0, 1.0, 30),
    ("changeover 20 min", 20, 1.0, 1.0, 1.0, 30),
    ("turns 11% above the median stay", 0, 0.9, 1.0, 1.0, 30),
    ("turns 18% above the median stay", 0, 0.85, 1.0, 1.0, 30),
    ("turns 25% above the median stay", 0, 0.8, 1.0, 1.0, 30),
    ("(model) demand x0.5", 0, 1.0, 0.5, 1.0, 30),
    ("(model) demand x0.3", 0, 1.0, 0.3, 1.0, 30),
    ("(model) dwell spread x0.6", 0, 1.0, 1.0, 0.6, 30),
    ("(model) dwell spread x0.4", 0, 1.0, 1.0, 0.4, 30),
    ("(model) guests take +/-2 h", 0, 1.0, 1.0, 1.0, 120),
    ("(model) +/-2 h, turns 18% above", 0, 0.85, 1.0, 1.0, 120),
    ("(model) +/-2 h, turns 25% above", 0, 0.8, 1.0, 1.0, 120),
)


def sweep(venues: Sequence[tuple[Venue, int]], seed: int, sigma: float, host: str) -> None:
    """The trade-off the product owner chooses on: per venue and lever setting, the new
    rule's door promise and its covers against the old rule's, and whether each target is
    met. A changeover only changes the new rule; a median stay below the turn changes the
    guests, so both rules (the old one ignores turns). The "(model)" rows change what the
    restaurant cannot: fewer requests, or stays closer to their median; they show how far
    from the model's busy night the two targets meet, not a setting to choose. "+/-2 h":
    a guest whose time is full takes the nearest open slot up to two hours away (the
    partner shows the evening's open times) instead of giving up after 30 minutes."""
    global CHANGEOVER, DWELL_MEDIAN, NEARBY
    for venue, nights in venues:
        if nights <= 0:
            continue
        print(f"\n{venue.name}: {nights} nights")
        print(f"  {'lever':34s} {'door promise (new)':>18s}   {'covers/night old, new':>25s}")
        both: list[str] = []
        for label, changeover, median, demand, spread, reach in SWEEP:
            CHANGEOVER, DWELL_MEDIAN = changeover, median
            NEARBY = tuple(range(SLOT_MINUTES, reach + 1, SLOT_MINUTES))
            scaled = dataclasses.replace(venue, requests=venue.requests * demand)
            totals = simulate(scaled, nights, seed, sigma * spread, host)
            old, new = totals[OLD.name], totals[NEW.name]
            promise = 100 * new.on_time / new.shown if new.shown else math.nan
            change = 100 * (new.covers - old.covers) / old.covers if old.covers else math.nan
            door_ok, covers_ok = promise >= TARGET_PROMISE, -change <= TARGET_COVERS
            if door_ok and covers_ok:
                both.append(label)
            print(
                f"  {label:34s} {promise:12.1f}% {'ok' if door_ok else '--':>4s}   "
                f"{old.covers / old.nights:7.1f} {new.covers / new.nights:7.1f} "
                f"{change:+6.1f}% {'ok' if covers_ok else '--':>3s}",
                flush=True,
            )
        print(
            f"  targets: door promise >= {TARGET_PROMISE:.0f}%, covers within"
            f" {TARGET_COVERS:.0f}% of the old rule; both met: "
            + (", ".join(both) if both else "by no setting")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=200, help="nights at Marlowe's")
    parser.add_argument("--nights-40", type=int, default=50, help="nights on 40 tables")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sigma", type=float, default=0.25, help="log-normal dwell spread")
    parser.add_argument("--demand", type=float, default=1.0, help="scale booking requests")
    parser.add_argument(
        "--changeover", type=int, default=0, help="minutes of reset booked after each meal (new)"
    )
    parser.add_argument(
        "--dwell-median",
        type=float,
        default=1.0,
        help="median dwell as a share of the turn time (0.9: turns set 11%% above the median "
        "dwell; both rules)",
    )
    parser.add_argument(
        "--flex",
        type=int,
        default=30,
        help="minutes from the asked time a guest still takes when it is full (default 30; "
        "nearest first)",
    )
    parser.add_argument(
        "--host",
        choices=HOSTS,
        default=HOST_BOARD,
        help="where the host seats arrived guests at a busy table (new rule)",
    )
    parser.add_argument(
        "--choice",
        choices=CHOICES,
        default=CHOICE_CONTRACT,
        help="what-if table choice for a booking under the new rule (last tie-break)",
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="one row per lever setting (changeover, turn times above the median stay) "
        "instead of the full table: the trade-off, per floor",
    )
    parser.add_argument(
        "--check-choice",
        action="store_true",
        help="assert the what-if choices start from choose_unit's own pick (slower)",
    )
    args = parser.parse_args()
    global CHANGEOVER, CHOICE, CHECK_CHOICE, DWELL_MEDIAN, NEARBY
    if not 0.2 <= args.dwell_median <= 2.0:
        parser.error("--dwell-median is a share of the turn time: 0.2 to 2.0")
    if not 0 <= args.flex <= LAST_SEATING - OPEN:
        parser.error(f"--flex is minutes from the asked time: 0 to {LAST_SEATING - OPEN}")
    NEARBY = tuple(range(SLOT_MINUTES, args.flex + 1, SLOT_MINUTES))
    CHANGEOVER = args.changeover
    DWELL_MEDIAN = args.dwell_median
    CHOICE = args.choice
    CHECK_CHOICE = args.check_choice
    with MARLOWES_FILE.open("rb") as f:
        data = tomllib.load(f)
    venues = [
        (Venue("Marlowe's", load_restaurant(MARLOWES_FILE), 30 * args.demand, 2.0), args.nights),
        (Venue("40 tables", forty_tables(data), 200 * args.demand, 14.0), args.nights_40),
    ]
    print(
        f"service nights, seed {args.seed}, dwell sigma {args.sigma}, "
        f"demand x{args.demand}, host seats arrived guests at: {args.host}, "
        + (
            "changeover and median dwell: per row (--sweep)"
            if args.sweep
            else f"changeover {args.changeover} min, median dwell {args.dwell_median:g} x turn, "
            f"a full slot: guests take another up to {args.flex} min away"
        )
        + ("" if args.choice == CHOICE_CONTRACT else f", booking table choice: {args.choice}")
    )
    if args.sweep:
        sweep(venues, args.seed, args.sigma, args.host)
        return
    for venue, nights in venues:
        if nights <= 0:
            continue
        start = time.perf_counter()
        CHOICE_COUNTS.update(dict.fromkeys(CHOICE_COUNTS, 0))
        totals = simulate(venue, nights, args.seed, args.sigma, args.host)
        report(venue, totals, time.perf_counter() - start)


if __name__ == "__main__":
    main()
