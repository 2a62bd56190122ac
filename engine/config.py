"""The seed's constants for Marlowe's Kitchen (host-stand-rules.txt, config.py).

Other restaurants pass their own floor plan; these stay the default.
"""

DWELL_MINUTES = {2: 45, 4: 70, 6: 90}
QUOTE_CAP_MINUTES = 120
COMBOS = [("T5", "T6"), ("T3", "T4"), ("T1", "T3")]  # in this order

# Floor plan in floor-plan order: (table id, seats).
TABLES = [("T1", 4), ("T2", 2), ("T3", 6), ("T4", 2), ("T5", 4), ("T6", 4)]

MAX_PARTY_SIZE = 10
ROOMINESS_SPARE_SEATS = 2  # more spare seats than this is "too roomy"
ROOMY_AFTER_MINUTES = 30  # waited this long: roominess no longer applies
CLAIM_AFTER_MINUTES = 20  # a large party waiting this long may claim a pair
HOLD_BEFORE_MINUTES = 15  # a hold starts at `at - 15` (inclusive)
HOLD_AFTER_MINUTES = 15  # and ends at `at + 15` (exclusive): no-show
CONFLICT_MINUTES = 30  # two reservations on a table must be this far apart
LARGE_QUOTE_MINUTES = 100  # per large party in the queue, capped
LARGE_TURN_MINUTES = 120  # how long a large party keeps its pair (PRODUCT.md 1 and 3)
