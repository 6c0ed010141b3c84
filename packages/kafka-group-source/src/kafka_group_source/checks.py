"""What the source checks against the cluster before it joins the group, and the group configs it sets.

prepare(options) makes every check a job can make before it starts Spark,
so that a bad setting stops the job with its name instead of failing the
query later; the source's group member makes the cluster checks and sets the
group configs again when it starts, so a job that skips prepare() gets the
same refusals, as the query's failure.
"""

from __future__ import annotations

import logging
import re
import socket
import time

from confluent_kafka import KafkaException

from .options import JAVA_RENAMES, SettingError, Settings, check_client_config, read_client_config

# librdkafka names the setting it refuses in quotes or backquotes.
PROPERTY = re.compile(r"[\"`]([a-z0-9._]+)[\"`]")
IGNORED = re.compile(r"property\s+`?([a-z0-9._]+)`?\s+is a producer property and will be ignored")


def reachable(host, port, timeout):
    """Whether host:port accepts a TCP connection within timeout seconds."""
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def check_bootstrap(bootstrap_servers, timeout=5):
    """At least one bootstrap address must accept a connection."""
    addresses = [a.strip() for a in bootstrap_servers.split(",") if a.strip()]
    if not addresses:
        raise SettingError("no bootstrap servers given")
    for address in addresses:
        host, _sep, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise SettingError(f"bootstrap address {address!r} is not host:port")
    if not any(reachable(*a.rsplit(":", 1), timeout) for a in addresses):
        raise SettingError(f"no broker answers at the bootstrap address(es) {bootstrap_servers}")


def check_cluster(admin, topics, dc, timeout=15):
    """Every topic exists (and may be described) and dc is a broker's rack, from the cluster's metadata."""
    try:
        metadata = admin.list_topics(timeout=timeout)
        nodes = admin.describe_cluster(request_timeout=timeout).result(timeout=timeout).nodes
    except KafkaException as exc:
        raise SettingError(f"cannot read the cluster's metadata: {exc}") from exc
    for topic in topics:
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            why = f" ({found.error})" if found is not None else ""
            raise SettingError(f"topic {topic!r} does not exist or may not be described by the job's user{why}")
    racks = sorted({n.rack for n in nodes if n.rack})
    if dc not in racks:
        raise SettingError(
            f"client.rack {dc!r} is no broker's rack (the brokers' racks are: {', '.join(racks) or 'none'}): "
            "the executors would read from the leaders, wherever they are"
        )


def apply_group_configs(admin, group, configs, timeout=15, clock=time.monotonic, sleep=time.sleep):
    """Set the group's configs (KIP-848: consumer.session.timeout.ms, consumer.heartbeat.interval.ms) and read
    them back until the brokers hold them.

    With group.protocol=consumer the brokers, not the clients, hold these, so
    every DC's job of the group must set the same values. A value outside the
    brokers' bounds (group.consumer.min/max.session.timeout.ms,
    ...min/max.heartbeat.interval.ms) is refused, named.
    """
    if not configs:
        return
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    wrong = {}
    try:
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=timeout)
        # The brokers apply a group config once the controllers have committed it: read until it shows.
        deadline = clock() + timeout
        while True:
            described = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)])
            found = next(iter(described.values())).result(timeout=timeout)
            wrong = {
                k: found[k].value if k in found else None
                for k, v in configs.items()
                if k not in found or found[k].value != v
            }
            if not wrong or clock() > deadline:
                break
            sleep(0.5)
    except KafkaException as exc:
        raise SettingError(
            f"group {group!r}: the brokers refused {', '.join(f'{k}={v}' for k, v in configs.items())}: {exc}"
        ) from exc
    if wrong:
        raise SettingError(f"group {group!r}: the brokers still hold {wrong} {timeout} s after setting {configs}")


def check_driver(settings, consumer_factory=None):
    """What the driver needs before Spark plans anything: pyarrow (PySpark's Python data sources hand their
    rows to the JVM as Arrow batches), the client settings file (with the login its SASL listener needs),
    and client settings librdkafka takes, as the group member's and the readers' consumers (made without a
    bootstrap address, so nothing connects, and closed at once). SettingError names the option."""
    try:
        import pyarrow  # noqa: F401  only whether it is there
    except ImportError as exc:
        raise SettingError(
            f"pyarrow is missing from the driver's Python ({exc}): PySpark's Python data sources hand their rows "
            "to Spark as Arrow batches, on the driver and the executors; install it there (pip install "
            "kafka-group-source[spark], or pyspark[sql])"
        ) from None
    check_client_config(settings.client_config)
    from confluent_kafka import Consumer

    factory = consumer_factory or Consumer
    for role, config in (("group member's", settings.member_config()), ("readers'", settings.reader_config())):
        config = {k: v for k, v in config.items() if k != "bootstrap.servers"}
        ignored = []
        handler = _Collect(ignored)
        logger = logging.getLogger(f"kafka_group_source.check.{role}")
        logger.addHandler(handler)
        logger.propagate = False
        try:
            factory({**config, "logger": logger}).close()
        except KafkaException as exc:
            error = exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else str(exc)
            raise SettingError(f"librdkafka refuses the {role} client settings: {_named(settings, error)}") from None
        finally:
            logger.removeHandler(handler)
        dropped = sorted({m.group(1) for line in ignored for m in [IGNORED.search(line)] if m})
        if dropped:
            raise SettingError(
                f"{', '.join(_origin(settings, k) for k in dropped)}: a producer setting, which librdkafka's "
                "consumers ignore"
            )


class _Collect(logging.Handler):
    def __init__(self, lines):
        super().__init__(logging.WARNING)
        self.lines = lines

    def emit(self, record):
        self.lines.append(record.getMessage())


def _origin(settings, name):
    """Where a librdkafka setting came from: the kafka.<setting> option (its Java name when translated), or the
    client settings file."""
    if name in settings.passed:
        return f"option kafka.{name}"
    java = [j for j in settings.passed if JAVA_RENAMES.get(j) == name]
    if java:
        return f"option kafka.{java[0]} (librdkafka's {name})"
    if name in read_client_config(settings.client_config):
        return f"{name} in the client settings file {settings.client_config}"
    return f"a kafka.<setting> option or the client settings file (librdkafka's {name})"


def _named(settings, message):
    found = PROPERTY.search(message)
    return f"{_origin(settings, found.group(1))}: {message}" if found else message


def default_admin(config):
    from confluent_kafka.admin import AdminClient

    return AdminClient(config)


def prepare(options, admin_factory=default_admin, timeout=15):
    """Every check of the options a job can make before it starts Spark; returns their Settings.

    Judges the options as the DataFrame's load() does (check_driver: the client
    settings file, refused without the login its SASL listener needs, and
    librdkafka's reading of the settings), reaches a bootstrap address, finds every
    topic and the DC among the brokers' racks, and sets the group's session
    timeout and heartbeat interval when the options give them. Raises
    SettingError naming what is wrong.
    """
    settings = Settings.from_options(options)
    check_driver(settings)  # what load() judges: the client settings file and librdkafka's reading of them
    check_bootstrap(settings.bootstrap_servers)
    admin = admin_factory(settings.admin_config())
    check_cluster(admin, settings.topics, settings.rack, timeout)
    apply_group_configs(admin, settings.group, settings.group_configs(), timeout)
    return settings
