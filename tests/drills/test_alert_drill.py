"""The alerts no other drill raises, each made to fire once on the testbed (`make drill-alerts`; not in `make test`).

Against the running testbed (make up converge), with the tests' Prometheus
(the roles' targets, rules and thresholds, the cluster's exporter):

1. the WAN's round trip between the broker DCs is raised to 100 ms
   (`python -m stretch.wan set --rtt 100`), above the 60 ms the inventory's
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
   broker is started, the topic's min.insync.replicas changed (which
   clears its ELR: Kafka elects no unclean leader while a partition has an
   eligible one) and the second DC's replica elected leader uncleanly (the
   admin API's UNCLEAN election, as kafka-leader-election --election-type
   unclean): KafkaUncleanLeaderElection fires; both brokers run again after.
   Only with STRETCH_ALERT_DRILL_UNCLEAN=1: on Kafka 4.3.1 the election is
   refused, and the scratch topic's deletion breaks the testbed (UNCLEAN
   below); without it the step prints OPEN and passes nothing;
4. a scratch topic whose min.insync.replicas (2) is more than its replicas
   (1): its partition is under min ISR with no eligible leader replica for
   as long as it exists, and KafkaUnderMinIsrWithoutEligibleLeader fires
   for it; the topic is deleted and it resolves.

Every check is printed PASS or FAIL with its figure; reports/alert-drill.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from confluent_kafka import ElectionType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from stretch.cluster import REPO, wait_until
from stretch.soak import faults

REPORTS = REPO / "reports"
# How long an alert may take to fire: its `for` and a few evaluations (every 5 s here).
FIRE_SECONDS = {"KafkaWanRoundTripHigh": 240, "NodeDiskFull": 90, "KafkaUncleanLeaderElection": 90,
                "KafkaUnderMinIsrWithoutEligibleLeader": 150}  # fmt: skip
RAISED_RTT_MS = 100
# Step 3 on Kafka 4.3.1 with ELR on: the UNCLEAN election is refused (ELIGIBLE_LEADERS_NOT_AVAILABLE) even after
# the topic's min.insync.replicas changed, and after the scratch topic is deleted the controllers fail the second
# DC's broker's registration ("Topic ID ... existed in isrMembers, but not in the topics map"), restarted or not,
# so the testbed stays broken. It runs only when asked for.
UNCLEAN = os.environ.get("STRETCH_ALERT_DRILL_UNCLEAN") == "1"
UNCLEAN_OPEN = (
    "on Kafka 4.3.1 the UNCLEAN election is refused while ELR is on, and deleting its scratch topic "
    "leaves the controllers failing a broker's registration (docs/observability.md)"
)


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

    def write(self, topic, records):
        """records acks=all writes to topic; how many were acknowledged."""
        acked = []
        producer = Producer({**self.config(), "acks": "all", "message.timeout.ms": 30000})
        for i in range(records):
            producer.produce(topic, f"alert-drill {i}".encode(), on_delivery=lambda err, _: acked.append(err is None))
        producer.flush(60)
        return sum(acked)


def wan(*args):
    subprocess.run([sys.executable, "-m", "stretch.wan", *args], check=True, cwd=REPO, timeout=300)


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
    if not UNCLEAN:
        drill.figures["unclean_election"] = "OPEN: not run (STRETCH_ALERT_DRILL_UNCLEAN=1 runs it; see below)"
        print(f"OPEN  KafkaUncleanLeaderElection is not made to fire: {UNCLEAN_OPEN}", flush=True)
        return
    first, second = drill.cluster.dcs
    one, other = (next(n for n in drill.cluster.brokers if n.dc == dc) for dc in (first, second))
    topic, admin = "stretch-alert-drill-unclean", drill.admin()
    configs = {"min.insync.replicas": "1", "unclean.leader.election.enable": "false"}
    new = NewTopic(topic, num_partitions=1, replica_assignment=[[one.node_id, other.node_id]], config=configs)
    admin.create_topics([new])[topic].result(timeout=60)
    try:
        faults.kill_and_keep_down(drill.tb, other.host)
        drill.figures["unclean_topic_records_acknowledged"] = drill.write(topic, 200)
        drill.tb.exec(one.host, "systemctl", "stop", "kafka", timeout=180)
        faults.ensure_started(drill.tb, other.host)
        time.sleep(20)
        quiet = not drill.firing("KafkaUnderMinIsrWithoutEligibleLeader")
        drill.check("the partition without a leader keeps an eligible leader replica: no ELR alert", quiet)
        # Kafka elects no unclean leader while the partition has an eligible one (ELIGIBLE_LEADERS_NOT_AVAILABLE,
        # seen here): a change of the topic's min.insync.replicas clears its ELR (KIP-966), as an operator's
        # must before forcing the election.
        change = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry("min.insync.replicas", "2", incremental_operation=AlterConfigOpType.SET)])  # fmt: skip
        admin.incremental_alter_configs([change])[change].result(timeout=60)
        tried = []

        def elect():
            elected = admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition(topic, 0)]).result(timeout=60)
            tried.append({str(tp): str(err) for tp, err in elected.items()})
            return all(err is None for err in elected.values())

        done = wait_until(elect, timeout=60, interval=3)
        drill.figures["unclean_election"] = tried[-1] if tried else None
        drill.check(f"{other.host} elected uncleanly, once the ELR is cleared", done, tried[-3:])
        drill.fires("KafkaUncleanLeaderElection", {}, f"{other.host} elected uncleanly")
    finally:
        for node in (one, other):
            faults.ensure_started(drill.tb, node.host)
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
