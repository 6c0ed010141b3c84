"""Bytes each broker served to consumers, from its Prometheus JMX exporter, and the locality ratio."""

from __future__ import annotations

import re
import urllib.request

from .checks import SmokeError

# kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,topic=T counts the
# bytes a broker sent to consumers of T (fetches by follower replicas are
# counted apart, as ReplicationBytesOutPerSec).
METRIC = "kafka_server_brokertopicmetrics_bytesout_total"
LINE = re.compile(r"^(?P<name>[a-z_]+)\{(?P<labels>[^}]*)\}\s+(?P<value>[0-9.eE+-]+)")


def bytes_out(text, topic):
    """The BytesOut counter for topic in an exporter's /metrics text (0 if the broker never served it)."""
    for line in text.splitlines():
        match = LINE.match(line)
        if not match or match["name"] != METRIC:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match["labels"]))
        if labels.get("topic") == topic:
            return float(match["value"])
    return 0.0


def scrape(brokers, topic, port, timeout=10):
    """{broker id: BytesOut counter} for each broker ({id: host})."""
    out = {}
    for broker_id, host in brokers.items():
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=timeout) as response:
            out[broker_id] = bytes_out(response.read().decode(), topic)
    return out


class CounterReset(SmokeError):
    """A broker's counter that cannot be compared across the read (a restart reset it, or it was not read)."""


def grown(before, after, name, reset):
    """{key: how much its counter grew} from before to after ({key: counter}); CounterReset naming the counter
    (name(key)) when one went back (reset says why that can be) or was not read both times: what it counted in
    between is unknown, and counting it as 0, less or, as an unsigned count, huge would pass or fail a read on a
    figure that means nothing."""
    for key in sorted(set(before) | set(after)):
        if key not in before:
            raise CounterReset(f"{name(key)} was not read before the read")
        if key not in after:
            raise CounterReset(f"{name(key)} was not read after the read")
        if after[key] < before[key]:
            raise CounterReset(f"{name(key)} went from {before[key]:.0f} to {after[key]:.0f}: {reset}")
    return {k: after[k] - before[k] for k in after}


def served_between(before, after, what="BytesOut counter"):
    """{broker id: bytes} each broker's counter grew by from before to after ({broker id: counter}).

    A counter that went back (its broker restarted between the two reads:
    the count began again at 0) or that was not read both times fails
    closed, naming the broker: counting it as 0 or less would make a read
    look more local than it was.
    """
    return grown(
        before,
        after,
        lambda broker: f"broker {broker}'s {what}",
        "it restarted between the two reads, so what it served meanwhile is unknown",
    )


def locality(before, after, racks, dc):
    """Bytes served per broker between two scrapes, and the share served from dc's brokers (CounterReset when a
    broker's counter cannot be compared)."""
    served = served_between(before, after)
    total = sum(served.values())
    local = sum(v for b, v in served.items() if racks[b] == dc) if dc else None
    by_dc = {}
    for b, v in served.items():
        by_dc[racks[b]] = by_dc.get(racks[b], 0.0) + v
    return {
        "bytes_by_broker": {str(b): int(v) for b, v in sorted(served.items())},
        "bytes_by_dc": {d: int(v) for d, v in sorted(by_dc.items())},
        "bytes_total": int(total),
        "locality_ratio": (local / total) if (dc and total) else None,
    }


def crossed(before, after, dc):
    """The bytes the router counted between two reads ({(from, to): (bytes, packets)}), per DC pair, and
    how many of them crossed into dc, where the read ran. A pair's count that went back (its nft table made again,
    or flushed) or was not read both times fails closed (CounterReset), naming the pair."""
    by_pair = grown(
        {pair: count[0] for pair, count in before.items()},
        {pair: count[0] for pair, count in after.items()},
        lambda pair: f"the router's count of {pair[0]}->{pair[1]}",
        "its counter was reset between the two reads, so what crossed meanwhile is unknown",
    )
    by_pair = {pair: int(n) for pair, n in sorted(by_pair.items())}
    return {
        "dc": dc,
        "bytes_by_pair": {f"{a}->{b}": n for (a, b), n in by_pair.items()},
        "bytes_in": sum(n for (_src, b), n in by_pair.items() if b == dc),
    }
