"""The nodes sized for what they hold: replicas and segments per broker from the declared topics, and the open
files and memory maps that follow, refused by preflight when a node's limits are short."""

import random

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils import kernel, placement, sizing, topics
from ansible_collections.stretch.kafka.plugins.module_utils.sizing import (
    MAP_AREAS_ALLOWANCE,
    OPEN_FILES_ALLOWANCE,
    broker_load,
    limit_problems,
    node_layout,
)

TWO_BY_TWO = {"dc1": [101, 102], "dc2": [201, 202]}
NO_INTERNAL = {"offsets.topic.num.partitions": 1, "transaction.state.log.num.partitions": 1}
LINK = {"bandwidth_mbit": 10000, "rtt_ms": 30}


def declared(*sizes, **configs):
    return [{"name": f"t{i}", "partitions": n, "configs": configs} for i, n in enumerate(sizes)]


def test_with_rf_4_on_two_brokers_a_dc_every_broker_holds_every_partition():
    load = broker_load(declared(1000, 24), 4, TWO_BY_TWO, NO_INTERNAL, 3)
    # 1,024 partitions and one of each internal topic, on every broker, 3 segments each.
    assert load == dict.fromkeys([101, 102, 201, 202], {"replicas": 1026, "segments": 3078})


def test_the_internal_topics_count_with_the_partitions_the_brokers_give_them():
    load = broker_load([], 4, TWO_BY_TWO, {"offsets.topic.num.partitions": "8"}, 3)
    assert load[101]["replicas"] == 8 + 50  # __transaction_state keeps Kafka's 50


def test_a_dc_with_more_brokers_spreads_its_share_over_them():
    by_dc = {"dc1": [101, 102, 103], "dc2": [201, 202, 203]}
    # RF 5 over 3 + 3: the leading DC keeps 3 replicas, the other 2; each DC leads half of 10 partitions, and
    # may lead the one partition of each internal topic: (5 x 3 + 5 x 2 + 3 + 3) / 3 brokers, rounded up, and
    # one more (the placement evens a DC's brokers within one of their mean).
    load = broker_load(declared(10), 5, by_dc, NO_INTERNAL, 1)
    assert load[101] == {"replicas": 12, "segments": 12}
    assert load[101] == load[203]


@pytest.mark.parametrize("seed", [*range(12), 166, 315, 393])
def test_the_estimate_holds_the_replicas_the_converge_places_on_each_broker(seed):
    rng = random.Random(seed)
    by_dc = {"dc1": list(range(101, 101 + rng.randint(2, 5))), "dc2": list(range(201, 201 + rng.randint(2, 5)))}
    rf = rng.randint(4, min(6, len(by_dc["dc1"]) + len(by_dc["dc2"])))
    items = [{"name": f"t{i}", "partitions": rng.choice([1, 3, 6, 12, 48, 100])} for i in range(rng.randint(1, 40))]
    try:
        placement.check_shape(by_dc, rf)
    except placement.PlacementError:
        pytest.skip("a shape no placement holds")
    placed = topics.plan(topics.normalize(items, rf), {}, by_dc)["create"]
    actual = placement.cluster_load(t["assignment"] for t in placed.values())["replicas"]
    estimate = broker_load(items, rf, by_dc, {"offsets.topic.num.partitions": 0,
                                              "transaction.state.log.num.partitions": 0}, 1)  # fmt: skip
    # Within it; on a cluster of a handful of replicas, the placement's greed can put one more on a broker.
    assert all(actual[b] <= estimate[b]["replicas"] + (1 if actual[b] < 10 else 0) for b in actual)
    # and an estimate, not a bound far off: a replica more than the mean, and half a partition a topic
    assert max(estimate[b]["replicas"] - actual[b] for b in actual) <= len(items) * rf / 2 + 2


def test_a_topic_that_declares_retention_bytes_keeps_what_it_holds_of_segments_and_the_active_one():
    topic = declared(10, **{"retention.bytes": 10 * 2**30, "segment.bytes": 2**30})
    load = broker_load(topic, 4, TWO_BY_TWO, {**NO_INTERNAL, "log.segment.bytes": "1073741824"}, 3)
    assert load[101]["segments"] == 10 * 11 + 2 * 3
    by_broker_default = broker_load(declared(10, **{"retention.bytes": 5 * 2**30}), 4, TWO_BY_TWO, NO_INTERNAL, 3)
    assert by_broker_default[101]["segments"] == 10 * 6 + 2 * 3


def test_a_declaration_preflight_refuses_counts_for_nothing_here():
    assert broker_load([{"name": "bad name!", "partitions": 3}], 4, TWO_BY_TWO, NO_INTERNAL, 3)[101] == {
        "replicas": 2,
        "segments": 6,
    }


def model(topic_list):
    brokers = [{"host": f"b{b}", "node_id": b, "dc": dc, "roles": ["broker"]} for dc, ids in TWO_BY_TWO.items()
               for b in ids]  # fmt: skip
    controller = {"host": "c1", "node_id": 1, "dc": "dc3", "roles": ["controller"]}
    return {
        "node": {n["host"]: n for n in [*brokers, controller]},
        "brokers": brokers,
        "replication_factor": 4,
        "declared": {"topics": topic_list},
    }


def test_a_broker_needs_an_open_file_and_two_memory_maps_a_segment_and_a_controller_the_allowances():
    layout = node_layout(model(declared(4000)), "b101", NO_INTERNAL, 3)
    assert layout == {"replicas": 4002, "segments": 12006, "open_files": 12006 + OPEN_FILES_ALLOWANCE,
                      "map_areas": 2 * 12006 + MAP_AREAS_ALLOWANCE}  # fmt: skip
    assert node_layout(model(declared(4000)), "c1", NO_INTERNAL, 3) == {
        "replicas": 0, "segments": 0, "open_files": OPEN_FILES_ALLOWANCE, "map_areas": MAP_AREAS_ALLOWANCE,
    }  # fmt: skip


def test_preflight_refuses_an_open_files_limit_the_layout_exceeds_naming_the_node_the_limit_and_the_figure():
    layout = node_layout(model(declared(4000)), "b101", NO_INTERNAL, 3)
    (problem,) = limit_problems("dc1-broker1", layout, 10000)
    assert problem.startswith("dc1-broker1 holds about 4002 replicas, 12006 log segments")
    assert "needs 17006 open files" in problem
    assert "kafka_node_nofile_limit is 10000" in problem
    assert limit_problems("dc1-broker1", layout, 20000) == []


def test_preflight_refuses_a_max_map_count_the_operator_set_below_what_the_segments_need():
    layout = node_layout(model(declared(40000)), "b101", NO_INTERNAL, 3)
    (problem,) = limit_problems("dc1-broker1", layout, 1_000_000, "65530")
    assert "needs vm.max_map_count 245012" in problem
    assert "kafka_node_sysctl sets 65530" in problem
    assert limit_problems("dc1-broker1", layout, 1_000_000, "") == []  # the role derives it


def test_the_role_raises_max_map_count_to_what_the_segments_need_never_below_its_default():
    assert kernel.settings(LINK)["vm.max_map_count"] == "262144"
    assert kernel.settings(LINK, map_areas=30000)["vm.max_map_count"] == "262144"
    assert kernel.settings(LINK, map_areas=600000)["vm.max_map_count"] == "600000"


def test_a_limit_that_is_no_number_is_named():
    layout = node_layout(model([]), "b101", NO_INTERNAL, 3)
    with pytest.raises(sizing.SizingError, match="dc1-broker1: kafka_node_nofile_limit must be a whole number"):
        limit_problems("dc1-broker1", layout, "many")


def test_a_restarted_broker_is_given_the_base_wait_and_more_for_each_log_it_loads_first():
    # The broker that held 4,048 logs opened its listeners 186 s after its start on the testbed: the 180 s base
    # alone failed it, the derived wait holds it.
    assert sizing.start_timeout(180, 4048, 0.025) == 282 > 186
    assert sizing.start_timeout("180", 0, "0.025") == 180  # a controller holds no partition log
    assert sizing.start_timeout(180, 1, 0.025) == 181  # rounded up: never less than the logs need


@pytest.mark.parametrize(
    ("base", "logs", "per_log", "message"),
    [
        (0, 10, 0.025, "kafka_node_start_timeout must be at least 1"),
        ("3m", 10, 0.025, "kafka_node_start_timeout must be a whole number"),
        (180, 10, -1, "kafka_node_start_seconds_per_log must be at least 0 and under 60"),
        (180, 10, "fast", "kafka_node_start_seconds_per_log must be at least 0 and under 60 seconds, not 'fast'"),
        (180, 10, 60, "not 60"),
    ],
)
def test_a_start_wait_that_is_no_number_of_seconds_is_refused(base, logs, per_log, message):
    with pytest.raises(ValueError, match=message):
        sizing.start_timeout(base, logs, per_log)
