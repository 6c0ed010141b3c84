"""playbooks/dc_failover.yml when the lost DC's hosts cannot be reached, as in a real outage.

Every host points at a closed port, and the admin runner finds no broker at
the closed addresses the nodes advertise: the run cannot take the DC down,
and Kafka cannot be asked whether the DC is gone. The run must take the DC's
unreachable hosts for down, go on to ask Kafka, and stop there, failing
closed: a DC that SSH cannot reach is not lost until Kafka's own view says
so, so nothing is relaxed (not even a strict min.insync.replicas) and no
writability is timed.
"""

import yaml
from test_guards_playbook import NO_CLUSTER, no_cluster
from test_preflight_playbook import base_inventory

from testkit.playbook import run as run_playbook

LOST = ["dc2-broker0", "dc2-broker1", "dc2-controller0"]


def fail_over(tmp_path, **extra):
    inv = base_inventory()
    no_cluster(inv)
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inv))
    run = run_playbook(path, "dc_failover", timeout=300, kafka_ops_failover_dc="dc2", **NO_CLUSTER, **extra)
    return run, run.text + run.stderr


def down(run):
    [(_, noted)] = run.results("Note which of the DC's nodes were stopped and which could not be reached")
    return noted["ansible_facts"]["kafka_ops_failover_down"]


def test_an_unreachable_dc_without_kafkas_word_is_refused_and_nothing_is_relaxed(tmp_path):
    run, out = fail_over(tmp_path, kafka_min_insync_replicas=3, kafka_ops_failover_min_insync_replicas=2,
                                  kafka_ops_failover_confirm_timeout=4)  # fmt: skip
    assert not run.ok, out
    assert sorted(h for h, s in run.recap.items() if s.get("ignored")) == LOST, run.recap
    assert not [h for h, s in run.recap.items() if s.get("unreachable")], run.recap
    assert down(run)["unreachable"] == LOST
    assert down(run)["stopped"] == []
    [(_, asked)] = run.results("Wait until this gate passes, dc_lost")
    assert not asked["passed"], asked
    # It asked the cluster (the controllers for the quorum, the brokers for their registrations) and read nothing.
    assert "the cluster's quorum could not be read" in asked["problems"], asked["problems"]
    assert "the cluster's brokers could not be read" in asked["problems"], asked["problems"]
    [(_, refused)] = run.results("Refuse to fail over a DC that still answers in Kafka's view")
    assert refused["msg"].startswith("dc2 is not gone: cannot read the quorum: no controller answered"), refused
    assert "The run could not reach dc2-broker0, dc2-broker1, dc2-controller0 over SSH" in refused["msg"]
    assert not run.results("Keep the cluster-wide min.insync.replicas as declared"), "relaxed without Kafka's word"
    assert not run.results("Wait until every partition of the probe topic"), "timed without Kafka's word"
    assert "undefined" not in out.lower(), out
