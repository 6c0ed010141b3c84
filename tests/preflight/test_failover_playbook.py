"""playbooks/dc_failover.yml when the lost DC's hosts cannot be reached, as in a real outage.

Every host points at a closed port, and the admin runner finds no broker at
the closed addresses the nodes advertise: the run cannot take the DC down, nor prove the
cluster writable. What it must do is take the DC's unreachable hosts for
lost and go on to the steps that matter, the relaxation of a strict
min.insync.replicas and the writability probe, which then fail for want of a
cluster, not for the DC that is gone.
"""

import yaml
from test_guards_playbook import NO_CLUSTER, no_cluster
from test_preflight_playbook import base_inventory, groups

from stretch.playbook import run as run_playbook

LOST = ["dc2-broker0", "dc2-broker1", "dc2-controller0"]


def fail_over(tmp_path, **extra):
    inv = base_inventory()
    addresses = no_cluster(inv)
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inv))
    run = run_playbook(path, "dc_failover", timeout=300, kafka_ops_failover_dc="dc2", **NO_CLUSTER, **extra)
    brokers = [f"{addresses[h]}:1" for h in groups(inv)["kafka_brokers"]["hosts"]]
    return run, run.text + run.stderr, brokers


def down(run):
    [(_, noted)] = run.results("Note which of the DC's nodes were stopped and which could not be reached")
    return noted["ansible_facts"]["kafka_ops_failover_down"]


def test_an_unreachable_dc_is_taken_for_lost_and_a_strict_min_isr_is_relaxed(tmp_path):
    run, out, brokers = fail_over(tmp_path, kafka_min_insync_replicas=3, kafka_ops_failover_min_insync_replicas=2)
    assert not run.ok, out
    assert sorted(h for h, s in run.recap.items() if s.get("ignored")) == LOST, run.recap
    assert not [h for h, s in run.recap.items() if s.get("unreachable")], run.recap
    assert down(run)["unreachable"] == LOST
    assert down(run)["stopped"] == []
    assert down(run)["timed_from"] == "the run finding the DC down"
    [(_, relaxed)] = run.results("Keep the cluster-wide min.insync.replicas as declared")
    assert relaxed["failed"], relaxed
    # It tried the cluster's brokers, on the admin listener, and found none.
    assert relaxed["msg"].startswith("cannot connect to "), relaxed
    assert all(broker in relaxed["msg"] for broker in brokers), (brokers, relaxed)
    assert "undefined" not in out.lower(), out


def test_an_unreachable_dc_gets_the_writability_probe(tmp_path):
    run, out, _ = fail_over(tmp_path)
    assert not run.ok, out
    assert down(run)["unreachable"] == LOST
    assert not run.results("Keep the cluster-wide min.insync.replicas as declared"), "nothing to relax at min ISR 2"
    [(_, probed)] = run.results("Wait until every partition of the probe topic acknowledges an acks=all write")
    assert probed["failed"], probed
    assert "undefined" not in out.lower(), out
