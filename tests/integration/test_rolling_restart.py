"""playbooks/rolling-restart.yml against the testbed: the plan, a gate that stops it, and a restart under load.

The load harness (python -m loadtest) writes and reads through the whole
restart; its verifier must find every acknowledged record in both DCs.
"""

import time

import pytest
from kafka.admin import KafkaAdminClient

from loadtest.background import BackgroundLoad
from tests.cluster import playbook, start_times


@pytest.fixture
def quorum_leader(cluster):
    admin = KafkaAdminClient(bootstrap_servers=cluster.admin_bootstrap_servers, **cluster.admin_config)
    try:
        return admin.describe_metadata_quorum()["topics"][0]["partitions"][0]["leader_id"]
    finally:
        admin.close()


def restarted(before, after):
    return sorted(h for h in before if before[h] != after[h])


def test_a_dry_run_prints_the_plan_and_the_gates_and_restarts_nothing(cluster, hosts, quorum_leader):
    before = start_times(cluster, hosts)
    proc = playbook(cluster, "rolling-restart", kafka_ops_restart_dry_run=True)
    assert proc.returncode == 0, proc.text[-3000:]
    leader = next(c.host for c in cluster.controllers if c.node_id == quorum_leader)
    others = [c.host for c in cluster.controllers if c.host != leader]
    brokers = [b.host for b in cluster.brokers]
    order = ", ".join([*others, leader, *brokers])
    assert f"dry run: restart 7 node(s) in this order: {order}" in proc.text
    for host in [*others, leader, *brokers]:
        assert f"{host}: its gate passes now" in proc.text, proc.text[-3000:]
    assert restarted(before, start_times(cluster, hosts)) == []


def test_a_gate_that_does_not_pass_stops_the_restart_before_the_node_goes_down(cluster, hosts):
    dc2 = [b for b in cluster.brokers if b.dc != cluster.brokers[0].dc]
    dc1 = [b for b in cluster.brokers if b.dc == cluster.brokers[0].dc]
    for broker in dc2:
        hosts[broker.host].run("systemctl stop kafka")
    try:
        before = start_times(cluster, hosts)
        proc = playbook(
            cluster,
            "rolling-restart",
            kafka_ops_restart_hosts=[b.host for b in dc1],
            kafka_ops_gate_timeout=15,
            kafka_ops_restart_smoke_test=False,
        )
        assert proc.returncode != 0
        # With the other DC's brokers down, the ISRs hold only this DC's two.
        assert f"gate broker_down_safe for node {dc1[0].node_id} still blocked" in proc.text, proc.text[-3000:]
        assert f"would go under min.insync.replicas without broker {dc1[0].node_id}" in proc.text
        assert restarted(before, start_times(cluster, hosts)) == [], "a node was restarted past a failed gate"
    finally:
        for broker in dc2:
            hosts[broker.host].run("systemctl start kafka")
    healthy = playbook(cluster, "status")
    assert healthy.returncode == 0, healthy.text[-3000:]


def test_a_rolling_restart_under_load_loses_no_acknowledged_record(cluster, hosts, tmp_path, quorum_leader):
    dcs = sorted({b.dc for b in cluster.brokers})
    load = BackgroundLoad(
        cluster.bootstrap_servers, dcs, rate=100, workdir=tmp_path, duration=900, capture=True,
        client_config_file=cluster.client_config_file(tmp_path, "kafka-load"),
    )  # fmt: skip
    try:
        load.start()
    except RuntimeError:
        pytest.fail("the load never got an acknowledgement")
    try:
        before = start_times(cluster, hosts)
        proc = playbook(cluster, "rolling-restart", kafka_ops_restart_smoke_test=False, timeout=1800)
        assert proc.returncode == 0, proc.text[-4000:]
        after = start_times(cluster, hosts)
        time.sleep(5)  # some load after the last restart too
    finally:
        output = load.stop(timeout=600)
    assert restarted(before, after) == sorted(n.host for n in cluster.nodes)
    restarts = [r["host"] for r in proc.stats["kafka_restarts"]]
    leader = next(c.host for c in cluster.controllers if c.node_id == quorum_leader)
    assert restarts[2] == leader, f"the quorum leader was not the last controller: {restarts}"
    assert set(restarts[3:]) == {b.host for b in cluster.brokers}
    assert load.report_path.exists(), output
    result = load.report()
    assert load.returncode == 0, output
    assert result["acknowledged"] > 0
    assert result["lost"] == 0, result
    assert result["reordered"] == 0, result
    assert set(result["dcs"]) == set(dcs)
