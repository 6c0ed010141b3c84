"""Feature finalization after an upgrade: what is raised, what is held, what is refused, and the downgrade guard."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.features import (
    FeatureError,
    downgrade_refusal,
    finalize_plan,
    parse_describe,
    parse_mapping,
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
