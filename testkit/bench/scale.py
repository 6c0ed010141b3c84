"""make bench-scale: what the cluster's operations cost as it grows, and where each second of a DC loss goes.

Against the running testbed with the WAN on (make up converge), in one run,
at about 100, 1,000 and 4,000 partitions in all (RF 4, in topics of the
sizes LAYOUT cycles through), declared in an inventory overlay layered over
examples/consumer/inventory so that the converge manages them (the overlay
also raises the brokers' open-files limit and heap for what they hold). At
each size it measures:

1. preflight (validate_declarations' checks) and placement (the topics'
   plan) in this process, and placement alone at 20,000 partitions;
2. the converge that creates the size's topics and a no-op converge after
   it: wall time, and the admin requests every module sent (admin_requests
   in their results, counted from kafka-python's own record of each request);
3. status.yml;
4. one scrape of the cluster's exporter (the role's, run here), and how long
   its reads of the cluster take;
5. a rolling restart of every broker under the load harness's steady
   acks=all writes: its total, each broker's gate wait beside the time its
   replicas took to catch up (an ISR watcher reading the cluster every
   WATCH_SECONDS), the longest write stall, and every acknowledged record
   read back;
6. each broker's heap after a full GC (jcmd GC.class_histogram from this
   machine, which runs one), per 1,000 replicas it holds;
7. the active controller's JVM killed: time until a new leader answers;
8. the second broker DC's Kafka processes SIGKILLed under load, twice: with
   the quorum's leader in another DC, and with it in the lost DC. Each time
   the stall is split into its phases from Kafka's own records (the
   controllers' server.log: the new quorum leader's transition, each lost
   broker's fencing), the brokers' metadata (every partition led outside the
   lost DC) and an independent producer's own timestamps (when its metadata
   named the new leaders, its first acknowledgement of each partition); the
   floor is the quorum's election plus broker.session.timeout.ms. Then
   dc_failover.yml is timed; with the leader elsewhere the DC stays away
   --away minutes (10) under load, and dc_recovery.yml brings it back under
   the replication throttle (--throttle, bytes/s a broker): the time until
   every ISR is full beside the data written while it was away divided by
   the throttle (recovery_model()). A case whose stall is over its floor by
   more than its target is run again at once with the survivors' fsync()
   made a no-op (Debian's libeatmydata, preloaded by a systemd drop-in and
   taken out again, each time through the rolling restart playbook), then
   once more with fsync back, the control for the restart: what the first
   takes off against the second is the disk's, the leader-epoch checkpoint
   Kafka writes and syncs for every partition a broker takes over.

Every figure goes to reports/bench-scale.json, a table and a log-log picture
(cost against partitions) to docs/images/bench-scale.png, the table for
docs/benchmarks.md to stdout. The bench judges itself (verdict()): nothing
acknowledged lost at any size, and each target of the issue evaluated and
printed as met, not met, or held to a proven limit (a stall target the same
case met with the survivors' fsync skipped and not in its control: the
seconds over are the disk's);
it exits non-zero unless every one is met or so held. At the
end the scale topics are deleted and the testbed converged back to its own
inventory (its brokers restart for their limits and heap). --report FILE
redoes the table, the picture and the verdict of a saved report.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import logging
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import yaml

from ansible_collections.stretch.kafka.plugins.module_utils import placement, properties, sizing, topics, topology
from testkit import REPO

LOCAL = REPO / "examples/consumer/inventory"
REPORT = REPO / "reports/bench-scale.json"
PARTIAL_REPORT = REPO / "reports/bench-scale-partial.json"  # a run of some steps only (--step): never the picture
PICTURE = REPO / "docs/images/bench-scale.png"
WORKDIR = REPO / "reports/bench-scale"
SIZES = (100, 1000, 4000)
STEPS = ("converges", "exporter", "restart", "heap", "controller", "dc_loss")
PLACEMENT_ONLY = 20_000
EXTRAPOLATE_TO = 50_000
RF = 4
PREFIX = "scale-"
# The partition counts of the scale topics, cycled: most topics small, a few large (112 partitions a cycle).
LAYOUT = (6, 12, 3, 24, 6, 48, 12, 1)
LOAD_RATE = 200  # records/s, the drills' load
WATCH_SECONDS = 0.5
# The containers' hard open-files limit (examples/consumer/inventory/group_vars/kafka.yml): the overlay's.
NOFILE = 20000
BROKER_HEAP = "-Xms1g -Xmx1g"
THROTTLE = 1_048_576
AWAY_MINUTES = 10
EXPORTER_INTERVAL = 10
# The targets, each against the same run's smallest size: (path in a size's figures, what, threshold). The no-op
# converge's CPU on the controller is its own cost; its wall time also waits on nodes that share the host's cores.
RATIO_TARGETS = (
    (("noop_converge_seconds",), "a no-op converge", 1.5),
    (("noop_converge_cpu", "controller_cpu_seconds"), "a no-op converge's CPU on the controller", 1.5),
    (("status_seconds",), "status", 1.5),
)
STALL_GROWTH_SECONDS = 1.0  # the DC-loss write stall at the largest size, over the smallest's
STALL_OVER_FLOOR_SECONDS = 1.0  # the stall over the floor, in both quorum cases
RECOVERY_TOLERANCE = 0.10  # the recovery against data / throttle
SCRAPE_SECONDS = 5.0
# A DC-loss case over its floor is run again with the survivors' fsync() and its kind made no-ops: Debian's
# libeatmydata, preloaded into their JVMs by a systemd drop-in, then taken out. Never a production setting.
NO_FSYNC_LIBRARY = "/usr/local/lib/bench-scale-libeatmydata.so"
NO_FSYNC_DROPIN = "/etc/systemd/system/kafka.service.d/zz-bench-scale-no-fsync.conf"
LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")
# Kafka 4.x: "Fencing broker 202 at epoch 4199 because its session has timed out." (ReplicationControlManager).
FENCED = re.compile(r"Fencing broker (\d+) (?:at epoch \d+ )?because its session has timed out")
LEADER = re.compile(r"Completed transition to Leader")
# A broker's state-change.log as it applies a batch of partition changes: the start, and its followers fetching again.
LEADING = re.compile(r"Transitioning (\d+) partition\(s\) to local leaders")
FOLLOWING = re.compile(r"Started fetchers as part of become-follower")
NEW_EPOCH = re.compile(r"\] Leader \S+ with topic id .* starts at leader epoch")
HISTOGRAM_TOTAL = re.compile(r"^Total\s+(\d+)\s+(\d+)\s*$", re.M)
SAMPLE = re.compile(r"^(\w+)\{([^}]*)\}\s+(\S+)$", re.M)


class BenchFailed(RuntimeError):
    """A step that did not run through: its figures are missing, and the bench fails."""


# -- the declared layout ---------------------------------------------------------------
def layout(total, start=0):
    """Scale topics holding `total` partitions, named from index start on: LAYOUT's sizes in turn, the last cut
    to fit."""
    out, left, i = [], total, start
    while left > 0:
        partitions = min(LAYOUT[i % len(LAYOUT)], left)
        out.append({"name": f"{PREFIX}{i:05d}", "partitions": partitions, "configs": {"retention.ms": 3600000}})
        left -= partitions
        i += 1
    return out


def partitions_of(declared):
    return sum(t["partitions"] for t in declared)


def grow_to(existing, total):
    """The scale topics existing, and new ones after them, holding `total` partitions together."""
    return list(existing) + layout(max(0, total - partitions_of(existing)), start=len(existing))


def heap_mib(options):
    """The maximum heap, MiB, of JVM options (-Xmx1g, -Xmx768m)."""
    found = re.search(r"-Xmx(\d+)([gGmM])", options)
    if not found:
        raise ValueError(f"no -Xmx in {options!r}")
    return int(found.group(1)) * (1024 if found.group(2) in "gG" else 1)


def overlay(directory, topics_list, settings):
    """An inventory directory layered after examples/consumer/inventory: its group_vars/kafka.yml (every Kafka
    node, deeper than the base's group_vars/all.yml and, as the later source, over its group_vars/kafka.yml)
    declares the topics and the settings."""
    directory = Path(directory)
    (directory / "group_vars").mkdir(parents=True, exist_ok=True)
    (directory / "hosts.yml").write_text("---\nall: {}\n")
    text = yaml.safe_dump({"kafka_topics": list(topics_list), **settings}, sort_keys=False)
    (directory / "group_vars" / "kafka.yml").write_text("---\n" + text)
    return directory


def _kafka_vars(inventory):
    return yaml.safe_load((Path(inventory) / "group_vars/kafka.yml").read_text()) or {}


def base_topics(inventory=LOCAL):
    """The testbed's own declared topics (its group_vars/kafka.yml, which the overlay's replaces), kept beside the
    scale topics."""
    return _kafka_vars(inventory).get("kafka_topics") or []


def internal_partitions(inventory=LOCAL):
    """The partitions of __consumer_offsets on the testbed (its brokers' offsets.topic.num.partitions)."""
    found = _kafka_vars(inventory).get("kafka_node_broker_properties") or {}
    return int(found.get("offsets.topic.num.partitions", 50))


# -- without a cluster: preflight and placement ---------------------------------------
def nodes_2x2():
    """The testbed's node records: 2 + 2 brokers, a controller in each of three DCs."""
    brokers = [{"host": f"dc{d}-broker{b}", "node_id": d * 100 + b, "dc": f"dc{d}", "roles": ["broker"]}
               for d in (1, 2) for b in (1, 2)]  # fmt: skip
    controllers = [{"host": f"dc{d}-controller", "node_id": d, "dc": f"dc{d}", "roles": ["controller"]}
                   for d in (1, 2, 3)]  # fmt: skip
    return brokers + controllers


def offline(total, nodes=None, clock=time.perf_counter):
    """Preflight and placement of `total` partitions (RF 4) in this process: seconds each, and what placement laid
    out; placement is the topics' plan, fresh (the converge that creates them) and again over its own result (a
    no-op converge's)."""
    nodes = nodes or nodes_2x2()
    declared = layout(total)
    by_dc = {}
    for n in nodes:
        if "broker" in n["roles"]:
            by_dc.setdefault(n["dc"], []).append(n["node_id"])
    start = clock()
    problems = topology.check_declarations(nodes, declared, RF, [], None)
    preflight = clock() - start
    normalized = topics.normalize(declared, RF)
    start = clock()
    created = topics.plan(normalized, {}, by_dc)["create"]
    fresh = clock() - start
    current = {n: {"partitions": c["assignment"], "configs": c["configs"], "internal": False}
               for n, c in created.items()}  # fmt: skip
    start = clock()
    again = topics.plan(normalized, current, by_dc)
    noop = clock() - start
    load = placement.cluster_load(c["assignment"] for c in created.values())
    return {"partitions": total, "topics": len(declared), "preflight_seconds": round(preflight, 4),
            "placement_create_seconds": round(fresh, 4), "placement_noop_seconds": round(noop, 4),
            "preflight_problems": problems, "noop_plan_changes": not topics.is_empty(again),
            "replicas_per_broker": dict(sorted(load["replicas"].items()))}  # fmt: skip


# -- what a playbook run sent ---------------------------------------------------------
GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|µs|us|ns)")
GO_UNITS = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}


def go_seconds(text):
    """Seconds of a Go duration ("1m2.5s", "830ms": how podman stats gives a container's CPU time)."""
    parts = GO_DURATION.findall(text or "")
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(n) * GO_UNITS[u] for n, u in parts)


def containers_cpu_seconds(stats, names):
    """{name: CPU seconds} of the named containers, from `podman stats --format json`; a node missing is an error."""
    found = {row["name"]: go_seconds(row["cpu_time"]) for row in stats}
    missing = sorted(set(names) - set(found))
    if missing:
        raise ValueError(f"podman stats gave no CPU time for {', '.join(missing)}")
    return {name: found[name] for name in names}


def cpu_figures(before, after, wall):
    """What a step cost in CPU: the controller's (this process's children: ansible-playbook and its workers) and the
    testbed's nodes', in seconds and as cores over the step's wall time. before/after: ({"controller", "nodes"})."""
    controller = after["controller"] - before["controller"]
    nodes = sum(after["nodes"].values()) - sum(before["nodes"].values())
    return {"controller_cpu_seconds": round(controller, 1), "nodes_cpu_seconds": round(nodes, 1),
            "nodes_cores": round(nodes / wall, 2) if wall > 0 else None}  # fmt: skip


def admin_requests(tasks):
    """{"total", "by_api", "modules"} summed over every admin_requests a run's modules reported (the JSON callback's
    tasks), and how many module results carried one."""
    total, by_api, modules = 0, {}, 0
    for task in tasks:
        for result in task.get("hosts", {}).values():
            for item in [result, *result.get("results", [])]:
                counted = item.get("admin_requests") if isinstance(item, dict) else None
                if not counted:
                    continue
                modules += 1
                total += counted["total"]
                for api, n in counted["by_api"].items():
                    by_api[api] = by_api.get(api, 0) + n
    return {"total": total, "by_api": dict(sorted(by_api.items())), "modules": modules}


# -- Kafka's own records ---------------------------------------------------------------
def log_time(line):
    """The epoch seconds of a Kafka log line ("[2026-11-25 03:18:33,761] ...", UTC on the nodes), or None."""
    found = LOG_TIME.match(line)
    if not found:
        return None
    stamp = datetime.datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f")
    return stamp.replace(tzinfo=datetime.UTC).timestamp()


def fenced_at(text, brokers, since):
    """{broker: when the controller fenced it for its session} of brokers, from controllers' server.log text (in any
    order: rolled files and several controllers), the first time at or after since."""
    out = {}
    for line in text.splitlines():
        found, at = FENCED.search(line), log_time(line)
        if found and at is not None and at >= since and int(found.group(1)) in brokers:
            broker = int(found.group(1))
            out[broker] = min(at, out.get(broker, at))
    return out


def leader_at(text, since):
    """When a controller first completed its transition to the quorum's leader at or after since, or None."""
    times = [t for line in text.splitlines() if LEADER.search(line) and (t := log_time(line)) and t >= since]
    return min(times, default=None)


def _lines_between(text, since, until):
    """[(when, line)] of a Kafka log's lines stamped from since to until, in time order (rolled files in any order)."""
    stamped = ((log_time(line), line) for line in text.splitlines())
    return sorted(((at, line) for at, line in stamped if at is not None and since <= at <= until), key=lambda p: p[0])


def took_over(texts, since, until):
    """{broker: (when it began applying the partition changes after since, when its followers were last set
    fetching again by until)}, from each surviving broker's state-change.log text ({broker: text}).

    A broker applies each fencing as its own batch, in one thread, every partition it leads and follows in turn: the
    batch's length grows with what it holds. A DC's brokers are fenced one by one, so a partition can move twice
    (to a lost broker not fenced yet, which is next in its list, then out of the DC): since is the first fencing,
    until the stall's end. A leader of an acks=all partition acknowledges only once its followers fetch from it. A
    broker without both lines in the window is left out (not seen is not quick)."""
    out = {}
    for broker, text in texts.items():
        began = fetching = None
        for at, line in _lines_between(text, since, until):
            if began is None and LEADING.search(line):
                began = at
            elif began is not None and FOLLOWING.search(line):
                fetching = at
        if began is not None and fetching is not None:
            out[broker] = (began, fetching)
    return out


def leader_batches(texts, since, until):
    """{broker: [[seconds from since, partitions, seconds, new leader epochs]]}: each batch in which a surviving broker
    made itself the leader of partitions, between since and until, from "Transitioning N partition(s) to local
    leaders" to the same batch's next line on local followers (state-change.log texts, {broker: text}). Of its
    partitions, those whose leader epoch is new to the broker ("Leader ... starts at leader epoch",
    Partition.makeLeader) are the ones it writes and syncs a leader-epoch checkpoint for; the others only change their
    ISR."""
    out = {}
    for broker, text in texts.items():
        started, found = None, []
        for at, line in _lines_between(text, since, until):
            leading = LEADING.search(line)
            if leading:
                started = [at, int(leading.group(1)), 0]
            elif started is not None and NEW_EPOCH.search(line):
                started[2] += 1
            elif started is not None and "to local followers" in line:
                found.append([round(started[0] - since, 3), started[1], round(at - started[0], 3), started[2]])
                started = None
        out[str(broker)] = found
    return out


def first_after(points, since, ok):
    """The time of the first (time, value) at or after since whose value passes ok(value), or None."""
    return next((t for t, v in sorted(points, key=lambda p: p[0]) if t >= since and ok(v)), None)


def partitions_known(timeline, since, dead):
    """{partition: when a client's metadata first named a live leader for it after since}, from its leader
    timeline [(time, {partition: leader})]."""
    out = {}
    for t, leaders in sorted(timeline, key=lambda p: p[0]):
        if t < since:
            continue
        for p, leader in leaders.items():
            if leader is not None and leader >= 0 and leader not in dead:
                out.setdefault(p, t)
    return out


def first_acks(acks, since):
    """{partition: the first acknowledgement of a record written at or after since}, of [(partition, time
    acknowledged, time written)]: a record written before (in flight at the kill) proves nothing about the
    writes the loss stalled."""
    out = {}
    for p, t, written in sorted(acks, key=lambda a: a[1]):
        if written >= since:
            out.setdefault(p, t)
    return out


def stall_phases(killed, elected, fenced, leaders_moved, clients_knew, acked, session_timeout, partitions,
                 taken_over=None):  # fmt: skip
    """A DC loss's write stall split into its phases, in seconds from the kill.

    killed: when the DC's processes died; elected: when a new quorum leader took over (None: the leader was not in
    the lost DC); fenced: {broker: when fenced}; leaders_moved: when the brokers' metadata first led every
    partition of the topic outside the lost DC; clients_knew: {partition: when the producer's metadata named its
    live leader}; acked: {partition: first acknowledgement after the kill}; session_timeout: seconds; partitions:
    the topic's, every one of which the client must have found and written again; taken_over: took_over() of the
    surviving brokers, from the first fencing to the stall's end (None: not read). The floor is the quorum's
    election (when there was one) plus the session timeout. A moment not seen is None, and so is every phase that
    needs it: a stall nobody measured is not a short one.

    After the elections two things run side by side: the brokers apply them (brokers_take_over: from the brokers'
    metadata naming the new leaders, which a broker publishes before it acts on them, to the last survivor's
    followers fetching again) and the clients find the new leaders (clients_discover_leaders); the first
    acknowledgement is counted from the latest of the three moments (the watcher's, stamped when its read ends,
    can come after the others).

    over_floor_split divides the seconds over the floor by whose they are, each from its own records: the fencing
    against the floor (the controller's log; negative when a lost broker's last heartbeat came well before the kill,
    up to a fencing check, an eighth of the session timeout, late), Kafka's (the last fencing to the last
    survivor's followers fetching again, the elections and the take-over, from the controller's and the survivors'
    logs), and the client's (from then to the last partition's first acknowledgement, the probe's own). None where
    the take-over was not read.
    """
    every = set(partitions)

    def since(t, start):
        return None if t is None or start is None else round(max(0.0, t - start), 3)

    fence = max(fenced.values()) if fenced else None
    known = max(clients_knew.values()) if every and every <= set(clients_knew) else None
    last_ack = max(acked.values()) if every and every <= set(acked) else None
    start = elected if elected is not None else killed
    election = round(elected - killed, 3) if elected is not None else 0.0
    applied = max(end for _, end in taken_over.values()) if taken_over else None
    # The latest of the moments before it: a phase that ended earlier (the watcher reads late) counts as 0.
    after = None if known is None else max(t for t in (leaders_moved, known, applied) if t is not None)
    phases = {
        "quorum_election": election,
        "wait_before_fencing": since(fence, start),
        "partition_leader_elections": since(leaders_moved, fence),
        "brokers_take_over": since(applied, leaders_moved),
        "clients_discover_leaders": since(known, leaders_moved),
        "first_acknowledgement": since(last_ack, after),
    }
    stall = since(last_ack, killed)
    floor = round(election + session_timeout, 3)
    split = None
    if None not in (fence, applied, last_ack):
        split = {"fencing": round(fence - (killed + floor), 3), "kafka": round(applied - fence, 3),
                 "client": round(last_ack - applied, 3)}  # fmt: skip
    return {
        "phases": phases,
        # The moments themselves (epoch seconds), so that a saved report can be read again.
        "moments": {
            "killed": killed,
            "elected": elected,
            "fenced": fence,
            "leaders_moved": leaders_moved,
            "brokers_took_over": applied,
            "clients_knew": known,
            "last_first_ack": last_ack,
        },
        "stall_seconds": stall,
        "first_ack_seconds": since(min(acked.values()) if acked else None, killed),
        "floor_seconds": floor,
        "over_floor_seconds": None if stall is None else round(stall - floor, 3),
        "over_floor_split": split,
        "fenced_after_seconds": {str(b): since(t, killed) for b, t in sorted(fenced.items())},
        # Each survivor's batch: when it began and when its followers fetched again, from the kill.
        "taking_over_seconds": {
            str(b): [since(t0, killed), since(t1, killed)] for b, (t0, t1) in sorted((taken_over or {}).items())
        },
        # Each partition's own moments, from the kill: which one holds the stall's end, and why.
        "by_partition": {
            str(p): {"client_knew": since(clients_knew.get(p), killed), "acked": since(acked.get(p), killed)}
            for p in sorted(every)
        },
    }


def beside_figures(client, errors, stall):
    """What the probe beside the stall probe (BESIDE) saw of the same loss: its client, its errors, its stall against
    the same floor and the phases its own moments end (stall_phases() of its acknowledgements and leaders)."""
    return {"client": client, "errors": errors,
            **{k: stall[k] for k in ("stall_seconds", "over_floor_seconds", "over_floor_split", "by_partition")},
            "clients_discover_leaders": stall["phases"]["clients_discover_leaders"],
            "first_acknowledgement": stall["phases"]["first_acknowledgement"]}  # fmt: skip


def bytes_to_copy(before, after, replicas, lost):
    """What a lost DC's brokers must copy to catch up: each partition's bytes written while they were away
    ({(topic, partition): bytes} before and after, read on the survivors), once for each of its replicas on a lost
    broker (replicas: {(topic, partition): [broker ids]})."""
    return sum(max(0, size - before.get(key, 0)) * len(set(replicas.get(key, ())) & set(lost))
               for key, size in after.items())  # fmt: skip


def recovery_model(copies, rate, senders, receivers, inflow=0.0):
    """Seconds the lost DC's catch-up takes under the replication throttle: the bytes to copy (bytes_to_copy()) at
    the throttle's rate on every broker (each leader for what it sends, each follower for what it fetches), so at
    rate x the fewer of the senders and the receivers, less what the load still running writes to the lost DC's
    replicas meanwhile (inflow, bytes/s: that too crosses under the throttle before the ISR is whole)."""
    if rate <= 0 or not senders or not receivers:
        raise ValueError("a recovery needs a positive rate, and brokers on both sides")
    capacity = rate * min(senders, receivers) - inflow
    if capacity <= 0:
        raise ValueError(f"the load writes {inflow:.0f} B/s to the lost replicas, at or over the throttle's "
                         f"{rate * min(senders, receivers):.0f} B/s: the DC would never catch up")  # fmt: skip
    return copies / capacity


def gates_beside_catch_up(restarts, watched, resolution):
    """Each broker's gate after its restart beside the time its replicas took to catch up.

    restarts: the kafka_restarts stats ([{host, node_id, gate_before_seconds, gate_after_seconds, gate_started_at,
    gate_passed_at}]); watched: {node id: isr_moments()}: when it was back unfenced ("registered"), next in every ISR
    of its ("caught_up"), and next with no partition under-replicated ("whole"), on this machine's clock as the
    gate's moments are (the admin runner is a container of this host); resolution: seconds within which two moments
    cannot be told apart (the watcher's and the gate's polling and reads), or a function of the moment ready that
    gives them (the read that saw it).

    The gate (broker_back) passes once the broker is in every ISR of its and nothing is under-replicated. It is due
    when both held ("ready"), or at its own first read when the play started it later: met when it passed within
    resolution of that, neither later (it waited for something else) nor earlier (it did not wait for them);
    unknown, so not met, when the watcher never saw ready. The play's own time before the gate (the node's listeners,
    the include, the module's start) is not the gate's: started_after_ready_seconds shows it apart.
    catch_up_seconds is registered to caught_up. A restart recorded without gate_started_at (an older collection) is
    judged from ready alone, and one without gate_passed_at by its wait against the catch-up.
    """

    def within(ready):
        return resolution(ready) if callable(resolution) else resolution

    out = []
    for r in restarts:
        seen = watched.get(int(r["node_id"]), {})
        catch_up = ready = late = started = None
        if seen.get("registered") is not None and seen.get("caught_up") is not None:
            catch_up = round(max(0.0, seen["caught_up"] - seen["registered"]), 2)
            ready = None if seen.get("whole") is None else max(seen["caught_up"], seen["whole"])
        gate = float(r["gate_after_seconds"])
        if r.get("gate_passed_at") in (None, ""):
            met = catch_up is not None and gate <= catch_up + within(ready)
        else:
            if r.get("gate_started_at") not in (None, "") and ready is not None:
                started = round(float(r["gate_started_at"]) - ready, 2)
            due = None if ready is None else ready + max(0.0, started or 0.0)
            late = None if due is None else round(float(r["gate_passed_at"]) - due, 2)
            # Passed later: it waited for something else; earlier: it let the next broker go before this one was
            # back (or the clocks disagree). Either is a gate that does not follow the catch-up.
            met = late is not None and abs(late) <= within(ready)
        out.append({"host": r["host"], "node_id": int(r["node_id"]), "gate_after_seconds": gate,
                    "gate_before_seconds": float(r["gate_before_seconds"]), "catch_up_seconds": catch_up,
                    "whole_after_caught_up_seconds": None if ready is None else round(ready - seen["caught_up"], 2),
                    "started_after_ready_seconds": started, "passed_after_due_seconds": late,
                    # Whether this gate's waiting was put to the test: its first read came before the broker was
                    # ready. One that first read after it shows only that it adds no wait of its own.
                    "read_before_ready": started is not None and started < 0, "polls": r.get("gate_polls"),
                    "resolution_seconds": round(within(ready), 2), "met": met})  # fmt: skip
    return out


def isr_moments(polls, node):
    """{"left", "registered", "caught_up", "whole"} of a broker's restart, from the watcher's polls [(time,
    snapshot)] (snapshot: {"brokers": {id: {"fenced"}}, "partitions": [{replicas, isr}]}): when it first dropped out
    (fenced, unregistered or out of an ISR of its), when it was registered unfenced again after it was last seen gone
    (or after it dropped out, when no poll saw it gone), when next in every ISR of its, and when next (from then) no
    partition at all was under-replicated."""

    def out_of_isr(s):
        return any(node in p["replicas"] and node not in p["isr"] for p in s["partitions"])

    def down(s):
        broker = s["brokers"].get(node)
        return broker is None or broker["fenced"] or out_of_isr(s)

    left = first_after(polls, -math.inf, down)
    if left is None:
        return {"left": None, "registered": None, "caught_up": None, "whole": None}

    def gone(s):
        return node not in s["brokers"] or s["brokers"][node]["fenced"]

    def live(s):
        return not gone(s)

    went = first_after(polls, left, gone)
    registered = first_after(polls, left if went is None else went, live)
    caught_up = None if registered is None else first_after(polls, registered, lambda s: not down(s))

    def whole(s):
        return all(set(p["replicas"]) <= set(p["isr"]) for p in s["partitions"])

    whole_at = None if caught_up is None else first_after(polls, caught_up, whole)
    return {"left": left, "registered": registered, "caught_up": caught_up, "whole": whole_at}


def led_outside(snapshot, dead):
    """Every partition of the snapshot led by a live broker, with no dead broker left in its ISR."""
    parts = snapshot["partitions"]
    return bool(parts) and all(p["leader"] >= 0 and p["leader"] not in dead and not set(p["isr"]) & dead for p in parts)


def leaders_out_of(replicas, lost, keep=()):
    """{topic: {partition: replicas}} for every partition preferred-led by a lost broker (the first of its list), its
    topic not in keep: the same replicas, the others first and the lost brokers after, each in their own order. After
    a preferred election the survivors lead it, and nothing is copied."""
    moves = {}
    for (topic, p), listed in sorted(replicas.items()):
        if topic in keep or not listed or listed[0] not in lost:
            continue
        moves.setdefault(topic, {})[p] = [b for b in listed if b not in lost] + [b for b in listed if b in lost]
    return moves


def registered(snapshot, brokers):
    """Every one of brokers registered and unfenced in the snapshot."""
    return all(b in snapshot["brokers"] and not snapshot["brokers"][b]["fenced"] for b in brokers)


def whole_isr(snapshot):
    """Every partition of the snapshot with its whole ISR."""
    return bool(snapshot["partitions"]) and all(len(p["isr"]) == len(p["replicas"]) for p in snapshot["partitions"])


def caught_up(quorum, voters, max_lag=5):
    """The quorum (Admin.quorum()) read, led, with every one of voters voting and within max_lag of the leader."""
    if not quorum or quorum["leader"] < 0 or set(quorum["voters"]) != set(voters):
        return False
    end = quorum["voters"].get(quorum["leader"], 0)
    return all(end - offset <= max_lag for offset in quorum["voters"].values())


def histogram_bytes(text):
    """The live heap, bytes, from jcmd GC.class_histogram's output (its Total line, after the full GC it runs)."""
    found = HISTOGRAM_TOTAL.search(text)
    if not found:
        raise ValueError("no Total line in the class histogram")
    return int(found.group(2))


def exporter_reads(text):
    """{part: {"seconds", "ok", "at"}} of the cluster's exporter's last reads, from its /metrics text."""
    out = {}
    names = {"stretch_exporter_read_duration_seconds": "seconds", "stretch_exporter_read_success": "ok",
             "stretch_exporter_last_read_timestamp_seconds": "at"}  # fmt: skip
    for name, labels, value in SAMPLE.findall(text):
        if name in names:
            part = dict(re.findall(r'(\w+)="([^"]*)"', labels)).get("part")
            out.setdefault(part, {})[names[name]] = float(value)
    return out


# -- judging and extrapolating ---------------------------------------------------------
def slope(points):
    """The log-log slope of [(partitions, cost)] (least squares): cost grows as partitions to this power."""
    pts = [(math.log(p), math.log(c)) for p, c in points if p and c and c > 0]
    if len(pts) < 2:
        return None
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return None if den == 0 else sum((x - mx) * (y - my) for x, y in pts) / den


def extrapolate(points, target=EXTRAPOLATE_TO):
    """The cost at target partitions by the power law through the largest measured point with the fitted slope,
    and the slope; None when it cannot be fitted."""
    b = slope(points)
    if b is None:
        return None
    p, c = max(points)
    return {"slope": round(b, 3), "at": target, "value": round(c * (target / p) ** b, 2)}


def _figure(size, path):
    value = size
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


NO_FSYNC = "the survivors' fsync skipped"
RESTARTED = "the survivors restarted, fsync on"
LEADERS_MOVED = "the lost DC leading the probe's topic alone"
# A stall over its target's runs again: (figures' key, what the verdict calls it, what the table calls it).
RERUNS = (("dc_loss_no_fsync", NO_FSYNC, "fsync skipped"), ("dc_loss_restarted", RESTARTED, "restarted, fsync on"),
          ("dc_loss_leaders_moved", LEADERS_MOVED, "leaders moved out first"))  # fmt: skip


def _rerun(size, group, case, figure):
    """A stall figure of the case run again (group: one of RERUNS' keys), when that run lost nothing; else None."""
    again = (size.get(group) or {}).get(case) or {}
    return _figure(again, ("stall", figure)) if _figure(again, ("load", "lost")) == 0 else None


def _held(size, case, figure, base, threshold, group):
    """(the run again's figure, the control's), base taken off both, when the case run again as group met the
    threshold and its control (dc_loss_restarted, after the same restart) did not, neither losing a record; else
    None."""
    twin, control = (_rerun(size, g, case, figure) for g in (group, "dc_loss_restarted"))
    if None in (twin, control, base) or twin - base > threshold or control - base <= threshold:
        return None
    return twin - base, control - base


def _disk_limit(size, case, figure, base, threshold, what):
    """The limit a stall target not met is held to: the disk's, when the case run again with the survivors' fsync
    skipped met the target and its control, run next after the same restart of the survivors with fsync back, did not
    (the survivors' synchronous writes, the leader-epoch checkpoint Kafka writes and syncs for every partition a broker
    takes over, are then what is over). base is taken off both figures (the smallest size's stall, for its growth)."""
    held = _held(size, case, figure, base, threshold, "dc_loss_no_fsync")
    if held is None:
        return None
    twin, control = held
    return (f"the disk's: after the same restart of the survivors, {twin:g} s {what} with their fsync skipped, "
            f"{control:g} s with it")  # fmt: skip


def _leaderships_limit(size, case, figure, base, threshold, what):
    """The limit a stall target not met is held to: the survivors' take-over of the lost DC's leaderships, when the
    case run again with the lost DC leading the probe's topic alone (its other leaderships handed to the survivors
    before the loss: the same partitions, replicas, fencings and fsync) met the target and the run before it, the
    control after the same restart, did not. base as in _disk_limit()."""
    handed = _figure((size.get("dc_loss_leaders_moved") or {}).get(case) or {}, ("leaderships_handed_over",))
    held = _held(size, case, figure, base, threshold, "dc_loss_leaders_moved")
    if held is None or handed is None:
        return None
    twin, control = held
    return (f"the survivors' take-over of the lost DC's leaderships: after the same restart, {twin:g} s {what} "
            f"with the lost DC leading the probe's topic alone ({handed} leaderships handed over first), "
            f"{control:g} s with them")  # fmt: skip


def fence_check_seconds(session_timeout):
    """How often Kafka's active controller looks for expired broker sessions: QuorumController's
    maybeFenceStaleBrokerPeriodNs, max(1 ms, broker.session.timeout.ms / 8). The server sets no other period (the
    builder's setFenceStaleBrokerIntervalNs is left unset), so a lost broker is fenced up to that long after its session
    expired."""
    return max(0.001, session_timeout / 8)


def _fencing_limit(size, case, threshold):
    """The limit a stall over its floor is held to: Kafka's fencing check, when the last lost broker was fenced after
    the floor (the controller's own log, against the kill) by no more than the check's period, and the seconds over
    the floor besides met the target. A session expires at the floor at the latest (a broker's last heartbeat came
    before the kill), so a lateness within the period is the check's."""
    stall = _figure(size, ("dc_loss", case, "stall")) or {}
    late, over = _figure(stall, ("over_floor_split", "fencing")), stall.get("over_floor_seconds")
    election, floor = _figure(stall, ("phases", "quorum_election")), stall.get("floor_seconds")
    if None in (late, over, election, floor):
        return None
    period = fence_check_seconds(floor - election)
    if not 0 < late <= period or over - late > threshold:
        return None
    return (
        f"Kafka's fencing check: the last lost broker fenced {late:g} s after the floor (the controller looks "
        f"every {period:g} s, broker.session.timeout.ms / 8), {over - late:.3g} s over the floor besides"
    )


def _turns_limit(size, case, figure, bases, threshold, what):
    """The limit a stall target not met is held to: librdkafka's turns, when the probe beside the stall probe in the
    same loss (a librdkafka producer per partition, so that no partition waits behind another on a connection) met
    the target and the stall probe did not, neither giving a record up and the load losing none: the same kill,
    fencings, elections and take-over, and only the client differs. bases: what is taken off the stall probe's
    figure and off the other's (each its own smallest size's stall, for the growth; 0 over the floor)."""
    stall = _figure(size, ("dc_loss", case, "stall")) or {}
    beside = stall.get("beside") or {}
    mine, theirs = stall.get(figure), beside.get(figure)
    clean = _figure(size, ("dc_loss", case, "load", "lost")) == 0 and beside.get("errors") == 0
    if None in (mine, theirs, *bases) or not clean or theirs - bases[1] > threshold or mine - bases[0] <= threshold:
        return None
    return (
        f"librdkafka's turns: in the same loss, {theirs - bases[1]:g} s {what} with a producer per partition "
        f"beside the probe, {mine - bases[0]:g} s with the probe's one (librdkafka puts one partition in each "
        "request and a connection carries one at a time: confluentinc/librdkafka#1700)"
    )


def _limit(size, case, figure, base, threshold, what):
    """The limit proven for a stall target not met, the disk's first (the narrower cause), else None."""
    return (_disk_limit(size, case, figure, base, threshold, what)
            or _leaderships_limit(size, case, figure, base, threshold, what))  # fmt: skip


def stall_met(loss):
    """Whether a DC loss's figures hold a stall within its target over the floor (a stall not measured is not)."""
    over = _figure(loss, ("stall", "over_floor_seconds"))
    return over is not None and over <= STALL_OVER_FLOOR_SECONDS


def verdict(report):
    """[{"target", "value", "threshold", "met", "limit"}] of every target, each against the same run's smallest size.
    A stall target not met may hold a limit: the same case, run again with the survivors' fsync skipped, met it and
    its control did not (_disk_limit()); or, run again with the lost DC leading the probe's topic alone, met it and
    the control did not (_leaderships_limit()); or, for a stall over its floor, the seconds besides the fencing
    check's lateness met it (_fencing_limit())."""
    sizes = sorted(report.get("sizes") or [], key=lambda s: s["partitions"])
    checks = []

    def check(target, value, threshold, met, limit=None):
        checks.append({"target": target, "value": value, "threshold": threshold, "met": bool(met),
                       "limit": None if met else limit})  # fmt: skip

    for size in sizes:
        for label, load in (("rolling restart", _figure(size, ("restart", "load"))),
                            *((f"DC loss ({case})", _figure(size, ("dc_loss", case, "load")))
                              for case in ("leader_elsewhere", "leader_in_lost_dc")),
                            *((f"DC loss ({case}, {what})", again.get("load"))
                              for group, what, _ in RERUNS
                              for case, again in (size.get(group) or {}).items())):  # fmt: skip
            lost = None if not isinstance(load, dict) else load.get("lost")
            check(f"{size['partitions']} partitions, {label}: acknowledged records lost", lost, 0, lost == 0)
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        for path, what, ratio in RATIO_TARGETS:
            a, b = _figure(small, path), _figure(large, path)
            value = round(b / a, 2) if a and b is not None else None
            check(f"{what} at {large['partitions']} over {small['partitions']} partitions", value, f"<= {ratio}",
                  value is not None and value <= ratio)  # fmt: skip
        for case in ("leader_elsewhere", "leader_in_lost_dc"):
            a = _figure(small, ("dc_loss", case, "stall", "stall_seconds"))
            b = _figure(large, ("dc_loss", case, "stall", "stall_seconds"))
            value = round(b - a, 2) if a is not None and b is not None else None
            beside = _figure(small, ("dc_loss", case, "stall", "beside", "stall_seconds"))
            check(
                f"DC-loss write stall ({case}) at {large['partitions']} over {small['partitions']} partitions, s",
                value,
                f"<= {STALL_GROWTH_SECONDS}",
                value is not None and value <= STALL_GROWTH_SECONDS,
                _limit(large, case, "stall_seconds", a, STALL_GROWTH_SECONDS, "grown")
                or _turns_limit(large, case, "stall_seconds", (a, beside), STALL_GROWTH_SECONDS, "grown"),
            )
    for size in sizes:
        n = size["partitions"]
        for case in ("leader_elsewhere", "leader_in_lost_dc"):
            over = _figure(size, ("dc_loss", case, "stall", "over_floor_seconds"))
            split = _figure(size, ("dc_loss", case, "stall", "over_floor_split"))
            whose = "" if not split else (
                f" (the fencing {split['fencing']:+g}, Kafka's elections and take-over {split['kafka']:g}, "
                f"the client after them {split['client']:g})")  # fmt: skip
            limit = (_limit(size, case, "over_floor_seconds", 0, STALL_OVER_FLOOR_SECONDS, "over the floor")
                     or _fencing_limit(size, case, STALL_OVER_FLOOR_SECONDS)
                     or _turns_limit(size, case, "over_floor_seconds", (0, 0), STALL_OVER_FLOOR_SECONDS,
                                     "over the floor"))  # fmt: skip
            check(f"{n} partitions, DC-loss stall ({case}) over its floor, s{whose}", over,
                  f"<= {STALL_OVER_FLOOR_SECONDS}", stall_met(_figure(size, ("dc_loss", case))), limit)  # fmt: skip
        gates = _figure(size, ("restart", "gates")) or []
        check(f"{n} partitions, each broker's gate passed when its replicas had caught up (and nothing was short)",
              [(g["host"], g["gate_after_seconds"], g["catch_up_seconds"],
                g.get("passed_after_due_seconds", g.get("passed_after_ready_seconds")),
                "read before ready" if g.get("read_before_ready") else "first read after ready")
               for g in gates],
              "passed within the watcher's and the gate's polling of that moment (or of its first read, if later)",
              gates and all(g["met"] for g in gates))  # fmt: skip
        recovery = _figure(size, ("dc_loss", "leader_elsewhere", "recovery")) or {}
        measured, model = recovery.get("catch_up_seconds"), recovery.get("model_seconds")
        off = round(abs(measured - model) / model, 3) if measured is not None and model else None
        check(f"{n} partitions, recovery against data / throttle ({measured} s, model {model} s)", off,
              f"<= {RECOVERY_TOLERANCE}", off is not None and off <= RECOVERY_TOLERANCE)  # fmt: skip
        scrape = size.get("exporter") or {}
        reads = [r.get("seconds") if r.get("ok") else math.inf for r in (scrape.get("reads") or {}).values()]
        slowest = max([scrape.get("scrape_seconds") or math.inf, *reads]) if scrape else None
        check(f"{n} partitions, an exporter scrape and each of its reads, s", slowest, f"< {SCRAPE_SECONDS}",
              slowest is not None and slowest < SCRAPE_SECONDS)  # fmt: skip
    return checks


# -- the table and the picture ---------------------------------------------------------
# The DC loss's two quorum cases, as the table names them.
CASE_NAMES = (("leader_elsewhere", "leader elsewhere"), ("leader_in_lost_dc", "leader in the lost DC"))
COSTS = (  # (label, path in a size's figures)
    ("preflight, s", ("offline", "preflight_seconds")),
    ("placement (create), s", ("offline", "placement_create_seconds")),
    ("create converge, s", ("create_converge_seconds",)),
    ("create converge, admin requests", ("create_converge_requests", "total")),
    ("no-op converge, s", ("noop_converge_seconds",)),
    ("no-op converge, admin requests", ("noop_converge_requests", "total")),
    ("no-op converge, controller CPU, s", ("noop_converge_cpu", "controller_cpu_seconds")),
    ("no-op converge, nodes' CPU, cores", ("noop_converge_cpu", "nodes_cores")),
    ("nodes' CPU while idle, cores", ("idle_nodes_cores",)),
    ("status, s", ("status_seconds",)),
    ("status, admin requests", ("status_requests", "total")),
    ("exporter scrape, s", ("exporter", "scrape_seconds")),
    ("exporter read of the partitions, s", ("exporter", "reads", "partitions", "seconds")),
    ("rolling restart, s", ("restart", "seconds")),
    ("rolling restart, longest write stall, s", ("restart", "load", "longest_stall_seconds")),
    ("controller killed: new leader, s", ("controller_failover", "new_leader_seconds")),
    ("DC loss, leader elsewhere: stall, s", ("dc_loss", "leader_elsewhere", "stall", "stall_seconds")),
    ("DC loss, leader in the lost DC: stall, s", ("dc_loss", "leader_in_lost_dc", "stall", "stall_seconds")),
    *(
        (
            f"DC loss, {where}: stall with a producer per partition, s",
            ("dc_loss", case, "stall", "beside", "stall_seconds"),
        )
        for case, where in CASE_NAMES
    ),
    *(
        (f"DC loss, {where}, {label}: stall, s", (group, case, "stall", "stall_seconds"))
        for group, _, label in RERUNS
        for case, where in CASE_NAMES
    ),
    ("failover playbook, s", ("dc_loss", "leader_elsewhere", "failover_seconds")),
    ("recovery: ISR full, s", ("dc_loss", "leader_elsewhere", "recovery", "catch_up_seconds")),
    ("recovery: data / throttle, s", ("dc_loss", "leader_elsewhere", "recovery", "model_seconds")),
    ("broker heap after a full GC, MiB", ("heap", "max_mib")),
)


def table(report):
    """The Markdown table of every cost at every size, for docs/benchmarks.md."""
    sizes = sorted(report.get("sizes") or [], key=lambda s: s["partitions"])
    lines = ["| | " + " | ".join(f"{s['partitions']:,} partitions" for s in sizes) + " |",
             "|---|" + "---|" * len(sizes)]  # fmt: skip
    for label, path in COSTS:
        values = [_figure(s, path) for s in sizes]
        lines.append(f"| {label} | " + " | ".join("-" if v is None else f"{v:g}" if isinstance(v, (int, float))
                                                 else str(v) for v in values) + " |")  # fmt: skip
    return lines


def draw(report, path=PICTURE):
    import matplotlib  # noqa: PLC0415  only where the picture is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    sizes = sorted(report.get("sizes") or [], key=lambda s: s["partitions"])
    fig, ax = plt.subplots(figsize=(11, 5.5))
    styles = ("-", "--", ":")  # matplotlib's ten colours repeat: a second and third line style tells them apart
    for n, (label, path_) in enumerate(COSTS):
        points = [(s["partitions"], v) for s in sizes if isinstance(v := _figure(s, path_), (int, float)) and v > 0]
        if len(points) >= 2:
            ax.plot(*zip(*points, strict=True), marker="o", linestyle=styles[n // 10 % 3], label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("partitions in the cluster (RF 4)")
    ax.set_ylabel("cost (seconds, requests, MiB)")
    ax.set_title("make bench-scale: what each operation costs as the cluster grows")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def limits(report, shapes=((2, 2), (6, 6))):
    """Which host limit a growing cluster reaches first, per broker shape ((brokers in dc1, in dc2)): the
    partitions (RF 4, default segments per replica) at which a broker needs more open files than the role's
    default limit, more memory maps than the role's vm.max_map_count, or (when the run measured it) more heap
    than the overlay's, by the measured heap per replica."""
    per_replica = (report.get("heap_per_1000_replicas_mib") or 0) / 1000
    heap_mib = report.get("broker_heap_mib")
    out = {}
    for a, b in shapes:
        by_dc = {"dc1": list(range(100, 100 + a)), "dc2": list(range(200, 200 + b))}
        checks = {
            "open files (kafka_node_nofile_limit 100000)": lambda load: (
                sizing.needs(load["segments"])["open_files"] > 100000
            ),
            "memory maps (vm.max_map_count 262144)": lambda load: sizing.needs(load["segments"])["map_areas"] > 262144,
        }
        if per_replica and heap_mib:
            checks[f"heap ({heap_mib} MiB)"] = lambda load: load["replicas"] * per_replica > heap_mib
        out[f"{a}+{b} brokers"] = {name: first_reached(by_dc, reached) for name, reached in checks.items()}
    return out


def first_reached(by_dc, reached, most=10_000_000):
    """The fewest partitions (one topic, RF 4, 3 segments a replica) at which the busiest broker's load
    ({"replicas", "segments"}) makes reached() true, or None below most."""

    def busiest(partitions):
        load = sizing.broker_load([{"name": "t", "partitions": partitions}], RF, by_dc, {}, 3)
        return max(load.values(), key=lambda x: x["segments"])

    if not reached(busiest(most)):
        return None
    low, high = 1, most
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if reached(busiest(mid)) else (mid + 1, high)
    return low


def finish(report, path=REPORT, picture=PICTURE):
    """Extrapolations, limits, the verdict, the table and the picture of a report; writes it. A partial run's report
    (some steps only) gets no picture."""
    sizes = sorted(report.get("sizes") or [], key=lambda s: s["partitions"])
    report["extrapolated"] = {
        label: extrapolate([(s["partitions"], v) for s in sizes if isinstance(v := _figure(s, p), (int, float))])
        for label, p in COSTS
    }
    report["limits"] = limits(report)
    report["checks"] = verdict(report)
    report["ok"] = (bool(report["checks"]) and all(c["met"] or c.get("limit") for c in report["checks"])
                    and not report.get("problems"))  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    print("\n".join(table(report)))
    for c in report["checks"]:
        mark = "met    " if c["met"] else "LIMIT  " if c.get("limit") else "NOT MET"
        held = f"; limit proven, {c['limit']}" if c.get("limit") else ""
        print(f"{mark}  {c['target']}: {c['value']} (target {c['threshold']}{held})")
    for problem in report.get("problems") or []:
        print(f"PROBLEM  {problem}")
    if sizes and set(report.get("steps") or STEPS) == set(STEPS):  # a partial run's picture would replace the docs'
        draw(report, picture)
    return report


# -- on the testbed ---------------------------------------------------------------------
def file_logger(name, path):
    """A logger that writes only to path, each line with its wall-clock time (librdkafka's `logger`)."""
    logger = logging.getLogger(name)
    logger.propagate, logger.level = False, logging.DEBUG
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d %(message)s", "%H:%M:%S"))
    logger.handlers = [handler]
    return logger


# The stall probe's clients. librdkafka (confluent-kafka) puts one partition in each request, so after a loss the
# partitions a survivor took over wait their turn on its connection behind those it led already (up to 1.9 s at
# 4,000 partitions). kafka-python (testkit.producer.KafkaPythonProducer) puts every partition a broker leads into
# one request, but its metadata request waits for a free slot on a connection as its writes do: with one request
# in flight and writes to the live leaders going on, it found the new leaders 0.9-3.3 s after the fencing, and once
# not in the minute the DC was away (docs/wan.md#the-dc-loss-stall). A probe must not be the slowest part.
# per-partition (testkit.producer.PerPartitionProducer) gives each partition a librdkafka producer of its own, so no
# partition waits behind another on a connection: every DC loss runs it beside the probe, on the same partitions,
# and what the two differ by is the turns (BESIDE).
PROBE_CLIENTS = ("librdkafka", "kafka-python", "per-partition")
BESIDE = "per-partition"


def probe_setting(text, client):
    """(key, value) of a KEY=VALUE setting for the stall probe's client: kafka-python takes numbers and booleans as
    such, librdkafka every value as a string."""
    key, value = text.split("=", 1)
    if client == "librdkafka":
        return key, value
    lowered = value.lower()
    if lowered in ("true", "false"):
        return key, lowered == "true"
    for kind in (int, float):
        with contextlib.suppress(ValueError):
            return key, kind(value)
    return key, value


class StallProbe(threading.Thread):
    """An independent acks=all, idempotent producer writing round robin over a topic's partitions: each
    acknowledgement's time, and its own metadata's leader of each partition every 100 ms.

    config: the load's librdkafka settings (connection and login); settings: the client's own over them, under its
    names (kafka-python's for kafka-python, librdkafka's for librdkafka); log: a file for the client's debug log."""

    def __init__(self, config, topic, partitions, client="librdkafka", settings=None, rate=100, log=None):
        super().__init__(daemon=True)
        if client not in PROBE_CLIENTS:
            raise ValueError(f"the stall probe's client is one of {', '.join(PROBE_CLIENTS)}, not {client!r}")
        self.client, self.config = client, self._settings(client, config, settings or {}, log)
        self.topic, self.partitions, self.rate = topic, partitions, rate
        self.acks, self.leaders, self.errors = [], [], []
        self._last, self._halt = None, threading.Event()

    def _settings(self, client, config, settings, log):
        from testkit.loadtest.harness import PRODUCER  # noqa: PLC0415  confluent-kafka only on the testbed
        from testkit.producer import from_librdkafka, kafka_python_problems  # noqa: PLC0415

        if client != "kafka-python":
            out = {**PRODUCER, "statistics.interval.ms": 100, "stats_cb": self._stats, **config, **settings}
            if log is not None:  # librdkafka's own log (its `debug` contexts) to a file, each line stamped
                out["logger"] = file_logger(f"stall-probe.{log.stem}", log)
            return out
        if log is not None:  # kafka-python's own log: its metadata at DEBUG, the rest at INFO (all of it at DEBUG, a
            # million lines in a DC loss, took the host's CPU from the brokers and doubled a take-over)
            logging.getLogger("kafka").addHandler(file_logger(f"stall-probe.{log.stem}", log).handlers[0])
            logging.getLogger("kafka").setLevel(logging.INFO)
            logging.getLogger("kafka.cluster").setLevel(logging.DEBUG)
        out = {**from_librdkafka(config), "delivery_timeout_ms": PRODUCER["delivery.timeout.ms"], **settings}
        problems = kafka_python_problems(out)  # here, not in the probe's thread, where it would end unseen
        if problems:
            raise ValueError(f"the stall probe's kafka-python settings: {'; '.join(problems)}")
        return out

    def _stats(self, raw):
        found = json.loads(raw).get("topics", {}).get(self.topic, {}).get("partitions", {})
        leaders = {int(p): v.get("leader", -1) for p, v in found.items() if int(p) >= 0}
        if self.client == "per-partition":
            # Each partition's own producer says where that partition's records go: the partitions it has had
            # records for ("msgs"), over what the others said of theirs.
            mine = {int(p) for p, v in found.items() if int(p) >= 0 and v.get("msgs", 0) > 0}
            leaders = {**(self._last or {}), **{p: leaders[p] for p in mine}}
        self._saw(leaders)

    def _saw(self, leaders):
        if leaders != self._last:
            self.leaders.append((time.time(), leaders))
            self._last = leaders

    def _delivered(self, err, msg):
        librdkafka = self.client != "kafka-python"
        if err is not None:  # kafka-python gives the exception alone
            self.errors.append((msg.partition() if librdkafka else None, err.name() if librdkafka else repr(err)))
        elif librdkafka:
            # The record's CreateTime, which the producer stamps when it is produced: when it was written.
            self.acks.append((msg.partition(), time.time(), msg.timestamp()[1] / 1000))
        else:
            self.acks.append((msg.partition, time.time(), msg.timestamp / 1000))

    def _producer(self):
        if self.client == "librdkafka":
            from confluent_kafka import Producer  # noqa: PLC0415  only on the testbed

            return Producer(self.config), None
        if self.client == "per-partition":
            from testkit.producer import PerPartitionProducer  # noqa: PLC0415  only on the testbed

            return PerPartitionProducer(self.config), None
        from kafka import TopicPartition  # noqa: PLC0415

        from testkit.producer import KafkaPythonProducer  # noqa: PLC0415

        producer = KafkaPythonProducer(self.config)
        cluster = producer._producer._metadata  # noqa: SLF001  kafka-python's own view of the leaders, read-only
        return producer, lambda: {p: cluster.leader_for_partition(TopicPartition(self.topic, p)) for p in
                                  range(max(self.partitions) + 1)}  # fmt: skip

    def run(self):
        (producer, leaders), sent, started = self._producer(), 0, time.monotonic()
        looked = started
        while not self._halt.is_set():
            now = time.monotonic()
            due = int((now - started) * self.rate)
            while sent < due:
                producer.produce(self.topic, b"stall-probe", partition=self.partitions[sent % len(self.partitions)],
                                 on_delivery=self._delivered)  # fmt: skip
                sent += 1
            if leaders is not None and now - looked >= 0.1:  # as often as librdkafka's statistics
                self._saw({p: -1 if leader is None else leader for p, leader in leaders().items()})
                looked = now
            producer.poll(0.01)
        producer.flush(330)
        if self.client == "kafka-python":  # its connections and I/O thread; librdkafka's go with the object
            producer.close(timeout=30)

    def stop(self):
        self._halt.set()
        self.join(timeout=400)


class Watcher(threading.Thread):
    """Reads the registered brokers and every partition (leader, replicas, ISR) every interval: [(time, snapshot)]."""

    def __init__(self, cluster, interval=WATCH_SECONDS, topic=None):
        super().__init__(daemon=True)
        self.cluster, self.interval, self.topic = cluster, interval, topic
        self.polls, self._halt = [], threading.Event()
        self.longest_read = 0.0  # a poll is stamped when its reads end: what it saw may be this much older
        self.read_seconds = {}  # {a poll's time: how long its reads took}

    def run(self):
        admin = self.cluster.admin(timeout=10)
        try:
            while not self._halt.wait(self.interval):
                started = time.time()
                try:
                    brokers = admin.brokers()
                    found = admin.client.describe_topics([self.topic] if self.topic else None)
                except Exception:  # noqa: BLE001  a read that fails is a poll missed, not a crash
                    continue
                parts = [{"topic": t["name"], "partition": p["partition_index"], "leader": p["leader_id"],
                          "replicas": list(p["replica_nodes"]), "isr": list(p["isr_nodes"])}
                         for t in found if not t["error_code"] for p in t["partitions"]]  # fmt: skip
                ended = time.time()
                self.longest_read = max(self.longest_read, ended - started)
                self.read_seconds[ended] = ended - started
                self.polls.append((ended, {"brokers": brokers, "partitions": parts}))
        finally:
            admin.close()

    def stop(self):
        self._halt.set()
        self.join(timeout=60)
        return self.polls


def wall_of_monotonic(mono):
    """A CLOCK_MONOTONIC time (the host's and its containers') on this machine's wall clock."""
    return time.time() - (time.monotonic() - mono)


class ScaleBench:
    def __init__(self, args):
        from testkit import cluster as inventory  # noqa: PLC0415  reads the testbed's inventory

        self.args = args
        self.base = inventory.load()
        self.cluster = self.base
        self.inventory = [LOCAL]
        self.first, self.second = self.base.dcs
        self.problems = []
        self.declared = []  # the scale topics declared so far
        WORKDIR.mkdir(parents=True, exist_ok=True)
        self.settings = {"kafka_node_nofile_limit": args.nofile, "kafka_node_broker_heap_opts": args.broker_heap,
                         "kafka_ops_gate_interval": args.gate_interval}  # fmt: skip

    # -- running playbooks --------------------------------------------------------
    def layered(self, scale_topics):
        from testkit import cluster as inventory  # noqa: PLC0415

        directory = overlay(WORKDIR / "inventory", [*base_topics(), *scale_topics], self.settings)
        self.inventory = [LOCAL, directory]
        self.cluster = inventory.load(self.inventory)

    def playbook(self, name, **extra):
        from testkit.playbook import run  # noqa: PLC0415

        print(f"bench-scale: {name}", flush=True)
        result = run(self.inventory, name, log_dir=WORKDIR / "runs", timeout=7200, **extra)
        if not result.ok:
            raise BenchFailed(f"{name} failed (rc {result.returncode}); see {result.log}")
        return result

    def cpu(self):
        """The CPU seconds spent so far by this process's finished children (read first: podman stats, read next, is
        a child too) and by each of the testbed's nodes."""
        spent = os.times()
        stats = json.loads(subprocess.run(["podman", "stats", "--no-stream", "--format", "json"], capture_output=True,
                                          text=True, check=True, timeout=120).stdout)  # fmt: skip
        nodes = containers_cpu_seconds(stats, [n.host for n in self.cluster.nodes])
        return {"controller": spent.children_user + spent.children_system, "nodes": nodes}

    def idle_cpu(self, seconds=30):
        """The cores the testbed's nodes use with nothing but Kafka's own work (replication fetches, heartbeats) to
        do, over `seconds`: what the playbooks share the host's two cores with."""
        before, started = self.cpu(), time.monotonic()
        time.sleep(seconds)
        return cpu_figures(before, self.cpu(), time.monotonic() - started)["nodes_cores"]

    def node_exec(self, host, command, check=True, timeout=120):
        return subprocess.run(["podman", "exec", host, "sh", "-c", command], capture_output=True, text=True,
                              timeout=timeout, check=check).stdout  # fmt: skip

    def server_logs(self, nodes):
        """The fencing and leader-transition lines of the nodes' server.log, the rolled files too."""
        wanted = "grep -h -e 'Fencing broker' -e 'Completed transition to Leader' /var/log/kafka/server.log*"
        return "\n".join(self.node_exec(n.host, wanted, check=False) for n in nodes)

    def state_change_logs(self, brokers):
        """{broker id: its state-change.log, the rolled files too}: how it applied each batch of partition changes."""
        wanted = "cat /var/log/kafka/state-change.log.* /var/log/kafka/state-change.log 2>/dev/null"
        return {n.node_id: self.node_exec(n.host, wanted, check=False) for n in brokers}

    # -- the steps of one size ----------------------------------------------------
    def converges(self, figures):
        created = self.playbook("site")
        figures["create_converge_seconds"] = created.seconds
        figures["create_converge_changed"] = created.changed
        figures["create_converge_requests"] = admin_requests(created.tasks)
        before = None
        try:
            figures["idle_nodes_cores"] = self.idle_cpu()
            before = self.cpu()
            before["controller"] = sum(os.times()[2:4])  # the podman stats just run is not the playbook's
        except (OSError, KeyError, ValueError, subprocess.SubprocessError) as exc:  # a figure missing, the run goes on
            self.problems.append(f"{figures['partitions']} partitions: the nodes' CPU could not be read: {exc}")
        noop = self.playbook("site")
        try:
            figures["noop_converge_cpu"] = None if before is None else cpu_figures(before, self.cpu(), noop.seconds)
        except (OSError, KeyError, ValueError, subprocess.SubprocessError) as exc:
            self.problems.append(f"{figures['partitions']} partitions: the nodes' CPU could not be read: {exc}")
        figures["noop_converge_seconds"] = noop.seconds
        figures["noop_converge_changed"] = noop.changed
        figures["noop_converge_requests"] = admin_requests(noop.tasks)
        if noop.changed:
            self.problems.append(f"{figures['partitions']} partitions: the no-op converge changed {noop.changed}")
        status = self.playbook("status")
        figures["status_seconds"] = status.seconds
        figures["status_requests"] = admin_requests(status.tasks)

    def exporter(self, exporter_url, since):
        """One scrape of the exporter once it has read the cluster since `since`; its time, size and reads."""
        deadline = time.monotonic() + 600
        while True:
            started = time.monotonic()
            with urllib.request.urlopen(exporter_url, timeout=60) as response:
                text = response.read().decode()
            took = time.monotonic() - started
            reads = exporter_reads(text)
            if all(r.get("at", 0) >= since for r in reads.values()) and reads:
                return {"scrape_seconds": round(took, 3), "bytes": len(text), "reads": reads}
            if time.monotonic() > deadline:
                raise BenchFailed(f"the exporter read nothing after {since} in 600 s: {reads}")
            time.sleep(2)

    def load(self, label):
        from testkit.loadtest.background import BackgroundLoad  # noqa: PLC0415

        workdir = Path(tempfile.mkdtemp(prefix=f"load-{label}-", dir=WORKDIR))
        config_file = self.cluster.client_config_file(workdir, "kafka-load")
        return BackgroundLoad(self.cluster.bootstrap_servers, self.cluster.dcs, rate=LOAD_RATE, workdir=workdir,
                              duration=7200, marks=True, client_config_file=config_file).start()  # fmt: skip

    def stopped(self, load):
        load.stop()
        report = load.report()
        keep = ("acknowledged", "lost", "reordered", "produce_errors", "unconfirmed", "longest_stall_seconds",
                "latency_p99_ms", "windows")  # fmt: skip
        return {k: report.get(k) for k in keep}

    def rolling_restart(self):
        load = self.load("restart")
        watcher = Watcher(self.cluster)
        watcher.start()
        try:
            run = self.playbook("rolling_restart", kafka_ops_restart_smoke_test=False,
                                kafka_ops_restart_hosts=[n.host for n in self.cluster.brokers])  # fmt: skip
        finally:
            polls = watcher.stop()
            report = self.stopped(load)
        watched = {n.node_id: isr_moments(polls, n.node_id) for n in self.cluster.brokers}
        # Within the watcher's polling and the gate's: each one's interval and read (a read is stamped when it ends;
        # the gate reads what the watcher reads, so the watcher's read that saw the broker ready stands for both).
        base = WATCH_SECONDS + float(self.args.gate_interval)

        def resolution(ready):
            return base + 2 * watcher.read_seconds.get(ready, watcher.longest_read)

        return {"seconds": run.seconds, "load": report,
                "gates": gates_beside_catch_up(run.stats.get("kafka_restarts", []), watched, resolution),
                "longest_read_seconds": round(watcher.longest_read, 2), "watched": watched}  # fmt: skip

    def heap(self):
        """Each broker's live heap after a full GC: jcmd GC.class_histogram, from this machine (its JDK; the
        nodes run a JRE), on the broker's JVM. A heap that cannot be read is a problem, its figure None."""
        out = {}
        for node in self.cluster.brokers:
            try:
                found = subprocess.run(["podman", "top", node.host, "hpid", "args"], capture_output=True, text=True,
                                       check=True).stdout  # fmt: skip
                pid = next((line.split()[0] for line in found.splitlines() if "kafka.Kafka" in line), None)
                if pid is None:
                    raise ValueError(f"no Kafka JVM in {node.host}")
                histogram = subprocess.run(["jcmd", pid, "GC.class_histogram"], capture_output=True, text=True,
                                           timeout=300, check=True).stdout  # fmt: skip
                out[node.host] = histogram_bytes(histogram)
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                self.problems.append(f"{node.host}'s heap after a full GC could not be read: {exc}")
                return {"bytes": out, "max_mib": None}
        return {"bytes": out, "max_mib": round(max(out.values()) / 2**20, 1)}

    def controller_failover(self):
        """The active controller's JVM killed: time until a controller answers as the new leader."""
        from testkit.cluster import quorum_leader_id, read_quorum, wait_until  # noqa: PLC0415

        old = quorum_leader_id(self.cluster)
        victim = next(c for c in self.cluster.controllers if c.node_id == old)
        killed = time.monotonic()
        self.node_exec(victim.host, "systemctl kill --signal=SIGKILL kafka; systemctl stop kafka")
        answered = wait_until(lambda: (q := read_quorum(self.cluster)) and q["leader"] not in (-1, old) and q,
                              timeout=120, interval=0.1)  # fmt: skip
        seconds = round(time.monotonic() - killed, 2) if answered else None
        subprocess.run(["podman", "exec", victim.host, "systemctl", "start", "kafka"], check=True)
        voters = {c.node_id: c.dc for c in self.cluster.controllers}
        back = wait_until(lambda: caught_up(read_quorum(self.cluster), voters), timeout=300, interval=1)
        if seconds is None or not back:
            self.problems.append(f"controller {victim.host} killed: new leader {seconds} s, back {bool(back)}")
        return {"killed": victim.host, "new_leader_seconds": seconds, "quorum_back": bool(back)}

    def place_quorum_leader(self, inside):
        """Moves the quorum's leadership into the lost DC (inside) or out of it, by restarting the leader; True once
        it is there."""
        from testkit.cluster import quorum_leader_id, read_quorum, wait_until  # noqa: PLC0415

        dc_of = {c.node_id: c.dc for c in self.cluster.controllers}
        for _ in range(8):
            leader = quorum_leader_id(self.cluster)
            if (dc_of.get(leader) == self.second) == inside:
                return True
            host = next(c.host for c in self.cluster.controllers if c.node_id == leader)
            self.node_exec(host, "systemctl restart kafka")
            wait_until(lambda old=leader: quorum_leader_id(self.cluster) not in (-1, old), timeout=60, interval=1)
            wait_until(lambda: caught_up(read_quorum(self.cluster), dc_of), timeout=180, interval=1)
        return False

    def session_timeout(self):
        controller = self.cluster.controllers[0]
        text = self.node_exec(controller.host, "cat /etc/kafka/server.properties", check=False)
        found = re.search(r"^broker\.session\.timeout\.ms=(\d+)", text, re.M)
        default = properties.WAN_DEFAULTS["controller"]["broker.session.timeout.ms"]
        return int(found.group(1) if found else default) / 1000

    def partition_bytes(self, brokers):
        """{(topic, partition): bytes} of every partition the brokers hold, the largest of their replicas
        (DescribeLogDirs)."""
        admin = self.cluster.admin(timeout=60)
        try:
            sizes = {}
            for reply in admin.client.describe_log_dirs(brokers=list(brokers)):
                for log_dir in reply["log_dirs"]:
                    for t in log_dir["topics"]:
                        for p in t["partitions"]:
                            key = (t["name"], p["partition_index"])
                            sizes[key] = max(sizes.get(key, 0), p["partition_size"])
            return sizes
        finally:
            admin.close()

    def dc_loss(self, leader_in_lost_dc, away_minutes):
        """The second DC's Kafka processes SIGKILLed under load: the stall's phases, the failover playbook's time,
        and (with away_minutes) the recovery after that long away, against the data written meanwhile / the
        throttle; without, the DC is brought back at once."""
        from testkit.loadtest.harness import partition_leaders  # noqa: PLC0415

        case = "leader_in_lost_dc" if leader_in_lost_dc else "leader_elsewhere"
        if not self.place_quorum_leader(leader_in_lost_dc):
            self.problems.append(f"the quorum's leader could not be placed for the case {case}")
            return {"placed": False}
        lost = [n for n in self.cluster.nodes if n.dc == self.second]
        dead = {n.node_id for n in lost if "broker" in n.roles}
        survivors_ = [n.node_id for n in self.cluster.brokers if n.dc == self.first]
        config = self.cluster.user_configs["kafka-load"] | {"bootstrap.servers": self.cluster.bootstrap_servers}
        parts = sorted(partition_leaders(config, "load"))
        stamp = time.strftime("%H%M%S")
        log = WORKDIR / f"probe-{stamp}-{case}.log" if self.args.probe_log else None
        load = self.load(case)
        probe = StallProbe(config, "load", parts, client=self.args.probe_client, settings=self.args.probe, log=log)
        # The same writes beside it without the turns, when the probe takes them (module comment on PROBE_CLIENTS).
        beside = None if self.args.probe_client == BESIDE else StallProbe(config, "load", parts, client=BESIDE)
        probes = [probe] if beside is None else [probe, beside]
        watcher = Watcher(self.cluster, interval=0.2, topic="load")
        for running in (*probes, watcher):
            running.start()
        time.sleep(10)
        try:
            return self._lose(case, lost, dead, survivors_, load, probes, watcher, parts, away_minutes)
        except BaseException:
            # Never leave the testbed with a DC down: bring it back, whatever failed, before the error goes on.
            for running in (*probes, watcher):
                running.stop()
            with contextlib.suppress(Exception):
                self.playbook("dc_recovery", kafka_ops_failover_dc=self.second, kafka_ops_recovery_smoke_test=False)
            with contextlib.suppress(Exception):
                load.stop()
            raise

    def _lose(self, case, lost, dead, survivors_, load, probes, watcher, parts, away_minutes):
        from testkit.cluster import wait_until  # noqa: PLC0415

        probe = probes[0]

        before = self.partition_bytes(survivors_)
        # Killed and stopped at once on every node of the DC: systemd would otherwise start the service again.
        kill = "systemctl kill --signal=SIGKILL kafka; systemctl stop kafka"
        procs = [subprocess.Popen(["podman", "exec", n.host, "sh", "-c", kill]) for n in lost]
        for p in procs:
            p.wait(timeout=60)
        went = [int(self.node_exec(n.host, "systemctl show kafka -p InactiveEnterTimestampMonotonic --value").strip())
                for n in lost]  # fmt: skip
        # The DC is lost once its last node is dead: the kills, made at once, land up to a second apart on a busy
        # host, and a write stalls only once every replica it waits for is gone.
        killed = wall_of_monotonic(max(went) / 1e6)
        load.mark(f"{self.second} lost", max(went) / 1e6)
        time.sleep(30)
        failover = self.playbook("dc_failover", kafka_ops_failover_dc=self.second, kafka_ops_failover_mode="kill")
        survivors = [c for c in self.cluster.controllers if c.dc != self.second]
        logs = self.server_logs(survivors)
        elected = leader_at(logs, killed) if case == "leader_in_lost_dc" else None
        moved = first_after(watcher.polls, killed, lambda s: led_outside(s, dead))
        fenced = fenced_at(logs, dead, killed)
        acked = first_acks(probe.acks, killed)
        # The batches from the first fencing to the stall's end (the nodes' logs and this process share a clock).
        taken = batches = None
        if fenced and acked:
            texts = self.state_change_logs([n for n in self.cluster.brokers if n.dc == self.first])
            window = (min(fenced.values()), max(acked.values()))
            taken, batches = took_over(texts, *window), leader_batches(texts, *window)
            if set(taken) != set(survivors_):
                self.problems.append(f"{case}: the take-over of broker(s) {sorted(set(survivors_) - set(taken))} "
                                     "was not in their state-change.log")  # fmt: skip
                taken = None  # one survivor not seen is not a quick take-over
        session = self.session_timeout()
        stall = stall_phases(killed, elected, fenced, moved, partitions_known(probe.leaders, killed, dead), acked,
                             session, parts, taken)  # fmt: skip
        stall["leader_batches"] = batches
        stall["kill_spread_seconds"] = round((max(went) - min(went)) / 1e6, 3)
        for other in probes[1:]:
            stall["beside"] = beside_figures(
                other.client, len(other.errors),
                stall_phases(killed, elected, fenced, moved, partitions_known(other.leaders, killed, dead),
                             first_acks(other.acks, killed), session, parts, taken))  # fmt: skip
        figures = {"placed": True, "stall": stall, "failover_seconds": failover.seconds,
                   "probe_errors": len(probe.errors)}  # fmt: skip
        away = away_minutes * 60 if away_minutes else 0
        time.sleep(max(0, away - (time.time() - killed)))
        for running in (*probes, watcher):
            running.stop()
        grown = self.partition_bytes(survivors_)
        replicas = self.replicas()
        load.mark(f"{self.second} recovering")
        recovering = time.time()
        everything = Watcher(self.cluster, interval=1.0)
        everything.start()
        try:
            recovery = self.playbook("dc_recovery", kafka_ops_failover_dc=self.second,
                                     kafka_ops_recovery_smoke_test=False,
                                     kafka_admin_replication_throttle_rate=self.args.throttle)  # fmt: skip
        finally:
            polls = everything.stop()
        whole = wait_until(self.whole, timeout=900, interval=5)
        # What the load wrote to the lost DC's replicas while it caught up, read on the survivors as before.
        after, ended = self.partition_bytes(survivors_), time.time()
        figures["load"] = self.stopped(load)
        if away:
            back = first_after(polls, recovering, lambda s: registered(s, dead))
            full = None if back is None else first_after(polls, back, whole_isr)
            copies = bytes_to_copy(before, grown, replicas, dead)
            inflow = bytes_to_copy(grown, after, replicas, dead) / (ended - recovering)
            sides = (len(self.cluster.brokers) - len(dead), len(dead))
            figures["recovery"] = {
                "away_seconds": round(recovering - killed, 1), "playbook_seconds": recovery.seconds,
                "bytes_to_copy": copies, "throttle_bytes_per_second": self.args.throttle,
                "inflow_bytes_per_second": round(inflow),
                "catch_up_seconds": round(full - back, 1) if full and back else None,
                "model_seconds": round(recovery_model(copies, self.args.throttle, *sides, inflow), 1),
                "model_without_inflow_seconds": round(recovery_model(copies, self.args.throttle, *sides), 1),
            }  # fmt: skip
        if not whole:
            raise BenchFailed(f"the cluster was not whole again 15 minutes after {self.second}'s recovery; "
                              + self.not_whole())  # fmt: skip
        return figures

    def replicas(self):
        """{(topic, partition): [replicas]} of every partition now."""
        admin = self.cluster.admin(timeout=60)
        try:
            return {(t, p): r for t, topic in admin.topics().items() for p, r in topic["partitions"].items()}
        finally:
            admin.close()

    def reorder(self, moves, timeout=600):
        """The replica lists of moves ({topic: {partition: replicas}}, the same replicas in another order) applied,
        then a preferred election; returns once every partition is led by the first of its list again."""
        from testkit.cluster import wait_until  # noqa: PLC0415

        admin = self.cluster.admin(timeout=120)
        try:
            failed = admin.reassign(moves)
            if failed:
                raise BenchFailed(f"{len(failed)} replica list(s) not reordered: {sorted(failed.items())[:3]}")
            running = admin.wait_reassignments([(t, p) for t, parts in moves.items() for p in parts], timeout)
            if running:
                raise BenchFailed(f"{len(running)} reordering(s) still running after {timeout} s: {running[:3]}")
            _, failed = admin.elect_preferred_everywhere()
            if failed:
                raise BenchFailed(f"{len(failed)} preferred election(s) failed: {failed[:3]}")
            if not wait_until(lambda: not admin.not_preferred(), timeout=timeout, interval=2):
                raise BenchFailed(f"partitions still not led by their preferred replica after {timeout} s")
        finally:
            admin.close()

    @contextlib.contextmanager
    def leaders_handed_over(self, lost, keep):
        """While inside: the lost brokers' preferred leaderships (but those of the topics in keep) handed to the other
        brokers, by reordering their replica lists (leaders_out_of()); yields how many moved. Put back after,
        whatever happened inside."""
        original = self.replicas()
        moves = leaders_out_of(original, lost, keep)
        back = {t: {p: original[(t, p)] for p in parts} for t, parts in moves.items()}
        try:
            self.reorder(moves)
            yield sum(len(parts) for parts in moves.values())
        finally:
            self.reorder(back)

    def whole(self):
        """Whether every partition has its whole ISR now (the recovery's own check, read again)."""
        admin = self.cluster.admin(timeout=30)
        try:
            found, errors = admin.partitions()
        finally:
            admin.close()
        return not errors and all(len(p["isr"]) == len(p["replicas"]) for p in found)

    def not_whole(self):
        """What each broker's own metadata says is under-replicated, asked of each broker in turn: a cluster not
        whole and a broker whose metadata stopped at an old ISR read alike through one least-loaded broker."""
        from kafka.protocol.metadata import MetadataRequest  # noqa: PLC0415

        from ansible_collections.stretch.kafka.plugins.module_utils.kafka_admin import _described  # noqa: PLC0415

        admin = self.cluster.admin(timeout=30)
        seen = []
        try:
            for broker in self.cluster.brokers:
                try:
                    reply = admin._send(MetadataRequest(topics=None, allow_auto_topic_creation=False), broker.node_id)  # noqa: SLF001  one broker's own cache
                    found, errors = _described(reply.to_dict()["topics"])
                except Exception as exc:  # noqa: BLE001  what is reported is the failure itself
                    seen.append(f"broker {broker.node_id}: unread ({exc})")
                    continue
                under = [f"{t}-{p['partition_index']} isr {p['isr_nodes']}" for t, p in found
                         if len(p["isr_nodes"]) < len(p["replica_nodes"])]  # fmt: skip
                seen.append(f"broker {broker.node_id}: {len(under)} under-replicated {under[:3]}, {len(errors)} unread")
        finally:
            admin.close()
        return "; ".join(seen)

    def size(self, total, exporter_url):
        existing = partitions_of(self.base.model["declared"]["topics"]) + internal_partitions()
        self.declared = grow_to(self.declared, total - existing)
        self.layered(self.declared)
        figures = {"partitions": total, "scale_topics": len(self.declared), "offline": offline(total)}
        print(f"bench-scale: {total} partitions ({len(self.declared)} scale topics)", flush=True)
        created_at = time.time()
        steps = self.args.steps
        self.converges(figures)  # always: it lays the size's topics down
        if "exporter" in steps:
            try:
                figures["exporter"] = self.exporter(exporter_url, created_at)
            except (OSError, BenchFailed) as exc:  # the exporter gone (refused) or reading nothing: the rest goes on
                self.problems.append(f"{total} partitions: no scrape of the cluster's exporter: {exc}")
                figures["exporter"] = {"error": str(exc)}
        if "restart" in steps:
            figures["restart"] = self.rolling_restart()
        if "heap" in steps:
            figures["heap"] = self.heap()
        if "controller" in steps:
            figures["controller_failover"] = self.controller_failover()
        if "dc_loss" in steps:
            figures["dc_loss"] = {
                "leader_elsewhere": self.dc_loss(False, self.args.away),
                "leader_in_lost_dc": self.dc_loss(True, 0),
            }
            over = [case for case, lost in figures["dc_loss"].items() if not stall_met(lost)]
            if over:  # whose are the seconds over: the same cases again, the survivors' fsync skipped, a control,
                # and the lost DC's leaderships handed over first
                survivors = [n for n in self.cluster.brokers if n.dc == self.first]

                def again():
                    return {case: self.dc_loss(case == "leader_in_lost_dc", 0) for case in over}

                try:  # the size's own figures stand whatever fails here; a run again that failed proves nothing
                    try:  # a drop-in written on some survivors before a failure comes out again too
                        self.fsync(survivors, skipped=True)
                        figures["dc_loss_no_fsync"] = again()
                    finally:
                        self.fsync(survivors, skipped=False)
                    # The control: the same cases after the same restart with fsync back, what the restart alone
                    # changes (fresh JVMs run the take-over's code before it is compiled).
                    figures["dc_loss_restarted"] = again()
                    # The leaderships: the same cases after the same restart, fsync on, with the lost DC leading the
                    # probe's topic alone (the same partitions, replicas and fencings; fewer leaderships to take over).
                    lost = {n.node_id for n in self.cluster.brokers if n.dc == self.second}
                    with self.leaders_handed_over(lost, keep={"load"}) as handed:
                        moved = again()
                    for case in moved.values():
                        case["leaderships_handed_over"] = handed
                    figures["dc_loss_leaders_moved"] = moved
                except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as exc:  # or no libeatmydata
                    self.problems.append(f"{total} partitions: the DC loss run again ({', '.join(over)}): {exc}")
        return figures

    def fsync(self, brokers, skipped):
        """The brokers' JVMs with fsync() and its kind made no-ops (skipped: libeatmydata preloaded by a systemd
        drop-in) or as the role runs them (the drop-in taken out), each broker restarted by the rolling restart
        playbook; read back from each JVM's memory maps afterwards, a map that cannot be read a failure."""
        library = eatmydata(WORKDIR) if skipped else None
        for node in brokers:
            if skipped:
                subprocess.run(["podman", "cp", str(library), f"{node.host}:{NO_FSYNC_LIBRARY}"], check=True,
                               timeout=60)  # fmt: skip
                unit = f"printf '%s\\n' '[Service]' 'Environment=LD_PRELOAD={NO_FSYNC_LIBRARY}'"
                self.node_exec(node.host, f"mkdir -p {Path(NO_FSYNC_DROPIN).parent} && {unit} > {NO_FSYNC_DROPIN}")
            else:
                self.node_exec(node.host, f"rm -f {NO_FSYNC_DROPIN}")
            self.node_exec(node.host, "systemctl daemon-reload")
        self.playbook("rolling_restart", kafka_ops_restart_smoke_test=False,
                      kafka_ops_restart_hosts=[n.host for n in brokers])  # fmt: skip
        for node in brokers:
            # Read as the service's user: root in the container may not read another user's maps.
            user, pid = "$(systemctl show kafka -p User --value)", "$(systemctl show kafka -p MainPID --value)"
            maps = self.node_exec(node.host, f'runuser -u "{user}" -- cat /proc/{pid}/maps', check=False)
            if "java" not in maps or ("eatmydata" in maps) != skipped:
                raise BenchFailed(f"{node.host}'s Kafka JVM {'does not skip' if skipped else 'still skips'} fsync")

    def cleanup(self):
        admin = self.base.admin(timeout=120)
        try:
            names = [n for n in admin.topics() if n.startswith(PREFIX)]
            if names:
                admin.delete_topics(names)
        finally:
            admin.close()
        self.inventory, self.cluster = [LOCAL], self.base
        self.playbook("site")


def eatmydata(workdir):
    """libeatmydata.so, from Debian's package (apt-get download) unpacked under workdir: fsync(), fdatasync(), msync()
    and O_SYNC made no-ops in the process that preloads it."""
    where = Path(workdir) / "eatmydata"
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", "libeatmydata1"], cwd=where, check=True, capture_output=True, timeout=300)
    package = max(where.glob("libeatmydata1_*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(package), str(where / "root")], check=True, timeout=60)
    found = sorted((where / "root").rglob("libeatmydata.so"))
    if not found:
        raise BenchFailed(f"{package.name} holds no libeatmydata.so")
    return found[0].resolve()


def exporter_running(cluster, workdir):
    """The cluster's exporter as the role installs it (playbooks/monitoring.yml), run here; (process, its URL)."""
    from testkit import cluster_exporter  # noqa: PLC0415
    from testkit.cluster import playbook  # noqa: PLC0415
    from testkit.prometheus import _free_port  # noqa: PLC0415

    rules = Path(workdir) / "monitoring"
    written = playbook(cluster, "monitoring", kafka_monitoring_dir=str(rules), log_dir=WORKDIR / "runs",
                       kafka_monitoring_exporter_interval=EXPORTER_INTERVAL,
                       kafka_monitoring_exporter_home=str(cluster_exporter.HOME))  # fmt: skip
    if not written.ok:
        raise BenchFailed(f"playbooks/monitoring.yml failed; see {written.log}")
    port = _free_port()
    log = (WORKDIR / "exporter.log").open("w")  # kept: a run's exporter is judged by what it logged too
    process = subprocess.Popen(cluster_exporter.command(rules / "stretch-exporter.json", f"127.0.0.1:{port}"),
                               stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    return process, f"http://127.0.0.1:{port}/metrics"


def wan_on(cluster):
    """The testbed's WAN, put back as the inventory declares it when it is not on."""
    from testkit.wan import control  # noqa: PLC0415
    from testkit.wan import inventory as wan_inventory  # noqa: PLC0415

    try:
        links = control.State().links()
    except RuntimeError:
        links = []
    if not any(link.delay_ms for link in links):
        control.apply(wan_inventory.read(cluster.inventory))
    return [vars(link) for link in control.State().links()]


def measure(args, report):
    bench = ScaleBench(args)
    report["wan"] = wan_on(bench.base)
    report["broker_heap_opts"], report["broker_heap_mib"] = args.broker_heap, heap_mib(args.broker_heap)
    with tempfile.TemporaryDirectory() as workdir:
        # The limits and heap first, with no scale topic yet: the brokers restart for them, unmeasured.
        bench.layered([])
        bench.playbook("site")
        exporter, url = exporter_running(bench.cluster, workdir)
        try:
            for total in args.sizes:
                report["sizes"].append(bench.size(total, url))
                args.report_path.write_text(json.dumps(report, indent=1) + "\n")
        finally:
            exporter.terminate()
            report["problems"] += bench.problems
            if not args.keep:
                bench.cleanup()
    sizes = sorted(report["sizes"], key=lambda s: s["partitions"])
    points = [(max(s["offline"]["replicas_per_broker"].values()), s["heap"]["max_mib"]) for s in sizes
              if s.get("heap", {}).get("max_mib") is not None]  # fmt: skip
    if len(points) >= 2 and points[-1][0] > points[0][0]:
        report["heap_per_1000_replicas_mib"] = round(
            1000 * (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0]), 1)  # fmt: skip


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m testkit.bench.scale", description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, action="append", dest="sizes", help="partitions in all (repeat)")
    p.add_argument("--away", type=float, default=AWAY_MINUTES, help="minutes the lost DC stays away")
    p.add_argument("--throttle", type=int, default=THROTTLE, help="the recovery's replication throttle, bytes/s")
    p.add_argument("--nofile", type=int, default=NOFILE, help="the brokers' open-files limit in the overlay")
    p.add_argument("--broker-heap", default=BROKER_HEAP, help="the brokers' heap options in the overlay")
    p.add_argument("--gate-interval", type=float, default=1.0, help="kafka_ops_gate_interval")
    p.add_argument("--step", action="append", dest="steps", choices=STEPS,
                   help="measure only these steps at each size (repeat; the converges always run): "
                        "a partial run, its other targets not met")  # fmt: skip
    p.add_argument("--probe-client", choices=PROBE_CLIENTS, default=PROBE_CLIENTS[0],
                   help="the DC loss's stall probe's client (StallProbe)")  # fmt: skip
    p.add_argument("--probe", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the stall probe's client, under its name, over the load's (repeat)")  # fmt: skip
    p.add_argument("--probe-log", action="store_true",
                   help="the probe's client log to reports/bench-scale/probe-<time>-<case>.log (librdkafka's "
                        "debug contexts: --probe debug=...)")  # fmt: skip
    p.add_argument("--keep", action="store_true", help="leave the scale topics and the overlay's settings in place")
    p.add_argument("--offline", action="store_true", help="only preflight and placement, no cluster")
    p.add_argument("--report", type=Path, help="only the verdict, the table and the picture of a saved report")
    args = p.parse_args(argv)
    args.sizes = sorted(args.sizes or SIZES)
    try:
        args.probe = dict(probe_setting(setting, args.probe_client) for setting in args.probe)
    except ValueError:
        p.error(f"--probe takes KEY=VALUE, not {args.probe}")
    args.steps = tuple(args.steps or STEPS)
    partial = set(args.steps) | {"converges"} != set(STEPS)
    args.report_path = PARTIAL_REPORT if partial else REPORT
    if args.report:
        return 0 if finish(json.loads(args.report.read_text()), args.report)["ok"] else 1
    report = {"sizes": [], "problems": [], "rf": RF, "steps": list(args.steps), "probe": args.probe,
              "probe_client": args.probe_client,
              "offline": [offline(n) for n in sorted({*args.sizes, PLACEMENT_ONLY})]}  # fmt: skip
    report["offline_placement_only"] = report["offline"][-1]
    if args.offline:
        for row in report["offline"]:
            print(json.dumps({k: v for k, v in row.items() if k != "replicas_per_broker"}))
        return 0
    try:
        measure(args, report)
    except Exception as exc:  # noqa: BLE001  whatever stopped the run, what it measured is still reported and judged
        report["problems"].append(f"the run stopped: {type(exc).__name__}: {exc}")
    return 0 if finish(report, args.report_path)["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
