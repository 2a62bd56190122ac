"""Maximum matching on a small general graph: the most combos that can be booked at once.

A matching is a set of edges (combos) with no shared vertex (table); `size(mask)` is the
largest one among the edges in `mask`, and an edge lies in some maximum matching exactly
when taking it leaves a graph whose maximum matching is one smaller.

Why exhaustive search and not Edmonds' blossom algorithm: a floor has few combos (about
15 at most) while it may have 40 tables, so the search branches on edges, not vertices.
Each step takes the lowest edge e of the mask or leaves it out; the answer is memoised by
edge bitmask, so there are at most 2**edges states (usually far fewer are reachable), and
the memo lives as long as the `Matcher`, so a restaurant-day asks each subgraph once. An
edge that touches no other edge of the mask is always taken (no branching), which keeps
sparse floors, the common case, linear.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence


class Matcher:
    """Maximum matchings of the subgraphs of one fixed edge list, subgraphs given as bitmasks.

    Bit i of a mask stands for `edges[i]`; the memo keyed by mask is valid for ever because
    the edge list never changes.
    """

    def __init__(self, edges: Sequence[tuple[Hashable, Hashable]]) -> None:
        self.edges = tuple(edges)
        self.all = (1 << len(self.edges)) - 1
        # touching[i]: the edges sharing a vertex with edge i, edge i itself included, so
        # `mask & ~touching[i]` is what remains once edge i is taken.
        self.touching = tuple(
            sum(1 << j for j, (c, d) in enumerate(self.edges) if {a, b} & {c, d})
            for a, b in self.edges
        )
        self._memo: dict[int, int] = {0: 0}

    def size(self, mask: int | None = None) -> int:
        """Number of edges of a maximum matching using only the edges in `mask` (default all)."""
        mask = self.all if mask is None else mask & self.all
        memo = self._memo
        found = memo.get(mask)
        if found is not None:
            return found
        low = mask & -mask
        e = low.bit_length() - 1
        touching = self.touching[e]
        best = 1 + self.size(mask & ~touching)
        if mask & touching != low:  # e has a neighbour here: leaving e out may do better
            best = max(best, self.size(mask & ~low))
        memo[mask] = best
        return best

    def in_some_maximum(self, mask: int, edge: int) -> bool:
        """Does edge number `edge` (in `mask`) belong to some maximum matching of `mask`?"""
        if not mask >> edge & 1:
            return False
        return 1 + self.size(mask & ~self.touching[edge]) == self.size(mask)


def maximum_matching_size(edges: Sequence[tuple[Hashable, Hashable]]) -> int:
    """The largest number of vertex-disjoint edges among `edges`."""
    return Matcher(edges).size()


def edges_in_some_maximum_matching(edges: Sequence[tuple[Hashable, Hashable]]) -> list[bool]:
    """For each edge, in order: does it lie in some maximum matching of the whole graph?"""
    matcher = Matcher(edges)
    return [matcher.in_some_maximum(matcher.all, i) for i in range(len(matcher.edges))]
