"""The source's options, parsed and judged once, and the client settings file they may name.

Spark hands a Python data source its options as strings, with their names
in lower case. Every name the source does not know is refused, named: a
misspelt option would otherwise be ignored without a word.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

NAME = "kafka-group"  # the source's name in spark.readStream.format(...)


class SourceError(Exception):
    """The source cannot go on: the streaming query fails with this message."""


class SettingError(SourceError):
    """A setting is wrong (an option, the client settings file, the cluster it names): starting again cannot help."""


REQUIRED = ("bootstrap.servers", "topics", "group.id", "client.rack")
OPTIONAL = (
    "client.config",
    "starting.offsets",
    "max.records.per.partition",
    "group.session.timeout.ms",
    "group.heartbeat.interval.ms",
    "events",
    "fetch.stats",
    "read.timeout.seconds",
    "offsets.timeout.seconds",
)
# librdkafka settings passed through as kafka.<setting>.
PASSTHROUGH = "kafka."
# Options travel in Spark's plan (the UI, the logs, the checkpoint): a secret goes in the client.config file.
SECRETS = (
    "sasl.password",
    "sasl.oauthbearer.client.secret",
    "ssl.key.password",
    "ssl.key.pem",
    "ssl.keystore.password",
)


def read_client_config(path):
    """{key: value} of a client settings file (key=value lines, # or ! comments): where secrets are passed.

    Settings come in a file, never on a command line or in an option, where
    any user of the host, or of Spark's UI, could read them. No path: {}.
    """
    if not path:
        return {}
    config = {}
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise SettingError(f"cannot read the client settings in {path}: {exc}") from exc
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")):
            key, sep, value = line.partition("=")
            if not sep:
                raise SettingError(f"{path}: {line.split()[0]!r} is not a key=value line")
            config[key.strip()] = value.strip()
    return config


def check_client_config(path):
    """The client settings of path, refused when a SASL listener's login is missing from them."""
    config = read_client_config(path)
    protocol = config.get("security.protocol", "plaintext").lower()
    if protocol.startswith("sasl"):
        missing = [k for k in ("sasl.username", "sasl.password") if not config.get(k)]
        if missing:
            raise SettingError(
                f"the client settings in {path or '(none)'} use {config['security.protocol']} but have no "
                f"{' or '.join(missing)}: the job's Kafka credentials are missing"
            )
    return config


def _number(options, name, default, kind=int, least=0):
    raw = options.get(name, default)
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise SettingError(f"option {name} {raw!r} is not a number") from None
    if value < least:
        raise SettingError(f"option {name} {raw!r} must be at least {least}")
    return value


@dataclass(frozen=True)
class Settings:
    """The source's options (all strings in Spark's option map), parsed once."""

    bootstrap_servers: str
    topics: tuple
    group: str
    rack: str
    client_config: str = ""  # a key=value file, on the driver's host and on every executor's
    starting_offsets: str = "earliest"  # where a partition the group has no offset for begins
    max_records: int = 0  # per partition per batch; 0: no cap
    session_timeout_ms: int = 0  # the group's consumer.session.timeout.ms to set; 0: leave the group's
    heartbeat_interval_ms: int = 0  # the group's consumer.heartbeat.interval.ms to set; 0: leave the group's
    events: str = ""  # the member's events (JSON lines), on the driver's host
    fetch_stats: bool = False  # rows carry the broker that served them (librdkafka statistics)
    read_timeout: float = 120.0  # seconds a task may take to read its range
    offsets_timeout: float = 120.0  # seconds a partition's end offset may stay unreadable
    extra: tuple = ()  # more librdkafka settings (kafka.* options), as (key, value) pairs

    @classmethod
    def from_options(cls, options):
        """Settings of Spark's option map; SettingError names a missing, unknown or bad option."""
        options = {str(k).lower(): str(v) for k, v in dict(options).items()}
        missing = [name for name in REQUIRED if not options.get(name, "").strip()]
        if missing:
            raise SettingError(f"the {NAME} source needs the option(s) {', '.join(missing)}")
        unknown = sorted(k for k in options if k not in REQUIRED + OPTIONAL and not k.startswith(PASSTHROUGH))
        if unknown:
            raise SettingError(
                f"unknown option(s) {', '.join(unknown)} (the {NAME} source takes "
                f"{', '.join(REQUIRED + OPTIONAL)} and kafka.<librdkafka setting>)"
            )
        secrets = sorted(k for k in options if k.startswith(PASSTHROUGH) and k[len(PASSTHROUGH) :] in SECRETS)
        if secrets:
            raise SettingError(
                f"option(s) {', '.join(secrets)} would put a secret in Spark's plan, UI and logs: "
                "give it in the client.config file"
            )
        starting = options.get("starting.offsets", "earliest")
        if starting not in ("earliest", "latest"):
            raise SettingError(f"option starting.offsets {starting!r} is not earliest or latest")
        stats = options.get("fetch.stats", "false").lower()
        if stats not in ("true", "false"):
            raise SettingError(f"option fetch.stats {options['fetch.stats']!r} is not true or false")
        topics = tuple(t.strip() for t in options["topics"].split(",") if t.strip())
        if not topics:
            raise SettingError(f"option topics {options['topics']!r} names no topic")
        session = _number(options, "group.session.timeout.ms", 0)
        heartbeat = _number(options, "group.heartbeat.interval.ms", 0)
        if (session or heartbeat) and not (session > heartbeat > 0):
            raise SettingError(
                f"option group.session.timeout.ms ({session}) must be longer than group.heartbeat.interval.ms "
                f"({heartbeat}), and both set"
            )
        return cls(
            bootstrap_servers=options["bootstrap.servers"].strip(),
            topics=topics,
            group=options["group.id"].strip(),
            rack=options["client.rack"].strip(),
            client_config=options.get("client.config", ""),
            starting_offsets=starting,
            max_records=_number(options, "max.records.per.partition", 0),
            session_timeout_ms=session,
            heartbeat_interval_ms=heartbeat,
            events=options.get("events", ""),
            fetch_stats=stats == "true",
            read_timeout=_number(options, "read.timeout.seconds", 120, float, 1),
            offsets_timeout=_number(options, "offsets.timeout.seconds", 120, float, 1),
            extra=tuple(sorted((k[len(PASSTHROUGH) :], v) for k, v in options.items() if k.startswith(PASSTHROUGH))),
        )

    def group_configs(self):
        """The KIP-848 group configs the options set ({} when they set none)."""
        if not self.session_timeout_ms:
            return {}
        return {
            "consumer.session.timeout.ms": str(self.session_timeout_ms),
            "consumer.heartbeat.interval.ms": str(self.heartbeat_interval_ms),
        }

    def client(self):
        """librdkafka settings every client of the source shares: the cluster, its security, the DC."""
        return {
            "bootstrap.servers": self.bootstrap_servers,
            **read_client_config(self.client_config),
            **dict(self.extra),
            "client.rack": self.rack,
        }

    def admin_config(self):
        """The admin client's settings: the source's, without the DC (an admin client has none)."""
        return {k: v for k, v in self.client().items() if k != "client.rack"}

    def member_config(self):
        return {
            **self.client(),
            "group.id": self.group,
            "group.protocol": "consumer",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "client.id": f"{self.group}-{self.rack}-driver",
        }

    def reader_config(self):
        # group.id only because librdkafka's consumer requires one: assign() never joins, and nothing commits.
        return {
            **self.client(),
            "group.id": self.group,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            # A range that is gone (retention) fails the read instead of being skipped.
            "auto.offset.reset": "error",
            "client.id": f"{self.group}-{self.rack}-reader",
            **({"statistics.interval.ms": 100} if self.fetch_stats else {}),
        }
