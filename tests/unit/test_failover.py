"""When a lost DC went down, from what the failover run could and could not reach of it."""

from ansible_collections.stretch.kafka.plugins.filter.kafka_config import failover_moment


def node(host, stopped_at=None):
    return {"inventory_hostname": host, **({"kafka_node_stopped_at": stopped_at} if stopped_at is not None else {})}


def test_a_dc_the_run_stopped_is_timed_from_its_first_stop():
    moment = failover_moment([node("b1", "100.5"), node("c1", 99.25)], now=500)
    assert moment == {"since": 99.25, "timed_from": "the first node the run stopped", "stopped": ["b1", "c1"],
                      "unreachable": []}  # fmt: skip


def test_a_dc_partly_unreachable_is_timed_from_the_nodes_it_stopped_and_names_the_others():
    # Before, the unreachable node's missing stop time failed the run as an undefined variable.
    moment = failover_moment([node("b1", 100.0), node("b2"), node("c1", "")], now=500)
    assert moment["since"] == 100.0
    assert moment["stopped"] == ["b1"]
    assert moment["unreachable"] == ["b2", "c1"]


def test_a_dc_none_of_whose_nodes_answered_is_timed_from_when_the_run_found_it_down():
    moment = failover_moment([node("b1"), node("b2")], now=500)
    assert moment == {"since": 500.0, "timed_from": "the run finding the DC down", "stopped": [],
                      "unreachable": ["b1", "b2"]}  # fmt: skip
