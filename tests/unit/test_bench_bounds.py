"""The minimum the topics benchmark reports, computed apart from the placement algorithm and checked exactly."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils import placement
from testkit.bench.bounds import exact_minimum_moves, lower_bound_moves, new_replicas_at_least, replicas_even

SHAPES = [
    # (brokers before, brokers after, partitions): a broker added to one DC, or one to each.
    ({"A": [1, 2], "B": [11, 12]}, {"A": [1, 2, 3], "B": [11, 12]}, 3),
    ({"A": [1, 2], "B": [11, 12]}, {"A": [1, 2, 3], "B": [11, 12]}, 2),
    ({"A": [1, 2], "B": [11, 12]}, {"A": [1, 2, 3], "B": [11, 12, 13]}, 2),
]


@pytest.mark.parametrize(("before_shape", "after_shape", "partitions"), SHAPES)
def test_the_closed_form_bound_is_the_exact_minimum_on_small_shapes(before_shape, after_shape, partitions):
    before = placement.place(before_shape, 4, partitions)
    exact = exact_minimum_moves(before, after_shape, 4)
    assert lower_bound_moves(before, after_shape) == exact


def test_the_bound_counts_only_brokers_that_held_nothing():
    before = placement.place({"A": [1, 2], "B": [11, 12]}, 4, 10)
    assert lower_bound_moves(before, {"A": [1, 2], "B": [11, 12]}) == 0
    assert lower_bound_moves(before, {"A": [1, 2, 3, 4], "B": [11, 12]}) == 2 * (2 * 10 // 4)


def test_a_search_too_large_to_try_is_refused():
    before = placement.place({"A": [1, 2], "B": [11, 12]}, 4, 12)
    with pytest.raises(ValueError, match="too many"):
        exact_minimum_moves(before, {"A": [1, 2, 3], "B": [11, 12]}, 4)


def test_even_means_within_one_replica_in_each_dc():
    shape = {"A": [1, 2, 3], "B": [11, 12]}
    assert replicas_even({0: [1, 2, 11, 12], 1: [3, 1, 12, 11]}, shape)
    assert not replicas_even({0: [1, 2, 11, 12], 1: [2, 1, 12, 11]}, shape), "broker 3 holds none, 1 and 2 two"


def test_a_partition_gains_at_least_the_replicas_its_new_factor_adds():
    assert new_replicas_at_least([101, 201, 102], 4) == 1
    assert new_replicas_at_least([101, 201, 102, 202], 4) == 0
    assert new_replicas_at_least([101], 4) == 3
