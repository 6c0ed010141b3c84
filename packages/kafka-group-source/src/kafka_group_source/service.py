"""A job as a service: what the deploying role hands a job in its environment, and how the job answers.

The stretch.kafka collection's spark_stream role runs each job under
systemd (spark-submit in client mode, on each DC's Spark master) with these
environment variables:

    KAFKA_BOOTSTRAP_SERVERS            the brokers' client listener, host:port,...
    KAFKA_TOPICS                       the job's topics, comma-separated
    KAFKA_GROUP_ID                     the job's consumer group (the same in every DC)
    KAFKA_CLIENT_RACK                  the DC the job and its executors run in
    KAFKA_CLIENT_CONFIG                the client settings file (credentials; 0600, the job's user's)
    KAFKA_GROUP_SESSION_TIMEOUT_MS     the group's session timeout and heartbeat interval
    KAFKA_GROUP_HEARTBEAT_INTERVAL_MS    (KIP-848 group configs), when the job's entry sets them
    SPARK_STREAM_STATE_DIR             the job's own directory (checkpoint, sink), kept across restarts
    SPARK_STREAM_READY_FILE            to write once the query runs: the role waits for it
    SPARK_STREAM_STOP_FILE             appears when the service stops: end after the batch in flight

and reads its exit status: 0 stopped on request, 1 failed (systemd starts
it again), 2 (BAD_SETTING) a setting is wrong (not restarted: starting
again cannot help).

    context = Context.from_environment()
    options = context.source_options()
    ...
    sys.exit(serve(query, context))
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .options import SettingError

BAD_SETTING = 2
FAILED = 1
STOPPED = 0

REQUIRED = {
    "bootstrap_servers": "KAFKA_BOOTSTRAP_SERVERS",
    "topics": "KAFKA_TOPICS",
    "group": "KAFKA_GROUP_ID",
    "dc": "KAFKA_CLIENT_RACK",
    "state_dir": "SPARK_STREAM_STATE_DIR",
}
OPTIONAL = {
    "client_config": "KAFKA_CLIENT_CONFIG",
    "session_timeout_ms": "KAFKA_GROUP_SESSION_TIMEOUT_MS",
    "heartbeat_interval_ms": "KAFKA_GROUP_HEARTBEAT_INTERVAL_MS",
    "ready_file": "SPARK_STREAM_READY_FILE",
    "stop_file": "SPARK_STREAM_STOP_FILE",
}


@dataclass(frozen=True)
class Context:
    """What the deploying role tells a job (all strings, as the environment holds them)."""

    bootstrap_servers: str
    topics: str
    group: str
    dc: str
    state_dir: str
    client_config: str = ""
    session_timeout_ms: str = ""
    heartbeat_interval_ms: str = ""
    ready_file: str = ""
    stop_file: str = ""

    @classmethod
    def from_environment(cls, environ=None):
        """The context of the environment (os.environ by default); SettingError names a missing variable."""
        environ = os.environ if environ is None else environ
        missing = [var for var in REQUIRED.values() if not environ.get(var, "").strip()]
        if missing:
            raise SettingError(
                f"the environment lacks {', '.join(missing)}: the job runs under the spark_stream role's service, "
                "which sets them (or set them yourself)"
            )
        fields = {name: environ.get(var, "").strip() for name, var in {**REQUIRED, **OPTIONAL}.items()}
        return cls(**fields)

    @property
    def checkpoint(self):
        """The query's checkpoint directory, in the job's own directory."""
        return str(Path(self.state_dir) / "checkpoint")

    def path(self, name):
        """A path in the job's own directory."""
        return str(Path(self.state_dir) / name)

    def source_options(self):
        """The kafka-group source's options the role's settings give: cluster, topics, group, DC, credentials
        and, when set, the group's session timeout and heartbeat interval."""
        options = {
            "kafka.bootstrap.servers": self.bootstrap_servers,
            "subscribe": self.topics,
            "kafka.group.id": self.group,
            "kafka.client.rack": self.dc,
        }
        if self.client_config:
            options["client.config"] = self.client_config
        if self.session_timeout_ms:
            options["group.session.timeout.ms"] = self.session_timeout_ms
        if self.heartbeat_interval_ms:
            options["group.heartbeat.interval.ms"] = self.heartbeat_interval_ms
        return options


def serve(query, context, poll_seconds=1.0, out=sys.stderr):
    """Run a started streaming query as the service: write the ready file, end it once the stop file appears
    (after the batch in flight: the group member leaves the group, the other DCs' jobs take its partitions
    at once), and return the exit status (0 stopped, 1 the query failed)."""
    if context.ready_file:
        Path(context.ready_file).write_text(f"{time.time()}\n")
    stop = Path(context.stop_file) if context.stop_file else None
    while stop is None or not stop.exists():
        if query.awaitTermination(poll_seconds):
            break  # the query ended by itself: an error, reported below
    query.stop()
    failed = query.exception()
    if failed:
        print(f"the streaming query failed: {failed}", file=out, flush=True)
        return FAILED
    return STOPPED
