"""What acks=all latency over the WAN should be, derived from how Kafka and librdkafka move a record.

Every input comes from outside the figure it predicts: the round trips are
the WAN's settings, the broker's own handling time comes from its request
metrics in the benchmark's calibration run at RTT 0 (none of the runs the
model is compared with), and the producer's settings and rate are the run's. In short:

- A leader completes an acks=all Produce once every in-sync replica has
  fetched past it. A far replica's fetch waits at the leader (parked) until
  data arrives; the data then travels one way, the replica appends it and
  its next fetch, carrying its new offset, travels back: one RTT between
  the DCs, plus the broker's own handling (`leader_produce_ms`). A parked
  fetch is answered, empty, after replica.fetch.wait.max.ms (W), and the
  follower's next one is a round trip away: a producer in the other DC with
  one request in flight appends again one RTT after its last append was
  answered, so from an RTT of W on its append finds no fetch parked and
  waits W more (`late_fetch_ms`).
- A broker serves one request per connection at a time, and librdkafka puts
  one partition in each ProduceRequest. With max.in.flight=1 a producer
  sends a partition's next request once the last one is answered and the
  oldest record waiting has lingered linger.ms: P partitions on one
  connection take turns, so a record waits up to max(P x service, linger)
  for its request to leave, then for the request itself.
- A consumer on the leader gets a record when the high watermark passes it
  (with the producer's answer); one in the far DC reading the leader one
  way later. A far follower learns the new high watermark only in the
  answer to its next fetch, and that fetch waits at the leader for the next
  append (KAFKA-9952 removed the early answer on a high-watermark change),
  at most replica.fetch.wait.max.ms.

docs/wan.md derives each formula.
"""

from __future__ import annotations


def leader_produce_ms(rtt_ms, lan_produce_ms):
    """The leader's Produce time: one round trip to the far replicas plus its own handling (measured at RTT 0)."""
    return rtt_ms + lan_produce_ms


def late_fetch_ms(rtt_ms, fetch_wait_ms, remote):
    """What a producer's append waits at the leader for the far follower's next fetch, past leader_produce_ms.

    In the leaders' DC the next append comes as soon as the last is answered,
    while the fetch that answered it is still parked. From the other DC it
    comes one round trip later; once that is W (fetch_wait_ms) or more, the
    parked fetch has been answered empty, the follower's next one arrives W
    after the append would have found it, and the append waits for it."""
    return float(fetch_wait_ms) if remote and rtt_ms >= fetch_wait_ms else 0.0


def service_ms(rtt_ms, lan_produce_ms, fetch_wait_ms, remote):
    """(the leader's Produce time, the request's time as the producer sees it): the leader's round trip to the far
    replicas, its own handling and any wait for a late fetch, plus the round trip to the leader from the other DC."""
    leader = leader_produce_ms(rtt_ms, lan_produce_ms) + late_fetch_ms(rtt_ms, fetch_wait_ms, remote)
    return leader, leader + (rtt_ms if remote else 0)


def window_ms(service_ms, linger_ms, partitions_per_connection):
    """How long a record may wait for its request to leave, with max.in.flight=1 (librdkafka): a turn of the
    connection's partitions when the connection is busy, else the linger."""
    return max(partitions_per_connection * service_ms, linger_ms)


def producer_ms(service_ms, linger_ms, partitions_per_connection, records_per_second_per_partition):
    """{"p50", "p99"} of a record's produce latency, max.in.flight=1.

    service_ms: from handing the request over to the answer, as the producer
    sees it: the leader's Produce time, plus the round trip to the leader for
    a producer in the other DC. A record waits for its request to leave (up
    to the window, uniformly), then for the request; a record that comes
    alone, longer than a window after the last one, waits exactly the linger.
    """
    window = window_ms(service_ms, linger_ms, partitions_per_connection)
    gap = 1000 / records_per_second_per_partition
    if gap >= window and partitions_per_connection * service_ms <= linger_ms:
        return {"p50": linger_ms + service_ms, "p99": linger_ms + service_ms}
    return {"p50": window / 2 + service_ms, "p99": window + service_ms}


def append_gap_ms(service_ms, linger_ms, partitions_per_connection, records_per_second_per_partition):
    """How often this producer's requests append to one leader: each partition's request leaves every
    max(a turn of the connection, the linger, the gap between its records), P partitions taking turns."""
    gap = 1000 / records_per_second_per_partition
    every = max(partitions_per_connection * service_ms, linger_ms, gap)
    return every / partitions_per_connection


def end_to_end_ms(producer_p50, rtt_ms, append_gap, leader_ms, fetch_wait_ms=500):
    """p50 from a record's creation to a consumer, for a consumer in the leader's DC reading the leader, one in
    the far DC reading the leader, and one in the far DC reading its own DC's follower.

    The far follower's fetch that carried its new offset (and advanced the
    high watermark) waits at the leader for the next append, which comes
    append_gap after the last one, leader_ms of which have passed already;
    at most replica.fetch.wait.max.ms (fetch_wait_ms)."""
    one_way = rtt_ms / 2
    wait = min(max(append_gap - leader_ms, 0.0), fetch_wait_ms)
    return {
        "leader_dc_leader": producer_p50,
        "far_dc_leader": producer_p50 + one_way,
        "far_dc_follower": producer_p50 + one_way + wait,
    }


def lag_records(rate, latency_ms):
    """Records a consumer trails behind the high watermark it reads from (Little's law)."""
    return rate * latency_ms / 1000


def controller_failover_ms(fetch_timeout_ms, fetch_max_wait_ms, vote_rtt_ms):
    """From the active controller's death to a new leader: the survivors notice when their fetch times out
    (fetch_timeout_ms after their last answer, which came at most fetch_max_wait_ms before the death, half on
    average), then one round of pre-votes and one of votes between the two surviving voters."""
    return fetch_timeout_ms - fetch_max_wait_ms / 2 + 2 * vote_rtt_ms


def ratio(measured, model):
    return round(measured / model, 2) if measured is not None and model else None
