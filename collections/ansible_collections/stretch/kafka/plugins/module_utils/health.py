"""Reads the Kafka CLI's reports on the quorum and the brokers, and judges them.

The parsers take the text that kafka-metadata-quorum and kafka-cluster print;
the checks return messages naming what is wrong (empty when healthy).
"""

from __future__ import annotations

import json


def parse_quorum_status(text):
    """kafka-metadata-quorum describe --status, as a dict."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    if "LeaderId" not in fields:
        raise ValueError(f"not a quorum status report: {text[:200]!r}")
    return {
        "cluster_id": fields.get("ClusterId"),
        "leader_id": int(fields["LeaderId"]),
        "leader_epoch": int(fields.get("LeaderEpoch", -1)),
        "high_watermark": int(fields.get("HighWatermark", -1)),
        "max_follower_lag": int(fields.get("MaxFollowerLag", -1)),
        "voters": [v["id"] for v in json.loads(fields.get("CurrentVoters", "[]"))],
        "observers": [o["id"] for o in json.loads(fields.get("CurrentObservers", "[]"))],
    }


def _table(text):
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0].split()
    # Rows may carry fewer cells than the header (an empty last column).
    return [dict(zip(header, line.split(), strict=False)) for line in lines[1:]]


def parse_quorum_replication(text):
    """kafka-metadata-quorum describe --replication, as a list of replicas."""
    rows = _table(text)
    if rows and "NodeId" not in rows[0]:
        raise ValueError(f"not a quorum replication report: {text[:200]!r}")
    return [
        {
            "node_id": int(r["NodeId"]),
            "log_end_offset": int(r["LogEndOffset"]),
            "lag": int(r["Lag"]),
            "status": r["Status"],
        }
        for r in rows
    ]


def parse_endpoints(text):
    """kafka-cluster list-endpoints [--include-fenced-brokers], as a list of endpoints."""
    rows = _table(text)
    return [
        {
            "id": int(r["ID"]),
            "host": r["HOST"],
            "port": int(r["PORT"]),
            "rack": None if r.get("RACK") in (None, "null") else r["RACK"],
            "state": r.get("STATE"),
            "type": r.get("ENDPOINT_TYPE"),
        }
        for r in rows
    ]


def quorum_problems(status, replication, voter_dcs, max_lag=0):
    """What is wrong with the quorum: leader, voter set and DC spread, follower lag.

    voter_dcs: {node_id: dc} of the controllers the inventory declares.
    """
    problems = []
    if status["leader_id"] < 0:
        problems.append("the quorum has no leader")
    voters = set(status["voters"])
    expected = set(voter_dcs)
    if voters != expected:
        problems.append(f"voters are {sorted(voters)}, the inventory declares {sorted(expected)}")
    dcs = {voter_dcs[v] for v in voters if v in voter_dcs}
    if len(dcs) < 3:
        problems.append(f"voters span {len(dcs)} DC(s) ({', '.join(sorted(dcs))}), need 3")
    for replica in replication:
        if replica["status"] in ("Leader", "Follower") and replica["lag"] > max_lag:
            problems.append(f"voter {replica['node_id']} lags the leader by {replica['lag']} records")
    followers = {r["node_id"] for r in replication if r["status"] == "Follower"}
    if status["leader_id"] >= 0 and followers != voters - {status["leader_id"]}:
        problems.append(f"followers are {sorted(followers)}, expected {sorted(voters - {status['leader_id']})}")
    return problems


def broker_problems(endpoints, broker_racks):
    """What is wrong with broker registration: missing, fenced, or in the wrong rack.

    broker_racks: {node_id: rack} of the brokers the inventory declares.
    """
    seen = {e["id"]: e for e in endpoints if e.get("type", "broker") == "broker"}
    problems = []
    for node_id, rack in sorted(broker_racks.items()):
        endpoint = seen.get(node_id)
        if endpoint is None:
            problems.append(f"broker {node_id} is not registered")
        elif endpoint["state"] != "unfenced":
            problems.append(f"broker {node_id} is {endpoint['state']}")
        elif endpoint["rack"] != rack:
            problems.append(f"broker {node_id} has rack {endpoint['rack']!r}, the inventory says {rack!r}")
    for node_id in sorted(set(seen) - set(broker_racks)):
        problems.append(f"broker {node_id} is registered but not in the inventory")
    return problems


def split_quorum_report(text):
    """Split the output of describe --status followed by describe --replication."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("NodeId")), len(lines))
    return parse_quorum_status("\n".join(lines[:start])), parse_quorum_replication("\n".join(lines[start:]))


def cluster_report(quorum_text, endpoints_text, nodes):
    """A table of every node, its DC and its state, for operators.

    nodes: inventory records {host, node_id, rack} of controllers and brokers.
    """
    status, replication = split_quorum_report(quorum_text)
    lag = {r["node_id"]: r for r in replication}
    registered = {e["id"]: e for e in parse_endpoints(endpoints_text)}
    lines = [
        f"cluster {status['cluster_id']}: leader {status['leader_id']} (epoch {status['leader_epoch']}), "
        f"{len(status['voters'])} voters, {len(registered)} brokers registered",
        f"{'node':>6}  {'host':<24} {'DC':<10} {'role':<11} state",
    ]
    for node in sorted(nodes, key=lambda n: int(n["node_id"])):
        node_id = int(node["node_id"])
        if node_id in status["voters"]:
            role = "controller"
            r = lag.get(node_id, {})
            state = f"{r.get('status', '?').lower()}, lag {r.get('lag', '?')}"
        else:
            role = "broker"
            e = registered.get(node_id)
            state = f"{e['state']}, rack {e['rack']}" if e else "not registered"
        lines.append(f"{node_id:>6}  {node['host']:<24} {node['rack']:<10} {role:<11} {state}")
    return lines
