"""The testbed's WAN as data: one link per ordered pair of DCs, and what a packet on it waits.

The inventory describes the WAN as a list (`testbed_wan`), each item one or
both directions between two DCs:

    - {between: [dc1, dc2], delay_ms: 15}                # both ways: a 30 ms round trip
    - {from: dc1, to: dc3, delay_ms: 20, jitter_ms: 2}   # one way only
    - {between: [dc1, dc2], delay_ms: 15, rate_mbit: 100}

A later item overrides an earlier one for the directions it names. A
direction no item names has no delay (and no queue: its packets never leave
the kernel). `links()` turns that list into Link records, or refuses it with
one line per problem, each naming the item and the value.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import asdict, dataclass

# Each direction with a delay is one netfilter queue, numbered from here in
# the order of the sorted ordered DC pairs.
QUEUE_BASE = 7000
# A rate-capped link queues at most this long before it drops (a router's buffer).
MAX_BACKLOG_S = 0.1
KEYS = {"between", "from", "to", "delay_ms", "jitter_ms", "rate_mbit"}


class WanError(ValueError):
    """An inventory's WAN that cannot be built; str() lists every problem."""


@dataclass(frozen=True)
class Link:
    """One direction between two DCs: its one-way delay, the jitter around it and an optional rate cap."""

    src: str
    dst: str
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    rate_mbit: float = 0.0  # 0: no cap
    queue: int = 0

    @property
    def active(self):
        """Whether packets on this direction go through the delayer at all."""
        return self.delay_ms > 0 or self.jitter_ms > 0 or self.rate_mbit > 0

    def as_dict(self):
        return asdict(self)


def number_problem(key, value):
    """Why value cannot be key (a delay, jitter, rate or round trip: its unit ends the key's name); '' when it can.

    NaN and infinity are refused like a negative number: a NaN delay compares
    false with everything, so its link would count as inactive and its packets
    would cross undelayed.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{key} must be a number of {key.split('_')[-1]}, not {value!r}"
    if not math.isfinite(value):
        return f"{key} {value} is not a finite number"
    if value < 0:
        return f"{key} {value} is negative"
    return ""


def _number(item, key, where, problems):
    value = item.get(key, 0)
    problem = number_problem(key, value)
    if problem:
        problems.append(f"{where}: {problem}")
        return 0.0
    return float(value)


def _directions(item, where, dcs, problems):
    """The ordered (src, dst) pairs the item names, or [] after noting why it names none."""
    if "between" in item and ("from" in item or "to" in item):
        problems.append(f"{where}: give either between: [A, B] or from: A and to: B, not both")
        return []
    if "between" in item:
        pair = item["between"]
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            problems.append(f"{where}: between must name two DCs, not {pair!r}")
            return []
        a, b = pair
        pairs = [(a, b), (b, a)]
    elif "from" in item and "to" in item:
        a, b = item["from"], item["to"]
        pairs = [(a, b)]
    else:
        problems.append(f"{where}: name its DCs with between: [A, B] (both ways) or from: A and to: B (one way)")
        return []
    unknown = sorted({str(dc) for dc in (a, b) if dc not in dcs})
    if unknown:
        problems.append(
            f"{where}: {', '.join(repr(dc) for dc in unknown)} is not a DC of the inventory "
            f"(its DCs: {', '.join(sorted(dcs))})"
        )
        return []
    if a == b:
        problems.append(f"{where}: a link joins two different DCs, not {a!r} to itself")
        return []
    return pairs


def links(spec, dcs):
    """[Link] for every ordered pair of dcs (sorted), from the inventory's list; raises WanError.

    Every ordered pair gets a Link, with no delay unless an item names it, and
    a queue number that depends only on the DCs, so that changing a delay
    never renumbers a queue.
    """
    dcs = sorted(set(dcs))
    if spec is None:
        spec = []
    if not isinstance(spec, (list, tuple)):
        raise WanError(f"testbed_wan must be a list of links, not {type(spec).__name__}")
    pairs = list(itertools.permutations(dcs, 2))
    found = {pair: Link(*pair, queue=QUEUE_BASE + i) for i, pair in enumerate(pairs)}
    problems = []
    for i, item in enumerate(spec):
        where = f"testbed_wan[{i}]"
        if not isinstance(item, dict):
            problems.append(f"{where}: a link is a mapping (between or from/to, delay_ms, ...), not {item!r}")
            continue
        unknown = sorted(set(item) - KEYS)
        if unknown:
            problems.append(f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(KEYS))})")
        directions = _directions(item, where, dcs, problems)
        delay, jitter, rate = (_number(item, key, where, problems) for key in ("delay_ms", "jitter_ms", "rate_mbit"))
        if jitter > delay:
            problems.append(f"{where}: jitter_ms {jitter:g} is larger than delay_ms {delay:g}")
        for pair in directions:
            found[pair] = Link(*pair, delay_ms=delay, jitter_ms=jitter, rate_mbit=rate, queue=found[pair].queue)
    if problems:
        raise WanError("testbed_wan refused:\n- " + "\n- ".join(problems))
    return [found[pair] for pair in pairs]


def with_rtt(current, a, b, rtt_ms):
    """The links with the pair a-b set to rtt_ms round trip, half each way; jitter and rate kept."""
    out = []
    for link in current:
        if {link.src, link.dst} == {a, b}:
            half = rtt_ms / 2
            link = Link(link.src, link.dst, half, min(link.jitter_ms, half), link.rate_mbit, link.queue)
        out.append(link)
    return out


class Schedule:
    """When each packet of one direction may leave: after the delay, in order, and no faster than the rate.

    A packet arriving at `now` with `size` bytes leaves at
    max(previous departure, start of its turn on the link + its transmission
    time + delay + jitter), where its turn starts when the link has sent
    everything before it. A constant delay per direction keeps the packets in
    order; jitter never reorders them either, since no packet leaves before
    the one ahead of it. With a rate cap, a packet that would wait longer
    than MAX_BACKLOG_S for its turn is dropped, as a router's full buffer
    would.
    """

    def __init__(self, link, uniform=random.uniform):
        self.link, self.uniform = link, uniform
        self.last_departure = float("-inf")
        self.link_free = float("-inf")

    def due(self, now, size):
        """Seconds (on now's clock) at which the packet leaves, or None: dropped."""
        link = self.link
        start = now
        if link.rate_mbit > 0:
            start = max(now, self.link_free)
            if start - now > MAX_BACKLOG_S:
                return None
            self.link_free = start + size * 8 / (link.rate_mbit * 1e6)
            start = self.link_free
        jitter = self.uniform(-link.jitter_ms, link.jitter_ms) if link.jitter_ms else 0.0
        departure = max(self.last_departure, start + (link.delay_ms + jitter) / 1000)
        self.last_departure = departure
        return departure


def iptables_rules(active_links, subnets, chain):
    """The `iptables -S` lines of the chain that sends each active direction to its queue.

    --queue-bypass: when nothing listens on a queue (the delayer stopped or
    died), its packets pass undelayed instead of being dropped, so the DCs
    lose their delay, never their link.
    """
    return [
        f"-A {chain} -s {subnets[link.src]} -d {subnets[link.dst]} -j NFQUEUE --queue-num {link.queue} --queue-bypass"
        for link in active_links
    ]
