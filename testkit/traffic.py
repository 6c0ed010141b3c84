"""Cross-DC traffic accounting: the bytes that crossed between each pair of DCs, by kind, against the 2.5N model.

Two independent measurements of one run:

- the brokers' own counters, read from each node's Prometheus JMX exporter
  before and after the run: the bytes each leader took from producers
  (BytesInPerSec per topic), the bytes each follower fetched from each leader
  (FetcherStats BytesPerSec, whose client id names the leader), and the bytes
  each broker served to consumers (BytesOutPerSec per topic). With the DC of
  every broker and of the clients, each byte is put on the DC pair it crossed;
- the bytes the network carried between the DCs' subnets on the Kafka ports,
  from kernel counters, less the TCP/IP headers of the packets counted. A
  segment lost or held on the way and sent again crosses twice and is counted
  by Kafka once: the senders' kernels count those segments (RetransSegs), and
  the comparison allows at most that many segments' payload
  (disagreement_allowing).

Each ratio keeps to one unit. A produce run's cross-DC bytes per produced
byte divide the brokers' counters by the brokers' counters (record batches
as the leaders took them); a read's crossing share divides the bytes the
brokers served across DCs by all the bytes they served it. The wire's bytes
(TCP payload, with requests, responses and TLS framing) are compared with
the brokers' counters only as a check that the two agree, never divided
into them; the clients' value bytes are reported beside, never divided.

The model: with two replicas in each DC, every produced byte is fetched by
the two replicas in the leader's other DC, and crosses once more when the
producer writes to a leader in the other DC: 2N + (the share of N written to
remote leaders), 2.5N with leaders split evenly, 2.0N for a producer that
writes only to its own DC's leaders. Its inputs are the producer's own count
of the bytes it wrote to each partition and the leader each partition had
when it started (written_by_leader), and the brokers' racks; the figure it
is checked against comes from the brokers' counters only.
"""

from __future__ import annotations

import re

KINDS = ("produce", "replication", "consume")

_LINE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
# A replica fetcher's client id: ReplicaFetcherThread-<thread>-<leader id>.
_FETCHER = re.compile(r"^ReplicaFetcherThread-\d+-(?P<leader>\d+)$")

BYTES_IN = "kafka_server_brokertopicmetrics_bytesin_total"
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"
FETCHED = "kafka_server_fetcherstats_bytes_total"

# IPv4 (20 bytes) and TCP with timestamps (32 bytes): what a packet carries
# besides the stream's bytes.
HEADER_BYTES = 52


def samples(text):
    """[(name, {label: value}, float)] of a Prometheus text exposition; comments and blank lines skipped."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if not match:
            raise ValueError(f"not a metric line: {line!r}")
        labels = dict(_LABEL.findall(match["labels"] or ""))
        out.append((match["name"], labels, float(match["value"])))
    return out


def broker_counters(text):
    """What one broker's exporter says it moved: {"in": {topic: b}, "out": {topic: b}, "fetched": {leader id: b}}."""
    counters = {"in": {}, "out": {}, "fetched": {}}
    for name, labels, value in samples(text):
        if name in (BYTES_IN, BYTES_OUT) and "topic" in labels:
            counters["in" if name == BYTES_IN else "out"][labels["topic"]] = value
        elif name == FETCHED:
            fetcher = _FETCHER.match(labels.get("clientid", ""))
            if fetcher:
                leader = int(fetcher["leader"])
                counters["fetched"][leader] = counters["fetched"].get(leader, 0.0) + value
    return counters


def _delta(after, before, broker, kind, key):
    now = after[broker][kind].get(key, 0.0)
    then = before.get(broker, {}).get(kind, {}).get(key, 0.0)
    if now < then:
        raise ValueError(f"broker {broker}: counter {kind}[{key}] went back from {then} to {now} (restarted?)")
    return now - then


def _add(flows, src, dst, kind, amount):
    if src != dst and amount:
        pair = flows.setdefault((src, dst), dict.fromkeys(KINDS, 0.0))
        pair[kind] += amount


def cross_dc(before, after, racks, topic, producer_dc, consumer_dc=None):
    """{(from DC, to DC): {kind: bytes}} between two reads of every broker's counters ({broker id: counters}).

    Produce bytes cross from the producer's DC to a leader in another DC;
    replication bytes from a leader to a follower in another DC (every
    topic's: fetchers are not per topic); consume bytes from a broker to a
    consumer in another DC (consumer_dc None: nothing was consumed).
    """
    missing = sorted(set(racks) - set(after))
    if missing:
        raise ValueError(f"no counters read from broker(s) {missing}")
    flows = {}
    for broker, dc in sorted(racks.items()):
        _add(flows, producer_dc, dc, "produce", _delta(after, before, broker, "in", topic))
        if consumer_dc:
            _add(flows, dc, consumer_dc, "consume", _delta(after, before, broker, "out", topic))
        for leader in sorted(after[broker]["fetched"]):
            if leader not in racks:
                raise ValueError(f"broker {broker} fetched from {leader}, a broker of no known DC")
            _add(flows, racks[leader], dc, "replication", _delta(after, before, broker, "fetched", leader))
    return flows


class Accumulated:
    """The brokers' counters summed over reads taken across restarts.

    add({broker: broker_counters()}, {broker: its process's start time}) after each read. A broker whose start time
    changed restarted: all of its counters' new values are new. Without start times, a counter that went back is
    taken as restarted. A counter that shows up after a broker's first read (a topic it began to lead, a leader it
    began to fetch from) counts from zero. What a node counted between its last read and its stop is missed: read
    often (every few seconds) to keep that small. total() is shaped like one read, to give cross_dc() as `after`
    with an empty `before`."""

    def __init__(self):
        self.last, self.sums, self.started, self.restarts = {}, {}, {}, 0

    def add(self, read, started=None):
        for broker, counters in read.items():
            now, was = (started or {}).get(broker), self.started.get(broker)
            restarted = now is not None and was is not None and now != was
            self.restarts += restarted
            first = broker not in self.last
            last = {} if restarted else self.last.setdefault(broker, {})
            for kind, values in counters.items():
                for key, value in values.items():
                    then = last.get(kind, {}).get(key)
                    if first:
                        step = 0.0  # the first read is the baseline
                    elif then is None:
                        step = value
                    elif value < then:
                        step, self.restarts = value, self.restarts + 1
                    else:
                        step = value - then
                    slot = self.sums.setdefault(broker, {"in": {}, "out": {}, "fetched": {}})[kind]
                    slot[key] = slot.get(key, 0.0) + step
            merged = {} if restarted else self.last.get(broker, {})
            for kind, values in counters.items():
                merged.setdefault(kind, {}).update(values)
            self.last[broker] = merged
            if now is not None:
                self.started[broker] = now

    def total(self):
        return {b: {kind: dict(v) for kind, v in c.items()} for b, c in self.sums.items()}


def start_time(text):
    """The process start time an exporter reports (process_start_time_seconds), or None."""
    found = [value for name, _, value in samples(text) if name == "process_start_time_seconds"]
    return found[0] if found else None


def produced(before, after, racks, topic):
    """{broker id: bytes} the leaders took from producers of topic."""
    return {b: _delta(after, before, b, "in", topic) for b in sorted(racks)}


def served(before, after, racks, topic):
    """{broker id: bytes} the brokers served to consumers of topic (BytesOutPerSec: record batches as stored)."""
    return {b: _delta(after, before, b, "out", topic) for b in sorted(racks)}


def read_share(flows, served_by_broker):
    """The share of a read's bytes that crossed DCs: consume bytes that crossed over all the brokers served it.

    Both sides are the brokers' counters of what they served, in one unit:
    record batches as stored, headers and framing included. The records'
    value bytes, which the reading client counts, are a smaller unit (no
    batch or record overhead) and are not mixed in.
    """
    total = sum(served_by_broker.values())
    if not total:
        raise ValueError("the brokers served nothing to the read")
    return totals(flows)["consume"] / total


def written_by_leader(answer):
    """{leader id: value bytes} a producer wrote, from its own answer (testkit.loadtest.traffic produce)."""
    out = {}
    for partition, written in answer["value_bytes_by_partition"].items():
        leader = int(answer["leaders"][partition])
        out[leader] = out.get(leader, 0) + written
    return out


def model_ratio(produced_by_leader, racks, producer_dc, remote_replicas=2):
    """The model's cross-DC bytes per produced byte: remote_replicas + the share written to remote leaders."""
    total = sum(produced_by_leader.values())
    if not total:
        raise ValueError("nothing was produced")
    remote = sum(v for b, v in produced_by_leader.items() if racks[b] != producer_dc)
    return remote_replicas + remote / total


def totals(flows):
    """{kind: bytes} over every DC pair, and "all"."""
    out = dict.fromkeys(KINDS, 0.0)
    for pair in flows.values():
        for kind in KINDS:
            out[kind] += pair[kind]
    out["all"] = sum(out[kind] for kind in KINDS)
    return out


def retransmitted_segments(snmp):
    """The TCP segments a network namespace has sent again (RetransSegs), from its /proc/net/snmp text."""
    rows = [line.split()[1:] for line in snmp.splitlines() if line.startswith("Tcp:")]
    if len(rows) != 2 or "RetransSegs" not in rows[0] or len(rows[0]) != len(rows[1]):
        raise ValueError("no Tcp RetransSegs in the snmp text")
    return int(rows[1][rows[0].index("RetransSegs")])


def disagreement_allowing(counted, wire, resent):
    """disagreement() of counted with the wire, where up to resent of the wire's bytes may be retransmissions.

    A segment TCP sends again crosses the wire twice and Kafka's counters once. resent is an upper bound (the
    senders' retransmitted segments times the most payload a segment holds), so any wire total from wire - resent
    to wire may be what the counters saw: 0.0 inside that span, else the distance to its nearer end."""
    if resent < 0:
        raise ValueError(f"a negative retransmission allowance: {resent}")
    low = max(0, wire - resent)
    if low <= counted <= wire:
        return 0.0
    return disagreement(counted, wire if counted > wire else low)


def wire_payload(counted, header_bytes=HEADER_BYTES):
    """{(from DC, to DC): stream bytes} from kernel counters {(from, to): (bytes, packets)}, headers taken off."""
    return {pair: max(0, b - packets * header_bytes) for pair, (b, packets) in counted.items()}


def disagreement(a, b):
    """|a - b| relative to the larger of the two (0.0 when both are 0)."""
    top = max(abs(a), abs(b))
    return abs(a - b) / top if top else 0.0


def throttle_bound(rate, senders, receivers, response_max, window):
    """The most a replication throttle of rate (bytes per second, per broker) lets across a link over window
    seconds, in bytes per second: the rate times the fewer of the sending and receiving brokers, plus the fetch
    responses already granted when the rate is reached, which Kafka's quota lets through whole: one per follower
    and leader broker pair, each at most response_max (replica.fetch.response.max.bytes), over the window
    (docs/observability.md)."""
    return rate * min(senders, receivers) + senders * receivers * response_max / window


def peak_rate(samples, window):
    """The highest rate, in bytes per second, over any span of at least window seconds of samples.

    samples: [(seconds, cumulative bytes)] in time order, e.g. a kernel
    counter read every second. Each span starts at a sample and ends at the
    first sample window seconds or more later. Kafka's replication throttle
    holds a rate averaged over its quota window (11 samples of 1 s by
    default), so it is judged over spans that long, not per second.
    Returns None when the samples span less than window.
    """
    if window <= 0:
        raise ValueError(f"window must be positive, got {window!r}")
    peak, end = None, 0
    for start, (t0, b0) in enumerate(samples):
        end = max(end, start + 1)
        while end < len(samples) and samples[end][0] - t0 < window:
            end += 1
        if end == len(samples):
            break
        t1, b1 = samples[end]
        if b1 < b0:
            raise ValueError(f"the counter went back from {b0} to {b1} at {t1} s")
        rate = (b1 - b0) / (t1 - t0)
        peak = rate if peak is None else max(peak, rate)
    return peak


REQUEST_COUNT = "kafka_network_request_time_count_total"
REQUEST_MEAN = "kafka_network_request_time_ms_mean"
COUNTERS = {
    "isr_shrinks": "kafka_server_isr_shrinks_total",
    "isr_expands": "kafka_server_isr_expands_total",
    "raft_epoch": "kafka_raft_current_epoch",
    "fenced_brokers": "kafka_controller_fenced_brokers",
    "raft_high_watermark": "kafka_raft_high_watermark",
    "raft_leader": "kafka_raft_current_leader",
    "raft_log_end": "kafka_raft_log_end_offset",
}


def request_times(text):
    """One node's request metrics: {(request, part): (count, mean ms since start)}, and its counters
    {"isr_shrinks", "isr_expands", "raft_epoch", "fenced_brokers"} (absent ones left out: a controller has no
    ISR, a broker counts no fenced brokers)."""
    counts, means, counters = {}, {}, {}
    names = {v: k for k, v in COUNTERS.items()}
    for name, labels, value in samples(text):
        if name == REQUEST_COUNT:
            counts[(labels["request"], labels["part"])] = value
        elif name == REQUEST_MEAN:
            means[(labels["request"], labels["part"])] = value
        elif name in names and not labels:
            counters[names[name]] = value
    return {"requests": {key: (counts[key], means.get(key, 0.0)) for key in counts}, "counters": counters}


def mean_between(before, after, request, part):
    """(requests, mean ms) of the requests a node handled between two reads of request_times(); the mean
    since start times the count is the sum, so the two reads give the mean in between."""
    n0, m0 = before["requests"].get((request, part), (0.0, 0.0))
    n1, m1 = after["requests"].get((request, part), (0.0, 0.0))
    if n1 < n0:
        raise ValueError(f"{request} {part}: the count went back from {n0} to {n1} (a restart)")
    n = n1 - n0
    return int(n), (round((n1 * m1 - n0 * m0) / n, 2) if n else None)
