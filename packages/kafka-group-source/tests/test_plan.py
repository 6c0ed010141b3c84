"""The planner: offsets, ranges, revocation and commits, as plain Python (no Spark, no Kafka)."""

import json

import pytest

from kafka_group_source.plan import Assignment, PlanError, Planner, key, ordered, rate_limit, split, split_key


def planner(max_records=0):
    assignment = Assignment()
    return assignment, Planner(assignment, max_records)


def latest(assignment, plan, high):
    return plan.latest(assignment.owned(), high)


def test_keys_round_trip_and_refuse_what_is_not_a_partition():
    assert split_key(key("orders.v1", 3)) == ("orders.v1", 3)
    with pytest.raises(PlanError, match="not a topic:partition"):
        split_key("orders")
    assert list(ordered({"b:1": 0, "a:10": 0, "a:2": 0})) == ["a:2", "a:10", "b:1"]


def test_an_arriving_partition_starts_at_the_groups_committed_offset():
    assignment, plan = planner()
    assignment.assigned({"load:0": 100, "load:1": 7})
    end = latest(assignment, plan, {"load:0": 150, "load:1": 7})
    assert plan.ranges({}, end) == [("load", 0, 100, 150)]
    assert end["load:0"]["from"] == 100
    assert end["load:0"]["to"] == 150


def test_a_partition_that_stays_goes_on_from_the_previous_batch_end():
    assignment, plan = planner()
    assignment.assigned({"load:0": 100})
    first = latest(assignment, plan, {"load:0": 150})
    second = latest(assignment, plan, {"load:0": 180})
    assert plan.ranges(first, second) == [("load", 0, 150, 180)]
    assert second["load:0"]["era"] == first["load:0"]["era"]


def test_nothing_new_gives_the_same_offset_so_spark_plans_no_batch():
    assignment, plan = planner()
    assignment.assigned({"load:0": 100, "load:1": 5})
    first = latest(assignment, plan, {"load:0": 150, "load:1": 5})
    again = latest(assignment, plan, {"load:0": 150, "load:1": 5})
    assert json.dumps(again) == json.dumps(first)


def test_a_partition_without_new_records_reads_nothing_in_a_batch_of_others():
    assignment, plan = planner()
    assignment.assigned({"load:0": 0, "load:1": 0})
    first = latest(assignment, plan, {"load:0": 10, "load:1": 10})
    second = latest(assignment, plan, {"load:0": 20, "load:1": 10})
    assert plan.ranges(first, second) == [("load", 0, 10, 20)]


def test_a_revoked_partition_is_no_longer_planned():
    assignment, plan = planner()
    assignment.assigned({"load:0": 0, "load:1": 0})
    first = latest(assignment, plan, {"load:0": 10, "load:1": 10})
    assignment.revoked(["load:1"])
    second = latest(assignment, plan, {"load:0": 20})
    assert list(second) == ["load:0"]
    assert plan.ranges(first, second) == [("load", 0, 10, 20)]


def test_a_partition_that_comes_back_starts_at_the_group_not_at_the_checkpoint():
    """Revoked, then assigned again: another DC's job may have read on, so the group's offset wins."""
    assignment, plan = planner()
    assignment.assigned({"load:0": 0})
    first = latest(assignment, plan, {"load:0": 10})
    assignment.revoked(["load:0"])
    assignment.assigned({"load:0": 40})  # the other DC's job committed 40 meanwhile
    second = latest(assignment, plan, {"load:0": 50})
    assert second["load:0"]["era"] != first["load:0"]["era"]
    assert plan.ranges(first, second) == [("load", 0, 40, 50)]


def test_a_batch_run_again_after_a_restart_reads_what_it_read_the_first_time():
    """The ranges follow from the two offsets alone: a new process, with other eras, plans them the same."""
    assignment, plan = planner()
    assignment.assigned({"load:0": 0})
    start = latest(assignment, plan, {"load:0": 10})
    assignment.assigned({"load:1": 3})
    end = latest(assignment, plan, {"load:0": 25, "load:1": 9})
    fresh_assignment, fresh = planner()
    fresh_assignment.assigned({"load:0": 0, "load:1": 0})
    assert fresh.ranges(start, end) == plan.ranges(start, end) == [("load", 0, 10, 25), ("load", 1, 3, 9)]


def test_after_a_restart_every_partition_starts_at_the_group():
    """A new process owns its partitions in new eras: the checkpoint's end does not carry over."""
    assignment, plan = planner()
    assignment.assigned({"load:0": 0})
    checkpoint = latest(assignment, plan, {"load:0": 30})
    restarted_assignment, restarted = planner()
    restarted_assignment.assigned({"load:0": 20})  # the group trails the checkpoint by the last batch
    end = latest(restarted_assignment, restarted, {"load:0": 30})
    assert restarted.ranges(checkpoint, end) == [("load", 0, 20, 30)]


def test_the_cap_bounds_each_batch_and_the_rest_follows():
    assignment, plan = planner(max_records=100)
    assignment.assigned({"load:0": 0})
    first = latest(assignment, plan, {"load:0": 250})
    second = latest(assignment, plan, {"load:0": 250})
    third = latest(assignment, plan, {"load:0": 250})
    assert plan.ranges({}, first) == [("load", 0, 0, 100)]
    assert plan.ranges(first, second) == [("load", 0, 100, 200)]
    assert plan.ranges(second, third) == [("load", 0, 200, 250)]


def test_an_unreadable_end_offset_holds_the_partition_back():
    assignment, plan = planner()
    assignment.assigned({"load:0": 5, "load:1": 5})
    end = latest(assignment, plan, {"load:0": 9})
    assert end["load:1"]["to"] == 5
    assert plan.ranges({}, end) == [("load", 0, 5, 9)]


def test_a_range_that_would_go_backwards_is_refused():
    _, plan = planner()
    start = {"load:0": {"era": "a", "from": 0, "to": 50}}
    end = {"load:0": {"era": "a", "from": 0, "to": 40}}
    with pytest.raises(PlanError, match="before it begins"):
        plan.ranges(start, end)


def test_a_finished_batch_commits_only_what_is_still_owned_in_the_same_era():
    assignment, plan = planner()
    assignment.assigned({"load:0": 0, "load:1": 0, "load:2": 0})
    end = latest(assignment, plan, {"load:0": 10, "load:1": 10, "load:2": 10})
    assignment.revoked(["load:1"])
    assignment.revoked(["load:2"])
    assignment.assigned({"load:2": 4})
    commit, skipped = plan.to_commit(end)
    assert commit == {"load:0": 10}
    assert skipped == ["load:1", "load:2"]


def test_a_start_that_is_no_offset_is_refused():
    with pytest.raises(PlanError, match="not an offset"):
        Assignment().assigned({"load:0": -1001})


def test_max_offsets_per_trigger_shares_the_cap_by_each_partitions_backlog_as_spark_does():
    assignment = Assignment()
    plan = Planner(assignment, max_per_trigger=100)
    assignment.assigned({"load:0": 0, "load:1": 0, "load:2": 0})
    end = latest(assignment, plan, {"load:0": 300, "load:1": 100, "load:2": 1})
    # Shares of 100 by 300:100:1, rounded down, and up below one so that no partition starves.
    assert [r[3] - r[2] for r in plan.ranges({}, end)] == [74, 24, 1]
    assert rate_limit(10, {"a:0": 5}, {"a:0": 5}) == {"a:0": 5}, "nothing new: nothing to share"


def test_a_partitions_own_cap_applies_before_the_triggers():
    assignment = Assignment()
    plan = Planner(assignment, max_records=20, max_per_trigger=30)
    assignment.assigned({"load:0": 0, "load:1": 0})
    end = latest(assignment, plan, {"load:0": 1000, "load:1": 10})
    assert [r[3] - r[2] for r in plan.ranges({}, end)] == [20, 10]


def test_min_offsets_per_trigger_waits_for_records_up_to_the_delay():
    now = [0.0]
    assignment = Assignment()
    plan = Planner(assignment, min_per_trigger=50, max_delay=10, clock=lambda: now[0])
    assignment.assigned({"load:0": 0})
    first = latest(assignment, plan, {"load:0": 5})
    assert first["load:0"]["to"] == 5, "a partition that arrives is planned at once"
    now[0] = 1.0
    assert latest(assignment, plan, {"load:0": 30}) is first, "25 new records of 50: no batch yet"
    assert latest(assignment, plan, {"load:0": 60})["load:0"]["to"] == 60, "55 new: a batch"
    now[0] = 12.0
    assert latest(assignment, plan, {"load:0": 61})["load:0"]["to"] == 61, "10 s since the last batch: a batch"


def test_a_ranges_tasks_split_by_max_records_per_partition_and_min_partitions_as_sparks_are():
    assert split([("a", 0, 0, 10)], max_records=4) == [("a", 0, 0, 3), ("a", 0, 3, 6), ("a", 0, 6, 10)]
    assert split([("a", 0, 0, 90), ("a", 1, 0, 10)], min_partitions=4) == [
        ("a", 0, 0, 22), ("a", 0, 22, 44), ("a", 0, 44, 67), ("a", 0, 67, 90), ("a", 1, 0, 10)]  # fmt: skip
    assert split([("a", 0, 0, 90), ("a", 1, 5, 5)], min_partitions=1) == [("a", 0, 0, 90)]
    assignment = Assignment()
    plan = Planner(assignment, per_task=5)
    assignment.assigned({"load:0": 0})
    assert plan.ranges({}, latest(assignment, plan, {"load:0": 10})) == [("load", 0, 0, 5), ("load", 0, 5, 10)]
