"""Controller replacement under load (part of `make test`; alone: `make drill-quorum`).

Against the running testbed, with the load harness writing (acks=all,
idempotent) and reading as each broker DC, playbooks/controllers.yml changes
the KRaft voters (KIP-853):

- refusals, before any host is touched: removing the tiebreaker (the voters
  left would span two DCs), an unknown action, a host that is not a
  controller. The voters are the same afterwards.
- the tiebreaker's host is lost: its container is destroyed and made again
  from the image, a new host with nothing installed. `replace` installs it,
  formats it to join as an observer, removes its stale voter key and adds the
  new one.
- a broker-DC controller's disk is wiped: it comes back with a new directory
  id. Asked to `add` it, the playbook installs and starts it, then refuses
  and names `replace`; the node runs as an observer meanwhile, and the old key
  stays a voter that does not advance: the new node does not vote as the old
  one. `replace` then swaps the keys.

After each replacement: three voters in three DCs, all caught up, the new
directory id a voter and the old one gone, and a second run changes nothing.
No acknowledged record may be lost or reordered. Figures (wall time of each
run, produce latency, the longest write stall) go to reports/quorum-drill.json.
"""

from __future__ import annotations

import subprocess

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.quorum import keys
from testkit.cluster import REPO, playbook, wait_until
from testkit.cluster import read_quorum as cluster_quorum
from testkit.drill import Load, recorded

REPORTS = REPO / "reports"
LOGS = REPORTS / "quorum-drill"


@pytest.fixture
def figures():
    with recorded(REPORTS / "quorum-drill.json") as found:
        yield found


def read_quorum(cluster, timeout=60):
    """The quorum with directory ids, asked of the controllers until one answers as the leader."""
    errors = []
    quorum = wait_until(lambda: cluster_quorum(cluster, errors), timeout=timeout, interval=1)
    assert quorum, f"no quorum leader answered in {timeout} s: {errors[-1:]}"
    return quorum


def voter_keys(quorum):
    return {r["id"]: r["directory_id"] for r in quorum["replicas"]["voters"]}


def quorum_change(cluster, action, host):
    extra = {"kafka_ops_quorum_action": action, "kafka_ops_quorum_controller": host}
    return playbook(cluster, "controllers", log_dir=LOGS, **extra)


def controllers(cluster, figures, label, action, host, expect_ok=True):
    run = quorum_change(cluster, action, host)
    figures["steps"].append({"step": label, "wall_seconds": run.seconds, "ok": run.ok})
    print(f"{label}: {run.seconds} s, {'ok' if run.ok else 'refused'}", flush=True)
    assert run.ok == expect_ok, f"{label}: expected {'success' if expect_ok else 'a refusal'}; see {run.log}"
    return run


def assert_replaced(cluster, before, node):
    """Three voters, all caught up; node's key is new, the others' are as they were."""
    quorum = read_quorum(cluster)
    after = voter_keys(quorum)
    assert sorted(after) == sorted(before), f"voters {after}, were {before}"
    assert after[node.node_id] != before[node.node_id], f"voter {node.node_id} kept its old directory id"
    assert {v: d for v, d in after.items() if v != node.node_id} == {
        v: d for v, d in before.items() if v != node.node_id
    }, "another voter's key changed"
    end = quorum["voters"][quorum["leader"]]
    assert all(end - offset <= 5 for offset in quorum["voters"].values()), quorum["voters"]


def directory_id(host):
    """The directory id in the node's meta.properties: the new half of its key."""
    meta = subprocess.run(["podman", "exec", host, "cat", "/var/lib/kafka/metadata/meta.properties"],
                          check=True, capture_output=True, text=True).stdout  # fmt: skip
    return next(line.split("=", 1)[1] for line in meta.splitlines() if line.startswith("directory.id="))


def test_changes_that_would_break_the_quorum_are_refused_before_any_host_is_touched(cluster, figures):
    before = voter_keys(read_quorum(cluster))
    tiebreaker = cluster.tiebreakers[0]
    run = controllers(cluster, figures, "refused: remove the tiebreaker", "remove", tiebreaker.host, expect_ok=False)
    left = [dc for dc in cluster.controller_dcs if dc != tiebreaker.dc]
    assert f"controllers span {len(left)} DC(s) ({', '.join(left)})" in run.text, run.text
    unknown = quorum_change(cluster, "swap", tiebreaker.host)
    assert not unknown.ok
    assert "kafka_ops_quorum_action" in unknown.text, unknown.text
    assert "swap" in unknown.text, unknown.text
    broker = cluster.brokers[0]
    not_controller = quorum_change(cluster, "replace", broker.host)
    assert not not_controller.ok
    assert f"kafka_ops_quorum_controller = '{broker.host}' one of" in not_controller.text, not_controller.text
    for refused in (run, unknown, not_controller):
        assert refused.changed == 0, refused.recap
    assert voter_keys(read_quorum(cluster)) == before


def test_a_lost_tiebreaker_and_a_wiped_controller_are_replaced_under_load(cluster, figures, tmp_path):
    tiebreaker = cluster.tiebreakers[0]
    wiped = next(c for c in cluster.controllers if c.dc == cluster.dcs[0])
    before = voter_keys(read_quorum(cluster))

    with Load(cluster, tmp_path / "tiebreaker", "the tiebreaker's replacement", figures):
        # The host is lost: a new container from the image, nothing installed.
        subprocess.run(["podman", "rm", "--force", "--time", "0", tiebreaker.host], check=True, capture_output=True)
        rebuilt = playbook(cluster, str(REPO / "testbed/up.yml"), log_dir=LOGS)
        assert rebuilt.ok, rebuilt.log
        controllers(cluster, figures, "replace the lost tiebreaker", "replace", tiebreaker.host)
    assert_replaced(cluster, before, tiebreaker)
    again = controllers(cluster, figures, "replace the tiebreaker again (no-op)", "replace", tiebreaker.host)
    assert again.changed == 0, again.recap

    before = voter_keys(read_quorum(cluster))
    with Load(cluster, tmp_path / "wiped", "the wiped controller's replacement", figures):
        subprocess.run(
            ["podman", "exec", wiped.host, "sh", "-c",
             "systemctl stop kafka && rm -rf /var/lib/kafka/metadata /var/lib/kafka/data"],
            check=True, capture_output=True,
        )  # fmt: skip
        refused = controllers(cluster, figures, "refused: add the wiped controller", "add", wiped.host, False)
        assert "Use kafka_ops_quorum_action=replace" in refused.text, refused.text

        # It runs, as an observer with its new directory id; the old key is a voter that no longer advances.
        fresh = directory_id(wiped.host)
        assert fresh != before[wiped.node_id], "the wiped controller kept its directory id"

        def observing():
            quorum = read_quorum(cluster)
            return quorum if (wiped.node_id, fresh) in keys(quorum["replicas"]["observers"]) else None

        quorum = wait_until(observing, timeout=90)
        assert quorum, f"controller {wiped.node_id} never fetched as an observer with directory {fresh}"
        assert voter_keys(quorum)[wiped.node_id] == before[wiped.node_id]
        stale = quorum["voters"][wiped.node_id]
        later = wait_until(lambda: (q := read_quorum(cluster))["voters"][q["leader"]] > stale + 10 and q, 30)
        assert later, "the quorum's log did not advance in 30 s"
        assert later["voters"][wiped.node_id] == stale, "the wiped node advanced the old key"
        controllers(cluster, figures, "replace the wiped controller", "replace", wiped.host)
    assert_replaced(cluster, before, wiped)
    assert voter_keys(read_quorum(cluster))[wiped.node_id] == fresh

    converge = playbook(cluster, "site", log_dir=LOGS)
    assert converge.ok, converge.log
    assert converge.changed == 0, f"a converge after the replacements changed {converge.recap}"
