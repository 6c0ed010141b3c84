"""Cluster identity: made once, kept, and never reformatted."""

import itertools
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.stretch.kafka.plugins.module_utils.identity import (
    RECOVERY_DOC,
    IdentityError,
    new_uuid,
    parse_meta_properties,
    storage_plan,
)

ROOT = Path(__file__).resolve().parents[2]
META = "#\n#Sat Nov 21\nnode.id=1\ndirectory.id=pbvuBlaTTwKRxS5NLJwRFQ\nversion=1\ncluster.id=q1Sh-9_ISia_zwGINzRvyQ\n"


def nodes(formatted=()):
    out = []
    for host, node_id, roles in [
        ("c1", 1, ["controller"]),
        ("c2", 2, ["controller"]),
        ("c3", 3, ["controller"]),
        ("b1", 101, ["broker"]),
        ("b2", 201, ["broker"]),
    ]:
        meta = parse_meta_properties(META.replace("node.id=1", f"node.id={node_id}")) if host in formatted else None
        out.append({"host": host, "node_id": node_id, "roles": roles, "meta": meta, "endpoint": f"{host}:9093"})
    return out


def counter_uuid():
    numbers = itertools.count(1)
    return lambda: f"uuid{next(numbers)}"


def test_new_uuid_has_kafka_shape():
    value = new_uuid()
    assert len(value) == 22
    assert not value.startswith("-")


def test_new_uuid_rerolls_leading_dash_and_reserved_ids():
    draws = iter([bytes(16), b"\xfb" + bytes(15), b"\x01" * 16])
    assert new_uuid(lambda n: next(draws)) == "AQEBAQEBAQEBAQEBAQEBAQ"


def test_parse_meta_properties():
    assert parse_meta_properties(META)["cluster.id"] == "q1Sh-9_ISia_zwGINzRvyQ"
    assert parse_meta_properties(None) is None


def test_fresh_cluster_gets_one_id_and_an_initial_voter_set():
    plan = storage_plan(nodes(), uuid=counter_uuid(), all_controllers=["c1", "c2", "c3"])
    assert plan["cluster_id"] == "uuid1"
    assert plan["bootstrap"] is True
    voters = "1@c1:9093:uuid2,2@c2:9093:uuid3,3@c3:9093:uuid4"
    assert plan["initial_controllers"] == voters
    assert plan["format_args"] == {
        "c1": ["--initial-controllers", voters],
        "c2": ["--initial-controllers", voters],
        "c3": ["--initial-controllers", voters],
        "b1": [],
        "b2": [],
    }


def test_formatted_cluster_keeps_its_id_and_formats_nothing():
    plan = storage_plan(nodes(formatted={"c1", "c2", "c3", "b1", "b2"}), uuid=counter_uuid())
    assert plan["cluster_id"] == "q1Sh-9_ISia_zwGINzRvyQ"
    assert plan["format_args"] == {}


def test_new_broker_joins_the_existing_cluster():
    plan = storage_plan(nodes(formatted={"c1", "c2", "c3", "b1"}), uuid=counter_uuid())
    assert plan["cluster_id"] == "q1Sh-9_ISia_zwGINzRvyQ"
    assert plan["format_args"] == {"b2": []}


def test_empty_controller_in_existing_quorum_joins_as_observer():
    plan = storage_plan(nodes(formatted={"c1", "c2", "b1", "b2"}), uuid=counter_uuid())
    assert plan["bootstrap"] is False
    assert plan["format_args"] == {"c3": ["--no-initial-controllers"]}
    assert "c3: controller storage is empty in an existing quorum" in plan["notes"][0]


def test_configured_id_is_used_for_a_fresh_cluster():
    plan = storage_plan(nodes(), configured_cluster_id="MyClusterId00000000000", uuid=counter_uuid())
    assert plan["cluster_id"] == "MyClusterId00000000000"


def test_configured_id_must_match_the_formatted_nodes():
    with pytest.raises(IdentityError, match="kafka_cluster_id=Other.*belong to cluster q1Sh"):
        storage_plan(nodes(formatted={"c1"}), configured_cluster_id="Other")


def test_nodes_of_different_clusters_are_refused():
    ns = nodes(formatted={"c1", "c2"})
    ns[1]["meta"]["cluster.id"] = "SomethingElse"
    with pytest.raises(IdentityError, match="different clusters"):
        storage_plan(ns)


def test_limited_run_cannot_invent_a_cluster_id():
    only_broker = [n for n in nodes() if n["host"] == "b2"]
    with pytest.raises(IdentityError, match=r"controller\(s\) c1, c2, c3 did not report"):
        storage_plan(only_broker, all_controllers=["c1", "c2", "c3"])


def test_controllers_that_lost_their_metadata_do_not_bootstrap_under_the_old_id():
    # Every controller's metadata directory is empty while the brokers still
    # carry the cluster's id: a new initial voter set would start an empty
    # metadata log under that id, and the brokers would follow it.
    with pytest.raises(IdentityError) as refused:
        storage_plan(nodes(formatted={"b1", "b2"}), uuid=counter_uuid(), all_controllers=["c1", "c2", "c3"])
    message = str(refused.value)
    assert "c1, c2, c3" in message
    assert "b1, b2" in message
    assert "q1Sh-9_ISia_zwGINzRvyQ" in message
    assert RECOVERY_DOC in message


def test_the_recovery_procedure_the_refusal_points_to_exists():
    path, _, anchor = RECOVERY_DOC.partition("#")
    headings = [line.lstrip("#").strip() for line in (ROOT / path).read_text().splitlines() if line.startswith("#")]
    slugs = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in headings}
    assert anchor in slugs


def test_a_new_quorum_needs_every_broker_to_have_reported():
    # A run limited to the controllers cannot see that the brokers are
    # formatted, so it cannot tell a new cluster from one that lost its quorum.
    controllers_only = [n for n in nodes() if n["host"].startswith("c")]
    with pytest.raises(IdentityError, match=r"broker\(s\) b1, b2 did not report"):
        storage_plan(controllers_only, all_controllers=["c1", "c2", "c3"], all_brokers=["b1", "b2"])


def test_the_role_gives_the_storage_plan_every_broker_of_the_inventory():
    # Without them, a run limited to the controllers would see no formatted
    # broker and start a new quorum under the brokers' cluster id.
    tasks = yaml.safe_load((ROOT / "roles/kafka_node/tasks/storage.yml").read_text())
    [plan] = [t["stretch.kafka.storage_plan"] for t in tasks if "stretch.kafka.storage_plan" in t]
    assert plan.get("brokers") == "{{ kafka_cluster.brokers | map(attribute='host') }}", plan
    assert plan.get("controllers") == "{{ kafka_cluster.controllers | map(attribute='host') }}", plan
