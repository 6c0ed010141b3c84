"""Security derived from the listeners: TLS everywhere, mTLS between nodes, SCRAM for clients, deny by default.

Who is who:
  - every node presents a certificate whose subject CN is its principal
    (User:<CN>, by ssl.principal.mapping.rules); nodes are super users;
  - the admin runner (the roles' modules, the gates, the tools) presents the
    admin certificate, on the controller and replication listeners;
  - clients authenticate with SCRAM users on the client listener, and can do
    only what the declared ACLs allow.

A listener's protocol decides its settings: SSL is mutual TLS (a client
certificate is required), SASL_SSL is TLS plus SASL; PLAINTEXT and
SASL_PLAINTEXT carry no encryption and are refused unless the inventory opts
in (kafka_plaintext_opt_in).
"""

from __future__ import annotations

import re

from ansible_collections.stretch.kafka.plugins.module_utils import flags

TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_SSL", "SASL_PLAINTEXT")
CLEAR_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT")
MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# The certificate's CN is the principal: User:dc1-broker1, User:kafka-admin.
PRINCIPAL_RULES = "RULE:^CN=([^,]+)(,.*)?$/$1/,DEFAULT"
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
# super.users separates principals with ';': a principal holding one, or a
# line break, would name other super users than the one it is.
PRINCIPAL_SYNTAX = re.compile(r"[;\x00-\x1f\x7f]")


class SecurityError(ValueError):
    pass


def uses_tls(listeners):
    return any(spec.get("protocol") in TLS_PROTOCOLS for spec in listeners.values())


def clear_listeners(listeners):
    """The listeners whose traffic is not encrypted."""
    return sorted(name for name, spec in listeners.items() if spec.get("protocol") in CLEAR_PROTOCOLS)


def super_users(records, admin_principal, extra=()):
    """super.users: every node's principal, the admin's, and any extra (each a bare name or User:name)."""
    names = [str(r.get("principal") or r["host"]) for r in records] + [admin_principal, *extra]
    principals = [n if n.startswith("User:") else f"User:{n}" for n in names if n]
    return ";".join(dict.fromkeys(principals))


def principal_problems(records, admin_principal, extra=()):
    """Principals super.users could not hold as themselves: each names its variable (and host), never its value
    beyond what it is."""
    named = [(f"{r['host']}: kafka_tls_principal", r.get("principal")) for r in records]
    named += [("kafka_adminclient_principal", admin_principal)]
    named += [(f"kafka_super_users[{i}]", principal) for i, principal in enumerate(extra or ())]
    return [
        f"{where}={value!r} cannot go into super.users, which separates principals with ';': "
        "a principal holds no ';' and no control character"
        for where, value in named
        if value and PRINCIPAL_SYNTAX.search(str(value))
    ]


def server_properties(listeners, tls, sasl_mechanism, authorizer):
    """The security settings of every node, derived from its listeners.

    tls: {"keystore", "truststore"} paths on the node (or None when no
    listener uses TLS). The key in the keystore is unencrypted PKCS#8 in a
    file only the kafka user reads: Kafka on Java 17 cannot decrypt the
    PBES2 keys that OpenSSL 3 and cryptography write (docs/design.md).
    authorizer: {"super_users"} to turn deny-by-default on, or None.
    """
    props = {}
    if uses_tls(listeners):
        if not tls:
            raise SecurityError("a listener uses TLS but no keystore and truststore are set")
        props.update(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": tls["keystore"],
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": tls["truststore"],
                # Every node checks that the peer's certificate names the host it dialled.
                "ssl.endpoint.identification.algorithm": "https",
                "ssl.principal.mapping.rules": PRINCIPAL_RULES,
            }
        )
    for name, spec in listeners.items():
        prefix = f"listener.name.{name.lower()}."
        if spec.get("protocol") == "SSL":
            props[prefix + "ssl.client.auth"] = "required"
        elif spec.get("protocol") in SASL_PROTOCOLS:
            props[prefix + "ssl.client.auth"] = "none"
            props[prefix + "sasl.enabled.mechanisms"] = sasl_mechanism
            props[prefix + f"{sasl_mechanism.lower()}.sasl.jaas.config"] = SCRAM_LOGIN
    if authorizer:
        props.update(
            {
                "authorizer.class.name": AUTHORIZER,
                "allow.everyone.if.no.acl.found": "false",
                "super.users": authorizer["super_users"],
            }
        )
    return props


# -- how each kind of client is configured, from one description ------------------
# A client description is plain data: {"protocol", "ca", "cert", "key",
# "key_password", "username", "password", "mechanism"} (any may be missing).
# The Spark job's Java settings are derived from the librdkafka ones by the
# job itself (smoke.job), which runs where this collection is not.


def librdkafka(client):
    """Settings for confluent-kafka (librdkafka): the smoke test, the load harness, the tests.

    A client without a username gets the transport only (the cluster model's
    clients per DC); each client adds its own credentials.
    """
    out = {"security.protocol": client["protocol"]}
    if client["protocol"] in TLS_PROTOCOLS:
        out["ssl.ca.location"] = client["ca"]
        out["ssl.endpoint.identification.algorithm"] = "https"
        if client.get("cert"):
            out.update({"ssl.certificate.location": client["cert"], "ssl.key.location": client["key"]})
            if client.get("key_password"):
                out["ssl.key.password"] = client["key_password"]
    if client["protocol"] in SASL_PROTOCOLS:
        out["sasl.mechanism"] = client["mechanism"]
        if "username" in client:
            out.update({"sasl.username": client["username"], "sasl.password": client["password"]})
    return out


def java(client):
    """Settings for Kafka's Java clients (a producer-perf-test, Spark's Kafka source and sink), from the same client
    description: the CA's PEM file as the trust store, and the SCRAM login as a JAAS line."""
    out = {"security.protocol": client["protocol"]}
    if client["protocol"] in TLS_PROTOCOLS:
        out.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": client["ca"],
                    "ssl.endpoint.identification.algorithm": "https"})  # fmt: skip
    if client["protocol"] in SASL_PROTOCOLS:
        out["sasl.mechanism"] = client["mechanism"]
        if "username" in client:
            quoted = {k: str(client[k]).replace("\\", "\\\\").replace('"', '\\"') for k in ("username", "password")}
            out["sasl.jaas.config"] = (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="{quoted["username"]}" password="{quoted["password"]}";'
            )
    return out


def kafka_python(client):
    """Settings for kafka-python: the admin-protocol modules on the admin runner.

    A SASL client without a username gets the transport only: the caller
    logs in with each user's own credentials (kafka_users judges passwords).
    """
    out = {"security_protocol": client["protocol"]}
    if client["protocol"] in TLS_PROTOCOLS:
        out.update({"ssl_cafile": client["ca"], "ssl_check_hostname": True})
        if client.get("cert"):
            out.update({"ssl_certfile": client["cert"], "ssl_keyfile": client["key"]})
            if client.get("key_password"):
                out["ssl_password"] = client["key_password"]
    if client["protocol"] in SASL_PROTOCOLS and client.get("username"):
        out.update(
            {
                "sasl_mechanism": client["mechanism"],
                "sasl_plain_username": client["username"],
                "sasl_plain_password": client["password"],
            }
        )
    return out


# What the roles derive of the admin runner's connection (kafka_python()), and
# where from: kafka_adminclient_config may add other kafka-python settings,
# never these.
ADMIN_DERIVED = {
    "security_protocol": "kafka_adminclient_listener's protocol in kafka_listeners",
    "ssl_cafile": "kafka_tls_pki_dir (the CAs the cluster trusts)",
    "ssl_certfile": "kafka_tls_pki_dir (the admin certificate)",
    "ssl_keyfile": "kafka_tls_pki_dir (the admin certificate's key)",
    "ssl_password": "kafka_tls_pki_dir (the admin key is not encrypted)",
    "ssl_check_hostname": "the roles (hostname verification stays on)",
    "bootstrap_servers": "the inventory's brokers on kafka_adminclient_listener",
}
ADMIN_DERIVED_PREFIXES = {
    "ssl_": "kafka_adminclient_listener and kafka_tls_pki_dir (the admin connection's TLS)",
    "sasl_": "the roles (the admin runner authenticates with its certificate, never SASL)",
}


def admin_config_problems(config):
    """The keys of kafka_adminclient_config that would override what the roles derive, one message each."""
    problems = []
    for key in sorted(config or {}):
        owner = ADMIN_DERIVED.get(key) or next(
            (owner for prefix, owner in ADMIN_DERIVED_PREFIXES.items() if str(key).startswith(prefix)), None
        )
        if owner:
            problems.append(f"kafka_adminclient_config sets {key}, which the roles derive from {owner}")
    return problems


def check(settings, nodes, provided=None, read_subject=None, file_exists=None, read_pem_label=None):
    """Inconsistent security settings, found before any host is touched: (errors, warnings).

    settings: listeners and the names of the controller, inter-broker, admin
    and client listeners, admin_principal and super_users (kafka_super_users),
    plaintext_opt_in, certificates (generated or provided), ca_src, users
    (names), canary_user, stream_user and stream_topics (the streaming job's,
    none without topics), pki_dir.
    nodes: the node records. provided: {host: {key_src, cert_src}}.
    read_subject(path): a provided certificate's CN; file_exists(path);
    read_pem_label(path): the label of a provided key's PEM block ("PRIVATE KEY", ...).
    """
    listeners = settings["listeners"]
    errors, warnings = principal_problems(nodes, settings.get("admin_principal"), settings.get("super_users")), []
    clear = clear_listeners(listeners)
    role = {
        settings["controller_listener"]: "controller",
        settings["inter_broker_listener"]: "inter-broker",
        settings["admin_listener"]: "admin",
        settings["client_listener"]: "client",
    }
    try:
        plaintext_opt_in = flags.flag(settings.get("plaintext_opt_in", False), "kafka_plaintext_opt_in")
    except flags.FlagError as exc:
        errors.append(str(exc))
        plaintext_opt_in = False
    for name in clear:
        what = f"kafka_listeners.{name} uses {listeners[name]['protocol']}"
        if plaintext_opt_in:
            warnings.append(f"{what}: its traffic is not encrypted (kafka_plaintext_opt_in is true)")
        else:
            errors.append(
                f"{what}: the {role.get(name, 'listener')} traffic would cross the DC link unencrypted; "
                "use SSL or SASL_SSL, or set kafka_plaintext_opt_in: true to accept it"
            )
    for name, why in (
        (settings["controller_listener"], "SCRAM is not supported between controllers"),
        (
            settings["inter_broker_listener"],
            "a SASL inter-broker credential would have to exist before the brokers start",
        ),
        (settings["admin_listener"], "the admin runner authenticates with its certificate"),
    ):
        if listeners.get(name, {}).get("protocol") in SASL_PROTOCOLS:
            errors.append(f"kafka_listeners.{name} must be SSL (mutual TLS), not {listeners[name]['protocol']}: {why}")
    if listeners.get(settings["client_listener"], {}).get("protocol") in SASL_PROTOCOLS:
        if not settings.get("users"):
            errors.append(
                f"kafka_listeners.{settings['client_listener']} uses SASL but kafka_users declares no user: "
                "no client could log in"
            )
        else:
            if settings.get("canary_user") and settings["canary_user"] not in settings["users"]:
                errors.append(f"kafka_canary_user {settings['canary_user']!r} is not declared in kafka_users")
            # The streaming job runs only with topics; then its user must be able to log in.
            if settings.get("stream_topics") and settings.get("stream_user") not in settings["users"]:
                errors.append(
                    f"kafka_stream_user {settings.get('stream_user')!r} is not declared in kafka_users: the "
                    f"streaming job (kafka_stream_topics {list(settings['stream_topics'])}) could not log in"
                )
    if not uses_tls(listeners):
        return errors, warnings
    if settings.get("certificates") == "generated":
        return errors, warnings
    if settings.get("certificates") != "provided":
        return [
            *errors,
            f"kafka_tls_certificates={settings.get('certificates')!r} is not generated or provided",
        ], warnings
    exists = file_exists or (lambda path: False)
    if not settings.get("ca_src") or not exists(settings["ca_src"]):
        errors.append(
            f"kafka_tls_ca_src={settings.get('ca_src')!r} is not a file: the provided certificates need their CA"
        )
    for leaf in ("admin.crt", "admin.key"):
        path = f"{settings.get('pki_dir')}/{leaf}"
        if not exists(path):
            errors.append(f"{path} is missing: with provided certificates the admin's key and certificate go there")
    for node in nodes:
        files = (provided or {}).get(node["host"]) or {}
        for var in ("kafka_node_tls_key_src", "kafka_node_tls_cert_src"):
            if not files.get(var) or not exists(files[var]):
                errors.append(
                    f"{node['host']}: {var}={files.get(var)!r} is not a file (kafka_tls_certificates=provided)"
                )
        key = files.get("kafka_node_tls_key_src")
        if key and exists(key) and read_pem_label:
            errors.extend(_key_problems(node["host"], read_pem_label(key)))
        cert = files.get("kafka_node_tls_cert_src")
        if cert and exists(cert) and read_subject:
            subject = read_subject(cert)
            if subject != node.get("principal"):
                errors.append(
                    f"{node['host']}: its certificate's CN is {subject!r} but its principal (kafka_tls_principal) is "
                    f"{node.get('principal')!r}, so super.users would not list it"
                )
    return errors, warnings


def _key_problems(host, label):
    """What Kafka would refuse in a provided key, judged by its PEM label."""
    if label == "ENCRYPTED PRIVATE KEY":
        return [
            f"{host}: kafka_node_tls_key_src is encrypted; Kafka on Java 17 cannot decrypt the PBES2 keys OpenSSL "
            "writes: install it unencrypted (`openssl pkcs8 -topk8 -nocrypt`), the roles keep it 0600 for kafka only"
        ]
    if label != "PRIVATE KEY":
        return [
            f"{host}: kafka_node_tls_key_src holds a {label or 'non-PEM'} key; Kafka reads only PKCS#8 keys "
            "(BEGIN PRIVATE KEY): convert it with `openssl pkcs8 -topk8 -nocrypt`"
        ]
    return []
