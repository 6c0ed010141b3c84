"""Kafka 4.2.0 -> 4.3.1 in place, under load, with a rollback before finalizing (`make drill-upgrade`).

Against a testbed deployed at 4.2.0 (`make drill-upgrade` builds 4.2.0's
archive from Maven Central and deploys it), with the load harness writing
(acks=all, idempotent) and reading as each broker DC:

1. site.yml with 4.3.1 rolls the binaries through every node behind the
   gates (controllers first, the quorum leader last, then the brokers); the
   smoke test passes; metadata.version is still 4.2's.
2. Rollback: site.yml with 4.2.0 rolls every node back; the smoke test passes.
3. site.yml with 4.3.1 again, then features.yml raises each feature by name:
   metadata.version becomes 4.3's; a second run raises nothing.
4. site.yml with 4.2.0 is refused before any host is touched, naming the
   finalized metadata.version.

No acknowledged record may be lost or reordered. Figures go to
reports/upgrade-drill.json.
"""

from __future__ import annotations

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils import features
from testkit.cluster import REPO, assert_restart_order, playbook, quorum_leader
from testkit.drill import Load, recorded

REPORTS = REPO / "reports"
LOGS = REPORTS / "upgrade-drill"
OLD, NEW = "4.2.0", "4.3.1"


@pytest.fixture
def figures():
    with recorded(REPORTS / "upgrade-drill.json") as found:
        yield found


def running_release(hosts, cluster):
    """{host: the release directory each node's process runs from}."""
    return {
        n.host: hosts[n.host].check_output(
            "tr '\\0' ' ' < /proc/$(systemctl show kafka -p MainPID --value)/cmdline"
            " | grep -o 'kafka_[0-9.]*-[0-9.]*' | head -1"
        )
        for n in cluster.nodes
    }


def described(hosts, cluster):
    broker = cluster.brokers[0]
    text = hosts[broker.host].check_output(
        "/usr/local/bin/kafka-features --bootstrap-server %s --command-config /etc/kafka/client.properties describe",
        cluster.admin_bootstrap_servers,
    )
    return features.parse_describe(text)


def roll(cluster, figures, label, version):
    leader = quorum_leader(cluster)
    run = playbook(cluster, "site", log_dir=LOGS, kafka_node_version=version)
    order = [g["host"] for g in run.stats.get("kafka_restarts", [])]
    figures["steps"].append({"step": label, "wall_seconds": run.seconds, "restarted": order})
    print(f"{label}: {run.seconds} s, restarted {', '.join(order)}", flush=True)
    assert run.ok, f"{label} failed; see {run.log}"
    assert_restart_order(cluster, order, leader)
    smoke = playbook(cluster, "smoke_test", log_dir=LOGS)
    assert smoke.ok, f"the smoke test after {label} failed; see {smoke.log}"


def test_kafka_is_upgraded_rolled_back_upgraded_and_finalized_under_load(cluster, hosts, figures, tmp_path):
    assert set(running_release(hosts, cluster).values()) == {f"kafka_2.13-{OLD}"}, "deploy the testbed at 4.2.0"
    mv_old = described(hosts, cluster)["metadata.version"]["finalized"]

    with Load(cluster, tmp_path / "upgrade", "the upgrade and the rollback", figures):
        roll(cluster, figures, f"roll to {NEW}", NEW)
        assert set(running_release(hosts, cluster).values()) == {f"kafka_2.13-{NEW}"}
        assert described(hosts, cluster)["metadata.version"]["finalized"] == mv_old, "finalized by the roll"
        roll(cluster, figures, f"roll back to {OLD}", OLD)
        assert set(running_release(hosts, cluster).values()) == {f"kafka_2.13-{OLD}"}

    with Load(cluster, tmp_path / "finalize", "the second upgrade and the finalization", figures):
        roll(cluster, figures, f"roll to {NEW} again", NEW)
        run = playbook(cluster, "features", log_dir=LOGS, kafka_node_version=NEW)
        figures["steps"].append({"step": "finalize", "wall_seconds": run.seconds})
        assert run.ok, run.log
        assert run.changed > 0, "nothing was finalized"
    after = described(hosts, cluster)["metadata.version"]["finalized"]
    assert features.release_of(after) == (4, 3), f"metadata.version is {after}"
    again = playbook(cluster, "features", log_dir=LOGS, kafka_node_version=NEW)
    assert again.ok, again.log
    assert again.changed == 0, again.recap

    refused = playbook(cluster, "site", log_dir=LOGS, kafka_node_version=OLD)
    assert not refused.ok
    assert f"metadata.version is finalized at {after}; Kafka {OLD} cannot read it" in refused.text, refused.text
    assert refused.changed == 0, refused.recap
    assert set(running_release(hosts, cluster).values()) == {f"kafka_2.13-{NEW}"}
