"""Checks made before the smoke test writes anything: each names what is wrong."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from urllib.parse import urlparse

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

# The client settings file and the bootstrap check are the kafka-group source's: one format for every client.
from kafka_group_source import SettingError, read_client_config
from kafka_group_source.checks import check_bootstrap, reachable

__all__ = ["SettingError", "SmokeError", "check_bootstrap", "read_client_config"]


class SmokeError(Exception):
    pass


def cluster_view(bootstrap_servers, topic, client_config, timeout=15):
    """The brokers ({id: (host, rack)}) and the topic's partitions, from the cluster's metadata."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers, **client_config})
    try:
        metadata = admin.list_topics(timeout=timeout)
        nodes = admin.describe_cluster(request_timeout=timeout).result(timeout=timeout).nodes
    except KafkaException as exc:
        raise SmokeError(f"cannot read the cluster's metadata through {bootstrap_servers}: {exc}") from exc
    if topic not in metadata.topics:
        raise SmokeError(f"topic {topic!r} does not exist; site.yml creates it (smoke_topic)")
    brokers = {n.id: (n.host, n.rack) for n in nodes}
    return brokers, sorted(metadata.topics[topic].partitions)


def check_dcs(dcs, brokers):
    racks = sorted({broker[1] for broker in brokers.values() if broker[1]})
    for dc in dcs:
        if dc not in racks:
            raise SmokeError(f"DC {dc!r} matches no broker rack (the brokers' racks are: {', '.join(racks)})")


def check_spark_master(master, timeout=5):
    """local[...] needs nothing; spark:// and k8s:// must accept a connection; yarn needs its config."""
    if master.startswith("local"):
        return
    if master == "yarn":
        if not (os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR")):
            raise SmokeError("Spark master 'yarn' needs HADOOP_CONF_DIR or YARN_CONF_DIR to find the cluster")
        return
    url = urlparse(master.removeprefix("k8s://"))
    if not url.hostname or not url.port:
        raise SmokeError(f"Spark master {master!r} has no host:port")
    if not reachable(url.hostname, url.port, timeout):
        raise SmokeError(f"Spark master {master!r} cannot be reached at {url.hostname}:{url.port}")


def check_spark_properties(path):
    """A Spark settings file (it holds a cluster's secret) must be readable here, and by this user alone."""
    try:
        mode = Path(path).stat().st_mode
        Path(path).read_bytes()
    except OSError as exc:
        raise SmokeError(f"cannot read the Spark settings in {path}: {exc}") from exc
    if mode & 0o077:
        raise SmokeError(
            f"the Spark settings in {path} are readable by other users (mode {mode & 0o777:04o}): they hold the "
            "cluster's secret; make the file 0600"
        )


CLIENT_LOGGER = "kafka_smoke.clients"


def client_log(path):
    """A logger that writes the Kafka clients' own log lines to path.

    librdkafka writes its log to stderr unless a client is given a logger;
    the smoke test's summary shows the end of stderr, so the clients' lines
    (a broker not answering while it restarts, and the like) would read as
    the test's own output. They go to a file instead.
    """
    logger = logging.getLogger(CLIENT_LOGGER)
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    return logger


def client_settings(path, log_path):
    """The client settings of read_client_config(path), with the clients' log going to log_path."""
    return {**read_client_config(path), "logger": client_log(log_path)}
