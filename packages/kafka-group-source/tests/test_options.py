"""The options: Spark's Kafka source's names and meanings, the old names as aliases, every unknown, missing,
refused or bad one refused by name, Java client settings translated or refused, and no secret in the plan."""

import pytest

from kafka_group_source.options import (
    OPTIONS,
    REFUSED,
    SettingError,
    Settings,
    SourceError,
    check_client_config,
    read_client_config,
)

BASE = {"kafka.bootstrap.servers": "b:1", "subscribe": "a", "kafka.group.id": "g", "kafka.client.rack": "dc1"}
OLD = {"bootstrap.servers": "b:1", "topics": "a", "group.id": "g", "client.rack": "dc1"}


def test_a_spark_users_first_try_works_with_the_group_and_the_dc_added():
    s = Settings.from_options({**BASE, "startingOffsets": "earliest", "subscribe": "a, b"})
    assert (s.bootstrap_servers, s.topics, s.group, s.rack, s.starting_offsets) == ("b:1", ("a", "b"), "g", "dc1",
                                                                                   "earliest")  # fmt: skip
    assert s.reader_config()["client.rack"] == "dc1"
    assert s.reader_config()["fetch.queue.backoff.ms"] == 10
    assert (
        Settings.from_options({**BASE, "kafka.fetch.queue.backoff.ms": "50"}).reader_config()["fetch.queue.backoff.ms"]
        == "50"
    )
    assert s.member_config()["group.protocol"] == "consumer"
    assert "client.rack" not in s.admin_config()
    assert s.subscription() == ["a", "b"]


def test_keys_and_values_are_case_insensitive_as_sparks_are():
    # Spark hands the keys in lower case; the values Spark reads case-insensitively are read alike.
    s = Settings.from_options({k.upper(): v for k, v in BASE.items()} | {"STARTINGOFFSETS": "Earliest",
                              "includeheaders": "TRUE", "FailOnDataLoss": "False"})  # fmt: skip
    assert (s.starting_offsets, s.include_headers, s.fail_on_data_loss) == ("earliest", True, False)
    assert s.reader_config()["auto.offset.reset"] == "earliest", "failOnDataLoss=false skips a range that is gone"
    assert Settings.from_options(BASE).reader_config()["auto.offset.reset"] == "error"


def test_sparks_defaults():
    s = Settings.from_options(BASE)
    assert s.starting_offsets == "latest", "a stream starts at the end, as format('kafka')'s does"
    assert (s.include_headers, s.fail_on_data_loss, s.max_offsets_per_trigger, s.read_timeout) == (False, True, 0, 120)
    assert s.schema() == ("key binary, value binary, topic string, partition int, offset bigint, timestamp timestamp, "
                          "timestampType int")  # fmt: skip


def test_headers_and_the_broker_only_on_request_in_sparks_order():
    s = Settings.from_options({**BASE, "includeHeaders": "true", "includeBroker": "true"})
    assert [n for n, _ in s.columns()] == ["key", "value", "topic", "partition", "offset", "timestamp",
                                           "timestampType", "headers", "broker"]  # fmt: skip
    assert s.reader_config()["statistics.interval.ms"] == 100


def test_the_old_names_are_aliases_of_sparks():
    old = Settings.from_options({**OLD, "starting.offsets": "earliest", "max.records.per.partition": "50",
                                 "fetch.stats": "true", "read.timeout.seconds": "30"})  # fmt: skip
    new = Settings.from_options({**BASE, "startingOffsets": "earliest", "maxOffsetsPerPartition": "50",
                                 "includeBroker": "true", "kafkaConsumer.pollTimeoutMs": "30000"})  # fmt: skip
    assert old == new
    with pytest.raises(
        SettingError, match="options kafka.bootstrap.servers and bootstrap.servers are two names of one"
    ):
        Settings.from_options({**BASE, "bootstrap.servers": "other:1"})
    with pytest.raises(SettingError, match="options kafka.group.id and group.id are two names"):
        Settings.from_options({**BASE, "group.id": "g"})


def test_starting_offsets_per_partition_and_by_timestamp():
    s = Settings.from_options({**BASE, "subscribe": "a,b", "startingOffsets": '{"a": {"0": 23, "1": -2, "2": -1}}'})
    assert [s.starting("a", p) for p in range(4)] == [23, "earliest", "latest", "earliest"]
    assert s.starting("b", 0) == "earliest", "a partition the JSON does not name starts as Spark starts a new one"
    s = Settings.from_options({**BASE, "startingOffsetsByTimestamp": '{"a": {"0": 1000}}', "startingOffsets": "latest"})
    assert (s.starting("a", 0), s.starting("a", 1)) == (("timestamp", 1000), "earliest")
    s = Settings.from_options({**BASE, "startingTimestamp": "5000", "startingOffsetsByTimestamp": '{"a": {"0": 1}}'})
    assert s.starting("a", 0) == ("timestamp", 5000), "startingTimestamp comes first, as in Spark"
    assert (
        Settings.from_options({**BASE, "startingOffsetsByTimestampStrategy": "LATEST"}).timestamp_strategy == "latest"
    )


def test_a_pattern_subscription_goes_to_the_brokers_as_librdkafka_takes_it():
    s = Settings.from_options({**{k: v for k, v in BASE.items() if k != "subscribe"}, "subscribePattern": "orders-.*",
                               "startingOffsets": '{"orders-eu": {"0": 5}}'})  # fmt: skip
    assert (s.topics, s.subscription()) == ((), ["^orders-.*"])
    assert s.starting("orders-eu", 0) == 5


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"startingoffset": "latest"}, "unknown option\\(s\\) startingoffset \\(did you mean startingOffsets\\?\\)"),
        ({"maxoffsetpertrigger": "5"}, "did you mean maxOffsetsPerTrigger\\?"),
        ({"nonsense": "1"}, "unknown option\\(s\\) nonsense: the kafka-group source takes kafka.bootstrap.servers"),
        ({"startingOffsets": "newest"}, "option startingOffsets 'newest' is not earliest, latest or JSON"),
        ({"startingOffsets": '{"b": {"0": 1}}'}, "names topic 'b', which the job does not subscribe to"),
        ({"startingOffsets": '{"a": {"0": -3}}'}, "a 0: -3 must be at least -2"),
        ({"startingOffsetsByTimestamp": '{"a": [1]}'}, "is not JSON of the form"),
        ({"startingTimestamp": "-1"}, "option startingTimestamp '-1' must be at least 0"),
        ({"startingOffsetsByTimestampStrategy": "skip"}, "is not error or latest"),
        ({"maxOffsetsPerTrigger": "0"}, "option maxOffsetsPerTrigger '0' must be at least 1"),
        ({"maxOffsetsPerPartition": "many"}, "option maxOffsetsPerPartition 'many' is not a number"),
        ({"max.records.per.partition": "-1"}, "option maxOffsetsPerPartition '-1' must be at least 0"),
        ({"includeHeaders": "yes"}, "option includeHeaders 'yes' is not true or false"),
        ({"fetch.stats": "yes"}, "option includeBroker 'yes' is not true or false"),
        ({"maxTriggerDelay": "soon"}, "option maxTriggerDelay 'soon' is not a duration"),
        ({"subscribe": " , "}, "needs the option subscribe"),
        ({"subscribe": "^a"}, "'\\^a' is no topic name"),
        ({"subscribePattern": "a.*"}, "options subscribe and subscribePattern: give one of them"),
        ({"group.session.timeout.ms": "6000"}, "must be longer than group.heartbeat.interval.ms \\(0\\), and both set"),
        ({"kafkaConsumer.pollTimeoutMs": "0"}, "option kafkaConsumer.pollTimeoutMs '0' must be at least 1"),
        ({"read.timeout.seconds": "soon"}, "option read.timeout.seconds 'soon' is not a number"),
    ],
)
def test_a_bad_option_is_refused_by_name(extra, message):
    with pytest.raises(SettingError, match=message) as refused:
        Settings.from_options({**BASE, **extra})
    assert isinstance(refused.value, SourceError)


def test_the_required_options_are_named_in_sparks_spelling():
    with pytest.raises(SettingError, match="needs the option\\(s\\) kafka.group.id, kafka.client.rack"):
        Settings.from_options({"kafka.bootstrap.servers": "b:1", "subscribe": "a"})
    with pytest.raises(SettingError, match="needs the option subscribe \\(topics, comma-separated\\) or subscribePat"):
        Settings.from_options({k: v for k, v in BASE.items() if k != "subscribe"})


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("assign", "the consumer group assigns the partitions"),
        ("endingOffsets", "a stream has no end: the source reads streams only"),
        ("endingOffsetsByTimestamp", 'spark.read.format\\("kafka"\\) with startingOffsets and endingOffsets'),
        ("groupIdPrefix", "give kafka.group.id, the same in every DC"),
        ("fetchOffset.numRetries", "offsets.timeout.seconds"),
    ],
)
def test_a_spark_option_that_cannot_apply_is_refused_with_the_reason(name, why):
    with pytest.raises(SettingError, match=f"option {name} does not apply to the kafka-group source: .*{why}"):
        Settings.from_options({**BASE, name.lower(): "x"})


def test_every_option_has_one_canonical_name_and_no_refused_one_is_also_taken():
    names = [n.lower() for n in OPTIONS] + [a.lower() for aliases in OPTIONS.values() for a in aliases]
    assert len(names) == len(set(names))
    assert not {n.lower() for n in REFUSED} & set(names)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512"},
         {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}),
        ({"kafka.fetch.max.wait.ms": "50", "kafka.receive.buffer.bytes": "65536", "kafka.request.timeout.ms": "9000"},
         {"fetch.wait.max.ms": "50", "socket.receive.buffer.bytes": "65536", "socket.timeout.ms": "9000"}),
        ({"kafka.ssl.truststore.location": "/etc/ca.pem"}, {"ssl.ca.location": "/etc/ca.pem"}),
        ({"kafka.ssl.truststore.location": "/etc/ca.txt", "kafka.ssl.truststore.type": "pem"},
         {"ssl.ca.location": "/etc/ca.txt"}),
        ({"kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.certificates": "-----BEGIN..."},
         {"ssl.ca.pem": "-----BEGIN..."}),
        ({"kafka.ssl.keystore.location": "/etc/me.p12"}, {"ssl.keystore.location": "/etc/me.p12"}),
        ({"kafka.ssl.keystore.location": "/etc/me.pem", "kafka.ssl.keystore.type": "PEM"},
         {"ssl.certificate.location": "/etc/me.pem", "ssl.key.location": "/etc/me.pem"}),
        ({"kafka.ssl.endpoint.identification.algorithm": ""}, {"ssl.endpoint.identification.algorithm": "none"}),
        ({"kafka.fetch.wait.max.ms": "20"}, {"fetch.wait.max.ms": "20"}),
    ],
)  # fmt: skip
def test_javas_client_settings_are_translated_to_librdkafkas(extra, expected):
    assert dict(Settings.from_options({**BASE, **extra}).extra) == expected


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"kafka.ssl.truststore.location": "/etc/truststore.jks"},
         "librdkafka reads no Java truststore \\(JKS\\): give the CA certificates as a PEM file"),
        ({"kafka.ssl.keystore.location": "/etc/k.jks"}, "librdkafka reads no Java keystore \\(JKS\\)"),
        ({"kafka.sasl.login.callback.handler.class": "x.Y"}, "sasl.oauthbearer.method=oidc"),
        ({"kafka.max.poll.records": "500"}, "maxOffsetsPerTrigger bounds a micro-batch"),
        ({"kafka.session.timeout.ms": "6000"}, "the brokers hold it: set group.session.timeout.ms"),
        ({"kafka.auto.offset.reset": "earliest"}, "set startingOffsets .* and failOnDataLoss"),
        ({"kafka.enable.auto.commit": "true"}, "commits each finished micro-batch itself"),
        ({"kafka.group.protocol": "classic"}, "always uses the consumer group protocol"),
        ({"kafka.value.deserializer": "x"}, "deserialize them with DataFrame operations"),
    ],
)  # fmt: skip
def test_a_client_setting_without_an_equivalent_or_owned_by_the_source_is_refused_naming_what_to_do(extra, message):
    with pytest.raises(SettingError, match=message):
        Settings.from_options({**BASE, **extra})


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"kafka.sasl.password": "s3cret"}, "kafka.sasl.password"),
        ({"kafka.sasl.jaas.config": 'x required username="u" password="s3cret";'}, "kafka.sasl.jaas.config"),
        ({"kafka.sasl.oauthbearer.config": "principal=u s3cret"}, "kafka.sasl.oauthbearer.config"),
        ({"kafka.ssl.keystore.key": "-----BEGIN s3cret"}, "kafka.ssl.keystore.key"),
        ({"kafka.my.token": "1"}, "kafka.my.token"),  # a key Spark's redaction pattern matches
        ({"kafka.sasl.kerberos.service.name": "Secret-s3cret"}, "kafka.sasl.kerberos.service.name"),  # a value
        ({"kafka.ssl.keystore.accesskey": "s3cret"}, "kafka.ssl.keystore.accesskey"),
    ],
)
def test_no_secret_enters_sparks_plan_and_none_is_shown(extra, named):
    with pytest.raises(SettingError, match="would put a secret in Spark's plan") as refused:
        Settings.from_options({**BASE, **extra})
    assert named in str(refused.value)
    assert "s3cret" not in str(refused.value)


def test_the_jaas_refusal_names_librdkafkas_equivalent():
    with pytest.raises(SettingError, match="give sasl.username and sasl.password .* in the client.config file"):
        Settings.from_options({**BASE, "kafka.sasl.jaas.config": "x"})


def test_the_group_configs_are_set_only_when_both_are_given():
    assert Settings.from_options(BASE).group_configs() == {}
    both = Settings.from_options({**BASE, "group.session.timeout.ms": "6000", "group.heartbeat.interval.ms": "1000"})
    assert both.group_configs() == {"consumer.session.timeout.ms": "6000", "consumer.heartbeat.interval.ms": "1000"}


def test_the_client_settings_file_is_read_and_its_secrets_reach_the_clients_only(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text("# the job's login\nsecurity.protocol=SASL_SSL\nsasl.username = job\nsasl.password=s=cret\n")
    assert read_client_config(path)["sasl.password"] == "s=cret"
    s = Settings.from_options({**BASE, "client.config": str(path)})
    assert s.member_config()["sasl.username"] == "job"
    assert "s=cret" not in repr(s), "the settings (pickled to the executors) hold the file's path, not its secrets"
    assert read_client_config("") == {}
    path.write_text("security.protocol\n")
    with pytest.raises(SettingError, match="'security.protocol' is not a key=value line"):
        read_client_config(path)


def test_missing_credentials_are_named(tmp_path):
    config = tmp_path / "c.properties"
    config.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=job\n")
    with pytest.raises(SettingError, match="no sasl.password: the job's Kafka credentials are missing"):
        check_client_config(config)
    with pytest.raises(SettingError, match="cannot read the client settings"):
        check_client_config(tmp_path / "absent")
