"""Feature finalization after an upgrade: what is raised, what is held, what is refused, and the downgrade guard."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.features import (
    FeatureError,
    downgrade_refusal,
    finalize_plan,
    parse_describe,
    parse_mapping,
    release_guard,
)

ROW = (  # as kafka-features describe prints a feature
    "Feature: {:<40}  SupportedMinVersion: {:<15}  SupportedMaxVersion: {:<15}  "
    "FinalizedVersionLevel: {:<15}  Epoch: 88"
)


def describe(**features):
    return "\n".join(ROW.format(name.replace("_", "."), *levels) for name, levels in features.items())


ROLLED = describe(  # 4.3.1 binaries everywhere, 4.2's levels finalized
    eligible_leader_replicas_version=("0", "1", "1"),
    group_version=("0", "1", "1"),
    kraft_version=("0", "1", "1"),
    metadata_version=("3.3-IV3", "4.3-IV0", "4.2-IV1"),
    share_version=("0", "2", "0"),
    streams_version=("0", "1", "1"),
    transaction_version=("0", "2", "2"),
)
MAPPING_43 = """metadata.version=30 (4.3)
kraft.version=1
transaction.version=2
group.version=1
eligible.leader.replicas.version=1
share.version=1
streams.version=1
"""  # what kafka-features version-mapping --release-version 4.3 prints, with 4.3.1's jars


def test_the_tools_text_is_read():
    described = parse_describe(ROLLED)
    assert described["metadata.version"] == {"min": "3.3-IV3", "max": "4.3-IV0", "finalized": "4.2-IV1"}
    levels, release = parse_mapping(MAPPING_43)
    assert (levels["metadata.version"], levels["share.version"], release) == (30, 1, "4.3")
    with pytest.raises(FeatureError, match="did not report metadata.version"):
        parse_describe("Error while executing: timed out")
    with pytest.raises(FeatureError, match="did not report metadata.version"):
        parse_mapping("")


def test_finalizing_raises_each_feature_below_the_release_by_name():
    levels, release = parse_mapping(MAPPING_43)
    updates, notes = finalize_plan(parse_describe(ROLLED), levels, release)
    assert updates == ["metadata.version=30", "share.version=1"]
    assert notes == []


def test_kraft_version_is_held_unless_named_as_it_would_make_a_static_quorum_dynamic():
    static = parse_describe(ROLLED)
    static["kraft.version"]["finalized"] = "0"
    levels, release = parse_mapping(MAPPING_43)
    updates, notes = finalize_plan(static, levels, release)
    assert "kraft.version=1" not in updates
    assert notes == ["kraft.version held at 0 (the release's level is 1); name it to raise it"]
    updates, _ = finalize_plan(static, levels, release, held=())
    assert "kraft.version=1" in updates


def test_finalizing_is_refused_while_a_node_runs_the_old_release():
    half = parse_describe(ROLLED.replace("4.3-IV0", "4.2-IV1"))
    levels, release = parse_mapping(MAPPING_43)
    with pytest.raises(FeatureError, match=r"metadata.version: the cluster supports up to 4.2-IV1, not 4.3"):
        finalize_plan(half, levels, release)
    with pytest.raises(FeatureError, match="streams.version: the cluster does not report it"):
        finalize_plan(parse_describe(ROLLED.replace("streams.version", "other.version")), levels, release)


def test_a_finalized_cluster_needs_nothing_more():
    done = parse_describe(describe(metadata_version=("3.3-IV3", "4.3-IV0", "4.3-IV0"), share_version=("0", "2", "1")))
    assert finalize_plan(done, {"metadata.version": 30, "share.version": 1}, "4.3") == ([], [])


def test_a_release_older_than_the_finalized_metadata_version_is_refused():
    described = parse_describe(ROLLED)
    assert downgrade_refusal(described, "4.2.0") == ""
    assert downgrade_refusal(described, "4.3.1") == ""
    finalized = parse_describe(describe(metadata_version=("3.3-IV3", "4.3-IV0", "4.3-IV0")))
    assert downgrade_refusal(finalized, "4.3.1") == ""
    assert downgrade_refusal(finalized, "4.2.0").startswith(
        "the cluster's metadata.version is finalized at 4.3-IV0; Kafka 4.2.0 cannot read it."
    )


# -- the release guard (site.yml, before any node changes) ----------------------------------------------------------
OPT = "/opt/kafka/kafka_2.13-"


def node(host, formatted=True, current="4.3.1", version="4.3.1"):
    """A node as release_guard.yml reads it: whether formatted, the release its current link names ('' for none),
    the release this run installs (kafka_node_version)."""
    return {"host": host, "formatted": formatted, "current": f"{OPT}{current}" if current else "",
            "release": f"{OPT}{version}", "version": version}  # fmt: skip


def finalized(level):
    """What the cluster answers over the admin protocol: the finalized level of each feature."""
    return lambda: {"metadata.version": level, "kraft.version": 1, "group.version": 1}


def nobody_answers():
    raise ConnectionError("no broker answered: 10.0.1.11:9092")


def test_a_rebuilt_first_broker_lowering_the_release_is_refused_by_the_clusters_finalized_features():
    # The first broker's host was rebuilt: no current link, never formatted. The rest of the cluster runs 4.3.1,
    # finalized at 4.3-IV0 (30). kafka_node_version=4.2.0 would roll 4.2.0 onto every node: the first restarted
    # one could not read the metadata. Before, the guard looked at the first broker's disk alone and let it through.
    nodes = [node("dc1-broker0", formatted=False, current="", version="4.2.0"),
             *(node(h, version="4.2.0") for h in ("dc1-broker1", "dc2-broker0", "dc1-controller0"))]  # fmt: skip
    guard = release_guard(nodes, finalized(30))
    assert guard["read"] is True
    assert guard["refusals"] == [
        "kafka_node_version=4.2.0 on dc1-broker0, dc1-broker1, dc2-broker0, dc1-controller0: the cluster's "
        "metadata.version is finalized at 4.3-IV0; Kafka 4.2.0 cannot read it. A rollback is possible "
        "only before the features are finalized (playbooks/features.yml)"
    ]


def test_a_new_first_broker_in_a_formatted_cluster_is_judged_on_the_clusters_answer():
    nodes = [node("dc1-broker0", formatted=False, current="", version="4.2.0")]
    # Only the new broker in the run (a --limit): its disk says nothing, the cluster's answer does.
    assert release_guard(nodes, finalized(30))["refusals"][0].startswith("kafka_node_version=4.2.0 on dc1-broker0:")
    nodes = [node("dc1-broker0", formatted=False, current=""), node("dc1-broker1"), node("dc1-controller0")]
    guard = release_guard(nodes, finalized(30))
    assert (guard["read"], guard["refusals"]) == (True, [])
    assert guard["finalized"]["metadata.version"] == 30


def test_a_new_cluster_no_node_of_which_was_formatted_is_let_through_when_no_broker_answers():
    nodes = [node("dc1-broker0", formatted=False, current=""), node("dc1-broker1", formatted=False, current="")]
    guard = release_guard(nodes, nobody_answers)
    assert (guard["read"], guard["refusals"]) == (False, [])
    assert guard["notes"] == [
        "no node is formatted and no broker answered (ConnectionError: no broker answered: 10.0.1.11:9092): "
        "a new cluster"
    ]


def test_an_upgrade_and_a_rollback_before_finalizing_pass():
    rolled = [node("dc1-broker0", current="4.2.0"), node("dc1-broker1", current="4.2.0")]
    assert release_guard(rolled, finalized(29))["refusals"] == []  # 4.2-IV1 finalized, 4.3.1 installed
    back = [node("dc1-broker0", version="4.2.0"), node("dc1-broker1", version="4.2.0")]
    assert release_guard(back, finalized(29))["refusals"] == []  # 4.3.1 running, 4.2's level still finalized


def test_features_that_cannot_be_read_refuse_a_release_change_and_nothing_else():
    changing = [node("dc1-broker0", current="4.2.0"), node("dc1-broker1")]
    guard = release_guard(changing, nobody_answers)
    assert guard["read"] is False
    assert guard["refusals"] == [
        "kafka_node_version=4.3.1 changes the release of dc1-broker0 in a formatted cluster, but the cluster's "
        "finalized features could not be read (ConnectionError: no broker answered: 10.0.1.11:9092). A downgrade "
        "past them cannot be ruled out: run this again once the cluster answers (start it on the release it runs "
        "now if it is down)"
    ]
    # A formatted node elsewhere in the run is enough: the rebuilt first broker does not hide it.
    rebuilt = [node("dc1-broker0", formatted=False, current=""), node("dc1-broker1", current="4.2.0")]
    assert release_guard(rebuilt, nobody_answers)["refusals"][0].startswith(
        "kafka_node_version=4.3.1 changes the release of dc1-broker0, dc1-broker1 in a formatted cluster"
    )
    # No release changes: the binaries that run the cluster stay, so there is nothing to refuse.
    guard = release_guard([node("dc1-broker0"), node("dc1-broker1")], nobody_answers)
    assert guard["refusals"] == []
    assert guard["notes"][0].startswith("the cluster's finalized features could not be read (ConnectionError")


def test_a_reply_without_metadata_version_or_with_a_level_the_collection_does_not_know_refuses_a_change():
    changing = [node("dc1-broker0", current="4.2.0")]
    guard = release_guard(changing, lambda: {"kraft.version": 1})
    assert guard["refusals"][0].endswith("the cluster's reply has no finalized metadata.version")
    guard = release_guard(changing, finalized(31))
    assert guard["refusals"] == [
        "kafka_node_version=4.3.1 on dc1-broker0: the cluster's metadata.version is finalized at level 31, newer "
        "than any release this collection knows (up to 4.3-IV0, level 30): whether Kafka 4.3.1 can read it is "
        "not known"
    ]
    assert release_guard([node("dc1-broker0")], finalized(31))["refusals"] == []
    assert (
        "finalized at level 0, a level this collection does not know"
        in release_guard(changing, finalized(0))["refusals"][0]
    )


def test_each_host_is_judged_on_its_own_release():
    nodes = [node("dc1-broker0", version="4.2.0"), node("dc1-broker1", version="4.3.1", current="4.2.0")]
    assert release_guard(nodes, finalized(30))["refusals"] == [
        "kafka_node_version=4.2.0 on dc1-broker0: the cluster's metadata.version is finalized at 4.3-IV0; "
        "Kafka 4.2.0 cannot read it. A rollback is possible only before the features are finalized "
        "(playbooks/features.yml)"
    ]
