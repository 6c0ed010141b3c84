"""The stretch cluster's own Prometheus exporter: what no broker's JMX says.

    python3 stretch_exporter.py --config stretch-exporter.json [--listen 127.0.0.1:9308]

Every interval it reads, through Kafka's admin protocol:

- each consumer group's lag per topic and partition (the partition's end
  offset less the group's committed offset), labelled with the DC of the
  group member that owns the partition. Kafka's admin API gives a member's
  address, not its client.rack, so the DC is the one whose declared networks
  (settings "dc_networks", the role's kafka_monitoring_dc_networks) hold that
  address: "unassigned" when no member owns the partition, "unknown" when
  the owner's address is in no declared network. Per group and DC, the sum
  and the members, with every broker DC present (0 when it owns nothing);
- each partition's in-sync and eligible leader replicas (KIP-966's ELR,
  from DescribeTopicPartitions) against its min.insync.replicas: per topic
  and leader's DC, the partitions under min ISR and those of them with no
  eligible leader replica left ("offline" for a partition without a leader);
  per DC, the eligible leader replicas it holds.

/metrics serves the last read of each part. A part whose read failed is
left out, not served stale, and stretch_exporter_read_success{part} says 0:
the alert rules see a failed read, never an old figure.

It needs confluent-kafka (the groups: KIP-848 groups are described only by
its ConsumerGroupDescribe) and kafka-python (DescribeTopicPartitions' ELR),
and an identity that may describe the cluster, its topics, their configs
and its groups (the role writes the admin certificate's).

Settings (JSON, written by the kafka_monitoring role):
    {"bootstrap_servers": "host:port,...", "client_config": {kafka-python settings: security_protocol, ssl_*,
     sasl_*}, "dc_networks": {DC: [CIDR]}, "interval_seconds": 10, "timeout_seconds": 10}
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UNASSIGNED, UNKNOWN, OFFLINE = "unassigned", "unknown", "offline"
PARTS = ("groups", "partitions")

HELP = {
    "stretch_consumer_group_partition_lag": ("gauge", "Records the group has not committed yet, per partition, "
                                             "by the DC of the member that owns it"),
    "stretch_consumer_group_lag": ("gauge", "The group's lag summed over the partitions each DC's members own"),
    "stretch_consumer_group_members": ("gauge", "The group's members, by the DC of their address"),
    "stretch_partitions_under_min_isr": ("gauge", "Partitions with fewer in-sync replicas than min.insync.replicas, "
                                         "by topic and leader's DC"),
    "stretch_partitions_under_min_isr_without_elr": ("gauge", "Partitions under min ISR with no eligible leader "
                                                     "replica, by topic and leader's DC"),
    "stretch_eligible_leader_replicas": ("gauge", "Eligible leader replicas (KIP-966) the DC's brokers hold"),
    "stretch_exporter_read_success": ("gauge", "1 when the last read of the part succeeded"),
    "stretch_exporter_last_read_timestamp_seconds": ("gauge", "When the part was last read, successfully or not"),
    "stretch_exporter_read_duration_seconds": ("gauge", "How long the last read of the part took"),
}  # fmt: skip


class SettingsError(ValueError):
    pass


def load_settings(text):
    """The settings from their JSON text, checked; SettingsError naming what is wrong."""
    try:
        settings = json.loads(text)
    except ValueError as exc:
        raise SettingsError(f"the settings are not JSON: {exc}") from None
    if not isinstance(settings, dict) or not settings.get("bootstrap_servers"):
        raise SettingsError("the settings need bootstrap_servers (host:port,...)")
    networks = settings.get("dc_networks") or {}
    if not isinstance(networks, dict):
        raise SettingsError(f"dc_networks must map a DC to its networks, not {networks!r}")
    parsed = {}
    for dc, cidrs in networks.items():
        try:
            parsed[dc] = [ipaddress.ip_network(c, strict=False) for c in ([cidrs] if isinstance(cidrs, str) else cidrs)]
        except (TypeError, ValueError) as exc:
            raise SettingsError(f"dc_networks.{dc}: {exc}") from None
    for key in ("interval_seconds", "timeout_seconds"):
        value = settings.get(key, 10)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise SettingsError(f"{key} must be a positive number of seconds, not {value!r}")
    return {
        "bootstrap_servers": settings["bootstrap_servers"],
        "client_config": dict(settings.get("client_config") or {}),
        "dc_networks": parsed,
        "interval_seconds": float(settings.get("interval_seconds", 10)),
        "timeout_seconds": float(settings.get("timeout_seconds", 10)),
    }


# kafka-python's settings and librdkafka's names for them.
LIBRDKAFKA = {
    "security_protocol": "security.protocol",
    "ssl_cafile": "ssl.ca.location",
    "ssl_certfile": "ssl.certificate.location",
    "ssl_keyfile": "ssl.key.location",
    "ssl_password": "ssl.key.password",
    "sasl_mechanism": "sasl.mechanism",
    "sasl_plain_username": "sasl.username",
    "sasl_plain_password": "sasl.password",
}


def librdkafka_config(client_config):
    """librdkafka's settings for kafka-python's; SettingsError naming one it has no equivalent for."""
    unknown = sorted(set(client_config) - set(LIBRDKAFKA) - {"ssl_check_hostname"})
    if unknown:
        raise SettingsError(f"client_config has setting(s) {unknown} the exporter cannot give librdkafka")
    out = {LIBRDKAFKA[k]: v for k, v in client_config.items() if k in LIBRDKAFKA}
    if client_config.get("ssl_check_hostname") is False:
        out["ssl.endpoint.identification.algorithm"] = "none"
    return out


def address_dc(host, networks):
    """The DC whose networks hold a member's address (Kafka gives it as "/10.1.2.3" or "name/10.1.2.3"); UNKNOWN
    when none does or it is no address."""
    text = str(host or "").rsplit("/", 1)[-1].strip("[]")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return UNKNOWN
    for dc, nets in sorted(networks.items()):
        if any(address in net for net in nets):
            return dc
    return UNKNOWN


def group_samples(group, members, committed, ends, networks, broker_dcs):
    """The samples [(metric, labels, value)] of one group.

    members: [(host, [(topic, partition)])] (its members' addresses and
    assignments); committed: {(topic, partition): offset} (the group's
    commits; a partition without one is left out); ends: {(topic,
    partition): end offset}. The lag of a partition is never below 0 (a commit
    read after the end offset is not negative lag).
    """
    owner, per_dc = {}, dict.fromkeys(broker_dcs, 0)
    for host, assigned in members:
        dc = address_dc(host, networks)
        per_dc[dc] = per_dc.get(dc, 0) + 1
        for tp in assigned:
            owner[tp] = dc
    samples = [("stretch_consumer_group_members", {"group": group, "dc": dc}, n) for dc, n in sorted(per_dc.items())]
    totals = dict.fromkeys(broker_dcs, 0)
    for (topic, partition), offset in sorted(committed.items()):
        if (topic, partition) not in ends or offset is None or offset < 0:
            continue
        lag = max(0, ends[(topic, partition)] - offset)
        dc = owner.get((topic, partition), UNASSIGNED)
        totals[dc] = totals.get(dc, 0) + lag
        labels = {"group": group, "topic": topic, "partition": str(partition), "dc": dc}
        samples.append(("stretch_consumer_group_partition_lag", labels, lag))
    samples += [("stretch_consumer_group_lag", {"group": group, "dc": dc}, n) for dc, n in sorted(totals.items())]
    return samples


def replica_samples(partitions, min_isr, broker_dc, broker_dcs):
    """The samples of the partitions' replica state.

    partitions: [{topic, partition, leader, isr, elr}] (leader -1 when none;
    elr the eligible leader replicas, [] or None when empty); min_isr: {topic:
    min.insync.replicas}; broker_dc: {broker id: DC}. Every topic has a
    sample for every broker DC, so a healthy cluster still shows its zeros.
    """
    under, without, elr_held = {}, {}, dict.fromkeys(broker_dcs, 0)
    for topic in sorted({p["topic"] for p in partitions}):
        for dc in broker_dcs:
            under[(topic, dc)] = without[(topic, dc)] = 0
    for p in partitions:
        dc = broker_dc.get(p["leader"], OFFLINE) if p["leader"] is not None and p["leader"] >= 0 else OFFLINE
        elr = p.get("elr") or []
        for replica in elr:
            held = broker_dc.get(replica, UNKNOWN)
            elr_held[held] = elr_held.get(held, 0) + 1
        if len(p["isr"]) < min_isr[p["topic"]]:
            under[(p["topic"], dc)] = under.get((p["topic"], dc), 0) + 1
            if not elr:
                without[(p["topic"], dc)] = without.get((p["topic"], dc), 0) + 1
    samples = [("stretch_partitions_under_min_isr", {"topic": t, "dc": dc}, n) for (t, dc), n in sorted(under.items())]
    samples += [
        ("stretch_partitions_under_min_isr_without_elr", {"topic": t, "dc": dc}, n)
        for (t, dc), n in sorted(without.items())
    ]
    samples += [("stretch_eligible_leader_replicas", {"dc": dc}, n) for dc, n in sorted(elr_held.items())]
    return samples


def _escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def exposition(samples):
    """Prometheus's text format of [(metric, labels, value)], each metric's samples together under its HELP and
    TYPE."""
    by_metric = {}
    for name, labels, value in samples:
        by_metric.setdefault(name, []).append((labels, value))
    lines = []
    for name, rows in by_metric.items():
        kind, text = HELP[name]
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        for labels, value in rows:
            inner = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
            lines.append(f"{name}{{{inner}}} {float(value):g}" if inner else f"{name} {float(value):g}")
    return "\n".join(lines) + "\n"


class ReadError(RuntimeError):
    pass


class Cluster:
    """The reads, through confluent-kafka (groups, offsets, brokers) and kafka-python (partitions' ELR, configs)."""

    def __init__(self, settings):
        from confluent_kafka.admin import AdminClient  # noqa: PLC0415  only where it runs
        from kafka.admin import KafkaAdminClient  # noqa: PLC0415

        self.timeout = settings["timeout_seconds"]
        self.confluent = AdminClient(
            {"bootstrap.servers": settings["bootstrap_servers"], **librdkafka_config(settings["client_config"])}
        )
        self.settings = settings
        self._kafka_python = KafkaAdminClient
        self._python = None

    def python(self):
        if self._python is None:
            self._python = self._kafka_python(
                bootstrap_servers=self.settings["bootstrap_servers"],
                request_timeout_ms=int(self.timeout * 1000),
                **self.settings["client_config"],
            )
        return self._python

    def broker_dcs(self):
        """{broker id: DC (its rack)} of the registered brokers."""
        nodes = self.confluent.describe_cluster(request_timeout=self.timeout).result(timeout=self.timeout).nodes
        return {n.id: n.rack or UNKNOWN for n in nodes}

    def groups(self):
        """{group: {"members": [(host, [(topic, partition)])], "committed": {(topic, partition): offset}}}."""
        from confluent_kafka import ConsumerGroupTopicPartitions  # noqa: PLC0415

        listed = self.confluent.list_consumer_groups(request_timeout=self.timeout).result(timeout=self.timeout)
        if listed.errors:
            raise ReadError(f"listing the groups: {listed.errors}")
        # Every group, "simple" ones too: a client that assigns its partitions itself and commits has lag.
        names = sorted(g.group_id for g in listed.valid)
        out = {}
        described = self.confluent.describe_consumer_groups(names, request_timeout=self.timeout) if names else {}
        for name in names:
            description = described[name].result(timeout=self.timeout)
            members = [
                (m.host, [(tp.topic, tp.partition) for tp in (m.assignment.topic_partitions if m.assignment else [])])
                for m in description.members
            ]
            # One group per request: librdkafka's ListConsumerGroupOffsets takes one.
            (future,) = self.confluent.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(name)], request_timeout=self.timeout
            ).values()
            offsets = future.result(timeout=self.timeout).topic_partitions or []
            failed = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in offsets if tp.error]
            if failed:
                raise ReadError(f"group {name}'s committed offsets: {'; '.join(failed)}")
            out[name] = {"members": members, "committed": {(tp.topic, tp.partition): tp.offset for tp in offsets}}
        return out

    def end_offsets(self, partitions):
        from confluent_kafka import TopicPartition  # noqa: PLC0415
        from confluent_kafka.admin import OffsetSpec  # noqa: PLC0415

        if not partitions:
            return {}
        asked = {TopicPartition(t, p): OffsetSpec.latest() for t, p in sorted(partitions)}
        futures = self.confluent.list_offsets(asked, request_timeout=self.timeout)
        return {(tp.topic, tp.partition): f.result(timeout=self.timeout).offset for tp, f in futures.items()}

    def partitions(self):
        """([{topic, partition, leader, isr, elr}], {topic: min.insync.replicas})."""
        from kafka.admin import ConfigResource, ConfigResourceType  # noqa: PLC0415

        client = self.python()
        topics = sorted(client.list_topics())
        out, cursor = [], None
        for _page in range(100000):
            answer = client.describe_topic_partitions(topics, cursor=cursor) if topics else {"topics": []}
            for topic in answer["topics"]:
                if topic["error_code"]:
                    raise ReadError(f"describing topic {topic['name']}: error {topic['error_code']}")
                out += [
                    {"topic": topic["name"], "partition": p["partition_index"], "leader": p["leader_id"],
                     "isr": list(p["isr_nodes"]), "elr": list(p["eligible_leader_replicas"] or [])}
                    for p in topic["partitions"]
                ]  # fmt: skip
            cursor = answer.get("next_cursor")
            if not cursor:
                break
        described = client.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, t) for t in topics], config_filter="all"
        )
        configs = described.get("topic", {}) if topics else {}
        min_isr = {t: int(c["min.insync.replicas"]["value"]) for t, c in configs.items() if "min.insync.replicas" in c}
        missing = sorted({p["topic"] for p in out} - set(min_isr))
        if missing:
            raise ReadError(f"no min.insync.replicas read for topic(s) {', '.join(missing)}")
        return out, min_isr


class Exporter:
    """Reads the cluster every interval and keeps the samples of each part's last read."""

    def __init__(self, settings, cluster, clock=time.time, monotonic=time.monotonic):
        self.settings, self.cluster, self.clock, self.monotonic = settings, cluster, clock, monotonic
        self.parts = {part: {"samples": [], "ok": False, "at": 0.0, "took": 0.0} for part in PARTS}
        self.lock = threading.Lock()
        self.errors = {}

    def _read(self, part):
        brokers = self.cluster.broker_dcs()
        broker_dcs = sorted(set(brokers.values()))
        if part == "groups":
            groups = self.cluster.groups()
            ends = self.cluster.end_offsets({tp for g in groups.values() for tp in g["committed"]})
            samples = []
            for name, group in sorted(groups.items()):
                samples += group_samples(name, group["members"], group["committed"], ends,
                                         self.settings["dc_networks"], broker_dcs)  # fmt: skip
            return samples
        partitions, min_isr = self.cluster.partitions()
        return replica_samples(partitions, min_isr, brokers, broker_dcs)

    def read_once(self):
        for part in PARTS:
            started = self.monotonic()
            try:
                samples, ok = self._read(part), True
                self.errors.pop(part, None)
            except Exception as exc:  # noqa: BLE001  a failed read is served as such, and logged
                samples, ok = [], False
                self.errors[part] = str(exc)
                print(f"stretch_exporter: reading the {part} failed: {exc}", file=sys.stderr, flush=True)
            with self.lock:
                self.parts[part] = {"samples": samples, "ok": ok, "at": self.clock(),
                                    "took": self.monotonic() - started}  # fmt: skip

    def metrics(self):
        with self.lock:
            parts = dict(self.parts)
        samples = [s for part in PARTS for s in parts[part]["samples"]]
        for part in PARTS:
            samples.append(("stretch_exporter_read_success", {"part": part}, 1 if parts[part]["ok"] else 0))
            samples.append(("stretch_exporter_last_read_timestamp_seconds", {"part": part}, parts[part]["at"]))
            samples.append(("stretch_exporter_read_duration_seconds", {"part": part}, parts[part]["took"]))
        return exposition(samples)

    def run(self, stop):
        while not stop.is_set():
            started = self.monotonic()
            self.read_once()
            stop.wait(max(0.0, self.settings["interval_seconds"] - (self.monotonic() - started)))


def serve(exporter, listen):
    host, port = listen.rsplit(":", 1)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802  http.server's name
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = exporter.metrics().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return ThreadingHTTPServer((host.strip("[]"), int(port)), Handler)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, help="the settings file (JSON)")
    p.add_argument("--listen", default="127.0.0.1:9308", help="host:port to serve /metrics on")
    args = p.parse_args(argv)
    try:
        with open(args.config) as f:
            settings = load_settings(f.read())
    except (OSError, SettingsError) as exc:
        print(f"stretch_exporter: {args.config}: {exc}", file=sys.stderr)
        return 2
    exporter = Exporter(settings, Cluster(settings))
    stop = threading.Event()
    reader = threading.Thread(target=exporter.run, args=(stop,), daemon=True)
    reader.start()
    server = serve(exporter, args.listen)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
