"""A thin adapter over kafka-python's admin client, for the topics and quotas modules.

Everything goes through Kafka's admin protocol from one Python process: one
connection, a handful of batched requests per run, no JVM. Each method turns
kafka-python's replies into plain dicts, and every write takes validate_only
so a whole run can be checked by the brokers before anything changes.

Client quotas have no helper in kafka-python, so they are sent as the raw
DescribeClientQuotas and AlterClientQuotas requests it defines.
"""

from __future__ import annotations

import re
import time

try:
    from kafka import TopicPartition
    from kafka import errors as kafka_errors
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest

    IMPORT_ERROR = None
except ImportError as exc:  # reported by the modules with missing_required_lib
    IMPORT_ERROR = exc

ERRORS_OK = (None, "OK", 0)

# The connection options of every module that uses this adapter (see the
# stretch.kafka.kafka_admin doc fragment).
ARGUMENT_SPEC = {
    "bootstrap_servers": {"type": "str", "required": True},
    "client_config": {"type": "dict", "default": {}},
}
MATCH_ANY = 2  # DescribeClientQuotas match type: any entity of the type, default included


def _reason(result):
    """Kafka's own message, without kafka-python's "[Error 40] InvalidConfigurationError: " prefix."""
    return re.sub(r"^\[Error \d+\] \w+: ", "", str(result))


class AdminError(RuntimeError):
    pass


class _Retrying:
    """Calls the admin client again when it could not connect to the node it picked.

    kafka-python sends each request to one node of its choosing; with a DC
    down that node may be dead, and it raises instead of trying another. A
    refused connection means the request was never sent, so sending it again
    is safe; the failed node is then in back-off and another is picked.
    """

    ATTEMPTS = 6

    def __init__(self, client):
        self._client = client

    def __getattr__(self, name):
        attr = getattr(self._client, name)
        return retrying(attr, self.ATTEMPTS) if callable(attr) else attr


def retrying(func, attempts=_Retrying.ATTEMPTS):
    def call(*args, **kwargs):
        for attempt in range(attempts):
            try:
                return func(*args, **kwargs)
            except (kafka_errors.KafkaConnectionError, kafka_errors.NodeNotReadyError):
                if attempt == attempts - 1:
                    raise
                time.sleep(0.5)
        return None

    return call


def _resource(kind, name, change=None):
    kind = {"topic": ConfigResourceType.TOPIC, "broker": ConfigResourceType.BROKER}[kind]
    if change is None:
        return ConfigResource(kind, str(name))
    configs = {k: ("SET", v) for k, v in change.get("set", {}).items()}
    configs.update({k: ("DELETE", None) for k in change.get("delete", [])})
    return ConfigResource(kind, str(name), configs=configs)


class Admin:
    def __init__(self, bootstrap_servers, client_config=None, timeout=30):
        self.timeout_ms = int(timeout * 1000)
        # kafka-python bootstraps from one address of the list; with a DC
        # down that one may be dead, so each address is tried in turn.
        servers = [s.strip() for s in bootstrap_servers.split(",") if s.strip()]
        for attempt, server in enumerate(servers):
            try:
                self.raw = KafkaAdminClient(
                    bootstrap_servers=[server, *servers[:attempt], *servers[attempt + 1 :]],
                    client_id="stretch-kafka-ansible",
                    request_timeout_ms=self.timeout_ms,
                    **(client_config or {}),
                )
                self.client = _Retrying(self.raw)
                return
            except Exception:  # noqa: BLE001  the next address may answer
                if attempt == len(servers) - 1:
                    raise

    def close(self):
        self.raw.close()

    # -- reading -----------------------------------------------------------
    def brokers(self):
        """{broker id: {"rack": rack, "fenced": bool}} of the registered brokers."""
        cluster = self.client.describe_cluster()
        return {b["broker_id"]: {"rack": b["rack"], "fenced": b.get("is_fenced", False)} for b in cluster["brokers"]}

    def topics(self):
        """{name: {"partitions": {p: [replicas]}, "internal": bool}} of every topic."""
        result = {}
        for topic in self.client.describe_topics():
            if topic["error_code"]:
                raise AdminError(f"cannot describe topic {topic['name']}: error {topic['error_code']}")
            parts = {p["partition_index"]: list(p["replica_nodes"]) for p in topic["partitions"]}
            result[topic["name"]] = {"partitions": parts, "internal": topic["is_internal"]}
        return result

    def _dynamic_configs(self, kind, names, source):
        if not names:
            return {}
        resources = [_resource(kind, n) for n in names]
        described = self.client.describe_configs(resources, config_filter="modified")
        found = described.get(kind, {})
        return {
            name: {k: c["value"] for k, c in found.get(str(name), {}).items() if c["config_source"] == source}
            for name in names
        }

    def topic_configs(self, names):
        """{topic: {key: value}} of the configs set on each topic itself."""
        return self._dynamic_configs("topic", list(names), "DYNAMIC_TOPIC_CONFIG")

    def broker_configs(self, ids):
        """{broker id: {key: value}} of the dynamic configs set on each broker itself."""
        return self._dynamic_configs("broker", list(ids), "DYNAMIC_BROKER_CONFIG")

    def snapshot(self):
        """The cluster as the health gates see it (module_utils/gates.py)."""
        partitions = []
        for topic in self.client.describe_topics():
            for p in topic["partitions"]:
                partitions.append(
                    {
                        "topic": topic["name"],
                        "partition": p["partition_index"],
                        "leader": p["leader_id"],
                        "replicas": list(p["replica_nodes"]),
                        "isr": list(p["isr_nodes"]),
                    }
                )
        names = sorted({p["topic"] for p in partitions})
        described = self.client.describe_configs([_resource("topic", n) for n in names], config_filter="all")
        min_isr = {
            name: int(configs["min.insync.replicas"]["value"])
            for name, configs in described.get("topic", {}).items()
            if "min.insync.replicas" in configs
        }
        return {"partitions": partitions, "min_isr": min_isr, "brokers": self.brokers(), "quorum": self.quorum()}

    def quorum(self):
        """{"leader": node id or -1, "voters": {node id: log end offset}} of the KRaft quorum."""
        state = self.client.describe_metadata_quorum()["topics"][0]["partitions"][0]
        voters = {v["replica_id"]: v["log_end_offset"] for v in state["current_voters"]}
        return {"leader": state["leader_id"], "voters": voters}

    def reassignments(self):
        """{(topic, partition): {"adding": [...], "removing": [...]}} still in progress."""
        ongoing = self.client.list_partition_reassignments(timeout_ms=self.timeout_ms)
        return {
            (tp.topic, tp.partition): {"adding": r["adding_replicas"], "removing": r["removing_replicas"]}
            for tp, r in ongoing.items()
        }

    def quotas(self):
        """{entity key: {quota key: value}} of every user and client-id quota."""
        component = DescribeClientQuotasRequest.ComponentData
        result = {}
        for kind in ("user", "client-id"):
            request = DescribeClientQuotasRequest(
                components=[component(entity_type=kind, match_type=MATCH_ANY, match=None)], strict=False
            )
            response = self._send(request)
            if response.error_code:
                raise AdminError(f"DescribeClientQuotas failed: {response.error_message}")
            for entry in response.entries:
                key = tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity))
                result[key] = {v.key: v.value for v in entry.values}
        return result

    # -- writing (each takes validate_only) --------------------------------
    def _send(self, request):
        manager = self.raw._manager  # noqa: SLF001  kafka-python has no public raw-request API
        return retrying(manager.run)(manager.send, request)

    def create_topics(self, creates, validate_only=False):
        if not creates:
            return {}
        request = {
            name: {"assignments": item["assignment"], "configs": item["configs"]} for name, item in creates.items()
        }
        reply = self.client.create_topics(
            request, timeout_ms=self.timeout_ms, validate_only=validate_only, raise_errors=False
        )
        return {t["name"]: t["error_message"] or f"error {t['error_code']}" for t in reply["topics"] if t["error_code"]}

    def create_partitions(self, grow, validate_only=False):
        if not grow:
            return {}
        request = {name: {"count": g["count"], "assignments": g["assignments"]} for name, g in grow.items()}
        reply = self.client.create_partitions(
            request, timeout_ms=self.timeout_ms, validate_only=validate_only, raise_errors=False
        )
        return {r.name: r.error_message or f"error {r.error_code}" for r in reply.results if r.error_code}

    def alter_configs(self, kind, changes, validate_only=False):
        """changes: {name: {"set": {...}, "delete": [...]}}; returns {name: error}."""
        if not changes:
            return {}
        resources = [_resource(kind, name, change) for name, change in changes.items()]
        reply = self.client.alter_configs(resources, validate_only=validate_only, raise_on_unknown=False)
        return {name: _reason(r) for name, r in reply.get(kind, {}).items() if r not in ERRORS_OK}

    def alter_quotas(self, changes, validate_only=False):
        """changes: {entity key: {"set": {...}, "delete": [...]}}; returns {entity key: error}."""
        if not changes:
            return {}
        entry = AlterClientQuotasRequest.EntryData
        entries = []
        for key, change in changes.items():
            ops = [entry.OpData(key=k, value=float(v), remove=False) for k, v in change["set"].items()]
            ops += [entry.OpData(key=k, value=0.0, remove=True) for k in change["delete"]]
            entity = [entry.EntityData(entity_type=kind, entity_name=name) for kind, name in key]
            entries.append(entry(entity=entity, ops=ops))
        response = self._send(AlterClientQuotasRequest(entries=entries, validate_only=validate_only))
        errors = {}
        for result in response.entries:
            if result.error_code:
                key = tuple(sorted((e.entity_type, e.entity_name) for e in result.entity))
                errors[key] = result.error_message or f"error {result.error_code}"
        return errors

    def delete_topics(self, names):
        if not names:
            return {}
        reply = self.client.delete_topics(names, timeout_ms=self.timeout_ms, raise_errors=False)
        return {t["name"]: t["error_message"] or f"error {t['error_code']}" for t in reply["topics"] if t["error_code"]}

    def reassign(self, moves):
        """moves: {topic: {p: [replicas]}}; returns {(topic, p): error}."""
        request = {TopicPartition(name, p): replicas for name, parts in moves.items() for p, replicas in parts.items()}
        reply = self.client.alter_partition_reassignments(request, timeout_ms=self.timeout_ms)
        return {(tp.topic, tp.partition): str(err) for tp, err in reply.items() if err is not None}

    def elect_preferred(self, partitions):
        """Preferred leader election for [(topic, p)]; already-preferred ones are fine."""
        by_topic = {}
        for topic, p in partitions:
            by_topic.setdefault(topic, []).append(p)
        if by_topic:
            self.client.elect_leaders(0, by_topic, timeout_ms=self.timeout_ms, raise_errors=True)

    def wait_reassignments(self, partitions, timeout, interval=1.0):
        """Poll until none of [(topic, p)] is being reassigned; returns those still running."""
        deadline = time.monotonic() + timeout
        wanted = set(partitions)
        while True:
            running = wanted & set(self.reassignments())
            if not running or time.monotonic() >= deadline:
                return sorted(running)
            time.sleep(interval)


def require(module):
    """fail_json when kafka-python is missing where the module runs."""
    if IMPORT_ERROR:
        from ansible.module_utils.basic import missing_required_lib

        module.fail_json(msg=missing_required_lib("kafka-python"), exception=str(IMPORT_ERROR))


def connect(module, timeout=30):
    """An Admin for the module's connection options, or fail_json saying why not."""
    require(module)
    servers = module.params["bootstrap_servers"]
    try:
        return Admin(servers, module.params["client_config"], timeout)
    except Exception as exc:  # noqa: BLE001  any connection failure is reported as such
        module.fail_json(msg=f"cannot connect to {servers}: {exc}")
