"""The source's options, parsed and judged once, and the client settings file they may name.

The options are Spark's own Kafka source's (format("kafka"),
spark-sql-kafka-0-10) wherever they apply to a source whose partitions a
consumer group assigns, with Spark's meaning: a job written for
format("kafka") runs with format("kafka-group") by changing the format name
and adding the group and the DC. Keys are case-insensitive, as Spark's are
(Spark hands a Python data source its options with their keys in lower
case), and so are the values Spark reads case-insensitively (earliest,
latest, true, false). Every option is judged here, at the DataFrame's
load(): an unknown one is refused by name (with the known name it is
closest to), a Spark option that cannot apply here is refused with the
reason, and no secret enters Spark's plan.

kafka.<setting> passes a client setting to every Kafka client of the
source, as in Spark; the clients here are librdkafka's, not Java's, so a
Java client's name is translated where librdkafka has an equivalent and
refused, naming the equivalent, where it has none.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path

NAME = "kafka-group"  # the source's name in spark.readStream.format(...)


class SourceError(Exception):
    """The source cannot go on: the streaming query fails with this message."""


class SettingError(SourceError):
    """A setting is wrong (an option, the client settings file, the cluster it names): starting again cannot help."""


# The options, in their canonical spelling (Spark's where Spark has the option), with the names they also go
# by (this source's names before it took Spark's): an alias means exactly what its option means.
OPTIONS = {
    "kafka.bootstrap.servers": ("bootstrap.servers",),
    "subscribe": ("topics",),
    "subscribePattern": (),
    "kafka.group.id": ("group.id",),
    "kafka.client.rack": ("client.rack",),
    "client.config": (),
    "startingOffsets": ("starting.offsets",),
    "startingTimestamp": (),
    "startingOffsetsByTimestamp": (),
    "startingOffsetsByTimestampStrategy": (),
    "maxOffsetsPerTrigger": (),
    "minOffsetsPerTrigger": (),
    "maxTriggerDelay": (),
    "maxOffsetsPerPartition": ("max.records.per.partition",),
    "maxRecordsPerPartition": (),
    "minPartitions": (),
    "includeHeaders": (),
    "includeBroker": ("fetch.stats",),
    "failOnDataLoss": (),
    "kafkaConsumer.pollTimeoutMs": ("read.timeout.seconds",),
    "offsets.timeout.seconds": (),
    "group.session.timeout.ms": (),
    "group.heartbeat.interval.ms": (),
    "events": (),
}
# An alias whose value is in another unit than its option's: the factor to the option's unit.
ALIAS_SCALE = {"read.timeout.seconds": 1000}
REQUIRED = ("kafka.bootstrap.servers", "kafka.group.id", "kafka.client.rack")
# First-class options that are also kafka.<setting> names in Spark: not passed through as such.
PASSTHROUGH = "kafka."
FIRST_CLASS = {name.lower() for name in OPTIONS if name.startswith(PASSTHROUGH)}

BATCH_ONLY = (
    'a stream has no end: the source reads streams only (a batch read of a range is format("kafka")\'s, '
    'spark.read.format("kafka") with startingOffsets and endingOffsets)'
)
# Spark's options that cannot apply to a source whose partitions the group assigns, and why.
REFUSED = {
    "assign": (
        "the consumer group assigns the partitions: a job given fixed partitions would neither share them with "
        'the other DCs\' jobs nor take theirs over; use subscribe or subscribePattern (or format("kafka") for '
        "fixed partitions)"
    ),
    "endingOffsets": BATCH_ONLY,
    "endingTimestamp": BATCH_ONLY,
    "endingOffsetsByTimestamp": BATCH_ONLY,
    "groupIdPrefix": (
        "a generated group id would make each job a group of its own, and the group is what the jobs of every DC "
        "share: give kafka.group.id, the same in every DC"
    ),
    "fetchOffset.numRetries": (
        "the end offsets are read again at every trigger; a partition whose end offset stays unreadable for "
        "offsets.timeout.seconds fails the query: set that"
    ),
    "fetchOffset.retryIntervalMs": "the end offsets are read again at every trigger: set offsets.timeout.seconds",
}
REFUSED_LOWER = {name.lower(): (name, why) for name, why in REFUSED.items()}

# Spark's spark.redaction.regex by default: Spark hides a matching option's value in its UI; here no such
# option enters the plan (its logs, event logs and UI) at all.
REDACTION = re.compile(r"(?i)secret|password|token|access[.]?key")
# Client settings that hold a secret, though their names do not say so.
SECRETS = {
    "sasl.password",
    "sasl.jaas.config",
    "sasl.oauthbearer.config",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.assertion.private.key.pem",
    "sasl.oauthbearer.assertion.private.key.passphrase",
    "ssl.key.password",
    "ssl.key.pem",
    "ssl.keystore.password",
    "ssl.keystore.key",
    "ssl.truststore.password",
}
BYTES = 'keys and values are bytes: deserialize them with DataFrame operations, as with format("kafka")'
# Client settings the source sets itself, or that a Kafka source must not take.
OWNED = {
    "group.protocol": "the group member always uses the consumer group protocol (KIP-848)",
    "enable.auto.commit": 'the source commits each finished micro-batch itself (format("kafka") refuses it too)',
    "enable.auto.offset.store": "the source commits each finished micro-batch itself",
    "auto.offset.reset": (
        "set startingOffsets (where a partition without a committed offset begins) and failOnDataLoss (whether "
        'a range no longer in the log fails the query), as with format("kafka")'
    ),
    "session.timeout.ms": "with the consumer group protocol the brokers hold it: set group.session.timeout.ms",
    "heartbeat.interval.ms": "with the consumer group protocol the brokers hold it: set group.heartbeat.interval.ms",
    "partition.assignment.strategy": "with the consumer group protocol the brokers assign (group.remote.assignor)",
    "statistics.interval.ms": "set includeBroker, which turns the executors' statistics on",
    "client.id": "the source names its clients <group>-<rack>-driver and <group>-<rack>-reader",
    "key.deserializer": BYTES,
    "value.deserializer": BYTES,
    "interceptor.classes": "a Java client's classes: librdkafka takes none",
}
# Java client settings librdkafka has under another name.
JAVA_RENAMES = {
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
    "request.timeout.ms": "socket.timeout.ms",
    "ssl.truststore.certificates": "ssl.ca.pem",
    "ssl.keystore.certificate.chain": "ssl.certificate.pem",
}
# Java client settings librdkafka has no equivalent of, and what to give instead.
JAVA_ONLY = {
    "sasl.jaas.config": (
        "librdkafka reads no JAAS configuration: give sasl.username and sasl.password (with sasl.mechanism and "
        "security.protocol) in the client.config file"
    ),
    "sasl.login.callback.handler.class": (
        "a Java class: for OAUTHBEARER, give librdkafka's sasl.oauthbearer.method=oidc, sasl.oauthbearer.client.id, "
        "sasl.oauthbearer.client.secret and sasl.oauthbearer.token.endpoint.url in the client.config file"
    ),
    "sasl.client.callback.handler.class": "a Java class: librdkafka takes none",
    "sasl.login.class": "a Java class: librdkafka takes none",
    "ssl.protocol": "librdkafka takes the TLS versions OpenSSL allows; it has no such setting",
    "ssl.enabled.protocols": "librdkafka takes the TLS versions OpenSSL allows; it has no such setting",
    "ssl.keymanager.algorithm": "a Java security setting: librdkafka uses OpenSSL",
    "ssl.trustmanager.algorithm": "a Java security setting: librdkafka uses OpenSSL",
    "ssl.secure.random.implementation": "a Java security setting: librdkafka uses OpenSSL",
    "ssl.engine.factory.class": "a Java class: librdkafka takes none",
    "security.providers": "a Java security setting: librdkafka uses OpenSSL",
    "max.poll.records": (
        "librdkafka has no equivalent (the executors read whole ranges): maxOffsetsPerTrigger bounds a micro-batch"
    ),
    "default.api.timeout.ms": "librdkafka has no equivalent: kafkaConsumer.pollTimeoutMs bounds a read",
}
PEM_SUFFIXES = (".pem", ".crt", ".cer")
PKCS12_SUFFIXES = (".p12", ".pfx")
# Topic names Kafka allows; anything else (a "^", which librdkafka reads as a pattern) is refused.
TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
# What the brokers' regular expressions (RE2J, KIP-848's subscriptions) lack of Java's and Python's.
NOT_RE2 = re.compile(r"\(\?<?[=!]|\\[1-9]|\(\?>|[*+?}]\+")
DEFAULT_POLL_TIMEOUT_MS = 120_000
DEFAULT_MAX_TRIGGER_DELAY = "15m"
DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d)?\s*", re.IGNORECASE)
DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


# Spark's Kafka source's columns, in its order (its KafkaRecordToRowConverter), as DDL types; headers with
# includeHeaders, and this source's broker column (includeBroker) after them.
COLUMNS = (
    ("key", "binary"),
    ("value", "binary"),
    ("topic", "string"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("timestamp", "timestamp"),
    ("timestampType", "int"),
)
HEADERS = ("headers", "array<struct<key:string,value:binary>>")
BROKER = ("broker", "int")


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


def _canonical():
    """{lower-case name or alias: (canonical name, alias or None)}."""
    out = {}
    for name, aliases in OPTIONS.items():
        out[name.lower()] = (name, None)
        for alias in aliases:
            out[alias.lower()] = (name, alias)
    return out


CANONICAL = _canonical()


def closest(name):
    """The known option a misspelt name is closest to, in its canonical spelling, or None."""
    known = {**{k: v[0] for k, v in CANONICAL.items()}, **{k: v[0] for k, v in REFUSED_LOWER.items()}}
    found = difflib.get_close_matches(name.lower(), list(known), n=1, cutoff=0.75)
    return known[found[0]] if found else None


def passthrough(options):
    """The kafka.<setting> options (lower-case keys, without the prefix) as librdkafka settings.

    A secret, or a key or value Spark's redaction pattern matches, is refused
    first, without its value in the message; then a setting the source sets
    itself, a Java one librdkafka has no equivalent of, each with the reason
    or the equivalent; a Java name librdkafka spells otherwise is translated.
    """
    given = {k[len(PASSTHROUGH) :]: v for k, v in options.items() if k.startswith(PASSTHROUGH) and k not in FIRST_CLASS}
    secret = sorted(k for k, v in given.items() if k in SECRETS or REDACTION.search(k) or REDACTION.search(v))
    if secret:
        advice = "; ".join(f"kafka.{k}: {JAVA_ONLY[k]}" for k in secret if k in JAVA_ONLY)
        raise SettingError(
            f"option(s) {', '.join(f'kafka.{k}' for k in secret)} would put a secret in Spark's plan, UI and logs "
            f"(a secret's name, or a key or value Spark's redaction pattern matches): give it in the client.config "
            f"file, which the driver and the executors read on their own hosts{'; ' + advice if advice else ''}"
        )
    for table in (OWNED, JAVA_ONLY):
        refused = sorted(k for k in given if k in table)
        if refused:
            raise SettingError("; ".join(f"option kafka.{k} is refused: {table[k]}" for k in refused))
    out = {}
    for key, value in given.items():
        if key.startswith(("ssl.truststore.", "ssl.keystore.")) and key not in JAVA_RENAMES:
            continue  # below, together
        if key == "ssl.endpoint.identification.algorithm" and not value.strip():
            value = "none"  # Java's empty value turns the check off; librdkafka's "none" does
        out[JAVA_RENAMES.get(key, key)] = value
    out.update(_stores(given))
    return out


def _stores(given):
    """librdkafka's settings for a Java truststore and keystore given as files (PEM or PKCS#12 only)."""
    out = {}
    location, kind = given.get("ssl.truststore.location"), given.get("ssl.truststore.type", "").upper()
    if location:
        if kind == "PEM" or (not kind and location.lower().endswith(PEM_SUFFIXES)):
            out["ssl.ca.location"] = location
        else:
            raise SettingError(
                f"option kafka.ssl.truststore.location: librdkafka reads no Java truststore "
                f"({kind or 'JKS'}): give the CA certificates as a PEM file, kafka.ssl.truststore.location with "
                "kafka.ssl.truststore.type=PEM (or kafka.ssl.ca.location)"
            )
    elif kind and kind != "PEM":
        raise SettingError(f"option kafka.ssl.truststore.type {kind}: librdkafka reads PEM certificates only")
    location, kind = given.get("ssl.keystore.location"), given.get("ssl.keystore.type", "").upper()
    if location:
        if kind == "PKCS12" or (not kind and location.lower().endswith(PKCS12_SUFFIXES)):
            out["ssl.keystore.location"] = location  # librdkafka's PKCS#12 keystore
        elif kind == "PEM" or (not kind and location.lower().endswith(PEM_SUFFIXES)):
            out["ssl.certificate.location"] = out["ssl.key.location"] = location  # the key and its chain
        else:
            raise SettingError(
                f"option kafka.ssl.keystore.location: librdkafka reads no Java keystore ({kind or 'JKS'}): give a "
                "PKCS12 or PEM one (kafka.ssl.keystore.type), or kafka.ssl.certificate.location and "
                "kafka.ssl.key.location"
            )
    elif kind and kind not in ("PEM", "PKCS12"):
        raise SettingError(f"option kafka.ssl.keystore.type {kind}: librdkafka reads PEM or PKCS12 keys only")
    return out


def _number(options, name, default, kind=int, least=0):
    raw = options.get(name.lower(), default)
    try:
        value = kind(str(raw).strip())
    except (TypeError, ValueError):
        raise SettingError(f"option {name} {raw!r} is not a number") from None
    if value < least:
        raise SettingError(f"option {name} {raw!r} must be at least {least}")
    return value


def _boolean(options, name, default):
    raw = options.get(name.lower(), default)
    value = str(raw).strip().lower()
    if value not in ("true", "false"):
        raise SettingError(f"option {name} {raw!r} is not true or false")
    return value == "true"


def _choice(options, name, default, choices):
    raw = options.get(name.lower(), default)
    value = str(raw).strip().lower()
    if value not in choices:
        raise SettingError(f"option {name} {raw!r} is not {' or '.join(choices)}")
    return value


def duration_ms(name, raw):
    """Milliseconds of a Spark duration ("15m", "30s", "500ms"; a bare number is milliseconds)."""
    found = DURATION.fullmatch(str(raw))
    if not found:
        raise SettingError(f"option {name} {raw!r} is not a duration (500ms, 30s, 15m, 1h)")
    number, unit = found.groups()
    return int(float(number) * DURATION_MS[(unit or "ms").lower()])


def _per_partition(name, raw, subscribed, least):
    """((topic, partition), number) pairs of Spark's per-partition JSON: {"topic": {"0": 23, "1": -2}}."""
    try:
        parsed = json.loads(raw)
    except ValueError as exc:
        raise SettingError(f"option {name} is not earliest, latest or JSON ({exc})") from None
    if not isinstance(parsed, dict) or not all(isinstance(p, dict) for p in parsed.values()):
        raise SettingError(f'option {name} is not JSON of the form {{"topic": {{"0": 23, "1": -2}}}}')
    out = []
    for topic, partitions in parsed.items():
        if not subscribed(topic):
            raise SettingError(f"option {name} names topic {topic!r}, which the job does not subscribe to")
        for partition, number in partitions.items():
            if not str(partition).isdigit() or not isinstance(number, int) or isinstance(number, bool):
                raise SettingError(f"option {name}: {topic} {partition!r}: {number!r} is not partition: number")
            if number < least:
                raise SettingError(f"option {name}: {topic} {partition}: {number} must be at least {least}")
            out.append(((topic, int(partition)), number))
    return tuple(sorted(out))


def _topics(options):
    """(topics, pattern) of subscribe or subscribePattern: exactly one of them."""
    listed, pattern = options.get("subscribe", "").strip(), options.get("subscribepattern", "").strip()
    if listed and pattern:
        raise SettingError("options subscribe and subscribePattern: give one of them")
    if pattern:
        if NOT_RE2.search(pattern):
            raise SettingError(
                f"option subscribePattern {pattern!r}: the brokers match it (RE2J), which has no lookaround, "
                "backreference or possessive quantifier"
            )
        try:
            re.compile(pattern)
        except re.error as exc:
            raise SettingError(f"option subscribePattern {pattern!r} is no regular expression: {exc}") from None
        return (), pattern
    topics = tuple(t.strip() for t in listed.split(",") if t.strip())
    if not topics:
        raise SettingError(
            f"the {NAME} source needs the option subscribe (topics, comma-separated) or subscribePattern"
        )
    bad = [t for t in topics if not TOPIC.fullmatch(t)]
    if bad:
        raise SettingError(f"option subscribe: {', '.join(map(repr, bad))} is no topic name (letters, digits, . _ -)")
    return topics, ""


def _named(options):
    """The options under their canonical lower-case names: aliases folded in, unknown and refused ones refused."""
    out, seen = {}, {}
    refused, unknown = [], []
    for key, value in options.items():
        if key in CANONICAL:
            name, alias = CANONICAL[key]
            if name.lower() in seen:
                raise SettingError(
                    f"options {seen[name.lower()]} and {alias or name} are two names of one option: give one"
                )
            seen[name.lower()] = alias or name
            if alias in ALIAS_SCALE:
                value = str(_number({key: value}, alias, 0, float) * ALIAS_SCALE[alias])
            out[name.lower()] = value
        elif key in REFUSED_LOWER:
            refused.append(REFUSED_LOWER[key])
        elif key.startswith(PASSTHROUGH):
            out[key] = value
        else:
            unknown.append(key)
    if refused:
        raise SettingError(
            "; ".join(f"option {name} does not apply to the {NAME} source: {why}" for name, why in refused)
        )
    if unknown:
        hints = [f"{k} (did you mean {closest(k)}?)" if closest(k) else k for k in sorted(unknown)]
        raise SettingError(
            f"unknown option(s) {', '.join(hints)}: the {NAME} source takes {', '.join(OPTIONS)} and "
            "kafka.<client setting> (the package's README lists them)"
        )
    return out


@dataclass(frozen=True)
class Settings:
    """The source's options (all strings in Spark's option map), parsed once."""

    bootstrap_servers: str
    topics: tuple  # the topics subscribed to; () with a pattern
    group: str
    rack: str
    pattern: str = ""  # subscribePattern: the brokers assign the partitions of every topic it matches
    client_config: str = ""  # a key=value file, on the driver's host and on every executor's
    starting_offsets: str = "latest"  # where a partition the group has no offset for begins: earliest, latest
    starting_by_offset: tuple = ()  # ((topic, partition), offset) of startingOffsets' JSON (-2 earliest, -1 latest)
    starting_timestamp: int = -1  # startingTimestamp (ms), -1 when not given
    starting_by_timestamp: tuple = ()  # ((topic, partition), ms) of startingOffsetsByTimestamp
    timestamp_strategy: str = "error"  # no record at or after the timestamp: fail, or start at the end (latest)
    max_offsets_per_trigger: int = 0  # records per micro-batch over every partition, shared by lag; 0: no cap
    min_offsets_per_trigger: int = 0  # a batch waits for this many new records, at most max_trigger_delay_ms
    max_trigger_delay_ms: int = 900_000
    max_records: int = 0  # maxOffsetsPerPartition: records per partition per micro-batch; 0: no cap
    max_records_per_task: int = 0  # maxRecordsPerPartition: a partition's range split into tasks of at most this
    min_partitions: int = 0  # minPartitions: at least this many tasks per micro-batch, splitting the largest ranges
    include_headers: bool = False
    include_broker: bool = False  # a broker column: the broker that served each row (librdkafka statistics)
    fail_on_data_loss: bool = True  # a range no longer in the log fails the query (else it is skipped)
    session_timeout_ms: int = 0  # the group's consumer.session.timeout.ms to set; 0: leave the group's
    heartbeat_interval_ms: int = 0  # the group's consumer.heartbeat.interval.ms to set; 0: leave the group's
    events: str = ""  # the member's events (JSON lines), on the driver's host
    read_timeout: float = DEFAULT_POLL_TIMEOUT_MS / 1000  # kafkaConsumer.pollTimeoutMs: a read without progress fails
    offsets_timeout: float = 120.0  # seconds a partition's end offset may stay unreadable
    extra: tuple = ()  # more librdkafka settings (kafka.* options, translated), as (key, value) pairs
    passed: tuple = ()  # the kafka.* options' keys as given (Java's names untranslated), to name them in errors

    @classmethod
    def from_options(cls, options):
        """Settings of Spark's option map; SettingError names a missing, unknown, refused or bad option."""
        options = _named({str(k).strip().lower(): str(v) for k, v in dict(options).items()})
        extra = passthrough(options)  # first: a secret is refused before any message could show it
        missing = [name for name in REQUIRED if not options.get(name.lower(), "").strip()]
        if missing:
            raise SettingError(
                f"the {NAME} source needs the option(s) {', '.join(missing)} (the group is the same in every DC's "
                "job, the rack is the DC this one runs in)"
            )
        topics, pattern = _topics(options)

        def subscribed(topic):
            return topic in topics if topics else re.fullmatch(pattern, topic) is not None

        starting, by_offset = options.get("startingoffsets", "latest").strip(), ()
        if starting.lower() in ("earliest", "latest"):
            starting = starting.lower()
        elif starting.startswith("{"):
            by_offset, starting = _per_partition("startingOffsets", starting, subscribed, -2), "earliest"
        else:
            raise SettingError(f"option startingOffsets {starting!r} is not earliest, latest or JSON")
        by_timestamp = ()
        if options.get("startingoffsetsbytimestamp", "").strip():
            by_timestamp = _per_partition(
                "startingOffsetsByTimestamp", options["startingoffsetsbytimestamp"], subscribed, 0
            )
        session = _number(options, "group.session.timeout.ms", 0)
        heartbeat = _number(options, "group.heartbeat.interval.ms", 0)
        if (session or heartbeat) and not (session > heartbeat > 0):
            raise SettingError(
                f"option group.session.timeout.ms ({session}) must be longer than group.heartbeat.interval.ms "
                f"({heartbeat}), and both set"
            )
        max_per_trigger = (
            _number(options, "maxOffsetsPerTrigger", 0, least=1) if "maxoffsetspertrigger" in options else 0
        )
        return cls(
            bootstrap_servers=options["kafka.bootstrap.servers"].strip(),
            topics=topics,
            pattern=pattern,
            group=options["kafka.group.id"].strip(),
            rack=options["kafka.client.rack"].strip(),
            client_config=options.get("client.config", ""),
            starting_offsets=starting,
            starting_by_offset=by_offset,
            starting_timestamp=_number(options, "startingTimestamp", 0) if "startingtimestamp" in options else -1,
            starting_by_timestamp=by_timestamp,
            timestamp_strategy=_choice(options, "startingOffsetsByTimestampStrategy", "error", ("error", "latest")),
            max_offsets_per_trigger=max_per_trigger,
            min_offsets_per_trigger=_number(options, "minOffsetsPerTrigger", 0),
            max_trigger_delay_ms=duration_ms(
                "maxTriggerDelay", options.get("maxtriggerdelay", DEFAULT_MAX_TRIGGER_DELAY)
            ),
            max_records=_number(options, "maxOffsetsPerPartition", 0),
            max_records_per_task=_number(options, "maxRecordsPerPartition", 0),
            min_partitions=_number(options, "minPartitions", 0),
            include_headers=_boolean(options, "includeHeaders", "false"),
            include_broker=_boolean(options, "includeBroker", "false"),
            fail_on_data_loss=_boolean(options, "failOnDataLoss", "true"),
            session_timeout_ms=session,
            heartbeat_interval_ms=heartbeat,
            events=options.get("events", ""),
            read_timeout=_number(options, "kafkaConsumer.pollTimeoutMs", DEFAULT_POLL_TIMEOUT_MS, float, 1) / 1000,
            offsets_timeout=_number(options, "offsets.timeout.seconds", 120, float, 1),
            extra=tuple(sorted(extra.items())),
            passed=tuple(
                sorted(k[len(PASSTHROUGH) :] for k in options if k.startswith(PASSTHROUGH) and k not in FIRST_CLASS)
            ),
        )

    def columns(self):
        """[(name, DDL type)] of the rows: Spark's Kafka source's, headers and the broker when asked for."""
        return [*COLUMNS, *([HEADERS] if self.include_headers else []), *([BROKER] if self.include_broker else [])]

    def schema(self):
        """The rows' schema as a DDL string."""
        return ", ".join(f"{name} {kind}" for name, kind in self.columns())

    def subscription(self):
        """What the group member subscribes to: the topics, or the pattern as librdkafka takes one (a leading ^)."""
        if self.pattern:
            return [self.pattern if self.pattern.startswith("^") else f"^{self.pattern}"]
        return list(self.topics)

    def starting(self, topic, partition):
        """Where a partition the group has no committed offset for begins: "earliest", "latest", an offset
        (int), or ("timestamp", ms) (startingTimestamp before startingOffsetsByTimestamp before
        startingOffsets, as in Spark)."""
        if self.starting_timestamp >= 0:
            return ("timestamp", self.starting_timestamp)
        for (t, p), stamp in self.starting_by_timestamp:
            if (t, p) == (topic, partition):
                return ("timestamp", stamp)
        for (t, p), offset in self.starting_by_offset:
            if (t, p) == (topic, partition):
                return {-2: "earliest", -1: "latest"}.get(offset, offset)
        if self.starting_by_offset or self.starting_by_timestamp:
            return "earliest"  # a partition the JSON does not name: as Spark starts a partition it discovers
        return self.starting_offsets

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
            # librdkafka stops fetching a partition for this long once its queue holds queued.min.messages
            # (100,000): 1 s by default, which a reader that drains the queue faster spends waiting.
            "fetch.queue.backoff.ms": 10,
            **self.client(),
            "group.id": self.group,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            # A range that is gone (retention) fails the read (failOnDataLoss), or is skipped to what is left.
            "auto.offset.reset": "error" if self.fail_on_data_loss else "earliest",
            "client.id": f"{self.group}-{self.rack}-reader",
            **({"statistics.interval.ms": 100} if self.include_broker else {}),
        }
