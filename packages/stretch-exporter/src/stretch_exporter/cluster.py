"""The exporter's reads of the cluster, through Kafka's admin protocol.

kafka-python reads the brokers (DescribeCluster, with their racks, fenced
ones too), lists the groups (ListGroups to every unfenced broker),
the end offsets (ListOffsets to each partition's leader, retried on a moved
leadership), the partitions' eligible leader replicas (DescribeTopicPartitions,
KIP-966) and the topics' min.insync.replicas. confluent-kafka describes the
groups and reads their committed offsets, from each group's coordinator (a
KIP-848 group is described only by its ConsumerGroupDescribe).

No read goes to "the controller" through librdkafka: its admin client keeps
the controller its metadata named, and while that broker is down (a lost DC)
it answers every such request with a timeout and reconnects to it without a
pause (hundreds of thousands of refused connections in 30 s, on the failover
drill). Nor does an end offset: librdkafka's ListOffsets carries the leader
epoch it cached, and after a DC's recovery the new leaders refuse it
(FENCED_LEADER_EPOCH) until its metadata catches up.
"""

from __future__ import annotations

from .samples import UNKNOWN
from .settings import admin_config


class ReadError(RuntimeError):
    pass


class Cluster:
    """The reads, through kafka-python (brokers, group names, end offsets, partitions' ELR, configs) and
    confluent-kafka (the groups' members and committed offsets)."""

    def __init__(self, settings):
        from confluent_kafka.admin import AdminClient  # noqa: PLC0415  only where it runs
        from kafka.admin import KafkaAdminClient  # noqa: PLC0415

        self.timeout = settings["timeout_seconds"]
        self._confluent_client = AdminClient
        self.confluent = AdminClient(admin_config(settings))
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
        """{broker id: DC (its rack)} of the registered brokers, fenced ones too: a lost DC's brokers stay
        registered, and its lag and members show as 0 rather than vanish."""
        brokers = self.python().describe_cluster()["brokers"]
        if not brokers:
            raise ReadError("DescribeCluster named no broker")
        return {b["broker_id"]: b.get("rack") or UNKNOWN for b in brokers}

    def groups(self):
        """{group: {"members": [(host, [(topic, partition)])], "committed": {(topic, partition): offset}}}.

        librdkafka's admin client keeps the coordinator it found for a group after the group moved (a restart, a
        DC's loss or recovery) and is answered NOT_COORDINATOR by it from then on (seen on the testbed for every
        read of 24 minutes): a read so refused is made once more with a new client, which looks the
        coordinators up afresh."""
        from confluent_kafka import KafkaError, KafkaException  # noqa: PLC0415

        try:
            return self._groups()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.NOT_COORDINATOR:
                raise
        self.confluent = self._confluent_client(admin_config(self.settings))
        return self._groups()

    def group_names(self):
        """Every group, "simple" ones too (a client that assigns its partitions itself and commits has lag), from
        ListGroups to each broker Kafka holds alive: registered and unfenced, by DescribeCluster at this read.

        kafka-python's list_groups asks every broker of its cached metadata, which keeps a lost DC's brokers
        after Kafka fenced them: each read then failed on a refused connection (seen on the testbed through a
        DC's loss) although the fenced brokers coordinate no group. A broker the client does not know yet (back
        since its metadata was read) is asked through a new client, which reads the metadata afresh. A broker
        Kafka still holds alive that does not answer fails the read: its groups are not known."""
        from kafka.errors import UnknownBrokerIdError  # noqa: PLC0415

        live = sorted(b["broker_id"] for b in self.python().describe_cluster()["brokers"] if not b.get("is_fenced"))
        if not live:
            raise ReadError("DescribeCluster named no unfenced broker")
        try:
            found = self.python().list_groups(broker_ids=live)
        except UnknownBrokerIdError:
            self._python.close()
            self._python = None
            found = self.python().list_groups(broker_ids=live)
        return sorted({g["group_id"] for g in found})

    def _groups(self):
        from confluent_kafka import ConsumerGroupTopicPartitions  # noqa: PLC0415

        names = self.group_names()
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
        """{(topic, partition): its end offset}."""
        return self._offsets(partitions, "LATEST", "end offset")

    def start_offsets(self, partitions):
        """{(topic, partition): its log start offset} (the earliest record retention kept)."""
        return self._offsets(partitions, "EARLIEST", "log start offset")

    def _offsets(self, partitions, spec, what):
        from kafka import TopicPartition  # noqa: PLC0415
        from kafka.admin import OffsetSpec  # noqa: PLC0415

        if not partitions:
            return {}
        found = self.python().list_partition_offsets(
            {TopicPartition(t, p): getattr(OffsetSpec, spec) for t, p in partitions}
        )
        missing = sorted(set(partitions) - {(tp.topic, tp.partition) for tp in found})
        if missing:
            raise ReadError(f"no {what} read for {', '.join(f'{t}-{p}' for t, p in missing)}")
        return {(tp.topic, tp.partition): answer.offset for tp, answer in found.items()}

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
