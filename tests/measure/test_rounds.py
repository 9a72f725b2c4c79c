"""The one timing driver's order: whatever the machine does meanwhile falls on every worker alike.

Its timing is tested with real processes of known speed: smoke's pairs in test_known_ratio.py,
tune's race in test_race.py."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from tfbuild.measure.run import order


@given(st.integers(min_value=1, max_value=7), st.integers(min_value=0, max_value=50))
def test_over_two_cycles_each_goes_first_alike_and_each_pair_runs_both_ways_alike(
    count: int, start: int
) -> None:
    names = [chr(ord("a") + i) for i in range(count)]
    rounds = [order(names, index) for index in range(start * 2 * count, (start + 1) * 2 * count)]
    assert all(sorted(found) == names for found in rounds)
    firsts = [found[0] for found in rounds]
    assert all(firsts.count(name) == 2 for name in names), rounds
    for a, b in itertools.combinations(names, 2):
        before = sum(found.index(a) < found.index(b) for found in rounds)
        assert before == count, (a, b, rounds)


def test_two_workers_take_turns_abba() -> None:
    assert [order(["a", "b"], index) for index in range(4)] == [
        ["a", "b"],
        ["b", "a"],
        ["b", "a"],
        ["a", "b"],
    ]


def test_no_names_no_order() -> None:
    assert order([], 3) == []
