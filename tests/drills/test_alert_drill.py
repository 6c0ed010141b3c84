"""The alerts no other drill raises, each made to fire once on the testbed (`make drill-alerts`; not in `make test`).

Against the running testbed (make up converge), with the tests' Prometheus
(the roles' targets, rules and thresholds, the cluster's exporter):

1. the WAN's round trip between the broker DCs is raised to 100 ms
   (`python -m testkit.wan set --rtt 100`), above the 60 ms the inventory's
   kafka_wan_link (30 ms) and the default factor give: KafkaWanRoundTripHigh
   fires for both directions; the inventory's WAN is put back and it
   resolves;
2. a broker's data volume is filled to the last byte (the soak's disk-full
   fault on its tmpfs log dir): NodeDiskFull fires for that node and mount;
   the filler is removed, the volume put back, and it resolves;
3. an unclean leader election on a scratch topic of two replicas (one in
   each broker DC, min.insync.replicas 1): the second DC's replica is
   stopped, records are written, the first DC's replica is stopped (the
   partition has no leader; the ELR keeps the first DC's replica, so
   KafkaUnderMinIsrWithoutEligibleLeader stays quiet), the second DC's
   broker is started and elected leader uncleanly (the admin API's UNCLEAN
   election, as kafka-leader-election --election-type unclean):
   KafkaUncleanLeaderElection fires, and the records acknowledged while the
   new leader was down are gone from the partition (its end offset); the
   first DC's broker is started and the topic deleted once both replicas
   are in sync again;
4. a scratch topic whose min.insync.replicas (2) is more than its replicas
   (1): its partition is under min ISR with no eligible leader replica for
   as long as it exists, and KafkaUnderMinIsrWithoutEligibleLeader fires
   for it; the topic is deleted and it resolves.

Every check is printed PASS or FAIL with its figure; reports/alert-drill.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from confluent_kafka import Consumer, ElectionType, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from testkit.cluster import REPO, wait_until
from testkit.soak import faults

REPORTS = REPO / "reports"
# How long an alert may take to fire: its `for` and a few evaluations (every 5 s here).
FIRE_SECONDS = {"KafkaWanRoundTripHigh": 240, "NodeDiskFull": 90, "KafkaUncleanLeaderElection": 90,
                "KafkaUnderMinIsrWithoutEligibleLeader": 150}  # fmt: skip
RAISED_RTT_MS = 100


class Drill:
    def __init__(self, cluster, prometheus):
        self.cluster, self.prometheus = cluster, prometheus
        self.checks, self.figures = [], {}
        self.tb = faults.Testbed(cluster, None, log_dir=REPORTS / "alert-drill")

    def check(self, name, passed, detail=""):
        self.checks.append({"check": name, "passed": bool(passed), "detail": str(detail)})
        print(f"{'PASS' if passed else 'FAIL'}  {name}{': ' + str(detail) if detail != '' else ''}", flush=True)
        return passed

    def firing(self, alert):
        return [a for a in self.prometheus.alerts("firing") if a["alertname"] == alert]

    def fires(self, alert, match, what):
        """Waits until alert fires with labels including match; checks it, and returns the seconds it took."""
        started = time.monotonic()
        found = wait_until(
            lambda: [a for a in self.firing(alert) if match.items() <= a.items()], timeout=FIRE_SECONDS[alert]
        )
        took = round(time.monotonic() - started, 1)
        self.check(f"{what}: {alert} fires for {match}", found, f"after {took} s" if found else self.firing(alert))
        return took

    def resolves(self, alert, match, what, timeout=180):
        gone = wait_until(lambda: not [a for a in self.firing(alert) if match.items() <= a.items()], timeout=timeout)
        self.check(f"{what}: {alert} resolves", gone, self.firing(alert))

    def config(self):
        return {"bootstrap.servers": self.cluster.bootstrap_servers, **self.cluster.client_config}

    def admin(self):
        return AdminClient(self.config())

    def partition(self, partition):
        """The partition's metadata, as the cluster gives it now."""
        topic = self.admin().list_topics(partition.topic, timeout=30).topics[partition.topic]
        return topic.partitions[partition.partition]

    def leader(self, partition):
        return self.partition(partition).leader

    def isr(self, partition):
        return self.partition(partition).isrs

    def end_offset(self, partition):
        """The partition's end offset (its high watermark), from its leader."""
        consumer = Consumer({**self.config(), "group.id": "stretch-alert-drill"})
        try:
            return consumer.get_watermark_offsets(partition, timeout=30)[1]
        finally:
            consumer.close()

    def write(self, topic, records):
        """records acks=all writes to topic; how many were acknowledged."""
        acked = []
        producer = Producer({**self.config(), "acks": "all", "message.timeout.ms": 30000})
        for i in range(records):
            producer.produce(topic, f"alert-drill {i}".encode(), on_delivery=lambda err, _: acked.append(err is None))
        producer.flush(60)
        return sum(acked)


def wan(*args):
    subprocess.run([sys.executable, "-m", "testkit.wan", *args], check=True, cwd=REPO, timeout=300)


def raise_the_wan_round_trip(drill):
    first, second = drill.cluster.dcs
    try:
        wan("set", "--rtt", str(RAISED_RTT_MS))
        drill.figures["wan_alert_after_seconds"] = drill.fires(
            "KafkaWanRoundTripHigh", {"dc": first, "peer_dc": second}, f"the round trip raised to {RAISED_RTT_MS} ms"
        )
        drill.fires("KafkaWanRoundTripHigh", {"dc": second, "peer_dc": first}, "the other direction")
    finally:
        wan("apply")
    drill.resolves("KafkaWanRoundTripHigh", {}, "the inventory's WAN back")


def fill_a_data_disk(drill):
    node = drill.cluster.brokers[0].host
    volume, fault = faults.Volume(node), faults.DiskFull(node)
    try:
        made = volume.make(drill.tb)
        drill.figures["disk_full"] = fault.inject(drill.tb)
        drill.figures["disk_full_alert_after_seconds"] = drill.fires(
            "NodeDiskFull", {"node": node, "mountpoint": made["path"]}, f"{node}'s data volume filled"
        )
    finally:
        fault.undo(drill.tb)
        volume.restore(drill.tb)
    drill.check("the cluster is whole again after the disk-full fault", drill.tb.wait_healthy(300)["passed"])
    drill.resolves("NodeDiskFull", {"node": node}, "the volume emptied and put back")


def unclean_election(drill):
    first, second = drill.cluster.dcs
    one, other = (next(n for n in drill.cluster.brokers if n.dc == dc) for dc in (first, second))
    topic, admin = "stretch-alert-drill-unclean", drill.admin()
    configs = {"min.insync.replicas": "1", "unclean.leader.election.enable": "false"}
    new = NewTopic(topic, num_partitions=1, replica_assignment=[[one.node_id, other.node_id]], config=configs)
    admin.create_topics([new])[topic].result(timeout=60)
    partition = TopicPartition(topic, 0)
    # The controllers' counter stands still before the election: the alert must be quiet, or its firing proves nothing.
    drill.check("no unclean election before the step: KafkaUncleanLeaderElection quiet",
                not drill.firing("KafkaUncleanLeaderElection"), drill.firing("KafkaUncleanLeaderElection"))  # fmt: skip
    try:
        faults.kill_and_keep_down(drill.tb, other.host)
        acknowledged = drill.figures["unclean_topic_records_acknowledged"] = drill.write(topic, 200)
        drill.tb.exec(one.host, "systemctl", "stop", "kafka", timeout=180)
        faults.ensure_started(drill.tb, other.host)
        time.sleep(20)
        quiet = not drill.firing("KafkaUnderMinIsrWithoutEligibleLeader")
        drill.check("the partition without a leader keeps an eligible leader replica: no ELR alert", quiet)
        tried = []

        def elect():
            # Refused until the started broker is unfenced; the ELR (the stopped replica) does not stand in the way.
            # A new admin client each time: the broker an older one sends admin requests to may be a stopped one.
            client = drill.admin()  # kept while its request is under way: a client collected is destroyed
            try:
                elected = client.elect_leaders(ElectionType.UNCLEAN, [partition]).result(timeout=30)
            except KafkaException as e:
                tried.append(str(e))
                return False
            tried.append({str(tp.topic): str(err) for tp, err in elected.items()})
            return all(err is None for err in elected.values())

        done = wait_until(elect, timeout=90, interval=3)
        drill.figures["unclean_election_attempts"] = len(tried)
        drill.check(f"{other.host} elected uncleanly", done, tried[-3:])
        leader = drill.leader(partition)
        drill.check(f"{other.host} leads the partition", leader == other.node_id, leader)
        end = drill.figures["unclean_topic_end_offset"] = drill.end_offset(partition)
        drill.check(f"the {acknowledged} records acknowledged while {other.host} was down are gone from the partition",
                    acknowledged == 200 and end == 0, f"end offset {end}")  # fmt: skip
        drill.fires("KafkaUncleanLeaderElection", {}, f"{other.host} elected uncleanly")
    finally:
        for node in (one, other):
            faults.ensure_started(drill.tb, node.host)
        # Deleted once both replicas are in sync: the partition then has no eligible leader replica left over.
        in_sync = wait_until(lambda: len(drill.isr(partition)) == 2, timeout=180, interval=3)
        drill.check("both replicas in sync again before the scratch topic is deleted", in_sync, drill.isr(partition))
        admin.delete_topics([topic])[topic].result(timeout=60)
    drill.check("the cluster is whole again after the unclean election", drill.tb.wait_healthy(300)["passed"])


def partition_without_eligible_leader(drill):
    broker = drill.cluster.brokers[0]
    topic, admin = "stretch-alert-drill-no-elr", drill.admin()
    new = NewTopic(topic, num_partitions=1, replica_assignment=[[broker.node_id]], config={"min.insync.replicas": "2"})
    admin.create_topics([new])[topic].result(timeout=60)
    try:
        drill.fires("KafkaUnderMinIsrWithoutEligibleLeader", {"topic": topic, "dc": broker.dc},
                    "a partition whose one replica cannot make min ISR 2")  # fmt: skip
    finally:
        admin.delete_topics([topic])[topic].result(timeout=60)
    drill.resolves("KafkaUnderMinIsrWithoutEligibleLeader", {"topic": topic}, "the topic deleted")


def test_the_alerts_no_other_drill_raises_fire_on_the_testbed(cluster, prometheus):
    REPORTS.mkdir(exist_ok=True)
    drill = Drill(cluster, prometheus)
    for step in (raise_the_wan_round_trip, fill_a_data_disk, unclean_election, partition_without_eligible_leader):
        print(f"--- {step.__name__}", flush=True)
        step(drill)
    out = REPORTS / "alert-drill.json"
    out.write_text(json.dumps({"figures": drill.figures, "checks": drill.checks}, indent=2) + "\n")
    failed = [c for c in drill.checks if not c["passed"]]
    assert not failed, failed
