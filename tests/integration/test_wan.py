"""The testbed's WAN (testkit/wan): the inventory's delay between the DCs, for nodes and DC clients, and fail-safe.

Round trips are measured by TCP connects from inside the nodes (and from a
client placed in a DC), so the figures come from the network, not from the
delayer's settings. A delay is judged by what the WAN adds to the round
trip's floor (rtt.wan_floor): the shortest of 20 round trips to the other
DC less the shortest, in the same rounds from the same node, to another node
of its own DC. The time the probing and the answering nodes wait for a core
comes on top of both: it moves a median by a millisecond or more on a busy
testbed (a node's median round trip to a node of its own DC: 0.8 to 2.5 ms
here) and lifts both floors in a slow spell. A DC of one node (the
tiebreaker's) is measured from the other end. The summaries in each message
show the median and the worst too. The checks restore the inventory's WAN
when they end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from testkit import dcnet
from testkit.cluster import REPO, wait_until
from testkit.wan import control, inventory, rtt
from testkit.wan.links import links

TOLERANCE_MS = 1.0


@pytest.fixture(scope="module")
def wan(cluster):
    request = inventory.read(cluster.inventory)
    found = {(x.src, x.dst): x.delay_ms for x in links(request["wan"], request["subnets"])}
    probes = {dc: tuple(p) for dc, p in request["probes"].items()}
    assert set(request["neighbours"]) >= set(request["broker_dcs"]), f"a broker DC of one node: {request}"
    yield {"set": found, "probes": probes, "near": request["neighbours"], "request": request}
    control.apply(request)  # the inventory's WAN again, whatever a check left


def round_trips(wan, rounds=20):
    return rtt.measure(wan["probes"], rounds=rounds, interval=0.1, near=wan["near"])


def within(found, rtt_ms):
    """Every end's wan_floor of a pair is rtt_ms within the tolerance."""
    floors = found.get("wan_floor_ms") or {}
    return bool(floors) and all(f is not None and abs(f - rtt_ms) <= TOLERANCE_MS for f in floors.values())


def set_rtt(wan, pair):
    a, b = pair.split("-")
    return wan["set"][(a, b)] + wan["set"][(b, a)]


def test_every_dc_pair_has_the_inventorys_round_trip_within_a_millisecond(wan):
    """What the WAN adds to the round trip between every two DCs is their two directions' delays, within 1 ms."""
    measured = round_trips(wan)
    assert set(measured) == {f"{a}-{b}" for a, b in wan["set"] if a < b}
    for pair, found in measured.items():
        assert found["failed"] == 0, (pair, found)
        assert within(found, set_rtt(wan, pair)), (pair, found, set_rtt(wan, pair))


def test_a_client_placed_in_a_dc_pays_the_delay_to_the_other_dc_and_none_within_its_own(cluster, wan):
    first, second = cluster.dcs
    port = rtt.CLOSED_PORT
    own = next(n for n in cluster.brokers if n.dc == first)
    far = next(n for n in cluster.brokers if n.dc == second)
    with dcnet.DcClient(first) as client:
        out = subprocess.run(
            client.wrap([sys.executable, "-c", rtt.PROBE, "0.1", "10", "60", "test",
                         *(f"{n.address}:{port}" for n in (own, far))]),
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout  # fmt: skip
    rounds = [json.loads(line) for line in out.splitlines()]
    near_ms, away_ms = ([r[f"{n.address}:{port}"] for r in rounds] for n in (own, far))
    near, away = rtt.summary(near_ms), rtt.summary(away_ms)
    assert near["p50_ms"] < TOLERANCE_MS, near
    wan_floor = rtt.wan_floor(away_ms, near_ms)
    assert abs(wan_floor - set_rtt(wan, f"{first}-{second}")) <= TOLERANCE_MS, (wan_floor, away, near)


def test_make_wan_changes_the_round_trip_on_the_running_testbed(cluster, wan):
    first, second = cluster.dcs
    subprocess.run(["make", "-s", "wan", "RTT=100"], cwd=REPO, check=True, capture_output=True, timeout=120)
    try:
        changed = round_trips(wan)[f"{first}-{second}"]
        assert within(changed, 100), changed
    finally:
        control.apply(wan["request"])
    back = round_trips(wan)[f"{first}-{second}"]
    assert within(back, set_rtt(wan, f"{first}-{second}")), back


def delayer_pid(state):
    stats = state.stats()
    return stats and stats["pid"]


def test_a_dead_delayer_costs_the_dcs_their_delay_never_their_link_and_comes_back(cluster, wan):
    """SIGKILL the delayer: the supervisor starts it again. SIGKILL both: the link goes on, undelayed."""
    first, second = cluster.dcs
    pair = f"{first}-{second}"
    state = control.State()
    old = delayer_pid(state)
    os.kill(old, signal.SIGKILL)
    back = wait_until(lambda: delayer_pid(state) not in (None, old), timeout=30, interval=0.5)
    assert back, f"the supervisor did not start the delayer again: {state.stats()}"
    time.sleep(2)
    again = round_trips(wan)[pair]
    assert within(again, set_rtt(wan, pair)), again

    os.kill(state.supervisor_pid(), signal.SIGKILL)
    os.kill(delayer_pid(state), signal.SIGKILL)
    time.sleep(1)
    bypassed = round_trips(wan)[pair]
    assert bypassed["failed"] == 0, f"the DCs lost their link with the delayer dead: {bypassed}"
    assert within(bypassed, 0), bypassed
    assert control.apply(wan["request"])["changed"], "apply saw nothing to restart"
    restored = round_trips(wan)[pair]
    assert within(restored, set_rtt(wan, pair)), restored


HOLD = """import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
print(*s.getsockname()[:2], flush=True)
time.sleep(10)
"""


def test_a_broker_sees_a_client_of_another_dc_at_the_client_s_own_address(cluster, hosts):
    """As across a WAN between sites, not at the broker's own bridge gateway (netavark's masquerade, which
    testbed/routing.sh keeps off this traffic): the exporter gives a group member the DC of its address."""
    first, second = cluster.dcs[:2]
    far = next(n for n in cluster.brokers if n.dc == second)
    port = next(s.rsplit(":", 1)[1] for s in cluster.bootstrap_servers.split(",") if s.startswith(f"{far.address}:"))
    with dcnet.DcClient(first) as client:
        proc = subprocess.Popen(client.wrap([sys.executable, "-c", HOLD, far.address, port]), stdout=subprocess.PIPE,
                                text=True)  # fmt: skip
        try:
            address, local_port = proc.stdout.readline().split()
            seen = hosts[far.host].check_output(f"ss -Htn state established '( sport = :{port} )'")
        finally:
            proc.kill()
            proc.wait(timeout=10)
    peers = [line.split()[-1].replace("[::ffff:", "").replace("]", "") for line in seen.splitlines()]
    assert f"{address}:{local_port}" in peers, (address, local_port, peers)
