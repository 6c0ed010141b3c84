"""The active/active drill's cross-check of the brokers' counters against the reader hosts' kernels."""

from __future__ import annotations

from testkit.activeactive import brokers_agree

READERS = {"dc1": ["dc1", "runner"], "dc2": ["dc2", "runner"]}
# A drill's calm minute: each DC's Spark host reads half the partitions from its own DC, the harness's reader of
# each DC all of them; a few KB cross the WAN (metadata, the group's coordinator).
SERVED = {"dc1": 12_023_325, "dc2": 11_499_041}
RECEIVED = {
    "dc1": {"dc1": 5_571_313, "dc2": 8_618},
    "dc2": {"dc1": 24_245, "dc2": 5_012_594},
    "runner": {"dc1": 12_610_531, "dc2": 12_064_471},
}


def scaled(received, dc, factor):
    """received with what every host got from dc scaled by factor (other fetch response sizes in that DC)."""
    return {host: {d: int(n * factor) if d == dc else n for d, n in by_dc.items()} for host, by_dc in received.items()}


def test_the_drills_own_minute_agrees():
    out = brokers_agree(SERVED, RECEIVED, READERS)
    assert out["ratio"] == {"dc1": 1.5142, "dc2": 1.4858}
    assert out["agree"]
    # The Spark hosts are the smaller readers: about 30 % of their DC's bytes.
    assert 0.29 < min(out["reader_shares"].values()) < 0.31
    assert 0.14 < out["tolerance"] < 0.16


def test_fetch_sizes_that_differ_by_dc_still_agree():
    """CI's run: 1.4823 against 1.5605, 5.3 % apart, with every reader counted."""
    received = scaled(RECEIVED, "dc2", 1.5605 / 1.4858)
    received = scaled(received, "dc1", 1.4823 / 1.5142)
    assert brokers_agree(SERVED, received, READERS)["agree"]


def test_a_spark_host_the_counters_miss_fails():
    """dc2's job read from a host not counted: dc2's brokers served bytes no counted kernel received."""
    received = {**RECEIVED, "dc2": {"dc1": 24_245, "dc2": 0}}
    out = brokers_agree(SERVED, received, {"dc1": ["dc1", "runner"], "dc2": ["runner"]})
    assert not out["agree"]


def test_half_a_spark_host_missed_fails():
    """One of two executors on another host: half of the smaller reader's bytes not received."""
    received = {**RECEIVED, "dc1": {"dc1": 5_571_313 // 2, "dc2": 8_618}}
    assert not brokers_agree(SERVED, received, READERS)["agree"]


def test_a_host_counted_twice_fails():
    received = {**RECEIVED, "dc2-again": RECEIVED["dc2"]}
    assert not brokers_agree(SERVED, received, READERS)["agree"]


def test_fewer_bytes_received_than_served_fails():
    received = scaled(scaled(RECEIVED, "dc1", 0.6), "dc2", 0.6)
    out = brokers_agree(SERVED, received, READERS)
    assert min(out["ratio"].values()) < 1.0
    assert not out["agree"]


def test_a_dc_that_served_nothing_fails():
    out = brokers_agree({"dc1": 12_023_325, "dc2": 0}, RECEIVED, READERS)
    assert out["ratio"]["dc2"] is None
    assert not out["agree"]


def test_one_dc_alone_is_not_an_agreement():
    assert not brokers_agree({"dc1": 12_023_325}, RECEIVED, {"dc1": ["dc1", "runner"]})["agree"]
