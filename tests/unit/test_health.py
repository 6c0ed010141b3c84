"""Parsing the Kafka CLI's quorum and broker reports (captured from a 4.3.1 testbed), and judging them."""

from pathlib import Path

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils import health

DATA = Path(__file__).parent / "data"
VOTER_DCS = {1: "dc1", 2: "dc2", 3: "dc3"}


def status():
    return health.parse_quorum_status((DATA / "quorum-status.txt").read_text())


def replication():
    return health.parse_quorum_replication((DATA / "quorum-replication.txt").read_text())


def test_parse_quorum_status():
    s = status()
    assert s["leader_id"] == 3
    assert s["voters"] == [1, 2, 3]
    assert sorted(s["observers"]) == [101, 102, 201, 202]
    assert s["cluster_id"] == "lvqunxrNXZ0vlrox4vD78Q"


def test_parse_quorum_replication():
    rows = replication()
    assert [(r["node_id"], r["status"], r["lag"]) for r in rows][:3] == [
        (3, "Leader", 0),
        (1, "Follower", 0),
        (2, "Follower", 0),
    ]


def test_healthy_quorum_has_no_problems():
    assert health.quorum_problems(status(), replication(), VOTER_DCS) == []


def test_quorum_without_leader():
    s = dict(status(), leader_id=-1)
    assert "the quorum has no leader" in health.quorum_problems(s, replication(), VOTER_DCS)


def test_quorum_in_two_dcs():
    problems = health.quorum_problems(status(), replication(), {1: "dc1", 2: "dc2", 3: "dc2"})
    assert "voters span 2 DC(s) (dc1, dc2), need 3" in problems


def test_lagging_follower_is_named():
    rows = replication()
    rows[1]["lag"] = 40
    assert "voter 1 lags the leader by 40 records" in health.quorum_problems(status(), rows, VOTER_DCS)
    assert health.quorum_problems(status(), rows, VOTER_DCS, max_lag=50) == []


def test_voter_set_differing_from_inventory():
    problems = health.quorum_problems(status(), replication(), {1: "a", 2: "b", 4: "c"})
    assert "voters are [1, 2, 3], the inventory declares [1, 2, 4]" in problems


def test_parse_endpoints_and_broker_problems():
    endpoints = health.parse_endpoints((DATA / "endpoints.txt").read_text())
    assert endpoints[0] == {
        "id": 101,
        "host": "10.91.1.11",
        "port": 9092,
        "rack": "dc1",
        "state": "unfenced",
        "type": "broker",
    }
    problems = health.broker_problems(endpoints, {101: "dc1", 102: "dc2", 201: "dc2", 202: "dc2", 301: "dc1"})
    assert problems == [
        "broker 102 has rack 'dc1', the inventory says 'dc2'",
        "broker 202 is fenced",
        "broker 301 is not registered",
    ]


def test_garbage_is_refused():
    with pytest.raises(ValueError, match="not a quorum status report"):
        health.parse_quorum_status("Error: timed out")
