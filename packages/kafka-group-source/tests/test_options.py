"""The options: parsed once, every unknown, missing or bad one refused by name, no secret in the plan."""

import pytest

from kafka_group_source.options import (
    SettingError,
    Settings,
    SourceError,
    check_client_config,
    read_client_config,
)

BASE = {"bootstrap.servers": "b:1", "topics": "a", "group.id": "g", "client.rack": "dc1"}


def test_the_reader_is_built_from_the_options_and_refuses_missing_ones():
    s = Settings.from_options({**BASE, "topics": "a, b", "client.rack": "dc2", "kafka.fetch.wait.max.ms": "50"})
    assert s.topics == ("a", "b")
    assert s.rack == "dc2"
    assert s.reader_config()["client.rack"] == "dc2"
    assert s.reader_config()["fetch.wait.max.ms"] == "50"
    assert s.member_config()["group.protocol"] == "consumer"
    assert "client.rack" not in s.admin_config()
    with pytest.raises(SettingError, match="group.id, client.rack"):
        Settings.from_options({"bootstrap.servers": "b:1", "topics": "a"})
    with pytest.raises(SettingError, match="starting.offsets 'newest'"):
        Settings.from_options({**BASE, "starting.offsets": "newest"})


def test_spark_hands_the_options_in_lower_case_and_they_are_read_alike():
    s = Settings.from_options({"Bootstrap.Servers": "b:1", "TOPICS": "a", "group.id": "g", "client.rack": "dc1"})
    assert (s.bootstrap_servers, s.topics) == ("b:1", ("a",))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"starting.offset": "latest"}, "unknown option\\(s\\) starting.offset \\(the kafka-group source takes"),
        ({"max.records.per.partition": "many"}, "option max.records.per.partition 'many' is not a number"),
        ({"max.records.per.partition": "-1"}, "must be at least 0"),
        ({"fetch.stats": "yes"}, "option fetch.stats 'yes' is not true or false"),
        ({"topics": " , "}, "names no topic"),
        ({"group.session.timeout.ms": "6000"}, "must be longer than group.heartbeat.interval.ms \\(0\\), and both set"),
        ({"group.session.timeout.ms": "1000", "group.heartbeat.interval.ms": "1000"}, "must be longer than"),
        ({"kafka.sasl.password": "s3cret"}, "kafka.sasl.password would put a secret in Spark's plan"),
        ({"read.timeout.seconds": "0"}, "option read.timeout.seconds '0' must be at least 1"),
    ],
)
def test_a_bad_option_is_refused_by_name(extra, message):
    with pytest.raises(SettingError, match=message) as refused:
        Settings.from_options({**BASE, **extra})
    assert "s3cret" not in str(refused.value)
    assert isinstance(refused.value, SourceError)


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
