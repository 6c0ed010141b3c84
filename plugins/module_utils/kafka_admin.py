"""A thin adapter over kafka-python's admin client, for the topics and quotas modules.

Everything goes through Kafka's admin protocol from one Python process: one
connection, a handful of batched requests per run, no JVM. Each method turns
kafka-python's replies into plain dicts, and every write takes validate_only
so a whole run can be checked by the brokers before anything changes.

Client quotas have no helper in kafka-python, so they are sent as the raw
DescribeClientQuotas and AlterClientQuotas requests it defines.
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import logging
import re
import socket
import ssl
import time
import uuid
from collections import Counter

try:
    from kafka import TopicPartition
    from kafka import errors as kafka_errors
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ConfigResource,
        ConfigResourceType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )
    from kafka.admin._users import UserScramCredentialDeletion, UserScramCredentialUpsertion
    from kafka.metrics import Metrics
    from kafka.net.compat import KafkaNetClient
    from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
    from kafka.protocol.admin.cluster import DescribeQuorumRequest

    IMPORT_ERROR = None
except ImportError as exc:  # reported by the modules with missing_required_lib
    IMPORT_ERROR = exc

ERRORS_OK = (None, "OK", 0)
NO_ANSWER = "the cluster did not answer for it"

# The connection options of every module that uses this adapter (see the
# stretch.kafka.kafka_admin doc fragment).
ARGUMENT_SPEC = {
    "bootstrap_servers": {"type": "str", "default": ""},
    "bootstrap_controllers": {"type": "str", "default": ""},
    "client_config": {"type": "dict", "default": {}, "no_log": True},
}
# The cluster-wide default of every broker's dynamic configs (min.insync.replicas
# among them) is the broker resource with an empty name.
CLUSTER_DEFAULT = ""
# Kafka's ConfigSource of a value set on the topic itself, on the broker itself, for every broker.
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
MATCH_ANY = 2  # DescribeClientQuotas match type: any entity of the type, default included


def _reason(result):
    """Kafka's own message, without kafka-python's "[Error 40] InvalidConfigurationError: " prefix."""
    return re.sub(r"^\[Error \d+\] \w+: ", "", str(result))


class AdminError(RuntimeError):
    pass


# kafka-python's debug record of every request it writes to a socket (KafkaConnection._send_request in
# kafka/net/connection.py): the connection, the correlation id and the request itself.
REQUEST_RECORD = "%s Request %d: %s"
REQUEST_LOGGER = "kafka.net.connection"


class RequestCounter(logging.Filter):
    """Counts the requests this process sends to Kafka, by API, from kafka-python's own record of each one.

    Every request of every connection passes through that one record: the
    ApiVersions and SASL exchanges of a new connection, the Metadata of a
    bootstrap and of kafka-python's refresh loop, each admin call, and the
    logins and controller reads that open their own clients. Counting starts
    with attach() and stops with detach(). It is a filter on kafka-python's
    connection logger, whose debug records it turns on: it counts them there
    and lets through only what the logger let through before, so no handler
    (pytest's, an operator's) receives or formats a record it did not before.
    """

    def __init__(self):
        super().__init__()
        self.by_api = Counter()
        self._saved_level = self._passes = None

    def filter(self, record):
        if record.msg == REQUEST_RECORD and isinstance(record.args, tuple) and len(record.args) == 3:
            name = type(record.args[2]).__name__
            self.by_api[name[: -len("Request")] if name.endswith("Request") else name] += 1
        return record.levelno >= self._passes

    def attach(self):
        logger = logging.getLogger(REQUEST_LOGGER)
        if self not in logger.filters:
            self._saved_level, self._passes = logger.level, logger.getEffectiveLevel()
            logger.addFilter(self)
            logger.setLevel(logging.DEBUG)
        return self

    def detach(self):
        logger = logging.getLogger(REQUEST_LOGGER)
        if self in logger.filters:
            logger.removeFilter(self)
            if not any(isinstance(f, RequestCounter) for f in logger.filters):
                logger.setLevel(self._saved_level)

    def summary(self):
        """{"total": requests sent, "by_api": {API: requests}}, what a module reports as admin_requests."""
        return {"total": sum(self.by_api.values()), "by_api": dict(sorted(self.by_api.items()))}


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


ELECTION_NOT_NEEDED = 84


def _brokers(cluster):
    return {b["broker_id"]: {"dc": b["rack"], "fenced": b.get("is_fenced", False)} for b in cluster["brokers"]}


def _election_results(reply):
    """Flatten kafka-python's ElectLeaders reply into [{topic, partition, error_code, error_message}]."""
    reply = reply.to_dict() if hasattr(reply, "to_dict") else reply
    out = []
    for topic in reply.get("replica_election_results", []):
        for p in topic.get("partition_result", []):
            out.append(
                {
                    "topic": topic["topic"],
                    "partition": p["partition_id"],
                    "error_code": p["error_code"],
                    "error_message": p.get("error_message"),
                }
            )
    return out


# How long a broker or controller has to answer the first bytes of a TLS
# handshake. kafka-python bounds a connection's TCP connect and its requests,
# not its TLS handshake: a host whose kernel still accepts connections while
# its processes are frozen (a paused container, a hung host, a JVM stopped in
# a pause) would hold a client in the handshake for good.
HANDSHAKE_SECONDS = 5.0


def _split_address(address):
    host, port = address.rsplit(":", 1)
    return host.strip("[]"), int(port)


def _answers(address, tls, timeout):
    """Whether address accepts a connection and, on a TLS listener, sends a TLS reply within timeout.

    Any reply counts, a refused handshake too (a listener that wants a client
    certificate this probe does not offer): it proves a live process.
    """
    try:
        with socket.create_connection(_split_address(address), timeout=timeout) as sock:
            if not tls:
                return True
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            sock.settimeout(timeout)
            try:
                with context.wrap_socket(sock) as wrapped:
                    wrapped.settimeout(timeout)
                    return True
            except (ssl.SSLError, ConnectionResetError):
                return True
    except (OSError, ValueError):
        return False


def answering(addresses, client_config, timeout=HANDSHAKE_SECONDS):
    """(those of addresses that answer, those that do not), in their given order, probed side by side."""
    if not addresses:
        return [], []
    tls = str(client_config.get("security_protocol", "PLAINTEXT")).upper() in ("SSL", "SASL_SSL")
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(addresses)) as pool:
        replies = list(pool.map(lambda a: _answers(a, tls, timeout), addresses))
    return (
        [a for a, ok in zip(addresses, replies, strict=True) if ok],
        [a for a, ok in zip(addresses, replies, strict=True) if not ok],
    )


def _unresolved(address):
    """Why address's host name does not resolve; '' when it does (or is an IP address)."""
    try:
        host, port = _split_address(address)
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, ValueError) as exc:
        return f"{address}: the host name does not resolve ({exc})"
    return ""


def _silent(addresses, timeout=HANDSHAKE_SECONDS):
    unresolved = [problem for problem in map(_unresolved, addresses) if problem]
    resolved = [a for a in addresses if not _unresolved(a)]
    if resolved:
        unresolved.append(
            f"{', '.join(resolved)}: no connection or no TLS reply in {timeout:g} s (down, unreachable, or silent)"
        )
    return "; ".join(unresolved)


def live_bootstrap(servers, client_config, what="broker"):
    """The addresses of a comma-separated list (or a list) that answer, for a kafka-python client to bootstrap from.

    AdminError naming every address when none answers: a client given only
    frozen hosts would wait for good.
    """
    if isinstance(servers, str):
        servers = [s.strip() for s in servers.split(",") if s.strip()]
    live, silent = answering(list(servers), client_config or {})
    if not live:
        raise AdminError(f"no {what} answered: " + _silent(silent))
    return live


class _ControllerClient:
    """DescribeQuorum straight to the controllers (KIP-919), which answer no Metadata requests.

    kafka-python's admin client bootstraps with Metadata, so it cannot talk
    to a controller; its connection layer can, once per address. A failed
    connection must not ask for a metadata refresh: that starts a bootstrap
    in the background, which sends Metadata to a controller (refused), backs
    that address off and closes the connection a request is waiting on. With
    one controller down, that failed 11 of 30 reads.
    """

    def __init__(self, controllers, client_config, timeout_ms, first=None):
        self.controllers, self.client_config, self.timeout_ms = controllers, client_config, timeout_ms
        # The controller asked first (the one that led last time), and the one that answered as the leader.
        self.first, self.answered_by = first, None

    def describe_quorum(self):
        live = live_bootstrap(self.controllers, self.client_config, "controller")
        silent = [c for c in self.controllers if c not in live]
        net = KafkaNetClient(
            bootstrap_servers=live,
            client_id="stretch-kafka-ansible",
            request_timeout_ms=self.timeout_ms,
            metrics=Metrics(),
            metric_group_prefix="stretch-kafka",
            **self.client_config,
        )
        manager = net._manager  # noqa: SLF001  kafka-python's public clients all bootstrap with Metadata
        manager._net.start()  # noqa: SLF001
        topic = DescribeQuorumRequest.TopicData
        request = DescribeQuorumRequest(
            topics=[topic(topic_name="__cluster_metadata", partitions=[topic.PartitionData(partition_index=0)])]
        )

        async def ask(node_id):
            conn = manager.get_connection(node_id, refresh_metadata_on_err=False)
            await conn
            return await conn.send_request(request, request_timeout_ms=self.timeout_ms)

        answers = [_silent(silent)] if silent else []
        try:
            # kafka-python shuffles the addresses it is given; a follower answers NOT_LEADER over a connection
            # of its own, so the controller that led last time is asked first.
            first = _split_address(self.first) if self.first else None
            for node in sorted(manager.cluster.bootstrap_brokers(), key=lambda n: (n.host, n.port) != first):
                where = f"{node.host}:{node.port}"
                try:
                    response = manager.run(ask, node.node_id)
                except Exception as exc:  # noqa: BLE001  another controller may answer
                    answers.append(f"{where}: {exc}")
                    continue
                state = response.to_dict()["topics"][0]["partitions"][0]
                if not response.error_code and not state["error_code"]:
                    self.answered_by = where
                    return state
                answers.append(f"{where}: {state.get('error_message') or response.error_message or 'error'}")
        finally:
            net.close()
        raise AdminError("no controller answered as the quorum's leader: " + "; ".join(answers))


def kafka_uuid(value):
    """A directory id as Kafka prints it (base64url, no padding); '' for none (Uuid.ZERO) or a missing one."""
    if value is None:
        return ""
    if isinstance(value, str):
        value = uuid.UUID(value)
    if value.int == 0:
        return ""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def quorum_state(state):
    """One DescribeQuorum partition reply (as a dict) in the shape of the gates and module_utils/quorum.py.

    The voters and observers are kept by id (what the gates judge) and as
    replica keys with their directory ids (what a voter change needs); a
    reply from before KIP-853 carries no directory ids, which reads as "".
    """

    def replicas(kind):
        return [
            {
                "id": r["replica_id"],
                "directory_id": kafka_uuid(r.get("replica_directory_id")),
                "log_end_offset": r["log_end_offset"],
            }
            for r in state.get(kind) or []
        ]

    voters, observers = replicas("current_voters"), replicas("observers")
    return {
        "leader": state["leader_id"],
        "epoch": state["leader_epoch"],
        "high_watermark": state.get("high_watermark", -1),
        "voters": {r["id"]: r["log_end_offset"] for r in voters},
        "observers": {r["id"]: r["log_end_offset"] for r in observers},
        # When each voter and observer (a broker) last fetched from the leader, on the leader's clock (ms);
        # -1 when the reply does not say (DescribeQuorum v0, or a replica the leader has not heard from).
        "fetched": {
            r["replica_id"]: r.get("last_fetch_timestamp", -1)
            for kind in ("current_voters", "observers")
            for r in state.get(kind) or []
        },
        "replicas": {"voters": voters, "observers": observers},
    }


def _entry(acl):
    """A kafka-python ACL as (principal, host, resource type, name, pattern, operation, permission)."""
    pattern = acl.resource_pattern
    return (
        acl.principal,
        acl.host,
        ResourceType(pattern.resource_type).name.lower(),
        pattern.resource_name,
        ACLResourcePatternType(pattern.pattern_type).name.lower(),
        ACLOperation(acl.operation).name.lower(),
        ACLPermissionType(acl.permission_type).name.lower(),
    )


def _acl(entry, kind=None):
    principal, host, resource, name, pattern, operation, permission = entry
    kind = kind or ACL
    pattern_class = ResourcePattern if kind is ACL else ResourcePatternFilter
    return kind(
        principal=principal,
        host=host,
        operation=ACLOperation[operation.upper()],
        permission_type=ACLPermissionType[permission.upper()],
        resource_pattern=pattern_class(ResourceType[resource.upper()], name, ACLResourcePatternType[pattern.upper()]),
    )


class _AuthFailures(logging.Handler):
    """Keeps the SASL authentication failures kafka-python logs while it bootstraps, and its warnings.

    kafka-python 3.0 retries a refused login until its bootstrap deadline and
    then raises only KafkaTimeoutError; the refusal itself
    (SaslAuthenticationFailedError) reaches the caller only as an argument of
    a logged warning.
    """

    def __init__(self):
        super().__init__(logging.WARNING)
        self.failures, self.warnings = [], []

    def emit(self, record):
        args = record.args if isinstance(record.args, tuple) else ()
        self.failures += [a for a in args if isinstance(a, kafka_errors.SaslAuthenticationFailedError)]
        self.warnings.append(record.getMessage())


def _login(bootstrap_servers, config, timeout):
    """None when the login succeeds, else (whether the broker refused it, what went wrong)."""
    watcher, kafka_log = _AuthFailures(), logging.getLogger("kafka")
    kafka_log.addHandler(watcher)
    try:
        client = KafkaAdminClient(
            bootstrap_servers=live_bootstrap(bootstrap_servers, config),
            client_id="stretch-kafka-ansible",
            request_timeout_ms=timeout * 1000,
            bootstrap_timeout_ms=timeout * 1000,
            **config,
        )
    except kafka_errors.SaslAuthenticationFailedError as exc:
        return True, str(exc)
    except Exception as exc:  # noqa: BLE001  anything else is a verdict only if the broker refused the login
        return bool(watcher.failures), "; ".join([f"{type(exc).__name__}: {exc}", *watcher.warnings[-3:]])
    finally:
        kafka_log.removeHandler(watcher)
    client.close()
    return None


def logs_in(bootstrap_servers, client_config, username, password, mechanism, timeout=10, attempts=2):
    """Whether username/password logs in over SASL on bootstrap_servers (the client listener).

    A login the broker refuses is False. A failure that is not a refused
    login is tried again, then raises AdminError with what kafka-python
    reported, so a down cluster is never taken for a wrong password.
    """
    config = dict(client_config or {})
    config.update(sasl_mechanism=mechanism, sasl_plain_username=username, sasl_plain_password=password)
    for _attempt in range(attempts):
        failed = _login(bootstrap_servers, config, timeout)
        if failed is None:
            return True
        refused, why = failed
        if refused:
            return False
    raise AdminError(f"cannot reach {bootstrap_servers} to check {username}'s login: {why}")


def _resource(kind, name, change=None, keys=None):
    """A config resource: to describe (every key, or only keys), or with change ({"set", "delete"}) to alter."""
    kind = {"topic": ConfigResourceType.TOPIC, "broker": ConfigResourceType.BROKER}[kind]
    if change is None:
        return ConfigResource(kind, str(name), configs=dict.fromkeys(keys) if keys else None)
    configs = {k: ("SET", v) for k, v in change.get("set", {}).items()}
    configs.update({k: ("DELETE", None) for k in change.get("delete", [])})
    return ConfigResource(kind, str(name), configs=configs)


def _described(topics):
    """([(topic name, partition reply)], [what could not be read]) of a Metadata-like reply's topics: a topic or
    partition with an error code is listed as unread, never as a partition."""
    found, errors = [], []
    for topic in topics:
        if topic["error_code"]:
            errors.append(f"topic {topic['name']}: error {topic['error_code']}")
            continue
        for p in topic["partitions"]:
            if p.get("error_code"):
                errors.append(f"partition {topic['name']}-{p['partition_index']}: error {p['error_code']}")
                continue
            found.append((topic["name"], p))
    return found, errors


class Admin:
    """The cluster over the admin protocol: brokers for topics, configs and quotas, controllers for the quorum.

    Nothing connects until it is needed, so a caller that only asks the
    controllers (the quorum, before any broker runs) needs no broker up.
    """

    def __init__(self, bootstrap_servers="", client_config=None, timeout=30, bootstrap_controllers=""):
        self.timeout_ms = int(timeout * 1000)
        self.servers = [s.strip() for s in (bootstrap_servers or "").split(",") if s.strip()]
        self.controllers = [s.strip() for s in (bootstrap_controllers or "").split(",") if s.strip()]
        self.client_config = dict(client_config or {})
        self.raw = self._client = None
        # The requests this Admin's process sends while the Admin is open (admin_requests in the modules' results).
        self.requests = RequestCounter()
        # The controller that last answered as the quorum's leader: asked first next time.
        self._quorum_leader = None

    @property
    def client(self):
        if self._client is None:
            self._connect()
        return self._client

    def _connect(self):
        if not self.servers:
            raise AdminError("no broker address to connect to (bootstrap_servers is empty)")
        self.requests.attach()
        # kafka-python bootstraps from one address of the list, picked at
        # random; with a DC down that one may be dead (or frozen: see
        # HANDSHAKE_SECONDS), so only the addresses that answer are given,
        # each first in turn.
        servers = live_bootstrap(self.servers, self.client_config)
        for attempt, server in enumerate(servers):
            try:
                self.raw = KafkaAdminClient(
                    bootstrap_servers=[server, *servers[:attempt], *servers[attempt + 1 :]],
                    client_id="stretch-kafka-ansible",
                    request_timeout_ms=self.timeout_ms,
                    **self.client_config,
                )
                self._client = _Retrying(self.raw)
                return
            except Exception:  # noqa: BLE001  the next address may answer
                if attempt == len(servers) - 1:
                    raise

    def close(self):
        if self.raw is not None:
            self.raw.close()
        self.requests.detach()

    # -- reading -----------------------------------------------------------
    def brokers(self):
        """{broker id: {"dc": its broker.rack, "fenced": bool}} of the registered brokers."""
        return _brokers(self.client.describe_cluster())

    def topics(self):
        """{name: {"partitions": {p: [replicas]}, "internal": bool}} of every topic."""
        result = {}
        for topic in self.client.describe_topics():
            if topic["error_code"]:
                raise AdminError(f"cannot describe topic {topic['name']}: error {topic['error_code']}")
            failed = [f"{topic['name']}-{p['partition_index']}" for p in topic["partitions"] if p.get("error_code")]
            if failed:
                raise AdminError(f"cannot describe partition(s) {', '.join(failed)}")
            parts = {p["partition_index"]: list(p["replica_nodes"]) for p in topic["partitions"]}
            result[topic["name"]] = {"partitions": parts, "internal": topic["is_internal"]}
        return result

    def _describe_configs(self, kind, names, keys=None):
        """{name: [config entries]} of every name; AdminError naming each one the cluster did not describe.

        kafka-python's describe_configs turns a resource the cluster could not
        describe into an empty set of configs, which would read as "nothing
        set"; the raw replies keep the error. A broker's own configs are asked
        of that broker, as Kafka requires; every topic's, in one request.
        keys: only these configs (the reply then carries those alone, not the
        forty-odd every topic has).
        """
        if kind == "broker":
            batches = [([_resource(kind, n, keys=keys)], int(n)) for n in names]
        else:
            batches = [([_resource(kind, n, keys=keys) for n in names], None)]
        found, errors = {}, []
        for resources, node in batches:
            response = self._send(KafkaAdminClient._describe_configs_request(resources), node)
            for result in response.results:
                if result.error_code:
                    errors.append(f"{kind} {result.resource_name}: {result.error_message or result.error_code}")
                else:
                    found[result.resource_name] = result.configs
        failed = {e.split(":")[0] for e in errors}
        errors += [f"{kind} {n}: {NO_ANSWER}" for n in names if str(n) not in found and f"{kind} {n}" not in failed]
        if errors:
            raise AdminError("cannot describe the configs of " + "; ".join(errors))
        return {name: found[str(name)] for name in names}

    def _dynamic_configs(self, kind, names, source, keys=None):
        if not names:
            return {}
        described = self._describe_configs(kind, names, keys)
        return {
            name: {c.name: c.value for c in configs if c.config_source == source} for name, configs in described.items()
        }

    def topic_config_replies(self, names):
        """[{"name", "error_code", "error_message", "configs": [{"name", "value", "source"}]}]: one DescribeConfigs
        request for the topics, as the cluster answered it, errors included (module_utils/failover.py judges it)."""
        names = sorted(set(names))
        if not names:
            return []
        response = self._send(KafkaAdminClient._describe_configs_request([_resource("topic", n) for n in names]))
        return [
            {"name": r.resource_name, "error_code": r.error_code, "error_message": r.error_message,
             "configs": [{"name": c.name, "value": c.value, "source": c.config_source} for c in r.configs or ()]}
            for r in response.results
        ]  # fmt: skip

    def topic_configs(self, names, keys=None):
        """{topic: {key: value}} of the configs set on each topic itself (of keys alone, when given)."""
        return self._dynamic_configs("topic", list(names), DYNAMIC_TOPIC_CONFIG, keys)

    def broker_configs(self, ids):
        """{broker id: {key: value}} of the dynamic configs set on each broker itself."""
        return self._dynamic_configs("broker", list(ids), DYNAMIC_BROKER_CONFIG)

    def cluster_id(self):
        return self.client.describe_cluster().get("cluster_id")

    def finalized_features(self):
        """{feature: finalized level} of the cluster (metadata.version, eligible.leader.replicas.version, ...)."""
        # kafka-python answers {feature: {"supported": (min, max), "finalized": (min, max), ...}}, a feature without
        # "finalized" being one the cluster has not finalized.
        found = self.client.describe_features()
        return {name: levels["finalized"][1] for name, levels in sorted(found.items()) if "finalized" in levels}

    def eligible_leaders(self, topics=()):
        """[{topic, partition, isr, elr, last_known_elr}] of the topics' partitions (every topic's when none is
        named), through DescribeTopicPartitions (KIP-966), page by page; AdminError naming a topic or partition
        the cluster did not describe. Every topic is asked for with an empty list, as Kafka reads it: neither a
        Metadata request for their names first, nor their names again in each page's request."""
        out, cursor, errors = [], None, []
        for _page in range(10_000):  # pages of 2000 partitions; bounded however large the cluster
            reply = self.client.describe_topic_partitions(list(topics), cursor=cursor)
            found, failed = _described(reply["topics"])
            errors += failed
            out += [{"topic": name, "partition": p["partition_index"], "isr": list(p["isr_nodes"]),
                     "elr": list(p.get("eligible_leader_replicas") or []),
                     "last_known_elr": list(p.get("last_known_elr") or [])} for name, p in found]  # fmt: skip
            cursor = reply.get("next_cursor")
            if not cursor:
                break
        if errors:
            raise AdminError("cannot describe the eligible leader replicas of " + "; ".join(errors))
        return out

    def partitions(self):
        """([{topic, partition, leader, replicas, isr}], [what could not be read]) of every topic."""
        found, errors = _described(self.client.describe_topics())
        partitions = [
            {"topic": name, "partition": p["partition_index"], "leader": p["leader_id"],
             "replicas": list(p["replica_nodes"]), "isr": list(p["isr_nodes"])}
            for name, p in found
        ]  # fmt: skip
        return partitions, errors

    def min_isr(self, topics):
        """{topic: min.insync.replicas} of the topics whose setting the cluster reported."""
        names = sorted(set(topics))
        if not names:
            return {}
        # That one config of each topic, whatever its source: not every config of every topic at each poll.
        resources = [_resource("topic", n, keys=["min.insync.replicas"]) for n in names]
        described = self.client.describe_configs(resources, config_filter="all")
        return {
            name: int(configs["min.insync.replicas"]["value"])
            for name, configs in described.get("topic", {}).items()
            if "min.insync.replicas" in configs
        }

    def snapshot(self, parts=("quorum", "brokers", "partitions")):
        """The cluster as the gates see it (module_utils/gates.py).

        A part that cannot be read is left None and what failed is listed
        under "errors", so the gate fails closed and says why.
        """
        snap = {"errors": [], "quorum": None, "brokers": None, "partitions": None, "min_isr": None,
                "read_at": time.time()}  # fmt: skip
        if "quorum" in parts:
            try:
                snap["quorum"] = self.quorum()
            except Exception as exc:  # noqa: BLE001  reported to the gate, which fails closed
                snap["errors"].append(f"the quorum: {exc}")
        if "brokers" in parts:
            try:
                cluster = self.client.describe_cluster()
                snap["cluster_id"] = cluster.get("cluster_id")
                snap["brokers"] = _brokers(cluster)
            except Exception as exc:  # noqa: BLE001
                snap["errors"].append(f"the registered brokers: {exc}")
        if "partitions" in parts:
            try:
                partitions, errors = self.partitions()
                snap["errors"] += errors
                snap["min_isr"] = self.min_isr(p["topic"] for p in partitions)
                snap["partitions"] = partitions
            except Exception as exc:  # noqa: BLE001
                snap["errors"].append(f"the partitions: {exc}")
        return snap

    def quorum(self):
        """{"leader", "epoch", "voters": {id: log end offset}, "observers": {...}} of the KRaft quorum.

        Asked of the controllers themselves when their addresses are known (a
        follower answers NOT_LEADER, so each is tried until the leader
        answers), else of a broker, which forwards the request.
        """
        if self.controllers:
            self.requests.attach()
            # A gate polls: each read asks first the controller that led at the last one.
            reader = _ControllerClient(self.controllers, self.client_config, self.timeout_ms, self._quorum_leader)
            state = reader.describe_quorum()
            self._quorum_leader = reader.answered_by
        else:
            state = self.client.describe_metadata_quorum()["topics"][0]["partitions"][0]
            if state.get("error"):
                raise AdminError(f"DescribeQuorum: {state['error']}")
        return quorum_state(state)

    def cluster_configs(self):
        """{key: value} of the cluster-wide dynamic broker configs (the default broker resource)."""
        request = KafkaAdminClient._describe_configs_request(
            [ConfigResource(ConfigResourceType.BROKER, CLUSTER_DEFAULT)]
        )
        response = self._send(request)
        found = {}
        for result in response.results:
            if result.error_code:
                raise AdminError(f"cannot describe the cluster-wide broker configs: {result.error_message}")
            for config in result.configs:
                if config.config_source == DYNAMIC_DEFAULT_BROKER_CONFIG:
                    found[config.name] = config.value
        return found

    def alter_cluster_configs(self, change, validate_only=False):
        """Set and delete cluster-wide dynamic broker configs; change is {"set": {...}, "delete": [...]}."""
        configs = {k: ("SET", str(v)) for k, v in change.get("set", {}).items()}
        configs.update({k: ("DELETE", None) for k in change.get("delete", [])})
        if not configs:
            return None
        resource = ConfigResource(ConfigResourceType.BROKER, CLUSTER_DEFAULT, configs=configs)
        request = KafkaAdminClient._alter_configs_request([resource], validate_only, incremental=True)
        for result in self._send(request).responses:
            if result.error_code:
                return result.error_message or f"error {result.error_code}"
        return None

    def not_preferred(self):
        """[(topic, partition)] led by another replica than the first of its list.

        A partition the cluster could not describe is an AdminError: it is not
        known to be led by its preferred replica.
        """
        partitions, errors = self.partitions()
        if errors:
            raise AdminError("cannot tell which partitions are led by their preferred replica: " + "; ".join(errors))
        return [(p["topic"], p["partition"]) for p in partitions if p["replicas"] and p["leader"] != p["replicas"][0]]

    def elect_preferred_everywhere(self):
        """A preferred leader election for every partition not led by its preferred leader.

        Returns (the partitions asked to move, the ones whose election failed, with why).
        """
        moved = self.not_preferred()
        if not moved:
            return [], []
        by_topic = {}
        for topic, p in moved:
            by_topic.setdefault(topic, []).append(p)
        reply = self.client.elect_leaders(0, by_topic, timeout_ms=self.timeout_ms, raise_errors=False)
        failed, answered = [], set()
        for result in _election_results(reply):
            answered.add((result["topic"], result["partition"]))
            if result["error_code"] not in (0, ELECTION_NOT_NEEDED):
                failed.append(
                    f"{result['topic']}-{result['partition']}: {result['error_message'] or result['error_code']}"
                )
        failed += [f"{t}-{p}: {NO_ANSWER}" for t, p in moved if (t, p) not in answered]
        return [f"{t}-{p}" for t, p in moved], failed

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
    def _send(self, request, node_id=None):
        """Send a raw request, to node_id when the request must go to one broker."""
        self.client  # noqa: B018  connects on first use
        manager = self.raw._manager  # noqa: SLF001  kafka-python has no public raw-request API
        return retrying(manager.run)(manager.send, request, node_id)

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
        reply = self.client.alter_configs(resources, validate_only=validate_only, raise_on_unknown=False).get(kind, {})
        answers = {name: reply.get(str(name), NO_ANSWER) for name in changes}
        return {name: _reason(r) for name, r in answers.items() if r not in ERRORS_OK}

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

    # -- users and ACLs ------------------------------------------------------------
    def scram_users(self):
        """{user: [SCRAM mechanisms it has credentials for, as SCRAM-SHA-512]}."""
        described = self.client.describe_user_scram_credentials()
        return {
            user: [info["mechanism"].name.replace("_", "-") for info in found["credential_infos"]]
            for user, found in described.items()
            if not found["error"]
        }

    def alter_scram_users(self, upserts, deletes):
        """upserts: {user: (mechanism, password)}; deletes: {user: [mechanisms]}. Returns {user: error}."""
        alterations = [UserScramCredentialUpsertion(u, m, p) for u, (m, p) in upserts.items()]
        alterations += [UserScramCredentialDeletion(u, m) for u, mechs in deletes.items() for m in mechs]
        if not alterations:
            return {}
        return {user: error for user, error in self.client.alter_user_scram_credentials(alterations).items() if error}

    def acls(self):
        """Every ACL of the cluster as an entry (module_utils/acls.py)."""
        everything = ACLFilter(
            principal=None,
            host=None,
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
        )
        found, error = self.client.describe_acls(everything)
        if error is not None and getattr(error, "errno", 0):
            raise AdminError(f"cannot describe the ACLs: {error}")
        return {_entry(acl) for acl in found}

    def create_acls(self, entries):
        if not entries:
            return []
        result = self.client.create_acls([_acl(e) for e in entries])
        return [f"{_entry(acl)}: {error}" for acl, error in result.get("failed", [])]

    def delete_acls(self, entries):
        if not entries:
            return []
        failures = []
        for acl_filter, _deleted, error in self.client.delete_acls([_acl(e, ACLFilter) for e in entries]):
            if error is not None and getattr(error, "errno", 0):
                failures.append(f"{_entry(acl_filter)}: {error}")
        return failures

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
    params = module.params
    admin = Admin(params["bootstrap_servers"], params["client_config"], timeout, params.get("bootstrap_controllers"))
    if params["bootstrap_servers"]:
        try:
            admin.client  # noqa: B018  connect now, so an unreachable cluster is reported as such
        except Exception as exc:  # noqa: BLE001  any connection failure is reported as such
            module.fail_json(msg=f"cannot connect to {params['bootstrap_servers']}: {exc}")
    return admin


def apply_changes(module, lines, apply, what):
    """The result of a reconcile whose plan is one line per change (its diff too); apply() unless in check mode.

    apply() returns what the cluster refused; anything refused fails the module,
    naming what (for example "ACL changes").
    """
    result = {"changed": bool(lines), "changes": lines}
    if module._diff:  # noqa: SLF001  AnsibleModule's own diff flag
        result["diff"] = {"before": "", "after": "".join(f"{line}\n" for line in lines)}
    if lines and not module.check_mode:
        failed = apply()
        if failed:
            module.fail_json(msg=f"the cluster refused {what}: {failed}", **result)
    return result


@contextlib.contextmanager
def session(module, timeout=30):
    """An Admin for the module's connection options, closed afterwards; an AdminError fails the module."""
    admin = connect(module, timeout)
    try:
        yield admin
    except AdminError as exc:
        module.fail_json(msg=str(exc))
    finally:
        admin.close()
