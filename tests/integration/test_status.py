"""playbooks/status.yml reads the cluster through whichever broker and controller answer."""

import yaml

from testkit.cluster import REPO, playbook, read_quorum, wait_until

# The lag the gates still take for caught up: a stopped voter must lag more.
MAX_LAG = yaml.safe_load((REPO / "roles/kafka_ops/defaults/main.yml").read_text())["kafka_ops_max_lag"]
QUORUM_READS = 20


def report_of(run):
    return next(result["msg"] for _, result in run.results("Show the cluster"))


def behind(cluster, node_id):
    """Whether the quorum, read from the controllers that answer, has a leader that node_id lags by more than
    the gates accept (the leader writes every 500 ms, so a stopped voter gets there in a few seconds)."""
    quorum = read_quorum(cluster)
    if quorum is None:  # no leader yet: not there yet
        return False
    leader = quorum["leader"]
    return leader not in (-1, node_id) and quorum["voters"][leader] - quorum["voters"].get(node_id, 0) > MAX_LAG


def test_status_prints_every_node_and_reads_on_with_the_first_controller_down(cluster, hosts):
    first = cluster.controllers[0]
    hosts[first.host].run("systemctl stop kafka")
    try:
        # The others elect a leader if it led, and it falls behind by more than the gates accept.
        assert wait_until(lambda: behind(cluster, first.node_id), timeout=60), "the quorum did not go on without it"
        # Every read of the quorum goes through, not most: a refused address once set off a background
        # bootstrap that closed the connection to the leader (11 of 30 reads failed).
        errors = []
        reads = [read_quorum(cluster, errors) for _ in range(QUORUM_READS)]
        assert all(reads), f"{len(errors)} of {QUORUM_READS} quorum reads failed: {errors[:2]}"
        down = playbook(cluster, "status", kafka_ops_status_wait=False)
    finally:
        hosts[first.host].run("systemctl start kafka")
    # It says what it sees, names what is wrong, and fails: the cluster is not whole.
    assert down.returncode != 0
    report = report_of(down)
    # A row per node (its id and host first), then what ELR (KIP-966) holds, read.
    rows = {tuple(line.split()[:2]) for line in report[2:] if line.split() and line.split()[0].isdigit()}
    assert rows == {(str(n.node_id), n.host) for n in cluster.nodes}, report
    assert [line for line in report if line.startswith("eligible leader replicas (KIP-966): eligible.leader")], report
    row = next(line for line in report if line.split()[:2] == [str(first.node_id), first.host])
    assert "follower, lag" in row
    assert f"voter {first.node_id} is" in down.text, down.text[-2000:]
    assert not [h for h, s in down.recap.items() if s.get("unreachable")]
    # Back up, the cluster is ready again and status passes.
    up = playbook(cluster, "status")
    assert up.returncode == 0, up.text[-3000:]
    assert not [line for line in report_of(up)[2:] if "not registered" in line or "not a voter" in line]
