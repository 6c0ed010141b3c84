"""DC-aware replica placement for a two-DC stretch cluster.

Every partition's replica list satisfies three rules:

1. at least two replicas in each broker DC;
2. the replicas of one DC stand together, leader's DC first, so the first two
   replicas (the preferred leader and the next in line) share a DC and
   leadership stays in that DC when the leader's broker goes down;
3. preferred leaders are spread evenly: over the DCs (a difference of at most
   one, or exactly proportional to the given weights) and over the brokers of
   each DC (a difference of at most one). When the DCs have as many brokers
   each, or the weights follow the broker counts, that also makes the spread
   over all brokers at most one.

Example, brokers A1, A2 (DC A) and B1, B2 (DC B), RF 4, 4 partitions:
    p0 [A1, A2, B1, B2]   p1 [B1, B2, A1, A2]
    p2 [A2, A1, B2, B1]   p3 [B2, B1, A2, A1]

The placement is deterministic. Given a current assignment it repairs it in
place, and by default (a converge) that is all it does: a partition whose
list meets rules 1 and 2 keeps its replicas, whatever the other topics put
on the brokers; a partition whose list breaks them (a broker gone or leaving,
a DC short of replicas, a DC's replicas apart, another replication factor)
keeps every replica the rules allow and gets the rest copied; leadership
(which copies nothing) moves along the lists only where rule 3 asks for it.
Growing the partition count moves nothing. Balancing an existing topic, which
copies replicas of partitions that meet the rules, is asked for explicitly
(balance=True): the brokers of each DC are evened out with as few copies as
it can, and adding a broker then copies about what the new broker's share is.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter, defaultdict

MIN_PER_DC = 2


class PlacementError(ValueError):
    pass


def _dc_of(brokers_by_dc):
    return {b: dc for dc, brokers in brokers_by_dc.items() for b in brokers}


def check_shape(brokers_by_dc, rf):
    """Raise PlacementError saying why no placement can satisfy the rules."""
    if len(brokers_by_dc) != 2:
        raise PlacementError(f"placement needs exactly 2 broker DCs, got {len(brokers_by_dc)}: {sorted(brokers_by_dc)}")
    seen = Counter(b for brokers in brokers_by_dc.values() for b in brokers)
    dupes = sorted(b for b, n in seen.items() if n > 1)
    if dupes:
        raise PlacementError(f"brokers listed more than once: {dupes}")
    for dc, brokers in sorted(brokers_by_dc.items()):
        if len(brokers) < MIN_PER_DC:
            raise PlacementError(f"DC {dc} has {len(brokers)} broker(s); each DC needs at least {MIN_PER_DC}")
    total = sum(len(b) for b in brokers_by_dc.values())
    if rf < 2 * MIN_PER_DC:
        raise PlacementError(
            f"replication factor {rf} cannot put {MIN_PER_DC} replicas in each of 2 DCs; use at least 4"
        )
    if rf > total:
        raise PlacementError(f"replication factor {rf} is larger than the {total} brokers")


def split(rf, leader_size, other_size):
    """Replicas in the leader's DC and in the other DC: as even as the DC sizes allow."""
    low, high = max(MIN_PER_DC, rf - other_size), min(leader_size, rf - MIN_PER_DC)
    if low > high:
        raise PlacementError(f"RF {rf} cannot be split over DCs of {leader_size} and {other_size} brokers")
    return min(max(math.ceil(rf / 2), low), high)


def leader_dc_sequence(dcs, partitions, weights=None):
    """The leader's DC for each partition: round robin, or proportional to weights.

    Uses the largest-remainder method on every prefix, so each prefix of
    partitions is as close to the target proportion as whole numbers allow.
    """
    weights = weights or {dc: 1 for dc in dcs}
    missing = [dc for dc in dcs if weights.get(dc, 0) <= 0]
    if missing:
        raise PlacementError(f"leader weights must be positive for every broker DC; missing or zero: {missing}")
    total = sum(weights[dc] for dc in dcs)
    counts = dict.fromkeys(dcs, 0)
    order = []
    for p in range(partitions):
        # The DC furthest below its exact share of p + 1 leaders goes next.
        dc = max(dcs, key=lambda d: ((p + 1) * weights[d] / total - counts[d], -dcs.index(d)))
        counts[dc] += 1
        order.append(dc)
    return order


def cluster_load(assignments):
    """{"leaders": Counter, "replicas": Counter} per broker over assignments ([{p: [replicas]}, ...])."""
    leaders, replicas = Counter(), Counter()
    for assignment in assignments:
        for replica_list in assignment.values():
            if replica_list:
                leaders[replica_list[0]] += 1
                replicas.update(replica_list)
    return {"leaders": leaders, "replicas": replicas}


def add_load(load, assignment, sign=1):
    """Add (or, with sign=-1, take away) one topic's assignment to a cluster load, in place."""
    for replica_list in assignment.values():
        if replica_list:
            load["leaders"][replica_list[0]] += sign
            for b in replica_list:
                load["replicas"][b] += sign


def _balanced(brokers_by_dc, rf, partitions, weights, load):
    """The layout of one topic on a cluster that already carries load: the same three rules, and each
    leadership and replica goes where the whole cluster has the fewest.

    Within the topic, preferred leaders still alternate over the DCs and over
    each DC's brokers; across topics, the DC and the brokers that lead and hold
    least take the next one. Many small topics then spread over every broker
    instead of piling up on the same first ones.
    """
    leaders, replicas = Counter(load.get("leaders") or {}), Counter(load.get("replicas") or {})
    weights = weights or {}
    dcs = sorted(brokers_by_dc)
    # The DC that leads least, for its weight, goes first: it takes the extra leader of an odd count.
    order = sorted(dcs, key=lambda dc: (sum(leaders[b] for b in brokers_by_dc[dc]) / weights.get(dc, 1), dc))
    topic_leads = Counter()
    assignment = []
    for leader_dc in leader_dc_sequence(order, partitions, weights or None):
        other_dc = dcs[1 - dcs.index(leader_dc)]
        lead, follow = sorted(brokers_by_dc[leader_dc]), sorted(brokers_by_dc[other_dc])
        x = split(rf, len(lead), len(follow))
        leader = min(lead, key=lambda b: (topic_leads[b], leaders[b], replicas[b], b))
        block = sorted((b for b in lead if b != leader), key=lambda b: (replicas[b], leaders[b], b))[: x - 1]
        others = sorted(follow, key=lambda b: (replicas[b], leaders[b], b))[: rf - x]
        replica_list = [leader, *block, *others]
        topic_leads[leader] += 1
        leaders[leader] += 1
        replicas.update(replica_list)
        assignment.append(replica_list)
    return assignment


def ideal(brokers_by_dc, rf, partitions, weights=None, load=None):
    """The ideal assignment for the shape: a list of replica lists, one per partition.

    load: what the cluster's other topics put on each broker (cluster_load());
    with it, the topic balances against the whole cluster, not only itself.
    """
    check_shape(brokers_by_dc, rf)
    if load and (load.get("leaders") or load.get("replicas")):
        return _balanced(brokers_by_dc, rf, partitions, weights, load)
    dcs = sorted(brokers_by_dc)
    brokers = {dc: sorted(brokers_by_dc[dc]) for dc in dcs}
    as_leader = dict.fromkeys(dcs, 0)  # partitions led from each DC so far
    as_follower = dict.fromkeys(dcs, 0)  # partitions each DC followed so far
    assignment = []
    for leader_dc in leader_dc_sequence(dcs, partitions, weights):
        other_dc = dcs[1 - dcs.index(leader_dc)]
        lead, follow = brokers[leader_dc], brokers[other_dc]
        x = split(rf, len(lead), len(follow))
        i, j = as_leader[leader_dc], as_follower[other_dc]
        # Rotating the start within each DC spreads the leaders, and with
        # them the next in line, evenly over the DC's brokers.
        replicas = [lead[(i + k) % len(lead)] for k in range(x)]
        replicas += [follow[(j + k) % len(follow)] for k in range(rf - x)]
        as_leader[leader_dc] += 1
        as_follower[other_dc] += 1
        assignment.append(replicas)
    return assignment


def _matched(brokers_by_dc, rf, partitions, current, weights):
    """Each partition takes the free ideal list that shares most replicas with it."""
    free = defaultdict(list)  # replica set -> (ideal position, list) not yet taken
    for index, replicas in enumerate(ideal(brokers_by_dc, rf, partitions, weights)):
        free[frozenset(replicas)].append((index, replicas))

    def take(key, replicas=None):
        entries = free[key]
        chosen = next((e for e in entries if e[1] == replicas), entries[0])
        entries.remove(chosen)
        if not entries:
            del free[key]
        return chosen[1]

    result = {}
    # The partitions whose replica set is already ideal keep it: no data moves.
    for p in sorted(current):
        key = frozenset(current[p])
        if key in free:
            result[p] = take(key, current[p])
    # The others take the free ideal lists they share most replicas with,
    # best overlaps first across all partitions.
    for level in range(rf - 1, -1, -1):
        for p in sorted(set(current) - set(result)):
            have = set(current[p])
            match = [k for k in free if len(k & have) == level]
            if match:
                result[p] = take(min(match, key=lambda k: free[k][0][0]))
    # New partitions take what is left, in the ideal order.
    leftovers = sorted(entry for entries in free.values() for entry in entries)
    for p, (_position, replicas) in zip(sorted(set(range(partitions)) - set(result)), leftovers, strict=True):
        result[p] = replicas
    return result


def _leader_dcs(dcs, partitions, current_dc, weights, keep=False):
    """The leading DC of each partition: its current one where the DC shares allow.

    The shares are the round robin's exact counts; with keep, any counts rule
    3 allows (each DC within one of its share, or its weighted share rounded
    up), so that a converge moves no leadership rule 3 does not ask for.
    """
    target = Counter(leader_dc_sequence(dcs, partitions, weights))
    room = target
    if keep:
        share = weights or dict.fromkeys(dcs, 1)
        total = sum(share[dc] for dc in dcs)
        room = {dc: math.ceil(partitions * share[dc] / total) for dc in dcs}
    lead, counts = {}, Counter()
    for p in range(partitions):
        dc = current_dc.get(p)
        if dc is not None and counts[dc] < room[dc]:
            lead[p] = dc
            counts[dc] += 1
    for p in range(partitions):
        if p not in lead:
            dc = max(dcs, key=lambda d: (target[d] - counts[d], -dcs.index(d)))
            lead[p] = dc
            counts[dc] += 1
    return lead


def _balance_replicas(members, slots, load, spread, led=()):
    """Fill and even out one DC's replicas, copying as few as it can.

    slots: {p: (wanted count, [replicas kept in this DC])}; load: replicas per
    broker. Copies stop once the brokers differ by no more than spread, the
    spread of the ideal layout, so a repair never moves data to be more even
    than a fresh layout would be. led: the partitions this DC leads; a broker
    that takes over replicas takes them there first, so it can also take its
    share of leadership without another copy.
    """
    for p in sorted(slots):
        want, kept = slots[p]
        while len(kept) < want:
            b = min((b for b in members if b not in kept), key=lambda b: (load[b], b))
            kept.append(b)
            load[b] += 1
    # What each broker holds, sorted in the order a copy takes it: the partitions this DC leads first, then by
    # number. seen[(a, b)]: every partition a holds that sorts before it is held by b too, so no copy from a to b
    # can take it; a copy looks from there on, not at all of a's partitions again.
    holding = {b: [] for b in members}
    for p in sorted(slots, key=lambda p: (p not in led, p)):
        for b in slots[p][1]:
            holding[b].append((p not in led, p))
    seen = {}
    while True:
        over = min(members, key=lambda b: (-load[b], b))
        under = min(members, key=lambda b: (load[b], b))
        if load[over] - load[under] <= spread:
            return
        held = holding[over]
        i = bisect.bisect_left(held, seen[(over, under)]) if (over, under) in seen else 0
        while i < len(held) and under in slots[held[i][1]][1]:
            i += 1
        if i == len(held):
            return
        entry = seen[(over, under)] = held.pop(i)
        kept = slots[entry[1]][1]
        kept[kept.index(over)] = under
        bisect.insort(holding[under], entry)
        load[over] -= 1
        load[under] += 1
        # over left the partition: a copy from another of its holders to over may take it now; under joined it:
        # a copy from under to a broker that does not hold it may take it.
        for a, b in [*((a, over) for a in kept), *((under, b) for b in members if b not in kept)]:
            if (a, b) in seen and entry < seen[(a, b)]:
                seen[(a, b)] = entry


def _balance_leaders(members, blocks, leader):
    """Even out the preferred leaders over one DC's brokers by moving leadership along paths.

    blocks: {p: replicas of p in this DC}, leader: {p: broker}, changed in place.
    """
    count = Counter({b: 0 for b in members})
    count.update(leader[p] for p in blocks)
    led = defaultdict(set)
    for p in blocks:
        led[leader[p]].add(p)
    while max(count.values()) - min(count.values()) > 1:
        top = max(count.values())
        start = sorted(b for b in members if count[b] == top)
        parent, queue, end = {b: None for b in start}, list(start), None
        while queue and end is None:
            b = queue.pop(0)
            for p in sorted(led[b]):
                for c in blocks[p]:
                    if c not in parent:
                        parent[c] = (b, p)
                        if count[c] <= top - 2:
                            end = c
                            break
                        queue.append(c)
                if end is not None:
                    break
        if end is None:
            return
        node = end
        while parent[node] is not None:
            b, p = parent[node]
            led[b].discard(p)
            led[node].add(p)
            leader[p] = node
            node = b
        count[node] -= 1
        count[end] += 1


def _repaired(brokers_by_dc, rf, partitions, current, weights):
    """Keep each partition's replicas where the rules allow; move only what balance needs."""
    dcs = sorted(brokers_by_dc)
    members = {dc: sorted(brokers_by_dc[dc]) for dc in dcs}
    dc_of = _dc_of(brokers_by_dc)
    alive = {p: [b for b in r if b in dc_of] for p, r in current.items()}
    lead = _leader_dcs(dcs, partitions, {p: dc_of[r[0]] for p, r in alive.items() if r}, weights)
    slots = {dc: {} for dc in dcs}
    for p in range(partitions):
        other = dcs[1 - dcs.index(lead[p])]
        x = split(rf, len(members[lead[p]]), len(members[other]))
        for dc, want in ((lead[p], x), (other, rf - x)):
            slots[dc][p] = (want, [b for b in alive.get(p, []) if dc_of[b] == dc][:want])
    fresh_load = Counter(b for r in ideal(brokers_by_dc, rf, partitions, weights) for b in r)
    for dc in dcs:
        load = Counter({b: 0 for b in members[dc]})
        load.update(b for _want, kept in slots[dc].values() for b in kept)
        spread = max(fresh_load[b] for b in members[dc]) - min(fresh_load[b] for b in members[dc])
        led = {p for p in range(partitions) if lead[p] == dc}
        _balance_replicas(members[dc], slots[dc], load, max(spread, 1), led)
    leader = {}
    for dc in dcs:
        blocks = {p: slots[dc][p][1] for p in range(partitions) if lead[p] == dc}
        count = Counter()
        for p, block in sorted(blocks.items()):
            first = alive.get(p, [None])[0]
            leader[p] = first if first in block else min(block, key=lambda b: (count[b], b))
            count[leader[p]] += 1
        _balance_leaders(members[dc], blocks, leader)
    result = {}
    for p in range(partitions):
        other = dcs[1 - dcs.index(lead[p])]
        block = slots[lead[p]][p][1]
        result[p] = [leader[p], *(b for b in block if b != leader[p]), *slots[other][p][1]]
    return result


def _converged(brokers_by_dc, rf, partitions, current, weights):
    """An existing topic after a converge. A partition whose list meets rules 1 and 2 keeps its replicas; another
    keeps every replica the rules allow and gets the rest copied where the topic holds fewest; a new partition
    is led by the broker of its DC that leads fewest of the topic's, its other replicas where the topic holds
    fewest; leadership then moves along the lists only where rule 3 asks for it. Nothing here reads what the
    other topics put on the brokers."""
    dcs = sorted(brokers_by_dc)
    members = {dc: sorted(brokers_by_dc[dc]) for dc in dcs}
    dc_of = _dc_of(brokers_by_dc)
    alive = {p: [b for b in r if b in dc_of] for p, r in current.items()}
    lead = _leader_dcs(dcs, partitions, {p: dc_of[r[0]] for p, r in alive.items() if r}, weights, keep=True)
    other = {p: dcs[1 - dcs.index(lead[p])] for p in range(partitions)}
    want = {p: split(rf, len(members[lead[p]]), len(members[other[p]])) for p in range(partitions)}
    kept = {p for p, replicas in current.items() if sound(replicas, rf, brokers_by_dc)}
    blocks = {}
    for p in current:
        counts = {lead[p]: want[p], other[p]: rf - want[p]}
        blocks[p] = {dc: [b for b in alive[p] if dc_of[b] == dc][: None if p in kept else counts[dc]] for dc in dcs}
    held = Counter(b for block in blocks.values() for replicas in block.values() for b in replicas)
    for p in sorted(set(current) - kept):
        for dc, count in ((lead[p], want[p]), (other[p], rf - want[p])):
            while len(blocks[p][dc]) < count:
                b = min((b for b in members[dc] if b not in blocks[p][dc]), key=lambda b: (held[b], b))
                blocks[p][dc].append(b)
                held[b] += 1
    leader, leads = {}, Counter()
    for p in sorted(current):
        first, block = (alive[p] or [None])[0], blocks[p][lead[p]]
        leader[p] = first if first in block else min(block, key=lambda b: (leads[b], b))
        leads[leader[p]] += 1
    for p in sorted(set(range(partitions)) - set(current)):
        chosen = min(members[lead[p]], key=lambda b: (leads[b], held[b], b))
        rest = sorted((b for b in members[lead[p]] if b != chosen), key=lambda b: (held[b], leads[b], b))
        follow = sorted(members[other[p]], key=lambda b: (held[b], leads[b], b))
        blocks[p] = {lead[p]: [chosen, *rest[: want[p] - 1]], other[p]: follow[: rf - want[p]]}
        leader[p] = chosen
        leads[chosen] += 1
        held.update(b for replicas in blocks[p].values() for b in replicas)
    for dc in dcs:
        _balance_leaders(members[dc], {p: blocks[p][dc] for p in range(partitions) if lead[p] == dc}, leader)
    return {
        p: [leader[p], *(b for b in blocks[p][lead[p]] if b != leader[p]), *blocks[p][other[p]]]
        for p in range(partitions)
    }


def place(brokers_by_dc, rf, partitions, current=None, weights=None, load=None, balance=False):
    """Assignment for partitions 0..partitions-1, moving as little of current as it can.

    current: {partition: [replicas]} of an existing topic, or None.
    load: what the cluster's other topics put on each broker (cluster_load()),
    so a new topic's layout (and a balanced one's) balances against the whole
    cluster. Returns {partition: [replicas]}.

    An existing topic is repaired (a converge): a partition whose list meets
    rules 1 and 2 (sound()) keeps its replicas, another keeps every replica the
    rules allow and gets the rest copied, leadership moves along the lists only
    where rule 3 asks for it, and new partitions are laid out among them. load
    plays no part: the layout of an existing partition never depends on what
    the other topics put on the brokers. Rule 3 can then stay broken where only
    a copy would mend it (a broker added leads nothing): balance mends it.

    With balance (an explicit request), three candidates are weighed: the
    ideal layout afresh against load, the ideal lists matched to the current
    ones by overlap, and the current lists repaired in place, each DC's
    brokers evened out (keep every replica the rules allow, copy only what
    balance needs). The one that satisfies the rules and copies the fewest
    replicas wins, then the one that rewrites the fewest lists (a new
    preferred leader moves leadership); remaining ties go to the earlier, so
    the result is deterministic.
    """
    current = {int(p): list(r) for p, r in (current or {}).items()}
    if current and max(current) >= partitions:
        raise PlacementError(
            f"the topic has {max(current) + 1} partitions; their number cannot go down to {partitions}"
        )
    if not current:
        return dict(enumerate(ideal(brokers_by_dc, rf, partitions, weights, load)))
    if not balance:
        check_shape(brokers_by_dc, rf)
        return _converged(brokers_by_dc, rf, partitions, current, weights)
    fresh = dict(enumerate(ideal(brokers_by_dc, rf, partitions, weights, load)))
    candidates = [fresh, _matched(brokers_by_dc, rf, partitions, current, weights)]
    repaired = _repaired(brokers_by_dc, rf, partitions, current, weights)
    if not violations(repaired, brokers_by_dc, weights):
        candidates.append(repaired)
    return min(candidates, key=lambda c: (moved_replicas(current, c), _reordered(current, c)))


def _partition_problems(p, replicas, dc_of, dcs):
    """Rules 1 and 2 for one partition's list, all of whose replicas are brokers of dc_of, as messages."""
    problems = []
    per_dc = Counter(dc_of[b] for b in replicas)
    short = [dc for dc in dcs if per_dc[dc] < MIN_PER_DC]
    if short:
        problems.append(f"partition {p}: fewer than {MIN_PER_DC} replicas in {', '.join(short)} ({replicas})")
    blocks = [dc_of[b] for i, b in enumerate(replicas) if i == 0 or dc_of[b] != dc_of[replicas[i - 1]]]
    if len(blocks) != len(set(blocks)):
        problems.append(f"partition {p}: the replicas of a DC do not stand together ({replicas})")
    return problems


def sound(replicas, rf, brokers_by_dc):
    """Whether one partition's list meets rules 1 and 2 on these brokers at this replication factor: rf distinct
    replicas, each on one of brokers_by_dc, at least two in each DC, each DC's standing together. A converge
    keeps the replicas of such a partition."""
    dc_of = _dc_of(brokers_by_dc)
    if len(replicas) != rf or len(set(replicas)) != rf or any(b not in dc_of for b in replicas):
        return False
    return not _partition_problems(None, list(replicas), dc_of, sorted(brokers_by_dc))


def violations(assignment, brokers_by_dc, weights=None):
    """Which of the three rules an assignment ({partition: replicas}) breaks, as messages."""
    dc_of = _dc_of(brokers_by_dc)
    dcs = sorted(brokers_by_dc)
    problems = []
    for p, replicas in sorted(assignment.items()):
        problems += _partition_problems(p, replicas, dc_of, dcs)
    leaders = Counter(replicas[0] for replicas in assignment.values())
    by_dc = Counter(dc_of[b] for b in leaders.elements())
    n = len(assignment)
    if weights:
        total = sum(weights[dc] for dc in dcs)
        for dc in dcs:
            share = n * weights[dc] / total
            if not math.floor(share) <= by_dc[dc] <= math.ceil(share):
                problems.append(f"DC {dc} leads {by_dc[dc]} partitions, its weighted share is {share:.2f}")
    elif n and max(by_dc[dc] for dc in dcs) - min(by_dc[dc] for dc in dcs) > 1:
        problems.append(f"preferred leaders per DC differ by more than 1: {dict(sorted(by_dc.items()))}")
    for dc in dcs:
        counts = [leaders[b] for b in brokers_by_dc[dc]]
        if max(counts) - min(counts) > 1:
            problems.append(f"preferred leaders per broker in DC {dc} differ by more than 1: {counts}")
    return problems


def _reordered(current, target):
    """Existing partitions whose list changes at all: a new preferred leader is a leader change."""
    return sum(1 for p in current if current[p] != target[p])


def moved_replicas(current, target):
    """Replicas that must be copied to a new broker to go from current to target."""
    return sum(len(set(target[p]) - set(current.get(p, target[p]))) for p in target)
