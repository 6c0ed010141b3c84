"""Spark's own security, from one secret per DC's Spark cluster (docs/security.md#spark).

A standalone cluster has every piece off by default. Here every party of a
DC's cluster (its master, its workers, the executors the workers launch, and
the driver of every application submitted to it) shares that cluster's
secret, and:

  - spark.authenticate: every RPC connection proves the secret first, with
    Spark's own protocol (auth engine version 2, which derives the session
    key through HKDF), never falling back to SASL DIGEST-MD5;
  - spark.network.crypto.enabled: the RPC is encrypted with the key that
    handshake derives. AES-CTR, Spark's default: AES-GCM
    (spark.network.crypto.cipher) breaks RPC in Spark 4.0.0 (SPARK-56227:
    a worker never registers), and TLS for RPC (spark.ssl.rpc.*) would need
    a key and certificate on every driver as well as on every node;
  - spark.io.encryption.enabled: shuffle and spill files are encrypted on
    disk with a key per application;
  - no application runs a web UI, and the master's and workers' UIs listen
    on the loopback address only (roles/spark); the REST submission server,
    which has no authentication, stays off;
  - spark.redaction.regex and spark.redaction.string.regex hide secrets,
    Kafka passwords and JAAS configurations wherever Spark shows or logs
    configuration.

Spark 4.0 reads a standalone cluster's secret from spark.authenticate.secret
only (its secret-file settings are for Kubernetes), so the settings reach
every JVM in a Java properties file of mode 0600 (--properties-file of the
daemons and of spark-submit), never on a command line. The executors get the
secret from their worker, in their environment, and never on theirs.
"""

from __future__ import annotations

import re

from ansible_collections.stretch.kafka.plugins.module_utils import java_properties

SECRET = "spark.authenticate.secret"
REST = "spark.master.rest.enabled"
# Long enough that guessing it is hopeless; the testbed makes 32 characters.
MIN_SECRET_LENGTH = 16
# Spark redacts a setting's value when this matches its key or its value
# (Spark's default, plus JAAS configurations and inline private keys).
REDACTION_REGEX = r"(?i)secret|password|token|access[.]?key|jaas|keystore[.]key|private[._-]?key"
# Spark replaces the matching part of text it produces (explain output).
STRING_REDACTION_REGEX = r'(?i)password\s*=\s*("[^"]*"|[^\s,;)]+)'

KINDS = ("daemon", "application")

# What every party of a cluster runs with, besides the secret.
COMMON = {
    "spark.authenticate": "true",
    "spark.network.crypto.enabled": "true",
    "spark.network.crypto.authEngineVersion": "2",
    "spark.network.crypto.saslFallback": "false",
    "spark.io.encryption.enabled": "true",
    "spark.redaction.regex": REDACTION_REGEX,
    "spark.redaction.string.regex": STRING_REDACTION_REGEX,
}
ONLY = {
    # The master refuses to start with the REST server on and a secret set; off is also the default.
    "daemon": {REST: "false"},
    # An application's UI would serve its configuration and plans on every address of the driver's host.
    "application": {"spark.ui.enabled": "false"},
}
# Settings the roles derive: an operator's extra settings may not change them.
DERIVED_PREFIXES = ("spark.authenticate", "spark.network.crypto.", "spark.io.encryption.", "spark.redaction.")
DERIVED = (REST, "spark.ui.enabled", "spark.ssl.rpc.enabled")


class SparkSecurityError(ValueError):
    pass


def properties(secret, kind, master=""):
    """The security settings of one party of a DC's cluster, as an ordered {key: value}.

    kind: "daemon" (a master or a worker) or "application" (a driver).
    secret: the cluster's secret. A daemon, and an application on a
    standalone cluster (master spark://...), need it; in local mode, on YARN
    or on Kubernetes, Spark makes one for the application.
    """
    if kind not in KINDS:
        raise SparkSecurityError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    if secret or kind == "daemon" or str(master).startswith("spark://"):
        problem = secret_problem(secret)
        if problem:
            raise SparkSecurityError(f"the Spark secret {problem}")
    out = dict(COMMON)
    if secret:
        out[SECRET] = secret
    out.update(ONLY[kind])
    return out


def secret_problem(secret):
    """Why secret cannot be a cluster's secret ('' when it can). The message never holds the secret."""
    if not isinstance(secret, str) or not secret:
        return "is missing or empty"
    if len(secret) < MIN_SECRET_LENGTH:
        return f"is {len(secret)} characters long, fewer than {MIN_SECRET_LENGTH}"
    if not all("!" <= c <= "~" for c in secret):
        return "must be printable ASCII without spaces"
    return ""


def render(settings):
    """A Java properties file of {key: value}, one key=value line each, in order; booleans as Spark
    writes them (module_utils/java_properties.py)."""
    return java_properties.render(settings)


def redacted(key, value, regex=REDACTION_REGEX):
    """Whether Spark hides value: as its Utils.redact does, when the regex matches the key or the value."""
    pattern = re.compile(regex)
    return bool(pattern.search(key) or pattern.search(value))


# A setting's name as Spark writes them; an entry whose name is not one is refused without being shown.
SETTING_NAME = re.compile(r"[A-Za-z0-9._-]+")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _derived(key):
    return key.startswith(DERIVED_PREFIXES) or key in DERIVED or key == REST


def _command_line_entries(conf, variable):
    """[(key, value)] of a list of KEY=VALUE strings (spark-submit's --conf), and why entries cannot go on a
    command line: each problem names variable and the entry's index, never its text, which may hold a secret."""
    entries, problems = [], []
    for index, item in enumerate(conf):
        where = f"{variable}[{index}]"
        key, sep, value = item.partition("=") if isinstance(item, str) else ("", "", "")
        key = key.strip()
        if not sep or not SETTING_NAME.fullmatch(key):
            problems.append(
                f"{where} is not KEY=VALUE (a Spark setting's name, '=', its value); its text is not shown, as it "
                "may hold a secret"
            )
            continue
        if CONTROL.search(value):
            problems.append(
                f"{where} ({key}) holds a line break or another control character, which would end its line of the "
                "systemd unit it goes into"
            )
        elif not _derived(key) and redacted(key, value):
            problems.append(
                f"{where} ({key}) holds a secret (Spark redacts it: its name or value matches spark.redaction.regex): "
                "these settings go on spark-submit's command line, which every local user can read, and into a "
                "unit file; the roles take no secret there"
            )
        entries.append((key, value))
    return entries, problems


def override_problems(conf, variable):
    """Why extra Spark settings may not be used, naming variable and key.

    conf: a dict, which goes into a properties file of mode 0600, or a list of
    KEY=VALUE strings, which goes on spark-submit's command line (--conf) and
    into a systemd unit: such a list may hold no secret (a setting Spark
    would redact), no control character and no malformed entry; those are
    named by their index, never by their text.
    """
    if isinstance(conf, dict):
        entries, problems = [(str(k), v) for k, v in conf.items()], []
    elif isinstance(conf, list):
        entries, problems = _command_line_entries(conf, variable)
    else:
        return [f"{variable} must be a list of KEY=VALUE settings"]
    for key, value in entries:
        if key == REST and str(value).strip().lower() == "true":
            problems.append(
                f"{variable} sets {REST}=true: the REST submission server (port 6066) has no authentication, "
                "and a master with a secret refuses to start with it"
            )
        elif key == REST:
            continue
        elif _derived(key):
            problems.append(
                f"{variable} sets {key}, which the roles derive from spark_auth_secret (docs/security.md#spark)"
            )
    return problems


def secret_conflicts(hosts):
    """Why the Spark hosts' secrets cannot work together; each message names hosts and DCs, never a secret.

    hosts: [{"host", "dc", "secret"}]. Every host of a DC's cluster must hold
    the same secret (a worker with another is refused by its master), and no
    two DCs' clusters may share one (each cluster admits only its own DC's
    applications).
    """
    by_dc = {}
    for h in hosts:
        by_dc.setdefault(str(h.get("dc") or ""), []).append(h)
    problems, first_of = [], {}
    for dc in sorted(by_dc):
        members = by_dc[dc]
        secrets = {}
        for h in members:
            secrets.setdefault(h.get("secret") or "", []).append(h["host"])
        if len(secrets) > 1:
            groups = sorted(secrets.values(), key=lambda names: (-len(names), names))
            problems.append(
                f"the Spark hosts of DC {dc!r} hold {len(secrets)} different spark_auth_secret values "
                f"({'; '.join(', '.join(sorted(g)) for g in groups)}): a worker whose secret is not its master's "
                "is refused by it"
            )
        for secret, names in secrets.items():
            if secret and secret in first_of and first_of[secret][0] != dc:
                other_dc, other_host = first_of[secret]
                problems.append(
                    f"DCs {other_dc!r} ({other_host}) and {dc!r} ({sorted(names)[0]}) share one spark_auth_secret: "
                    "give each DC's Spark cluster its own, so that each admits only its own DC's applications"
                )
            first_of.setdefault(secret, (dc, sorted(names)[0]))
    return problems
