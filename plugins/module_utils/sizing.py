"""What a broker holds for the declared topics, and the host limits that follow: open files and memory maps.

Kafka keeps each log segment's .log file open and maps each segment's offset
and time indexes into memory: one file descriptor and two map areas per
segment (Kafka's operations documentation, "File descriptors and mmap"). A
broker holding R replicas of S segments each needs

    open files = R x S + OPEN_FILES_ALLOWANCE   (sockets, the JVM's jars, its own files)
    map areas  = 2 x R x S + MAP_AREAS_ALLOWANCE  (the JVM's heap, code and thread stacks)

The replicas come from the placement's rules (module_utils/placement.py): a
partition keeps split() of its replicas in the DC that leads it and the rest
in the other, the DCs lead half the partitions each, and each DC's replicas
are evened over its brokers, within one of their mean. Here each DC gets the
larger half of an odd number of partitions, and each broker one replica
more than the mean (unless every partition has a replica on each of the DC's
brokers). The converge's layouts have been found within it, and within one
more replica on a cluster of a handful of partitions
(tests/unit/test_sizing.py). The internal topics count with the
partitions and replication factor the node's server.properties give them.

Segments per replica: a topic that declares retention.bytes keeps at most
retention.bytes / segment.bytes rolled segments beside the active one; any
other, what the operator estimates (segments_default): a time-based retention
keeps what the write rate fills of segment.bytes over the retention, which
only the operator knows.
"""

from __future__ import annotations

import math

from ansible_collections.stretch.kafka.plugins.module_utils import placement, topics

SEGMENT_BYTES = 1073741824  # Kafka's log.segment.bytes
INTERNAL = (  # (its partitions setting, its replication factor setting, Kafka's default partitions)
    ("offsets.topic.num.partitions", "offsets.topic.replication.factor", 50),
    ("transaction.state.log.num.partitions", "transaction.state.log.replication.factor", 50),
)
OPEN_FILES_ALLOWANCE = 5000
MAP_AREAS_ALLOWANCE = 5000
# A broker loads every partition log it holds before it opens its listeners: 4,000 logs took 42 s on the testbed's
# broker (10.5 ms a log, two cores shared by ten nodes under load); kafka_node_start_seconds_per_log defaults to
# about twice that.


class SizingError(ValueError):
    pass


def _whole(value, what, low=1):
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        raise SizingError(f"{what} must be a whole number, not {value!r}") from None
    if number < low:
        raise SizingError(f"{what} must be at least {low}, not {number}")
    return number


def segments_per_replica(configs, segment_bytes, default):
    """The segments a replica of a topic with these configs keeps: from its retention.bytes when it declares one,
    else the operator's estimate."""
    retention = int(str(configs.get("retention.bytes", -1)))
    if retention <= 0:
        return default
    size = int(str(configs.get("segment.bytes", segment_bytes)))
    return math.ceil(retention / size) + 1


def dc_replicas(partitions, rf, brokers_by_dc):
    """{DC: the replicas of a topic's partitions it holds}: each DC as if it led the larger half."""
    dcs = sorted(brokers_by_dc)
    out = {}
    for dc in dcs:
        other = dcs[1 - dcs.index(dc)]
        leading = placement.split(rf, len(brokers_by_dc[dc]), len(brokers_by_dc[other]))
        following = rf - placement.split(rf, len(brokers_by_dc[other]), len(brokers_by_dc[dc]))
        half, rest = math.ceil(partitions / 2), partitions // 2
        out[dc] = max(half * leading + rest * following, rest * leading + half * following)
    return out


def broker_load(declared, rf, brokers_by_dc, properties, segments_default):
    """{broker id: {"replicas", "segments"}} of every broker for the declared topics and the internal ones.

    declared: kafka_topics as the inventory gives them; rf: the default
    replication factor; properties: a broker's server.properties (for
    log.segment.bytes and the internal topics' settings). A topic no layout
    can hold (refused by the declarations' own checks) counts for nothing here.
    """
    segment_bytes = _whole(properties.get("log.segment.bytes", SEGMENT_BYTES), "log.segment.bytes")
    try:
        declared = topics.normalize(declared, rf)
    except topics.TopicError:
        declared = {}  # the declarations' own checks refuse them, naming what is wrong
    layouts = []
    for topic in declared.values():
        segments = segments_per_replica(topic["configs"], segment_bytes, segments_default)
        layouts.append((topic["partitions"], topic["replication_factor"], segments))
    for partitions_key, rf_key, default in INTERNAL:
        partitions = _whole(properties.get(partitions_key, default), partitions_key, low=0)
        layouts.append((partitions, _whole(properties.get(rf_key, rf), rf_key), segments_default))
    held = {dc: [0, 0] for dc in brokers_by_dc}
    # Whether every partition has a replica on each of a DC's brokers: then each holds them all, else the
    # placement evens them over the DC's brokers within one more than their mean.
    everywhere = dict.fromkeys(brokers_by_dc, True)
    for partitions, topic_rf, segments in layouts:
        try:
            placement.check_shape(brokers_by_dc, topic_rf)
        except placement.PlacementError:
            continue
        for dc, replicas in dc_replicas(partitions, topic_rf, brokers_by_dc).items():
            held[dc][0] += replicas
            held[dc][1] += replicas * segments
            everywhere[dc] = everywhere[dc] and replicas == partitions * len(brokers_by_dc[dc])
    most = max((layout[2] for layout in layouts), default=0)
    out = {}
    for dc, members in brokers_by_dc.items():
        spare = 0 if everywhere[dc] else 1
        replicas, segments = held[dc]
        for broker in members:
            out[broker] = {"replicas": math.ceil(replicas / len(members)) + spare,
                           "segments": math.ceil(segments / len(members)) + spare * most}  # fmt: skip
    return out


def needs(segments):
    """{"open_files", "map_areas"} a broker holding that many log segments needs."""
    return {"open_files": segments + OPEN_FILES_ALLOWANCE, "map_areas": 2 * segments + MAP_AREAS_ALLOWANCE}


def node_layout(model, host, properties, segments_default):
    """What node host holds and needs, from the cluster model (module_utils/model.py): {"replicas",
    "segments", "open_files", "map_areas"}; a node that is no broker holds no replica of a topic."""
    default = _whole(segments_default, "kafka_node_segments_per_replica")
    record = model["node"][host]
    load = {"replicas": 0, "segments": 0}
    if "broker" in record["roles"]:
        by_dc = {}
        for broker in model["brokers"]:
            by_dc.setdefault(broker["dc"], []).append(int(broker["node_id"]))
        declared = model["declared"]["topics"]
        load = broker_load(declared, model["replication_factor"], by_dc, properties, default)[int(record["node_id"])]
    return {**load, **needs(load["segments"])}


def limit_problems(host, layout, open_files, map_count=None):
    """Why host's limits cannot hold its layout (node_layout()), as messages naming the limit and the figures.

    open_files: kafka_node_nofile_limit; map_count: the vm.max_map_count the
    operator sets (kafka_node_sysctl), None or "" when the role derives it.
    """
    holds = f"{host} holds about {layout['replicas']} replicas, {layout['segments']} log segments"
    problems = []
    limit = _whole(open_files, f"{host}: kafka_node_nofile_limit")
    if limit < layout["open_files"]:
        problems.append(
            f"{holds}: it needs {layout['open_files']} open files (one a segment, {OPEN_FILES_ALLOWANCE} for "
            f"sockets and the JVM), kafka_node_nofile_limit is {limit}"
        )
    if map_count not in (None, ""):
        maps = _whole(map_count, f"{host}: kafka_node_sysctl's vm.max_map_count")
        if maps < layout["map_areas"]:
            problems.append(
                f"{holds}: it needs vm.max_map_count {layout['map_areas']} (two memory maps a segment, "
                f"{MAP_AREAS_ALLOWANCE} for the JVM), kafka_node_sysctl sets {maps}"
            )
    return problems


def start_timeout(base, logs, seconds_per_log):
    """Seconds a restarted node may take to open its listeners: base (the JVM's start and the metadata log, whatever
    the node holds) and seconds_per_log for each of the `logs` partition logs it loads first, rounded up."""
    try:
        per_log = float(str(seconds_per_log))
    except ValueError:
        per_log = math.nan
    if not 0 <= per_log < 60:
        raise SizingError(
            f"kafka_node_start_seconds_per_log must be at least 0 and under 60 seconds, not {seconds_per_log!r}"
        )
    return _whole(base, "kafka_node_start_timeout") + math.ceil(_whole(logs, "the partition logs", low=0) * per_log)
