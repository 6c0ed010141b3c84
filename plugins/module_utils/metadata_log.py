"""How long a lost DC blocked writes, in Kafka's own record: the KRaft metadata log, read within a bound.

The controller that fences a broker writes, in one batch, the broker's
BrokerRegistrationChangeRecord (fenced) and the PartitionChangeRecords that
take it out of every ISR and move its leaderships: from that batch on, an
acks=all write waits no more for it. A DC's loss stops blocking writes when
the last of its brokers is fenced (or unregistered), and, for what the
failover relaxed (the cluster-wide min.insync.replicas, a topic's own), when
that setting was written too. All are records of the metadata log with the
active controller's CreateTime.

When the DC went down is Kafka's record too, never the run's clock: when
the quorum's leader still lists a fetch time for every broker of the DC
(DescribeQuorum; it drops an observer 300 s after its last fetch, and a newly
elected leader never had the lost DC's), the first of them is the start,
exact, on the leader's clock as it gave it. Otherwise the record only bounds
it: the DC was down by the first fencing of its brokers (and by any fetch
time the leader still gives), so the outage lasted at least from there.
With neither, there is no figure.

The input is the text of Kafka's DumpLogSegments with --cluster-metadata-decoder
(one record a line, "| offset: N CreateTime: MS ... payload: {json}"); only the
records named here are parsed, so nothing else the log holds (credentials,
configurations) leaves the function. What is decoded is bounded: the newest
max_bytes of the log, cut at a record batch's first byte (tail()), in at
most a given number of seconds (decode()); a record not found within the
bound is reported as such, never taken for absent.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import time

RECORD = re.compile(r"^\|\s*offset:\s*(\d+)\s+CreateTime:\s*(-?\d+)\b.*?\bpayload:\s*(\{.*\})\s*$")
# The records that change a broker's fencing: fenced (or gone), or alive again.
FENCING = ("BROKER_REGISTRATION_CHANGE_RECORD", "FENCE_BROKER_RECORD", "UNREGISTER_BROKER_RECORD")
ALIVE = ("REGISTER_BROKER_RECORD", "UNFENCE_BROKER_RECORD")
CONFIG = "CONFIG_RECORD"
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # ConfigResource.Type in the metadata records
MIN_ISR = "min.insync.replicas"
WANTED = (*FENCING, *ALIVE, CONFIG)
# A v2 record batch starts with its base offset (8 bytes) and the length of what follows (4 bytes), then its
# partition leader epoch (4) and its magic byte, 2; an offset index entry is a relative offset and a position.
BATCH_HEAD = struct.Struct(">qi")
MAGIC = 2
INDEX_ENTRY = struct.Struct(">ii")


class BoundReached(RuntimeError):
    pass


def records(lines):
    """[(offset, epoch seconds, type, data)] of the fencing and configuration records in the dump's lines."""
    out = []
    for line in lines:
        if not line.startswith("|") or not any(f'"type":"{kind}"' in line for kind in WANTED):
            continue
        match = RECORD.match(line.strip())
        if not match:
            continue
        try:
            payload = json.loads(match.group(3))
        except ValueError:
            continue
        out.append((int(match.group(1)), int(match.group(2)) / 1000.0, payload.get("type"), payload.get("data") or {}))
    return out


def _fencing(kind, data):
    """(broker id, True when the record fences or unregisters it, False when it is alive again); None otherwise."""
    if kind == "BROKER_REGISTRATION_CHANGE_RECORD" and data.get("fenced") in (1, -1):
        return data.get("brokerId"), data.get("fenced") == 1
    if kind == "FENCE_BROKER_RECORD":
        return data.get("id"), True
    if kind == "UNREGISTER_BROKER_RECORD":
        return data.get("brokerId"), True
    if kind == "UNFENCE_BROKER_RECORD":
        return data.get("id"), False
    if kind == "REGISTER_BROKER_RECORD":
        return data.get("brokerId"), False
    return None


def _min_isr_key(kind, data):
    """ "" for the cluster-wide min.insync.replicas, the topic's name for a topic's own; None for anything else."""
    if kind != CONFIG or data.get("name") != MIN_ISR:
        return None
    if data.get("resourceType") == BROKER_RESOURCE and data.get("resourceName") == "":
        return ""
    if data.get("resourceType") == TOPIC_RESOURCE:
        return data.get("resourceName")
    return None


def _at(seconds):
    return f"{seconds:.3f}"


def writable_again(recs, brokers, min_isr_relaxed=False, relaxed_topics=(), bound=None):
    """When the lost brokers stopped blocking writes, by the metadata log's own times.

    recs: records(); brokers: the lost DC's broker ids. Each broker's fencing is the first record of the fencing
    it is in now: after the last record that had it alive (registered, unfenced), the first that fences or
    unregisters it (the controllers may write it fenced again when its session expires; that changes nothing).
    min_isr_relaxed, relaxed_topics: the failover lowered the cluster-wide min.insync.replicas, these topics'
    own; the newest record of each counts too. bound: what was read, when that is not the whole log ("the
    newest N bytes of ..."), for the problems. Returns {"at", "fenced": {id: seconds}, "min_isr_at",
    "relaxed_at": {topic: seconds}, "problems"}: "at" is None, with the reason in problems, when the log does
    not hold what it must, never a guess.
    """
    state, settings = {}, {}
    for _offset, at, kind, data in sorted(recs):
        fencing = _fencing(kind, data)
        if fencing is not None and fencing[0] in brokers:
            broker, fences = fencing
            if not fences:
                state[broker] = (at, False)
            elif broker not in state or not state[broker][1]:
                state[broker] = (at, True)
        key = _min_isr_key(kind, data)
        if key is not None:
            settings[key] = at
    where = f" in {bound}" if bound else ""
    problems, fenced = [], {}
    for broker in sorted(set(brokers)):
        if broker not in state:
            problems.append(f"the metadata log holds no fencing of broker {broker}{where}")
        elif not state[broker][1]:
            problems.append(f"the newest record of broker {broker}{where}, at {_at(state[broker][0])}, has it alive")
        else:
            fenced[broker] = state[broker][0]
    wanted = ([""] if min_isr_relaxed else []) + sorted(relaxed_topics)
    for key in wanted:
        if key not in settings:
            what = "cluster-wide min.insync.replicas" if key == "" else f"min.insync.replicas of topic {key}"
            problems.append(f"the metadata log holds no {what} written{where}")
    if not brokers:
        problems.append("no broker to look for: the DC has none")
    ends = [*fenced.values(), *(settings[k] for k in wanted if k in settings)]
    return {
        "at": None if problems else max(ends),
        "fenced": fenced,
        "min_isr_at": settings.get("") if min_isr_relaxed else None,
        "relaxed_at": {k: settings[k] for k in wanted if k and k in settings},
        "problems": problems,
    }


def outage(found, lost_since=None, lost_by=None):
    """The outage's length in Kafka's records, from writable_again()'s found.

    lost_since: when the DC went silent, exact (the quorum leader's fetch time of every broker of the DC);
    lost_by: the earliest fetch time the leader still gives for a broker of the DC, when it does not give them
    all. Exact: {"exact": True, "start": lost_since, "writable_after": at - start}. Otherwise the record bounds
    the start: the DC was down by the first fencing of its brokers and by lost_by, so
    {"exact": False, "start_by": that, "writable_after_at_least": at - start_by}. No end: no figure.
    """
    at = found["at"]
    if at is None:
        return {
            "exact": False,
            "start": None,
            "start_by": None,
            "writable_after": None,
            "writable_after_at_least": None,
        }
    if lost_since is not None:
        return {"exact": True, "start": lost_since, "start_by": lost_since, "writable_after": round(at - lost_since, 2),
                "writable_after_at_least": None}  # fmt: skip
    start_by = min([*found["fenced"].values(), *([lost_by] if lost_by is not None else [])])
    return {"exact": False, "start": None, "start_by": start_by, "writable_after": None,
            "writable_after_at_least": round(at - start_by, 2)}  # fmt: skip


def summary(dc, found, figure, host):
    """The line a failover prints: the outage in Kafka's record, a bound of it, or why it is not known."""
    where = f"the metadata log of {host}"
    if figure["writable_after"] is not None and figure["writable_after"] <= 0:
        return (
            f"acks=all writes did not wait for {dc}: Kafka had fenced its brokers {-figure['writable_after']} s "
            "before the DC went silent (a clean shutdown moves a broker's leaderships, then fences it, before it "
            f"stops fetching from the quorum's leader; {where})"
        )
    if figure["writable_after"] is not None:
        return (
            f"Kafka fenced {dc}'s brokers and acks=all writes could resume {figure['writable_after']} s after the DC "
            f"went silent (its brokers' last fetch from the quorum's leader, and the controllers' records in {where})"
        )
    if figure["writable_after_at_least"] is not None:
        return (
            f"Kafka fenced {dc}'s brokers and acks=all writes could resume at least "
            f"{figure['writable_after_at_least']} s after the DC went down. Kafka's record only bounds when it went "
            f"down: by {_at(figure['start_by'])}, its brokers' first fencing (which comes broker.session.timeout.ms "
            "after a broker's last heartbeat) or an earlier fetch time the quorum's leader still lists; the leader "
            "no longer lists one for each of its brokers (it drops them 300 s after their last fetch, and a leader "
            f"elected since never had them) ({where})"
        )
    return f"Kafka's record of when writes could resume without {dc} is not known: " + "; ".join(found["problems"])


# -- reading within a bound --------------------------------------------------------------------------------------
def batch_starts(path, deadline=None, clock=time.monotonic, start=0):
    """The positions of the record batches of a log segment from start (a batch's first byte), read from their
    headers only, and where the last whole batch ends; a header that is not a v2 batch's ends the walk (the
    preallocated end of a segment). BoundReached past deadline (the clock's scale)."""
    starts, position = [], start
    size = os.path.getsize(path)
    with open(path, "rb") as segment:
        while position + BATCH_HEAD.size + 5 <= size:
            if deadline is not None and len(starts) % 4096 == 0 and clock() > deadline:
                raise BoundReached(f"reading the record batches of {path} did not end in time (timeout)")
            segment.seek(position)
            head = segment.read(BATCH_HEAD.size + 5)
            _base, length = BATCH_HEAD.unpack_from(head)
            end = position + BATCH_HEAD.size + length
            if length <= 0 or end > size or head[-1] != MAGIC:
                break  # a batch being written, or the end of what was written
            starts.append(position)
            position = end
    return starts, position


def indexed_start(path, before):
    """The position of a batch at or before position before, from the segment's sparse offset index (the
    <base offset>.index beside it: relative offset and position, 4 bytes each): where a walk of its batches may
    start instead of its first byte. 0 without a usable index."""
    try:
        with open(path[: -len(".log")] + ".index", "rb") as index:
            data = index.read()
    except OSError:
        return 0
    best = 0
    for at in range(0, len(data) - INDEX_ENTRY.size + 1, INDEX_ENTRY.size):
        relative, position = INDEX_ENTRY.unpack_from(data, at)
        if (at and relative == 0) or position > before:
            break  # the index's preallocated end, or past the cut
        best = position
    return best


def walk_from_index(path, left, deadline=None, clock=time.monotonic):
    """batch_starts() of path from the indexed batch nearest before its newest left bytes, from its start when
    that finds none."""
    size = os.path.getsize(path)
    hint = indexed_start(path, max(0, size - left))
    starts, end = batch_starts(path, deadline, clock, hint)
    return (starts, end) if starts or hint == 0 else batch_starts(path, deadline, clock)


def tail(segments, max_bytes, starts=walk_from_index):
    """The newest max_bytes of a log: [(path, first position)] oldest first, and whether that is the whole log.

    segments: [(path, size)] oldest first. Whole segments are taken from the newest back while they fit; the
    one that does not is cut at the first batch that starts within the bound (starts(path, left) gives the
    positions of its batches from some batch before its newest left bytes, and where the last one ends).
    """
    taken, left = [], max_bytes
    for path, size in reversed(segments):
        if size <= left:
            taken.append((path, 0))
            left -= size
            continue
        positions, end = starts(path, left)
        cut = next((p for p in positions if end - p <= left), None)
        if cut is not None and cut < end:
            taken.append((path, cut))
        return list(reversed(taken)), False
    return list(reversed(taken)), True


def sliced(path, start, directory):
    """path itself when it is read from its start, else a copy of it from start on in directory (same name)."""
    if start == 0:
        return path
    copy = os.path.join(directory, os.path.basename(path))
    with open(path, "rb") as source, open(copy, "wb") as target:
        source.seek(start)
        shutil.copyfileobj(source, target)
    return copy


def decode(command, timeout, name="the decoder", popen=subprocess.Popen):
    """The records() of what command prints, read line by line as it prints them, or BoundReached when it runs
    past timeout seconds (it is killed then). A command that fails raises RuntimeError with the end of its stderr."""
    expired = threading.Event()
    with tempfile.TemporaryFile() as errors:
        proc = popen(command, stdout=subprocess.PIPE, stderr=errors, text=True)

        def kill():
            expired.set()
            proc.kill()

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            found = records(proc.stdout)
            rc = proc.wait()
        finally:
            timer.cancel()
            proc.stdout.close()
        if expired.is_set():
            raise BoundReached(f"{name} did not end within {timeout:.0f} s (timeout)")
        if rc != 0:
            errors.seek(0)
            raise RuntimeError(f"{name} exited {rc}: {errors.read().decode(errors='replace').strip()[-500:]}")
    return found


def read(partition, max_bytes, timeout, command, clock=time.monotonic, popen=subprocess.Popen):
    """The records() of the newest max_bytes of the metadata log in partition (its directory), read within
    timeout seconds: the batches' headers to find where to cut, then command(files), the decoder's argv, on
    the segments (the oldest one read from a batch within the bound, copied into a private directory that is
    removed afterwards). Returns {"records" (None when nothing was read), "segments", "bytes", "complete"
    (every segment read whole), "bound" (what was read, for writable_again, when not the whole log),
    "problems"}."""
    deadline = clock() + timeout
    logs = sorted(f for f in os.listdir(partition) if f.endswith(".log")) if os.path.isdir(partition) else []
    segments = [(os.path.join(partition, f), os.path.getsize(os.path.join(partition, f))) for f in logs]
    result = {"records": None, "segments": [], "bytes": 0, "complete": False, "bound": None, "problems": []}
    if not segments:
        result["problems"].append(f"no segment in {partition}")
        return result
    try:
        plan, complete = tail(segments, max_bytes, lambda path, left: walk_from_index(path, left, deadline, clock))
        sizes = dict(segments)
        result.update(segments=[path for path, _start in plan], bytes=sum(sizes[p] - start for p, start in plan),
                      complete=complete)  # fmt: skip
        if not complete:
            result["bound"] = f"the newest {max_bytes} bytes of the metadata log (max_bytes)"
        if not plan:
            raise BoundReached(f"its newest record batch alone is larger than {max_bytes} bytes (max_bytes)")
        with tempfile.TemporaryDirectory(prefix="metadata-log-") as scratch:
            files = [sliced(path, start, scratch) for path, start in plan]
            left = deadline - clock()
            if left <= 0:
                raise BoundReached(f"finding its record batches took the whole {timeout} s (timeout)")
            result["records"] = decode(command(files), left, "DumpLogSegments", popen)
    except BoundReached as exc:
        result["problems"].append(f"the read of the metadata log was stopped at its bound: {exc}")
    except (OSError, RuntimeError) as exc:
        result["problems"].append(f"cannot read the metadata log in {partition}: {exc}")
    return result
