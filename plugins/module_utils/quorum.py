"""Changes to the KRaft voter set (KIP-853): plan them, refuse the unsafe ones, check the result.

A voter or an observer of the metadata quorum is a replica key: a node id and
the directory id its metadata directory was formatted with. A controller whose
disk was wiped (or whose host was rebuilt) comes back with the same node id
and a new directory id: Kafka keeps it an observer, and the voter set still
holds its old key until that key is removed and the new one added.

The quorum, as kafka_admin.Admin.quorum() reads it:

    {"leader": id or -1, "epoch": n, "high_watermark": n,
     "voters":    {id: log end offset},
     "replicas":  {"voters":    [{"id", "directory_id", "log_end_offset"}],
                   "observers": [{"id", "directory_id", "log_end_offset"}]}}

A change is planned as steps run one at a time with kafka-metadata-quorum:

    {"op": "remove", "id": 3, "directory_id": "..."}   remove-controller
    {"op": "add",    "id": 3, "directory_id": "..."}   add-controller, on the node

Two kinds of "no": a refusal (QuorumChangeError) is final, whatever the
cluster does next (the change would leave the voters unable to survive the
loss of a DC, the node is not what it is said to be); a blocker is a
condition a wait can clear (the new controller has not caught up yet, a voter
is behind), and fails only once the wait is over.
"""

from __future__ import annotations

import time

from ansible_collections.stretch.kafka.plugins.module_utils import gates, topology

ACTIONS = ("add", "remove", "replace")


class QuorumChangeError(ValueError):
    """A change that must not be made, whatever the cluster does next."""


def keys(replicas):
    return {(r["id"], r["directory_id"]) for r in replicas}


def _voters(quorum):
    replicas = (quorum.get("replicas") or {}).get("voters")
    if not replicas:
        raise QuorumChangeError("the quorum reported no voters with their directory ids; nothing can be planned")
    if any(not r.get("directory_id") for r in replicas):
        raise QuorumChangeError(
            "the controllers reported voters without directory ids: the quorum is static "
            "(controller.quorum.voters, kraft.version 0), and voters cannot be changed online"
        )
    return replicas


def _leader_end(quorum):
    ends = {r["id"]: r["log_end_offset"] for r in _voters(quorum)}
    return ends.get(quorum.get("leader"))


def behind(quorum, replica):
    """Records replica is behind the quorum leader's log end, or None when the leader is unknown."""
    end = _leader_end(quorum)
    return None if end is None else max(0, end - replica["log_end_offset"])


def _caught_up(quorum, replica, max_lag):
    lag = behind(quorum, replica)
    return lag is not None and lag <= max_lag


def _key_text(key):
    return f"{key[0]} (directory {key[1]})"


def _dc_rule(voter_ids, nodes, what):
    """Refuse a voter set that preflight would refuse: fewer than 3 DCs, or a DC whose loss leaves no majority."""
    by_id = {int(n["node_id"]): n for n in nodes}
    unknown = sorted(v for v in voter_ids if v not in by_id)
    if unknown:
        raise QuorumChangeError(
            f"{what} would leave voter(s) {unknown} that the inventory does not declare as controllers: "
            "their DC is unknown, so the quorum's spread cannot be checked"
        )
    records = [
        topology.Node(host=by_id[v]["host"], node_id=v, dc=str(by_id[v].get("dc") or ""), roles=("controller",))
        for v in sorted(voter_ids)
    ]
    errors = topology.check_controller_quorum(records)
    if errors:
        raise QuorumChangeError(f"{what} would leave voters {sorted(voter_ids)}: " + "; ".join(errors))


def precheck(quorum, action, node, nodes):
    """Refuse, before any host is touched, a change whose voter ids would break the DC rule.

    Only ids are known at this point (a new controller's directory id exists
    once it is formatted); plan() checks the keys again once it is.
    Returns the voter ids once the change is done.
    """
    if action not in ACTIONS:
        raise QuorumChangeError(f"unknown quorum action {action!r}; known: {', '.join(ACTIONS)}")
    node_id = int(node["node_id"])
    ids = {r["id"] for r in _voters(quorum)}
    after = ids - {node_id} if action == "remove" else ids | {node_id}
    if after != ids:
        _dc_rule(after, nodes, f"{action} of controller {node_id} ({node['host']})")
    return sorted(after)


def plan(quorum, action, node, nodes):
    """The steps that make node's voter key what action asks, and the voter keys once they are done.

    node: {"host", "node_id", "dc", "directory_id"} of the controller the change
    is about; directory_id is read from its meta.properties (add, replace).
    nodes: the inventory's controller records, with their DCs, for the DC rule.
    Returns {"steps": [...], "voters_after": [[id, directory id], ...], "notes": [...]}.
    Raises QuorumChangeError for a change that must not be made.
    """
    precheck(quorum, action, node, nodes)
    node_id = int(node["node_id"])
    current = keys(_voters(quorum))
    same_id = sorted(k for k in current if k[0] == node_id)
    new_key = (node_id, node.get("directory_id") or "")
    if action in ("add", "replace") and not new_key[1]:
        raise QuorumChangeError(f"{node['host']}: no directory id in its meta.properties; is its storage formatted?")
    steps, notes = [], []
    if action == "remove":
        if not same_id:
            notes.append(f"controller {node_id} ({node['host']}) is not a voter: nothing to remove")
        steps = [{"op": "remove", "id": k[0], "directory_id": k[1]} for k in same_id]
    elif new_key in current:
        notes.append(f"controller {node_id} ({node['host']}) is already a voter with directory {new_key[1]}")
    else:
        if same_id and action == "add":
            raise QuorumChangeError(
                f"voter {_key_text(same_id[0])} is not {node['host']}'s storage, which has directory {new_key[1]}: "
                "its disk was wiped or its host rebuilt. Use kafka_ops_quorum_action=replace to remove the stale "
                "voter and add the new one"
            )
        steps = [{"op": "remove", "id": k[0], "directory_id": k[1]} for k in same_id]
        steps.append({"op": "add", "id": new_key[0], "directory_id": new_key[1]})
    after = set(current)
    for step in steps:
        key = (step["id"], step["directory_id"])
        if step["op"] == "remove":
            after.discard(key)
        else:
            after.add(key)
    if steps:
        _dc_rule({k[0] for k in after}, nodes, f"{action} of controller {node_id} ({node['host']})")
    return {"steps": steps, "voters_after": sorted([list(k) for k in after]), "notes": notes}


def blockers(quorum, step, max_lag):
    """What keeps step from being safe to run now; empty when it may run.

    add: the new key must be an observer caught up with the leader, and the
    voters a caught-up majority.
    remove: the voters left must hold a caught-up majority of themselves, so
    the change commits and the quorum goes on without the removed one.
    """
    if quorum.get("leader") is None or quorum["leader"] < 0:
        return ["the quorum has no leader"]
    voters = _voters(quorum)
    key = (step["id"], step["directory_id"])
    problems = []
    if step["op"] == "add":
        observer = next(
            (r for r in quorum["replicas"].get("observers") or () if (r["id"], r["directory_id"]) == key), None
        )
        if observer is None:
            problems.append(f"controller {_key_text(key)} is not an observer of the quorum yet")
        elif not _caught_up(quorum, observer, max_lag):
            problems.append(f"observer {_key_text(key)} is {behind(quorum, observer)} records behind the leader")
        remaining = voters
    else:
        remaining = [r for r in voters if (r["id"], r["directory_id"]) != key]
    caught_up = [r["id"] for r in remaining if _caught_up(quorum, r, max_lag)]
    if len(caught_up) * 2 <= len(remaining):
        lagging = sorted(r["id"] for r in remaining if r["id"] not in caught_up)
        problems.append(
            f"{'adding' if step['op'] == 'add' else 'removing'} {_key_text(key)} needs a caught-up majority of "
            f"voters {sorted(r['id'] for r in remaining)}, but {lagging} are behind or silent"
        )
    return problems


def settled(quorum, voters_after, max_lag):
    """What keeps the voter set from being done: exactly voters_after, all caught up, the change committed."""
    if quorum.get("leader") is None or quorum["leader"] < 0:
        return ["the quorum has no leader"]
    voters = _voters(quorum)
    want = {tuple(k) for k in voters_after}
    have = keys(voters)
    problems = []
    if have != want:
        problems.append(
            f"voters are {sorted(_key_text(k) for k in have)}, expected {sorted(_key_text(k) for k in want)}"
        )
    problems += [
        f"voter {_key_text((r['id'], r['directory_id']))} is {behind(quorum, r)} records behind the leader"
        for r in voters
        if not _caught_up(quorum, r, max_lag)
    ]
    end = _leader_end(quorum)
    # The voters record was appended before this read; a high watermark at
    # the leader's log end means it is committed.
    if end is not None and quorum.get("high_watermark", -1) < end - max_lag:
        problems.append(
            f"the high watermark {quorum.get('high_watermark')} trails the leader's log end {end}: "
            "a change is not committed yet"
        )
    return problems


def wait(read, judge, timeout, interval=2, clock=time.monotonic, sleep=time.sleep):
    """Read the quorum and judge it until judge returns no problems, or until timeout (gates.poll_until).

    A read that raises is a failed poll, named in the problems. A
    QuorumChangeError from judge ends the wait at once: it is a refusal.
    Returns {"passed", "problems", "waited", "polls", "quorum"}.
    """
    outcome = gates.poll_until(read, judge, timeout, interval, True, (QuorumChangeError,), "the quorum", clock, sleep)
    outcome["quorum"] = outcome.pop("last")
    return outcome
