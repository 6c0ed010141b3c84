"""playbooks/rolling_restart.yml against the testbed: the plan, and a gate that stops it.

Whole rolling restarts under load, with the order checked and no
acknowledged record lost, are the drills' (tests/drills: the CA rotation in
`make test`, three restarts in a row in `make drill-restart`).
"""

from testkit.cluster import playbook, quorum_leader, start_times, wait_until


def restarted(before, after):
    return sorted(h for h in before if before[h] != after[h])


def test_a_dry_run_prints_the_plan_and_the_gates_and_restarts_nothing(cluster, hosts):
    before = start_times(cluster, hosts)
    proc = playbook(cluster, "rolling_restart", kafka_ops_restart_dry_run=True)
    assert proc.returncode == 0, proc.text[-3000:]
    leader = quorum_leader(cluster)
    others = [c.host for c in cluster.controllers if c.host != leader]
    brokers = [b.host for b in cluster.brokers]
    order = ", ".join([*others, leader, *brokers])
    assert f"dry run: restart {len(cluster.nodes)} node(s) in this order: {order}" in proc.text
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
            "rolling_restart",
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
    # Give leadership back to the preferred replicas, as a finished restart
    # does: with dc2 down, every leader moved to dc1, and later tests (the
    # smoke test's control read) expect leaders in both DCs.
    admin = cluster.admin()
    try:
        balanced = wait_until(lambda: not admin.elect_preferred_everywhere()[1] and not admin.not_preferred(), 120, 3)
        assert balanced, f"partitions still led by another replica: {admin.not_preferred()}"
    finally:
        admin.close()
