"""The exporter's settings file (JSON, written by the stretch.kafka collection's kafka_monitoring role), checked.

    {"bootstrap_servers": "host:port,...",
     "client_config": {kafka-python's settings: security_protocol, ssl_*, sasl_*},
     "dc_networks": {DC: [CIDR]},
     "interval_seconds": 10, "timeout_seconds": 10,
     "stale_seconds": 3 * (interval_seconds + timeout_seconds)}

stale_seconds: a part whose last read ended longer ago is stale (its reader
hangs), and is served as a failed read. A read makes a few requests, each
bounded by timeout_seconds, every interval_seconds: three of both is three
missed reads.

The admin connection is given in kafka-python's names (the topics' and
partitions' reads go through it) and translated to librdkafka's for the
groups' reads.
"""

from __future__ import annotations

import ipaddress
import json


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
    seconds = {}
    for key in ("interval_seconds", "timeout_seconds", "stale_seconds"):
        default = 3 * (seconds["interval_seconds"] + seconds["timeout_seconds"]) if key == "stale_seconds" else 10
        value = settings.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise SettingsError(f"{key} must be a positive number of seconds, not {value!r}")
        seconds[key] = float(value)
    return {
        "bootstrap_servers": settings["bootstrap_servers"],
        "client_config": dict(settings.get("client_config") or {}),
        "dc_networks": parsed,
        **seconds,
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


# A connection librdkafka lost is retried with a backoff that doubles up to reconnect.backoff.max.ms (10 s of its
# own): after a DC's brokers come back, a group's coordinator there could stay unasked for longer than a read may
# take (timeout_seconds, 10 s). At most a second, as the project's clients run (docs/wan.md).
RECONNECT_BACKOFF_MAX_MS = 1000


def admin_config(settings):
    """The confluent-kafka admin client's settings: the cluster, the connection's, the reconnect backoff."""
    return {"bootstrap.servers": settings["bootstrap_servers"], "reconnect.backoff.max.ms": RECONNECT_BACKOFF_MAX_MS,
            **librdkafka_config(settings["client_config"])}  # fmt: skip


def librdkafka_config(client_config):
    """librdkafka's settings for kafka-python's; SettingsError naming one it has no equivalent for."""
    unknown = sorted(set(client_config) - set(LIBRDKAFKA) - {"ssl_check_hostname"})
    if unknown:
        raise SettingsError(f"client_config has setting(s) {unknown} the exporter cannot give librdkafka")
    out = {LIBRDKAFKA[k]: v for k, v in client_config.items() if k in LIBRDKAFKA}
    if client_config.get("ssl_check_hostname") is False:
        out["ssl.endpoint.identification.algorithm"] = "none"
    return out
