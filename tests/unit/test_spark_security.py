"""Spark's own security settings: what each party runs with, the properties files, redaction, the refusals."""

import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.stretch.kafka.plugins.filter.spark_config import FilterModule
from ansible_collections.stretch.kafka.plugins.module_utils import spark_security as sec

SECRET = "s3cret-Of-dc1-cluster-0123456789"
OTHER = "s3cret-Of-dc2-cluster-9876543210"
# Spark's own default (spark.redaction.regex in Spark 4.0): what it hides must stay hidden.
SPARK_DEFAULT = r"(?i)secret|password|token|access[.]?key"
FILTERS = FilterModule().filters()


def test_every_party_authenticates_encrypts_and_redacts_with_the_clusters_secret():
    for kind in sec.KINDS:
        props = sec.properties(SECRET, kind)
        assert props[sec.SECRET] == SECRET
        assert props["spark.authenticate"] == "true"
        assert props["spark.network.crypto.enabled"] == "true"
        assert props["spark.network.crypto.authEngineVersion"] == "2"
        assert props["spark.network.crypto.saslFallback"] == "false"
        assert props["spark.io.encryption.enabled"] == "true"
        assert props["spark.redaction.regex"] == sec.REDACTION_REGEX
        # AES-GCM breaks Spark 4.0.0's RPC (SPARK-56227): the default cipher, AES-CTR, is kept.
        assert "spark.network.crypto.cipher" not in props


def test_daemons_keep_the_rest_server_off_and_applications_run_no_ui():
    daemon, application = sec.properties(SECRET, "daemon"), sec.properties(SECRET, "application")
    assert daemon[sec.REST] == "false"
    assert "spark.ui.enabled" not in daemon
    assert application["spark.ui.enabled"] == "false"
    assert sec.REST not in application


def test_an_application_on_a_standalone_cluster_needs_its_secret_and_a_local_one_none():
    for master in ("local[2]", "yarn"):
        props = sec.properties("", "application", master=master)
        assert sec.SECRET not in props
        assert props["spark.authenticate"] == "true"
    for kind, master in (("daemon", ""), ("application", "spark://m1:7077")):
        with pytest.raises(sec.SparkSecurityError, match="the Spark secret is missing or empty"):
            sec.properties("", kind, master)
    with pytest.raises(sec.SparkSecurityError, match="kind 'worker' is not one of daemon, application"):
        sec.properties(SECRET, "worker")


@pytest.mark.parametrize(
    ("secret", "problem"),
    [
        (None, "is missing or empty"),
        ("", "is missing or empty"),
        ("short-one", "is 9 characters long, fewer than 16"),
        ("sixteen chars ok", "must be printable ASCII without spaces"),
        ("tab\tinside-a-long-secret", "must be printable ASCII without spaces"),
        ("ünïcödé-sëcrët-ünïcödé", "must be printable ASCII without spaces"),
        (SECRET, ""),
        ("!#$%&()*+,-./:;<=>?@[\\]^_`{|}~", ""),
    ],
)
def test_a_secret_is_judged_without_being_repeated(secret, problem):
    found = sec.secret_problem(secret)
    assert found == problem
    if secret:
        assert secret not in found


def java_properties(text):
    """What java.util.Properties.load reads from text (the escapes render writes, and line continuations)."""
    out = {}
    for line in text.splitlines():
        assert not line.endswith("\\") or line.endswith("\\\\"), f"a continued line: {line!r}"
        i, key = 0, ""
        while i < len(line) and line[i] not in "=:":
            key, i = (key + line[i + 1], i + 2) if line[i] == "\\" else (key + line[i], i + 1)
        raw = line[i + 1 :]
        value, j = "", 0
        while j < len(raw):
            if raw[j] == "\\":
                value += {"n": "\n", "r": "\r", "t": "\t", "f": "\f"}.get(raw[j + 1], raw[j + 1])
                j += 2
            else:
                value += raw[j]
                j += 1
        out[key] = value
    return out


def test_the_properties_file_reads_back_as_written():
    settings = {
        "spark.authenticate.secret": "a\\b=c:d#e!f",
        "spark.stretch.jaas": 'org.example.Login required username="u" password="p w";',
        "spark.stretch.lead": "  two leading spaces",
        "spark.stretch.lines": "one\ntwo\r\tthree",
        "odd key=with:chars#!": "v",
    }
    text = sec.render(settings)
    assert text.count("\n") == len(settings)
    assert java_properties(text) == settings


def test_the_filter_writes_every_setting_and_refuses_without_naming_the_secret():
    text = FILTERS["spark_properties_file"](SECRET, "daemon")
    assert java_properties(text) == sec.properties(SECRET, "daemon")
    refusal = "spark_properties_file: the Spark secret is 5 characters long"
    with pytest.raises(AnsibleFilterError, match=refusal) as info:
        FILTERS["spark_properties_file"]("abcde", "daemon")
    assert "abcde" not in str(info.value)
    extra = {"spark.worker.cleanup.enabled": True}
    assert (
        java_properties(FILTERS["spark_properties_file"](SECRET, "daemon", extra=extra))["spark.worker.cleanup.enabled"]
        == "true"
    )
    with pytest.raises(AnsibleFilterError, match="spark_properties sets spark.authenticate, which the roles derive"):
        FILTERS["spark_properties_file"](SECRET, "daemon", "", {"spark.authenticate": "false"}, "spark_properties")


# Each kind of secret the jobs and the cluster hold, as Spark shows a setting: key and value.
SECRET_SETTINGS = [
    ("spark.authenticate.secret", SECRET),
    ("_SPARK_AUTH_SECRET", SECRET),  # the executors' environment, shown beside the settings
    ("kafka.sasl.jaas.config",
     'org.apache.kafka.common.security.scram.ScramLoginModule required username="kafka-stream" password="Pw9";'),
    # a JAAS configuration holds credentials whatever their spelling: hidden by its key
    ("kafka.sasl.jaas.config",
     'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true keyTab="/etc/j.keytab" principal="j@EX";'),
    ("sasl.password", "Pw9"),
    ("kafka.ssl.key.password", "Pw9"),
    ("kafka.ssl.keystore.key", "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMG\n-----END PRIVATE KEY-----"),
    ("spark.driver.extraJavaOptions", "-Dkafka.password=Pw9"),  # a secret in another setting's value
    ("spark.hadoop.fs.s3a.access.key", "AKIA0000"),
    ("spark.stretch.token", "t0k3n"),
]  # fmt: skip
PLAIN_SETTINGS = [
    ("spark.executor.memory", "512m"),
    ("spark.master", "spark://10.91.1.20:7077"),
    ("kafka.bootstrap.servers", "10.91.1.11:9092,10.91.2.11:9092"),
    ("kafka.client.rack", "dc1"),
    ("kafka.security.protocol", "SASL_SSL"),
    ("kafka.sasl.mechanism", "SCRAM-SHA-512"),
    ("kafka.ssl.truststore.certificates", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"),
    ("spark.pyspark.python", "/opt/spark-stream/venv/bin/python"),
]


@pytest.mark.parametrize(("key", "value"), SECRET_SETTINGS, ids=[k for k, _ in SECRET_SETTINGS])
def test_every_kind_of_secret_is_redacted(key, value):
    assert sec.redacted(key, value)


@pytest.mark.parametrize(("key", "value"), PLAIN_SETTINGS, ids=[k for k, _ in PLAIN_SETTINGS])
def test_ordinary_settings_stay_readable(key, value):
    assert not sec.redacted(key, value)


def test_the_redaction_hides_everything_sparks_default_hides():
    for key, value in SECRET_SETTINGS + PLAIN_SETTINGS:
        if sec.redacted(key, value, SPARK_DEFAULT):
            assert sec.redacted(key, value), key


@pytest.mark.parametrize(
    "text",
    [
        "KafkaSource[kafka.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="kafka-smoke" password="Pw9 with spaces";]',
        "options: sasl.password=Pw9, sasl.username=kafka-smoke",
        "ssl.key.password = Pw9)",
    ],
)
def test_the_string_redaction_takes_the_password_out_of_text(text):
    cleaned = re.sub(sec.STRING_REDACTION_REGEX, "*********(redacted)", text)
    assert "Pw9" not in cleaned
    assert "*********(redacted)" in cleaned
    assert "kafka-smoke" in cleaned or "kafka-smoke" not in text


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"spark.master.rest.enabled": True}, "spark_properties sets spark.master.rest.enabled=true: the REST"),
        ({"spark.master.rest.enabled": "TRUE"}, "the REST submission server (port 6066) has no authentication"),
        ({"spark.authenticate.secret": SECRET}, "spark_properties sets spark.authenticate.secret, which the roles"),
        ({"spark.authenticate": "false"}, "spark_properties sets spark.authenticate, which the roles derive"),
        ({"spark.network.crypto.enabled": "false"}, "sets spark.network.crypto.enabled, which"),
        ({"spark.io.encryption.enabled": "false"}, "sets spark.io.encryption.enabled, which"),
        ({"spark.redaction.regex": "nothing"}, "sets spark.redaction.regex, which"),
        ({"spark.ui.enabled": "true"}, "sets spark.ui.enabled, which"),
    ],
)
def test_extra_settings_may_not_undo_the_security(conf, message):
    problems = sec.override_problems(conf, "spark_properties")
    assert len(problems) == 1
    assert message in problems[0]
    assert SECRET not in problems[0]


def test_extra_settings_as_spark_submit_takes_them():
    assert sec.override_problems(["spark.cores.max=2", "spark.executor.memory=512m"], "spark_stream_spark_conf") == []
    harmless = {"spark.master.rest.enabled": "false", "spark.worker.cleanup.enabled": True}
    assert sec.override_problems(harmless, "spark_properties") == []
    (problem,) = sec.override_problems([f"spark.authenticate.secret={SECRET}"], "spark_stream_spark_conf")
    assert problem.startswith("spark_stream_spark_conf sets spark.authenticate.secret")
    assert SECRET not in problem
    assert sec.override_problems(["spark.cores.max"], "kafka_smoke_spark_conf") == [
        "kafka_smoke_spark_conf[0] is not KEY=VALUE (a Spark setting's name, '=', its value); its text is not "
        "shown, as it may hold a secret"
    ]


def hostvars(**secrets):
    """{host: {kafka_dc, spark_auth_secret}} of hosts named <dc>_<name>."""
    return {host: {"kafka_dc": host.split("_")[0], "spark_auth_secret": s} for host, s in secrets.items()}


def test_each_dcs_cluster_has_one_secret_of_its_own():
    good = hostvars(dc1_master=SECRET, dc1_worker=SECRET, dc2_master=OTHER)
    assert FILTERS["spark_secret_conflicts"](list(good), good) == []

    split = hostvars(dc1_master=SECRET, dc1_worker=OTHER + "x", dc1_worker2=SECRET, dc2_master=OTHER)
    (problem,) = FILTERS["spark_secret_conflicts"](list(split), split)
    assert problem.startswith(
        "the Spark hosts of DC 'dc1' hold 2 different spark_auth_secret values (dc1_master, dc1_worker2; dc1_worker)"
    )

    shared = hostvars(dc1_master=SECRET, dc2_master=SECRET, dc2_worker=SECRET)
    (problem,) = FILTERS["spark_secret_conflicts"](list(shared), shared)
    assert problem.startswith("DCs 'dc1' (dc1_master) and 'dc2' (dc2_master) share one spark_auth_secret")

    conflicts = FILTERS["spark_secret_conflicts"]
    for problem in conflicts(list(split), split) + conflicts(list(shared), shared):
        assert SECRET not in problem
        assert OTHER not in problem


# -- settings bound for a command line (spark-submit's --conf, and the unit that runs it) ----------


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("spark.ssl.keyStorePassword=hunter2", "spark_conf[1] (spark.ssl.keyStorePassword) holds a secret"),
        ("spark.ssl.trustStorePassword=hunter2", "spark_conf[1] (spark.ssl.trustStorePassword) holds a secret"),
        ("spark.hadoop.fs.s3a.access.key=hunter2", "spark_conf[1] (spark.hadoop.fs.s3a.access.key) holds a secret"),
        (
            "spark.driver.extraJavaOptions=-Djavax.net.ssl.keyStorePassword=hunter2",
            "spark_conf[1] (spark.driver.extraJavaOptions) holds a secret",
        ),
        ("spark.ssl.keyStorePassword hunter2", "spark_conf[1] is not KEY=VALUE"),
        ("spark.ssl.keyStorePassword:hunter2", "spark_conf[1] is not KEY=VALUE"),
        ("=hunter2", "spark_conf[1] is not KEY=VALUE"),
        ("spark.app.name=etl\nhunter2", "spark_conf[1] (spark.app.name) holds a line break"),
    ],
    ids=["keystore password", "truststore password", "access key", "password in a value", "a space for '='",
         "a colon for '='", "no name", "a line break"],
)  # fmt: skip
def test_a_secret_or_a_malformed_setting_bound_for_a_command_line_is_refused_by_its_index_not_its_text(entry, message):
    problems = sec.override_problems(["spark.cores.max=2", entry], "spark_conf")
    assert len(problems) == 1, problems
    assert problems[0].startswith(message), problems
    assert "hunter2" not in problems[0]


def test_a_properties_file_may_hold_what_a_command_line_may_not():
    # spark_properties go into a file of mode 0600: a keystore's password may be there.
    assert sec.override_problems({"spark.ssl.keyStorePassword": "hunter2"}, "spark_properties") == []


def test_settings_that_are_not_a_list_or_a_mapping_are_refused():
    assert sec.override_problems("spark.cores.max=2", "spark_conf") == [
        "spark_conf must be a list of KEY=VALUE settings"
    ]
