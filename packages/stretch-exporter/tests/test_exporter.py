"""The cluster's exporter: consumer lag by the owner's DC, the partitions' eligible leader replicas, and a failed
read served as one, never as old figures."""

import importlib
import ipaddress
import json
import subprocess
import threading
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.parser import text_string_to_metric_families

from stretch_exporter.cluster import ReadError
from stretch_exporter.samples import address_dc, group_samples, replica_samples
from stretch_exporter.service import Exporter, main, serve
from stretch_exporter.settings import SettingsError, admin_config, librdkafka_config, load_settings
from testkit.alert_rules import promtool

NETWORKS = {"dc1": [ipaddress.ip_network("10.1.0.0/24")], "dc2": [ipaddress.ip_network("10.2.0.0/24")]}
SETTINGS = {"dc_networks": NETWORKS, "interval_seconds": 1, "stale_seconds": 60}


def samples_of(samples, metric):
    return {tuple(sorted(labels.items())): value for name, labels, value in samples if name == metric}


def served(text):
    """{metric: {(sorted label pairs): value}} of an exposition, as Prometheus's own client library parses it."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def test_the_settings_are_read_and_bad_ones_named():
    good = load_settings(json.dumps({"bootstrap_servers": "b:9091", "dc_networks": {"dc1": "10.1.0.0/24"}}))
    assert good["dc_networks"] == {"dc1": [ipaddress.ip_network("10.1.0.0/24")]}
    assert good["interval_seconds"] == 10.0
    for text, message in [
        ("{", "the settings are not JSON"),
        ("{}", "the settings need bootstrap_servers"),
        ('{"bootstrap_servers": "b:1", "dc_networks": {"dc1": "nope"}}', "dc_networks.dc1"),
        ('{"bootstrap_servers": "b:1", "interval_seconds": 0}', "interval_seconds must be a positive number"),
        ('{"bootstrap_servers": "b:1", "timeout_seconds": true}', "timeout_seconds must be a positive number"),
    ]:
        with pytest.raises(SettingsError, match=message):
            load_settings(text)


def test_the_admin_connection_is_given_to_librdkafka_under_its_names():
    config = {
        "security_protocol": "SSL",
        "ssl_cafile": "/p/ca.pem",
        "ssl_certfile": "/p/a.crt",
        "ssl_keyfile": "/p/a.key",
    }
    assert librdkafka_config(config) == {
        "security.protocol": "SSL",
        "ssl.ca.location": "/p/ca.pem",
        "ssl.certificate.location": "/p/a.crt",
        "ssl.key.location": "/p/a.key",
    }
    with pytest.raises(SettingsError, match=r"\['api_version'\]"):
        librdkafka_config({"api_version": (4, 0)})


def test_a_lost_connection_is_retried_well_within_a_reads_timeout():
    settings = load_settings('{"bootstrap_servers": "b:1", "client_config": {"security_protocol": "SSL"}}')
    config = admin_config(settings)
    assert config["bootstrap.servers"] == "b:1"
    assert config["security.protocol"] == "SSL"
    # librdkafka's own ceiling (10 s) is a whole read's timeout: a coordinator back from a DC loss went unasked.
    assert config["reconnect.backoff.max.ms"] <= 1000


@pytest.mark.parametrize(
    ("host", "dc"),
    [
        ("/10.1.0.20", "dc1"),
        ("dc2-spark/10.2.0.20", "dc2"),
        ("/10.9.0.1", "unknown"),
        ("", "unknown"),
        ("/x", "unknown"),
    ],
)
def test_a_member_s_dc_is_the_one_whose_network_holds_its_address(host, dc):
    assert address_dc(host, NETWORKS) == dc


def test_each_partition_s_lag_goes_to_its_owner_s_dc_and_every_broker_dc_has_a_total():
    members = [("/10.1.0.20", [("load", 0), ("load", 1)]), ("/10.9.9.9", [("load", 3)])]
    committed = {("load", 0): 90, ("load", 1): 200, ("load", 2): 10, ("load", 3): 5, ("load", 4): -1001}
    ends = {("load", 0): 100, ("load", 1): 150, ("load", 2): 40, ("load", 3): 5, ("load", 4): 7}
    samples = group_samples("g", members, committed, ends, {}, NETWORKS, ["dc1", "dc2"])
    lag = samples_of(samples, "stretch_consumer_group_partition_lag")
    assert lag == {
        (("dc", "dc1"), ("group", "g"), ("partition", "0"), ("topic", "load")): 10,
        # A commit read after the end offset is no negative lag.
        (("dc", "dc1"), ("group", "g"), ("partition", "1"), ("topic", "load")): 0,
        (("dc", "unassigned"), ("group", "g"), ("partition", "2"), ("topic", "load")): 30,
        (("dc", "unknown"), ("group", "g"), ("partition", "3"), ("topic", "load")): 0,
    }
    totals = {dict(k)["dc"]: v for k, v in samples_of(samples, "stretch_consumer_group_lag").items()}
    assert totals == {"dc1": 10, "dc2": 0, "unassigned": 30, "unknown": 0}
    members_by_dc = {dict(k)["dc"]: v for k, v in samples_of(samples, "stretch_consumer_group_members").items()}
    assert members_by_dc == {"dc1": 1, "dc2": 0, "unknown": 1}
    # Partition load-4 has no commit, and no member owns it: nothing tells where the group stands on it.
    uncommitted = samples_of(samples, "stretch_consumer_group_uncommitted_partitions")
    assert {dict(k)["dc"]: v for k, v in uncommitted.items()} == {"dc1": 0, "dc2": 0}


def test_a_partition_its_owner_never_committed_lags_from_the_log_start_and_is_counted():
    # A job stuck before its first commit: its member owns load-0 and load-1 and committed neither (librdkafka
    # reads a missing commit as -1001), while 5000 records wait in load-0 and 70 in load-1 past the retention's cut.
    members = [("/10.2.0.20", [("load", 0), ("load", 1), ("load", 2)])]
    committed = {("load", 1): -1001, ("load", 2): 40}
    ends = {("load", 0): 5000, ("load", 1): 100, ("load", 2): 50}
    starts = {("load", 0): 0, ("load", 1): 30}
    samples = group_samples("stuck", members, committed, ends, starts, NETWORKS, ["dc1", "dc2"])
    lag = {dict(k)["partition"]: v for k, v in samples_of(samples, "stretch_consumer_group_partition_lag").items()}
    assert lag == {"0": 5000, "1": 70, "2": 10}
    totals = {dict(k)["dc"]: v for k, v in samples_of(samples, "stretch_consumer_group_lag").items()}
    assert totals == {"dc1": 0, "dc2": 5080}
    uncommitted = samples_of(samples, "stretch_consumer_group_uncommitted_partitions")
    assert {dict(k)["dc"]: v for k, v in uncommitted.items()} == {"dc1": 0, "dc2": 2}


def test_partitions_under_min_isr_are_counted_by_leader_dc_with_and_without_eligible_leaders():
    brokers = {101: "dc1", 102: "dc1", 201: "dc2", 202: "dc2"}
    partitions = [
        {"topic": "load", "partition": 0, "leader": 101, "isr": [101, 102, 201, 202], "elr": []},
        {"topic": "load", "partition": 1, "leader": 101, "isr": [101], "elr": [201]},
        {"topic": "load", "partition": 2, "leader": 201, "isr": [201], "elr": None},
        {"topic": "load", "partition": 3, "leader": -1, "isr": [], "elr": []},
        {"topic": "smoke", "partition": 0, "leader": 202, "isr": [202, 101], "elr": []},
    ]
    samples = replica_samples(partitions, {"load": 2, "smoke": 2}, brokers, ["dc1", "dc2"])
    under = {
        (dict(k)["topic"], dict(k)["dc"]): v for k, v in samples_of(samples, "stretch_partitions_under_min_isr").items()
    }
    without = {
        (dict(k)["topic"], dict(k)["dc"]): v
        for k, v in samples_of(samples, "stretch_partitions_under_min_isr_without_elr").items()
    }
    assert under == {("load", "dc1"): 1, ("load", "dc2"): 1, ("load", "offline"): 1, ("smoke", "dc1"): 0,
                     ("smoke", "dc2"): 0}  # fmt: skip
    assert without == {("load", "dc1"): 0, ("load", "dc2"): 1, ("load", "offline"): 1, ("smoke", "dc1"): 0,
                       ("smoke", "dc2"): 0}  # fmt: skip
    held = {dict(k)["dc"]: v for k, v in samples_of(samples, "stretch_eligible_leader_replicas").items()}
    assert held == {"dc1": 0, "dc2": 1}


class OneGroup:
    """A cluster of one group, the lag and the clock of the caller's choosing."""

    def __init__(self, group="g", lag=5):
        self.group, self.lag = group, lag

    def broker_dcs(self):
        return {101: "dc1", 201: "dc2"}

    def groups(self):
        return {self.group: {"members": [("/10.1.0.20", [("load", 0)])], "committed": {("load", 0): 1}}}

    def end_offsets(self, partitions):
        return dict.fromkeys(partitions, 1 + self.lag)

    def start_offsets(self, partitions):
        return dict.fromkeys(partitions, 0)

    def partitions(self):
        return [{"topic": "load", "partition": 0, "leader": 101, "isr": [101, 201], "elr": []}], {"load": 2}


def test_the_exposition_is_what_prometheus_parses():
    exp = Exporter(SETTINGS, OneGroup('g"x\\y\nz'))
    exp.read_once()
    text = exp.metrics()
    assert 'group="g\\"x\\\\y\\nz"' in text
    proc = subprocess.run([promtool(), "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_numbers_are_served_exactly_whatever_their_size():
    # %g kept 6 significant digits: a lag of 1,234,567 came out as 1.23457e+06, a timestamp 4,300 s off.
    exp = Exporter(SETTINGS, OneGroup(lag=1234567), clock=lambda: 1700000123.456)
    exp.read_once()
    found = served(exp.metrics())
    (lag,) = found["stretch_consumer_group_partition_lag"].values()
    assert lag == 1234567
    assert set(found["stretch_exporter_last_read_timestamp_seconds"].values()) == {1700000123.456}


class StubCluster:
    def __init__(self, fail=()):
        self.fail = set(fail)
        self.asked = {}

    def broker_dcs(self):
        return {101: "dc1", 201: "dc2"}

    def groups(self):
        if "groups" in self.fail:
            raise ReadError("the coordinator did not answer")
        return {"g": {"members": [("/10.2.0.20", [("load", 0)])], "committed": {("load", 0): 3}}}

    def end_offsets(self, partitions):
        self.asked["end"] = set(partitions)
        return dict.fromkeys(partitions, 8)

    def start_offsets(self, partitions):
        self.asked["start"] = set(partitions)
        return dict.fromkeys(partitions, 2)

    def partitions(self):
        if "partitions" in self.fail:
            raise ReadError("no min.insync.replicas read for topic(s) load")
        return [{"topic": "load", "partition": 0, "leader": 101, "isr": [101, 201], "elr": []}], {"load": 2}


def test_a_failed_read_is_served_as_failed_and_its_figures_left_out():
    exp = Exporter(SETTINGS, StubCluster(fail=["partitions"]), clock=lambda: 1000.0)
    exp.read_once()
    text = exp.metrics()
    assert 'stretch_consumer_group_lag{dc="dc2",group="g"} 5' in text
    assert 'stretch_exporter_read_success{part="groups"} 1' in text
    assert 'stretch_exporter_read_success{part="partitions"} 0' in text
    assert "stretch_partitions_under_min_isr" not in text
    assert exp.errors == {"partitions": "no min.insync.replicas read for topic(s) load"}
    # The next read that fails drops what the last good one had.
    exp.cluster = StubCluster(fail=["groups"])
    exp.read_once()
    assert "stretch_consumer_group_lag{" not in exp.metrics()
    assert 'stretch_partitions_under_min_isr{dc="dc1",topic="load"} 0' in exp.metrics()


class TimedOut(StubCluster):
    def groups(self):
        raise TimeoutError  # what a future's result(timeout=...) raises: no message of its own


def test_a_read_that_times_out_is_logged_and_served_with_its_kind_not_an_empty_message(capsys):
    exp = Exporter(SETTINGS, TimedOut(), clock=lambda: 1000.0)
    exp.read_once()
    assert exp.errors == {"groups": "TimeoutError"}
    assert "reading the groups failed: TimeoutError" in capsys.readouterr().err


class Uncommitted(StubCluster):
    def groups(self):
        return {"g": {"members": [("/10.2.0.20", [("load", 0), ("load", 1)])], "committed": {("load", 1): 3}}}


def test_the_log_start_is_read_only_for_the_owned_partitions_without_a_commit():
    cluster = Uncommitted()
    exp = Exporter(SETTINGS, cluster)
    exp.read_once()
    assert cluster.asked == {"end": {("load", 0), ("load", 1)}, "start": {("load", 0)}}
    found = served(exp.metrics())
    assert found["stretch_consumer_group_uncommitted_partitions"][(("dc", "dc2"), ("group", "g"))] == 1
    assert found["stretch_consumer_group_lag"][(("dc", "dc2"), ("group", "g"))] == (8 - 2) + (8 - 3)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_reader_that_hangs_serves_no_old_figures_and_says_it_is_stale():
    # The reader thread stopped returning (a read stuck in a call that never times out): the scrape still answers,
    # but a part whose last read ended more than stale_seconds ago is stale, served as a failed read, figures left
    # out.
    clock = Clock()
    exp = Exporter({"dc_networks": NETWORKS, "interval_seconds": 10, "stale_seconds": 60}, StubCluster(),
                   monotonic=clock)  # fmt: skip
    exp.read_once()
    clock.now = 59.0
    fresh = served(exp.metrics())
    assert fresh["stretch_exporter_read_success"] == {(("part", "groups"),): 1, (("part", "partitions"),): 1}
    assert fresh["stretch_exporter_stale"] == {(("part", "groups"),): 0, (("part", "partitions"),): 0}
    clock.now = 61.0
    stale = served(exp.metrics())
    assert stale["stretch_exporter_read_success"] == {(("part", "groups"),): 0, (("part", "partitions"),): 0}
    assert stale["stretch_exporter_stale"] == {(("part", "groups"),): 1, (("part", "partitions"),): 1}
    assert "stretch_consumer_group_lag" not in stale
    assert "stretch_partitions_under_min_isr" not in stale
    # The reader comes back: fresh figures again.
    exp.read_once()
    assert served(exp.metrics())["stretch_exporter_stale"][(("part", "groups"),)] == 0


def test_the_stale_bound_defaults_to_three_intervals_and_three_timeouts():
    settings = load_settings(json.dumps({"bootstrap_servers": "b:9091", "interval_seconds": 10, "timeout_seconds": 5}))
    assert settings["stale_seconds"] == 45.0
    assert load_settings(json.dumps({"bootstrap_servers": "b:1", "stale_seconds": 30}))["stale_seconds"] == 30.0
    with pytest.raises(SettingsError, match="stale_seconds must be a positive number"):
        load_settings('{"bootstrap_servers": "b:1", "stale_seconds": -1}')


def test_before_the_first_read_nothing_passes_for_a_success():
    exp = Exporter({"dc_networks": {}, "interval_seconds": 1, "stale_seconds": 60}, StubCluster())
    assert 'stretch_exporter_read_success{part="groups"} 0' in exp.metrics()


def test_metrics_are_served_over_http_on_loopback():
    exp = Exporter(SETTINGS, StubCluster())
    exp.read_once()
    server = serve(exp, "127.0.0.1:0")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            assert reply.headers["Content-Type"] == CONTENT_TYPE_PLAIN_0_0_4  # prometheus_client's, negotiated
            found = served(reply.read().decode())
            assert found["stretch_consumer_group_members"][(("dc", "dc2"), ("group", "g"))] == 1
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=10)
    finally:
        server.shutdown()
        server.server_close()


def test_a_bad_settings_file_stops_it_at_start_naming_the_file_and_the_fault(tmp_path, capsys):
    path = tmp_path / "stretch-exporter.json"
    path.write_text('{"bootstrap_servers": "b:1", "dc_networks": {"dc1": "10.1.0.0/33"}}')
    assert main(["--config", str(path)]) == 2
    assert f"{path}: dc_networks.dc1:" in capsys.readouterr().err
    assert main(["--config", str(tmp_path / "missing.json")]) == 2


def test_the_console_script_runs_main():
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    module, name = project["project"]["scripts"]["stretch-exporter"].split(":")
    assert getattr(importlib.import_module(module), name) is main


class FakeKafkaPython:
    """kafka-python's admin client as the exporter's reads use it."""

    def __init__(self, brokers=(), ends=None):
        self.brokers, self.ends = list(brokers), ends or {}

    def describe_cluster(self):
        return {"brokers": self.brokers, "controller_id": 1}

    def list_partition_offsets(self, specs):
        from kafka.structs import OffsetAndTimestamp  # noqa: PLC0415

        return {tp: OffsetAndTimestamp(self.ends[(tp.topic, tp.partition)], -1, 0)
                for tp in specs if (tp.topic, tp.partition) in self.ends}  # fmt: skip


def cluster_on(fake):
    from stretch_exporter.cluster import Cluster  # noqa: PLC0415

    cluster = Cluster.__new__(Cluster)
    cluster._python = fake
    return cluster


def test_the_brokers_dcs_come_from_describe_cluster_fenced_ones_too():
    # A lost DC's brokers stay registered, fenced: its DC keeps its series (0 members) instead of vanishing.
    fake = FakeKafkaPython([{"broker_id": 101, "rack": "dc1", "is_fenced": False},
                            {"broker_id": 201, "rack": "dc2", "is_fenced": True},
                            {"broker_id": 301, "rack": None, "is_fenced": False}])  # fmt: skip
    assert cluster_on(fake).broker_dcs() == {101: "dc1", 201: "dc2", 301: "unknown"}
    with pytest.raises(ReadError, match="named no broker"):
        cluster_on(FakeKafkaPython([])).broker_dcs()


def test_an_end_offset_not_read_fails_the_read_naming_the_partition():
    fake = FakeKafkaPython(ends={("load", 0): 8, ("load", 1): 5})
    assert cluster_on(fake).end_offsets({("load", 0), ("load", 1)}) == {("load", 0): 8, ("load", 1): 5}
    with pytest.raises(ReadError, match="no end offset read for load-2"):
        cluster_on(fake).end_offsets({("load", 0), ("load", 2)})
    assert cluster_on(fake).end_offsets(set()) == {}


class FakeConfluent:
    """confluent-kafka's admin client as groups() uses it; refuses every ask NOT_COORDINATOR while stale."""

    made = []

    def __init__(self, config=None, stale=False):
        self.stale = stale
        FakeConfluent.made.append(self)

    def _answer(self, value):
        from concurrent.futures import Future  # noqa: PLC0415

        from confluent_kafka import KafkaError, KafkaException  # noqa: PLC0415

        future = Future()
        if self.stale:
            future.set_exception(KafkaException(KafkaError(KafkaError.NOT_COORDINATOR, "ConsumerGroupDescribe: ")))
        else:
            future.set_result(value)
        return future

    def describe_consumer_groups(self, names, request_timeout):
        from types import SimpleNamespace  # noqa: PLC0415

        return {n: self._answer(SimpleNamespace(members=[])) for n in names}

    def list_consumer_group_offsets(self, wanted, request_timeout):
        from types import SimpleNamespace  # noqa: PLC0415

        return {w.group_id: self._answer(SimpleNamespace(topic_partitions=[])) for w in wanted}


class FakeGroups(FakeKafkaPython):
    """ListGroups as kafka-python sends it: to each broker named, each known to the client's metadata
    (`known`), answering with its own groups; a dead broker refuses the connection."""

    def __init__(self, brokers=({"broker_id": 101, "rack": "dc1", "is_fenced": False},), groups=None, known=None,
                 dead=()):  # fmt: skip
        super().__init__(brokers)
        self.groups = groups or {101: ["stream"]}
        self.known = set(self.groups) if known is None else set(known)
        self.dead, self.asked, self.closed = set(dead), [], False

    def list_groups(self, broker_ids=None):
        from kafka.errors import KafkaConnectionError, UnknownBrokerIdError  # noqa: PLC0415

        asked = sorted(self.known) if broker_ids is None else broker_ids
        self.asked.append(asked)
        found = []
        for broker in asked:
            if broker not in self.known:
                raise UnknownBrokerIdError(broker)
            if broker in self.dead:
                raise KafkaConnectionError("111 ECONNREFUSED")
            found += [{"group_id": g} for g in self.groups.get(broker, [])]
        return found

    def close(self):
        self.closed = True


def broker(broker_id, fenced=False):
    return {"broker_id": broker_id, "rack": f"dc{broker_id // 100}", "is_fenced": fenced}


def test_the_groups_are_listed_by_the_unfenced_brokers_alone_a_fenced_one_is_not_asked():
    # dc2's brokers are dead and fenced; the client's metadata, read before the loss, still holds them.
    fake = FakeGroups([broker(101), broker(102), broker(201, fenced=True), broker(202, fenced=True)],
                      groups={101: ["a"], 102: ["b", "a"]}, known=[101, 102, 201, 202], dead=[201, 202])  # fmt: skip
    assert cluster_on(fake).group_names() == ["a", "b"]
    assert fake.asked == [[101, 102]]


def test_a_broker_alive_but_not_answering_fails_the_groups_read():
    # Killed, not fenced yet: Kafka still holds it alive, and the groups it coordinates are not known.
    from kafka.errors import KafkaConnectionError  # noqa: PLC0415

    fake = FakeGroups([broker(101), broker(201)], groups={101: ["a"], 201: ["b"]}, dead=[201])
    with pytest.raises(KafkaConnectionError):
        cluster_on(fake).group_names()
    with pytest.raises(ReadError, match="no unfenced broker"):
        cluster_on(FakeGroups([broker(101, fenced=True)])).group_names()


def test_a_broker_back_since_the_clients_metadata_is_asked_through_a_new_client():
    stale = FakeGroups([broker(101), broker(201)], groups={101: ["a"], 201: ["b"]}, known=[101])
    fresh = FakeGroups([broker(101), broker(201)], groups={101: ["a"], 201: ["b"]})
    cluster = cluster_on(stale)
    cluster._kafka_python = lambda **_: fresh
    cluster.settings, cluster.timeout = {"bootstrap_servers": "b:9092", "client_config": {}}, 10
    assert cluster.group_names() == ["a", "b"]
    assert stale.closed
    assert cluster._python is fresh


def test_a_group_read_refused_by_a_moved_coordinator_is_made_again_with_a_new_client():
    FakeConfluent.made.clear()
    cluster = cluster_on(FakeGroups())
    cluster.settings, cluster.timeout = {"bootstrap_servers": "b:9092", "client_config": {}}, 10
    cluster._confluent_client = FakeConfluent
    cluster.confluent = FakeConfluent(stale=True)
    assert cluster.groups() == {"stream": {"members": [], "committed": {}}}
    assert len(FakeConfluent.made) == 2
    assert cluster.confluent is FakeConfluent.made[-1]
    cluster._confluent_client = lambda config: FakeConfluent(stale=True)
    cluster.confluent = FakeConfluent(stale=True)
    with pytest.raises(KafkaException, match="NOT_COORDINATOR"):  # still refused: the read fails, no loop
        cluster.groups()
