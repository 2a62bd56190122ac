"""Maximum matching on small graphs: the number of combos a floor can seat at once."""

from itertools import combinations

from hypothesis import given
from hypothesis import strategies as st

from feed.floor.matching import Matcher, edges_in_some_maximum_matching, maximum_matching_size


def brute_force_size(edges: list[tuple[str, str]]) -> int:
    for k in range(len(edges), 0, -1):
        for chosen in combinations(edges, k):
            ends = [v for e in chosen for v in e]
            if len(ends) == len(set(ends)):
                return k
    return 0


def test_a_graph_without_edges_has_an_empty_matching() -> None:
    assert maximum_matching_size([]) == 0


def test_disjoint_edges_are_all_matched() -> None:
    assert maximum_matching_size([("A", "B"), ("C", "D"), ("E", "F")]) == 3


def test_a_triangle_matches_only_one_edge() -> None:
    assert maximum_matching_size([("A", "B"), ("B", "C"), ("A", "C")]) == 1


def test_a_path_of_four_edges_matches_two() -> None:
    assert maximum_matching_size([("A", "B"), ("B", "C"), ("C", "D"), ("D", "E")]) == 2


def test_the_middle_of_a_three_edge_path_lies_in_no_maximum_matching() -> None:
    assert edges_in_some_maximum_matching([("A", "B"), ("B", "C"), ("C", "D")]) == [
        True,
        False,
        True,
    ]


def test_a_mask_restricts_the_matching_to_its_edges() -> None:
    matcher = Matcher([("A", "B"), ("B", "C"), ("C", "D")])
    assert matcher.size(0b010) == 1
    assert matcher.size(0b011) == 1
    assert matcher.size(0b101) == 2


def test_an_edge_outside_the_mask_is_in_no_maximum_matching_of_it() -> None:
    matcher = Matcher([("A", "B"), ("C", "D")])
    assert not matcher.in_some_maximum(0b01, 1)


graphs = st.lists(
    st.tuples(st.sampled_from("ABCDEFG"), st.sampled_from("ABCDEFG")).filter(
        lambda e: e[0] != e[1]
    ),
    max_size=9,
)


@given(graphs)
def test_the_matching_size_equals_the_best_of_all_edge_subsets(
    edges: list[tuple[str, str]],
) -> None:
    assert maximum_matching_size(edges) == brute_force_size(edges)


@given(graphs)
def test_an_edge_is_in_some_maximum_matching_when_a_best_subset_uses_it(
    edges: list[tuple[str, str]],
) -> None:
    best = brute_force_size(edges)
    expected = [
        best == 1 + brute_force_size([f for f in edges if not set(f) & set(e)]) for e in edges
    ]
    assert edges_in_some_maximum_matching(edges) == expected
