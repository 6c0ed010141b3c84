"""Writable means acknowledged: acks=all probe writes to every partition of a probe topic.

Metadata can say a partition has a leader and enough in-sync replicas while
that leader is a dead broker the controllers have not fenced yet; no write is
acknowledged then. A probe write that is acknowledged by every in-sync
replica is the proof. The probe topic is placed like every declared topic
(DC-grouped, its preferred leaders spread over all brokers), so each broker
leads a share of it. Transactions need more: __transaction_state, with a
min.insync.replicas of its own, takes the transaction coordinator's acks=all
writes; a transactional producer's init and commit, writing one probe record,
prove it (KafkaTransactionProbe).

poll() is plain Python over a send(partition) callable, so the loop, its
clock and its timeout are tested without Kafka.
"""

from __future__ import annotations

import threading
import time


def until_answered(call, timeout, interval=0.5, clock=time.time, sleep=time.sleep):
    """call()'s result, asked again after each failure until it answers or timeout seconds have passed.

    Returns (result, seconds it took). A cluster that has just lost a DC can take longer than one request's
    bound to answer the first metadata request (a new connection's TLS and SASL handshakes to a broker that
    is busy electing leaders, over the WAN): one late answer must not fail a wait that may last minutes. The
    last failure is raised, with the time spent, once the time is up: closed, never a pass.
    """
    started = clock()
    while True:
        try:
            return call(), clock() - started
        except Exception as exc:  # noqa: BLE001  retried until the time is up, then raised
            spent = clock() - started
            if spent >= timeout:
                raise RuntimeError(f"{type(exc).__name__}: {exc} (still failing after {spent:.0f} s)") from exc
        sleep(interval)


def poll(partitions, send, since, timeout, interval=0.2, clock=time.time, sleep=time.sleep):
    """Send a probe to every partition not yet acknowledged, until each is, or timeout.

    send(partition) returns None when the write was acknowledged, or why it was not.
    since: when the cluster lost what it lost (epoch seconds, the clock's scale).
    Returns {"acked_after": {partition: seconds from since}, "pending": {partition: last reason},
    "started_after": seconds from since to the first probe, "every_partition_after": the largest
    acked_after, or None while one is pending}.
    """
    started = clock()
    acked, pending = {}, {p: "not probed yet" for p in partitions}
    while pending:
        for p in sorted(pending):
            reason = send(p)
            if reason is None:
                acked[p] = round(clock() - since, 2)
                del pending[p]
            else:
                pending[p] = reason
        if not pending or clock() - started >= timeout:
            break
        sleep(interval)
    return {
        "acked_after": acked,
        "pending": pending,
        "started_after": round(started - since, 2),
        "every_partition_after": max(acked.values()) if acked and not pending else None,
    }


class KafkaProbe:
    """acks=all writes through kafka-python, one at a time, each bounded by request_timeout."""

    def __init__(self, bootstrap_servers, topic, client_config=None, request_timeout=2.0):
        from kafka import KafkaProducer  # noqa: PLC0415  kafka-python is only needed where the probe runs

        from ansible_collections.stretch.kafka.plugins.module_utils.kafka_admin import live_bootstrap  # noqa: PLC0415

        self.topic = topic
        self.timeout = request_timeout
        self.producer = KafkaProducer(
            bootstrap_servers=live_bootstrap(bootstrap_servers, client_config),
            client_id="stretch-kafka-probe",
            acks="all",
            retries=0,
            enable_idempotence=False,
            request_timeout_ms=int(request_timeout * 1000),
            delivery_timeout_ms=int(request_timeout * 1000) + 100,
            max_block_ms=int(request_timeout * 1000),
            metadata_max_age_ms=1000,
            linger_ms=0,
            **(client_config or {}),
        )

    def partitions(self):
        found = self.producer.partitions_for(self.topic)
        if not found:
            raise RuntimeError(f"the probe topic {self.topic} has no partitions (is it declared and created?)")
        return sorted(found)

    def send(self, partition):
        try:
            self.producer.send(self.topic, value=b"probe", partition=partition).get(timeout=self.timeout + 1)
        except Exception as exc:  # noqa: BLE001  every failure is a reason to probe again
            return f"{type(exc).__name__}: {exc}"[:200]
        return None

    def close(self):
        self.producer.close(timeout=2)


TRANSACTIONAL_ID = "stretch-kafka-probe"


class KafkaTransactionProbe:
    """A transaction that writes one probe record and commits, through kafka-python, each attempt bounded.

    kafka-python bounds init_transactions (max_block_ms) but waits on a commit for good, and a coordinator
    that cannot write __transaction_state answers a retriable error: each attempt runs in a thread and is
    given up after attempt_timeout, with a new producer (whose init fences the last one's) for the next.
    """

    def __init__(self, bootstrap_servers, topic, client_config=None, request_timeout=2.0, attempt_timeout=15.0):
        from ansible_collections.stretch.kafka.plugins.module_utils.kafka_admin import live_bootstrap  # noqa: PLC0415

        self.servers = live_bootstrap(bootstrap_servers, client_config)
        self.topic, self.config = topic, dict(client_config or {})
        self.timeout, self.attempt_timeout = request_timeout, attempt_timeout

    def _commit(self, partition):
        from kafka import KafkaProducer  # noqa: PLC0415  kafka-python is only needed where the probe runs

        producer = KafkaProducer(
            bootstrap_servers=self.servers,
            client_id="stretch-kafka-probe",
            transactional_id=TRANSACTIONAL_ID,
            acks="all",
            enable_idempotence=True,
            request_timeout_ms=int(self.timeout * 1000),
            max_block_ms=int(self.attempt_timeout * 1000),
            linger_ms=0,
            **self.config,
        )
        try:
            producer.init_transactions()
            producer.begin_transaction()
            producer.send(self.topic, value=b"probe", partition=partition).get(timeout=self.attempt_timeout)
            producer.commit_transaction()
        finally:
            producer.close(timeout=2)

    def send(self, partition):
        """None when a transaction wrote a probe record to partition and committed within attempt_timeout, else
        why it did not."""
        outcome = {}

        def attempt():
            try:
                self._commit(partition)
                outcome["done"] = True
            except Exception as exc:  # noqa: BLE001  every failure is a reason to try again
                outcome["error"] = f"{type(exc).__name__}: {exc}"[:200]

        worker = threading.Thread(target=attempt, daemon=True)
        worker.start()
        worker.join(self.attempt_timeout)
        if outcome.get("done"):
            return None
        return outcome.get("error") or f"no commit within {self.attempt_timeout:g} s"

    def close(self):
        return None
