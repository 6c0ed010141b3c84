"""The fewest replica copies a placement change can make, computed apart from the placement algorithm.

The topics benchmark reports how many replicas the algorithm copies when a
broker is added, against the minimum. That minimum must not come from the
algorithm's own output. Here it comes from the rules alone: the three rules
of module_utils/placement.py (checked by its violations()) and the even
spread of each DC's replicas over its brokers (a difference of at most one).

- lower_bound_moves(): a broker that held nothing must end with at least its
  DC's share of replicas, and each of those is a copy. A closed form, for any
  size.
- exact_minimum_moves(): every assignment the rules allow, tried one by one,
  for small shapes: the minimum itself. The unit tests hold the closed form
  to it.
"""

from __future__ import annotations

import itertools
from collections import Counter

from ansible_collections.stretch.kafka.plugins.module_utils import placement


def replicas_even(assignment, brokers_by_dc):
    """Whether each DC's brokers hold as many replicas as each other, give or take one."""
    held = Counter(b for replicas in assignment.values() for b in replicas)
    return all(max(held[b] for b in brokers) - min(held[b] for b in brokers) <= 1 for brokers in brokers_by_dc.values())


def lower_bound_moves(before, brokers_by_dc):
    """A lower bound of the copies any allowed placement of before's partitions onto brokers_by_dc needs.

    Each partition keeps at least placement.MIN_PER_DC replicas in each DC,
    so a DC of k brokers holds at least MIN_PER_DC x partitions replicas, and
    evened out, each of its brokers at least the floor of that over k. A
    broker that holds no replica in before gets all of its own by copies.
    """
    partitions = len(before)
    held_before = {b for replicas in before.values() for b in replicas}
    bound = 0
    for brokers in brokers_by_dc.values():
        share = placement.MIN_PER_DC * partitions // len(brokers)
        bound += share * sum(1 for b in brokers if b not in held_before)
    return bound


def allowed_lists(brokers_by_dc, rf):
    """Every replica list of rf brokers that keeps MIN_PER_DC in each DC with each DC's replicas together."""
    dcs = sorted(brokers_by_dc)
    lists = []
    for counts in itertools.product(range(placement.MIN_PER_DC, rf + 1), repeat=len(dcs)):
        if sum(counts) != rf:
            continue
        for order in itertools.permutations(range(len(dcs))):
            blocks = [itertools.permutations(brokers_by_dc[dcs[i]], counts[i]) for i in order]
            for chosen in itertools.product(*blocks):
                lists.append([b for block in chosen for b in block])
    return lists


def exact_minimum_moves(before, brokers_by_dc, rf, limit=2_000_000):
    """The fewest copies over every assignment the rules allow: brute force, for small shapes only.

    Refuses (ValueError) a search over more than limit assignments.
    """
    lists = allowed_lists(brokers_by_dc, rf)
    partitions = sorted(before)
    if len(lists) ** len(partitions) > limit:
        raise ValueError(f"{len(lists)}^{len(partitions)} assignments: too many to try one by one")
    best = None
    for chosen in itertools.product(lists, repeat=len(partitions)):
        target = dict(zip(partitions, chosen, strict=True))
        if not replicas_even(target, brokers_by_dc) or placement.violations(target, brokers_by_dc):
            continue
        moved = placement.moved_replicas(before, target)
        best = moved if best is None else min(best, moved)
    if best is None:
        raise ValueError("no assignment satisfies the rules")
    return best


def new_replicas_at_least(replicas, rf):
    """The replicas a partition must gain, whatever the placement, to go from its replica list to rf."""
    return max(0, rf - len(set(replicas)))
