"""The cluster's view around a fault, summarized from crafted admin-API samples (testkit/soak/observe.py)."""

from testkit.soak import observe

RACKS = {101: "dc1", 102: "dc1", 201: "dc2", 202: "dc2"}
ALL = [101, 102, 201, 202]


def sample(t, leader=1, epoch=5, fenced=(), p0=(101, ALL), p1=(201, ALL), hw=(10, 10)):
    return {
        "t": t,
        "quorum": None if leader is None else {"leader": leader, "epoch": epoch},
        "fenced": list(fenced),
        "brokers": ALL,
        "partitions": {0: {"leader": p0[0], "isr": list(p0[1])}, 1: {"leader": p1[0], "isr": list(p1[1])}},
        "hw": {0: hw[0], 1: hw[1]},
        "errors": [],
    }


def test_a_cut_that_fences_one_dc_moves_its_leaders_and_shrinks_the_isr():
    samples = [
        sample(0, hw=(10, 10)),
        sample(10, hw=(12, 11)),
        sample(12, fenced=[201, 202], p1=(101, [101, 102]), p0=(101, [101, 102]), hw=(13, 11)),
        sample(20, fenced=[201, 202], p1=(101, [101, 102]), p0=(101, [101, 102]), hw=(20, 11)),
        sample(40, hw=(30, 20)),
    ]
    view = observe.summarize(samples, start=5, end=25, whole_at=35, racks=RACKS)
    assert view["samples_during"] == 3
    assert view["quorum_leader_before"] == 1
    assert view["quorum_leaders_during"] == [1]
    assert view["quorum_leader_after"] == 1
    assert view["quorum_unread_or_leaderless_samples"] == 0
    assert view["fenced_during"] == {
        "201": {"dc": "dc2", "first_seen_after_s": 7},
        "202": {"dc": "dc2", "first_seen_after_s": 7},
    }
    p0, p1 = view["partitions"][0], view["partitions"][1]
    assert p1["leader_dc_before"] == "dc2"
    assert p1["leaders_during"] == [201, 101]
    assert p1["dropped_from_isr"] == [201, 202]
    assert p1["isr_shrank_after_s"] == 7
    assert p0["hw_moved_during"] == 10
    assert p1["hw_moved_during"] == 1
    assert view["partitions_whose_hw_did_not_move"] == []


def test_a_quorum_without_a_leader_and_a_high_watermark_that_stood_still_are_seen():
    samples = [sample(0), sample(6, leader=None), sample(8, leader=-1, epoch=6), sample(9, leader=3, epoch=7),
               sample(30)]  # fmt: skip
    view = observe.summarize(samples, start=5, end=10, whole_at=None, racks=RACKS)
    assert view["quorum_unread_or_leaderless_samples"] == 2
    assert view["quorum_leaders_during"] == [-1, 3]
    assert view["quorum_epochs_during"] == [6, 7]
    assert view["partitions_whose_hw_did_not_move"] == [0, 1]
    assert view["partitions"][0]["isr_shrank_after_s"] is None
