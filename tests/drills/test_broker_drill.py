"""A broker added and retired under load (part of `make test`; alone: `make drill-brokers`).

Against the running testbed, with the load harness writing (acks=all,
idempotent) and reading as each broker DC:

- refused before any host is touched: retiring a broker of the 2+2 testbed
  (its DC would keep one broker);
- added: a third dc1 broker (tests/drills/inventory/spare-broker.yml) gets its
  container, and site.yml installs and starts it, moving no replica (a
  converge never balances by itself, and names the topics only balancing
  would mend); topics.yml with kafka_admin_balance_topics=true shows in check
  mode the replicas it would move, changing nothing, then moves its share of
  replicas onto it and nothing else, under the throttle, and elects the
  preferred leaders;
- retired: playbooks/brokers.yml drains it (every topic, internal ones too),
  stops it and unregisters it; a second run changes nothing. Its container
  goes, and the testbed's own inventory converges again.

Adding or removing a node changes every node's super.users (node principals
are listed there), so site.yml rolls every node behind the gates each time.

No acknowledged record may be lost or reordered. Figures go to
reports/broker-drill.json.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from testkit.cluster import REPO, load, playbook
from testkit.drill import Load, recorded

REPORTS = REPO / "reports"
LOGS = REPORTS / "broker-drill"
# The spare broker layered over the cluster's inventory: the testbed's by default,
# another inventory's with STRETCH_SPARE_BROKER_INVENTORY.
SPARE = Path(os.environ.get("STRETCH_SPARE_BROKER_INVENTORY", REPO / "tests/drills/inventory/spare-broker.yml"))


@pytest.fixture
def figures():
    with recorded(REPORTS / "broker-drill.json") as found:
        yield found


def assignments(cluster):
    """{(topic, partition): [replicas]} of every topic."""
    admin = cluster.admin()
    try:
        return {(name, p): replicas for name, t in admin.topics().items() for p, replicas in t["partitions"].items()}
    finally:
        admin.close()


def as_before(cluster, before):
    """Whether every partition of before still has the replica list it had (topics made since do not count)."""
    now = assignments(cluster)
    return {k: now.get(k) for k in before} == before


def registered(cluster):
    admin = cluster.admin()
    try:
        return set(admin.brokers())
    finally:
        admin.close()


def step(cluster, figures, label, name, expect_ok=True, **extra):
    run = playbook(cluster, name, log_dir=LOGS, **extra)
    figures["steps"].append({"step": label, "wall_seconds": run.seconds, "ok": run.ok})
    print(f"{label}: {run.seconds} s, {'ok' if run.ok else 'refused'}", flush=True)
    assert run.ok == expect_ok, f"{label}: expected {'success' if expect_ok else 'a refusal'}; see {run.log}"
    return run


def test_retiring_a_broker_its_dc_cannot_spare_is_refused_before_any_host_is_touched(cluster, figures):
    at_minimum = [dc for dc in cluster.dcs if sum(b.dc == dc for b in cluster.brokers) == 2]
    if not at_minimum:
        pytest.skip("every broker DC of this inventory has more than two brokers: a retirement would be allowed")
    broker = next(b for b in cluster.brokers if b.dc == at_minimum[0])
    run = step(
        cluster, figures, "refused: retire from a DC of two", "brokers", False, kafka_ops_retire_broker=broker.host
    )
    assert f"DC {broker.dc} has 1 broker(s); each DC needs at least 2" in run.text, run.text
    assert run.changed == 0, run.recap


def test_a_broker_is_added_and_retired_under_load(cluster, figures, tmp_path):
    grown = load([cluster.inventory, str(SPARE)])
    [spare] = [n for n in grown.brokers if n.host not in {b.host for b in cluster.brokers}]
    new_id = spare.node_id
    before = assignments(cluster)
    with Load(cluster, tmp_path / "add", "the broker's addition", figures):
        # Its container alone: the others would be made anew for the new /etc/hosts entry.
        assert playbook(grown, str(REPO / "testbed/up.yml"), log_dir=LOGS, testbed_only=[spare.host]).ok
        added = step(grown, figures, f"add {spare.host} (site.yml)", "site")
    # A converge moves no replica onto the new broker: balancing is asked for, and seen in check mode first.
    assert as_before(cluster, before), "site.yml moved replicas by itself"
    [(_, reconciled)] = added.results("Bring the cluster's topics")
    assert reconciled["unbalanced"], "the converge did not name the topics only balancing would mend"
    balance = {"kafka_admin_balance_topics": True}
    shown = playbook(grown, "topics", check=True, log_dir=LOGS, **balance)
    assert shown.ok, shown.log
    [(_, planned)] = shown.results("Bring the cluster's topics")
    assert planned["moved_replicas"] > 0, "check mode showed no replica to move onto the new broker"
    assert as_before(cluster, before), "check mode moved replicas"
    with Load(cluster, tmp_path / "balance", "the balance onto the new broker", figures):
        balanced = step(grown, figures, f"balance onto {spare.host} (topics.yml)", "topics", **balance)
    [(_, done)] = balanced.results("Bring the cluster's topics")
    assert done["changes"] == planned["changes"], "the balance did not do what check mode showed"
    after = assignments(cluster)
    # Only the new broker's share moved: each moved partition swapped one replica of its DC for it.
    moved = {k: (before[k], after[k]) for k in before if before[k] != after.get(k)}
    on_new = sum(new_id in r for r in after.values())
    assert on_new > 0, "nothing moved onto the new broker"
    for key, (old, new) in moved.items():
        if set(old) == set(new):
            continue  # leadership order only: no copy
        assert set(new) - set(old) == {new_id}, f"{key}: {old} -> {new} moved more than the new broker's share"
    reported = [r.get("moved_replicas") for _, r in balanced.results("Bring the cluster's topics")]
    print(f"replicas moved onto {new_id}: {on_new}; the topics run reported {reported}", flush=True)
    figures["steps"][-1]["replicas_moved"] = on_new

    with Load(grown, tmp_path / "retire", "the broker's retirement", figures):
        step(grown, figures, f"retire {spare.host}", "brokers", kafka_ops_retire_broker=spare.host)
    final = assignments(cluster)
    assert not [k for k, r in final.items() if new_id in r], "replicas left on the retired broker"
    assert new_id not in registered(cluster), f"broker {new_id} is still registered"
    again = step(grown, figures, f"retire {spare.host} again (no-op)", "brokers", kafka_ops_retire_broker=spare.host)
    assert again.changed == 0, again.recap

    # Out of the inventory: every node's super.users loses the broker's principal, so a converge rolls
    # every node behind the gates once; the next changes nothing.
    subprocess.run(["podman", "rm", "--force", "--time", "0", spare.host], check=True, capture_output=True)
    with Load(cluster, tmp_path / "converge", "the converge without it", figures):
        step(cluster, figures, f"converge without {spare.host} (site.yml)", "site")
    again = playbook(cluster, "site", log_dir=LOGS)
    assert again.ok, again.log
    assert again.changed == 0, f"a second converge of the testbed as it was changed {again.recap}"
