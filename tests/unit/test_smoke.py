"""The smoke test's logic: record format, validation, locality, checks and verdicts."""

import base64
import hashlib
import ipaddress
import json
import re
import time
from types import SimpleNamespace

import pytest
from confluent_kafka import Producer

from ansible_collections.stretch.kafka.plugins.filter.kafka_config import smoke_cluster_args
from ansible_collections.stretch.kafka.plugins.filter.spark_config import smoke_spark_files, smoke_spark_problems
from kafka_smoke import checks, locality, netcount, records, run, submit
from kafka_smoke.run import dc_networks, judged_crossing, parse_args, problems, reading_hosts, spark_clusters

METRICS = """# HELP kafka_server_brokertopicmetrics_bytesout_total Bytes out
# TYPE kafka_server_brokertopicmetrics_bytesout_total counter
kafka_server_brokertopicmetrics_bytesout_total{topic="smoke"} 2048.0
kafka_server_brokertopicmetrics_bytesout_total{topic="other"} 99.0
kafka_server_brokertopicmetrics_replicationbytesout_total 5.0
"""


def test_record_carries_a_checksum_of_its_payload():
    value = json.loads(records.encode("run1", 3, 7, 100))
    data = base64.b64decode(value["data"])
    assert len(data) == 100
    assert (value["run"], value["p"], value["seq"]) == ("run1", 3, 7)
    assert hashlib.sha256(data).hexdigest() == value["sha256"]
    assert records.payload("run1", 3, 7, 100) == data
    assert records.payload("run1", 3, 8, 100) != data


def seen(count, own=None, distinct=None, corrupt=0):
    own = count if own is None else own
    return {"count": count, "own": own, "distinct": own if distinct is None else distinct, "corrupt": corrupt}


def test_validation_of_a_complete_read():
    v = records.validation({"0": 10, "1": 10}, {"0": seen(10), "1": seen(10)})
    assert v["ok"] is True
    assert (v["expected"], v["read"]) == (20, 20)


@pytest.mark.parametrize(
    ("observed", "field", "n"),
    [
        ({"0": seen(10), "1": seen(8)}, "missing", 2),
        ({"0": seen(10), "1": seen(12, distinct=10)}, "duplicate", 2),
        ({"0": seen(10), "1": seen(10, corrupt=1)}, "corrupt", 1),
        ({"0": seen(10), "1": seen(11, own=10)}, "foreign", 1),
        ({"0": seen(10)}, "missing", 10),
    ],
)
def test_validation_finds_each_kind_of_problem(observed, field, n):
    v = records.validation({"0": 10, "1": 10}, observed)
    assert v["ok"] is False
    assert v[field] == n


def test_bytes_out_reads_the_topic_counter():
    assert locality.bytes_out(METRICS, "smoke") == 2048.0
    assert locality.bytes_out(METRICS, "absent") == 0.0


def test_locality_ratio_from_two_scrapes():
    racks = {101: "dc1", 102: "dc1", 201: "dc2"}
    result = locality.locality({101: 100, 102: 0, 201: 50}, {101: 1100, 102: 980, 201: 70}, racks, "dc1")
    assert result["bytes_by_broker"] == {"101": 1000, "102": 980, "201": 20}
    assert result["bytes_by_dc"] == {"dc1": 1980, "dc2": 20}
    assert result["locality_ratio"] == pytest.approx(0.99)
    assert locality.locality({101: 0, 201: 0}, {101: 1, 201: 1}, racks, None)["locality_ratio"] is None


def test_a_counter_that_went_back_is_a_broker_restart_and_the_read_is_not_judged():
    racks = {101: "dc1", 102: "dc1", 201: "dc2"}
    before, after = {101: 500, 102: 0, 201: 900}, {101: 1500, 102: 700, 201: 40}
    with pytest.raises(checks.SmokeError, match="broker 201's BytesOut counter went from 900 to 40") as reset:
        locality.locality(before, after, racks, "dc1")
    assert type(reset.value).__name__ == "CounterReset", "run() tells a counter reset from a refusal by its type"
    with pytest.raises(checks.SmokeError, match="broker 102's BytesOut counter was not read before the read"):
        locality.locality({101: 500, 201: 900}, after, racks, "dc1")
    with pytest.raises(checks.SmokeError, match="broker 201's BytesOut counter was not read after the read"):
        locality.locality(before, {101: 1500, 102: 700}, racks, "dc1")


def test_a_read_whose_locality_cannot_be_judged_fails_naming_the_broker():
    unjudged = {**read("dc1", {}, None), "unjudged": "broker 201's BytesOut counter went from 900 to 40"}
    assert problems(unjudged, args()) == ["locality not judged: broker 201's BytesOut counter went from 900 to 40"]


def args(**kw):
    return SimpleNamespace(threshold=0.99, control_band=(0.25, 0.75), agreement=0.05, **kw)


def read(dc, by_dc, ratio=None, validation=None):
    total = sum(by_dc.values())
    return {
        "dc": dc,
        "control": dc is None,
        "bytes_by_dc": by_dc,
        "bytes_total": total,
        "locality_ratio": ratio,
        "validation": validation or records.validation({"0": 10}, {"0": seen(10)}),
    }


def test_verdicts():
    assert problems(read("dc1", {"dc1": 995, "dc2": 5}, 0.995), args()) == []
    assert problems(read("dc1", {"dc1": 500, "dc2": 500}, 0.5), args()) == [
        "locality 0.5000 is below the threshold 0.99"
    ]
    assert problems(read(None, {"dc1": 480, "dc2": 520}), args()) == []
    assert problems(read(None, {"dc1": 1000, "dc2": 0}), args()) == [
        "control read is not split between the DCs ({'dc1': 1.0, 'dc2': 0.0}), so locality cannot be told from chance"
    ]
    assert problems(read("dc1", {}, None), args()) == [
        "the brokers report no bytes served to the read: the measurement saw nothing"
    ]


def test_a_read_that_misses_records_fails_with_its_counts():
    # The validation of a real read, 3 records of partition 1 missing and one of partition 0 read twice.
    incomplete = records.validation({"0": 10, "1": 10}, {"0": seen(11, distinct=10), "1": seen(7)})
    verdict = problems(read("dc1", {"dc1": 1000}, 1.0, incomplete), args())
    assert verdict == ["3 missing, 1 duplicate, 0 corrupt, 0 foreign of 20 records"]


@pytest.mark.parametrize(
    ("master", "message"),
    [
        ("spark://127.0.0.1:1", "cannot be reached at 127.0.0.1:1"),
        ("k8s://https://127.0.0.1:1", "cannot be reached at 127.0.0.1:1"),
        ("spark://nohost", "has no host:port"),
    ],
)
def test_unreachable_spark_master_is_named(master, message):
    with pytest.raises(checks.SmokeError, match=message):
        checks.check_spark_master(master, timeout=1)


def test_local_master_needs_nothing(monkeypatch):
    def no_connection(*args):
        raise AssertionError(f"a local master needs no connection, yet {args} was tried")

    monkeypatch.setattr(checks, "reachable", no_connection)
    assert checks.check_spark_master("local[2]") is None
    with pytest.raises(AssertionError, match="needs no connection"):
        checks.check_spark_master("spark://127.0.0.1:7077")


def test_yarn_needs_its_configuration(monkeypatch):
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    with pytest.raises(checks.SmokeError, match="HADOOP_CONF_DIR"):
        checks.check_spark_master("yarn")


def test_dc_must_match_a_broker_rack():
    brokers = {101: ("h1", "dc1"), 201: ("h2", "dc2")}
    assert checks.check_dcs(["dc1", "dc2"], brokers) is None
    with pytest.raises(checks.SmokeError, match="DC 'DC1' matches no broker rack .*dc1, dc2"):
        checks.check_dcs(["DC1"], brokers)


def test_network_and_broker_counters_must_agree():
    agreeing = read("dc1", {"dc1": 995, "dc2": 5}, 0.995)
    agreeing["network"] = {"bytes_by_dc": {"dc1": 1040, "dc2": 9}, "bytes_total": 1049}
    assert problems(agreeing, args()) == []
    assert agreeing["network"]["share_of_dc1"] == pytest.approx(0.9914, abs=1e-4)
    disagreeing = read("dc1", {"dc1": 995, "dc2": 5}, 0.995)
    disagreeing["network"] = {"bytes_by_dc": {"dc1": 500, "dc2": 500}, "bytes_total": 1000}
    assert "disagree" in problems(disagreeing, args())[0]


def test_network_namespace_resolves_broker_names_and_refuses_other_lookups(monkeypatch):
    # The namespace cannot reach the host's name server: a lookup sent there
    # would stall every SASL connection of the Java client for 10 s.
    monkeypatch.setattr(netcount.socket, "gethostbyname", {"b1.dc1": "10.0.1.11", "10.0.2.11": "10.0.2.11"}.get)
    monkeypatch.setattr(netcount.socket, "gethostname", lambda: "runner")
    files = netcount.NetworkCounters({101: "b1.dc1", 201: "10.0.2.11"}, 9092).etc_files()
    assert files["hosts"].splitlines() == ["10.0.1.11 b1.dc1", "127.0.0.1 localhost runner"]
    assert files["resolv.conf"] == "nameserver 127.0.0.1\n"


def test_routed_bytes_crossing_into_the_reads_dc_must_agree_with_the_brokers():
    routed = {("dc1", "dc2"): (10, 1), ("dc2", "dc1"): (100, 2)}
    crossed = locality.crossed(routed, {("dc1", "dc2"): (30, 2), ("dc2", "dc1"): (5100, 9)}, "dc1")
    assert crossed == {"dc": "dc1", "bytes_by_pair": {"dc1->dc2": 20, "dc2->dc1": 5000}, "bytes_in": 5000}
    # The control read: half from the other DC, and the router saw that half cross.
    control = read(None, {"dc1": 5000, "dc2": 5000})
    control["crossed"] = dict(crossed)
    assert problems(control, args()) == []
    assert control["crossed"]["share"] == 0.5
    assert control["crossed"]["brokers_bytes_from_other_dcs"] == 5000
    # A local read that the router saw cross: one of the measurements is wrong.
    local = read("dc1", {"dc1": 9990, "dc2": 10}, 0.999)
    local["crossed"] = dict(crossed)
    assert "disagree" in problems(local, args())[0]


@pytest.mark.parametrize(
    ("before", "after", "message"),
    [
        ({("dc1", "dc2"): (900, 9), ("dc2", "dc1"): (100, 2)}, {("dc1", "dc2"): (30, 2), ("dc2", "dc1"): (5100, 9)},
         "the router's count of dc1->dc2 went from 900 to 30: its counter was reset between the two reads"),
        ({("dc2", "dc1"): (100, 2)}, {("dc1", "dc2"): (30, 2), ("dc2", "dc1"): (5100, 9)},
         "the router's count of dc1->dc2 was not read before the read"),
        ({("dc1", "dc2"): (10, 1), ("dc2", "dc1"): (100, 2)}, {("dc2", "dc1"): (5100, 9)},
         "the router's count of dc1->dc2 was not read after the read"),
    ],
    ids=["went back", "not read before", "not read after"],
)  # fmt: skip
def test_a_routed_count_that_went_back_or_was_not_read_is_refused_not_counted(before, after, message):
    # A negative (or, as bytes, huge) count would pass or fail a read on a figure that means nothing.
    with pytest.raises(locality.CounterReset, match=re.escape(message)):
        locality.crossed(before, after, "dc1")


def test_a_read_whose_routed_count_went_back_fails_unjudged():
    local = read("dc1", {"dc1": 9990, "dc2": 10}, 0.999)
    local["crossed"] = judged_crossing({("dc2", "dc1"): (900, 9)}, {("dc2", "dc1"): (30, 2)}, "dc1")
    assert problems(local, args()) == [
        "the router's count not judged: the router's count of dc2->dc1 went from 900 to 30: its counter was reset "
        "between the two reads, so what crossed meanwhile is unknown"
    ]


def crossing(bytes_in):
    return {"dc": "dc1", "bytes_by_pair": {"dc2->dc1": bytes_in}, "bytes_in": bytes_in}


def test_the_routers_measurement_must_pass_the_threshold_and_see_the_control_read_cross():
    # 3% crossed, within the 5% agreement of the brokers' 1%: the brokers pass it, the router does not.
    local = read("dc1", {"dc1": 9900, "dc2": 100}, 0.99)
    local["crossed"] = crossing(300)
    assert problems(local, args()) == ["3.00% of the read crossed into dc1: below the threshold 0.99"]
    local["crossed"] = crossing(100)
    assert problems(local, args()) == []
    # A control read the router saw barely cross: it could not tell a remote read from a local one.
    control = read(None, {"dc1": 7400, "dc2": 2600})
    control["crossed"] = crossing(2200)
    assert problems(control, args()) == ["the control read crossed 22.00% into dc1, not 25%-75%"]


def test_routed_ruleset_counts_each_dc_pair_of_the_listeners_replies():
    rules = netcount.routed_ruleset("t", {"dc2": "10.0.2.0/24", "dc1": "10.0.1.0/24"}, [9093])
    assert "counter dc1_to_dc2 { }" in rules
    assert "counter dc2_to_dc1 { }" in rules
    assert (
        "ip saddr 10.0.2.0/24 ip daddr 10.0.1.0/24 meta l4proto tcp th sport { 9093 } counter name dc2_to_dc1" in rules
    )
    assert "dport" not in rules
    listing = json.dumps({"nftables": [{"counter": {"name": "dc1_to_dc2", "bytes": 7, "packets": 1}}]})
    with pytest.raises(RuntimeError, match="dc2_to_dc1 not found in table t"):
        netcount.parse_routed(listing, "t", netcount.routed_pairs({"dc1": "10.0.1.0/24", "dc2": "10.0.2.0/24"}))


SUBNETS = {"dc1": "10.0.1.0/24", "dc2": "10.0.2.0/24"}
# Each DC's read: its Spark worker, and the runner's address on the DC's network (the driver's).
READERS = {"dc1": ["10.0.1.20", "10.0.1.1"], "dc2": ["10.0.2.20", "10.0.2.1"]}
RULE = re.compile(
    r"ip saddr (?P<src>\S+) ip daddr (?:\{ (?P<dsts>[^}]*) \}|(?P<dst>\S+)) meta l4proto tcp "
    r"th (?P<dir>sport|dport) \{ (?P<ports>[^}]*) \} counter name (?P<counter>\w+)"
)


def counted(ruleset, hook, src, dst, sport, dport):
    """The counters a TCP segment from src:sport to dst:dport feeds at the hook, by the ruleset's own rules."""
    chain = ruleset.split(f"hook {hook} ", 1)[1].split("\n    }", 1)[0] if f"hook {hook} " in ruleset else ""
    hit = []
    for line in chain.splitlines():
        rule = RULE.search(line)
        if not rule:
            continue
        dsts = rule["dsts"].split(", ") if rule["dsts"] else []
        to = dst in dsts if dsts else ipaddress.ip_address(dst) in ipaddress.ip_network(rule["dst"])
        port = sport if rule["dir"] == "sport" else dport
        if ipaddress.ip_address(src) in ipaddress.ip_network(rule["src"]) and to and str(port) in rule["ports"]:
            hit.append(rule["counter"])
    return hit


def test_the_router_counts_only_what_crosses_into_the_reads_own_hosts():
    rules = netcount.routed_ruleset("t", SUBNETS, [9093], readers=READERS)
    # A dc2 broker's fetch response to dc1's Spark worker crosses the router: the read's own bytes.
    assert counted(rules, "forward", "10.0.2.11", "10.0.1.20", 9093, 40000) == ["dc2_to_dc1"]
    # The same to a producer in dc1 writing to dc2's leaders (its acks), or to any other client of dc1: not the read.
    assert counted(rules, "forward", "10.0.2.11", "10.0.1.250", 9093, 40000) == []
    assert counted(rules, "forward", "10.0.2.12", "10.0.1.33", 9093, 51000) == []
    # The producer's requests to dc2's leaders, and replication between the brokers, are no listener's replies.
    assert counted(rules, "forward", "10.0.1.250", "10.0.2.11", 40000, 9093) == []
    assert counted(rules, "forward", "10.0.1.11", "10.0.2.11", 40000, 9091) == []
    # The driver on the runner, at its address on dc1's network, is counted where the runner receives.
    assert counted(rules, "input", "10.0.2.11", "10.0.1.1", 9093, 40000) == ["dc2_to_dc1"]
    assert counted(rules, "input", "10.0.2.11", "10.0.2.1", 9093, 40000) == []
    # dc2's own read, the other way.
    assert counted(rules, "forward", "10.0.1.12", "10.0.2.20", 9093, 40000) == ["dc1_to_dc2"]


def test_without_the_reads_hosts_the_router_counts_whole_networks_for_the_other_measurements():
    rules = netcount.routed_ruleset("t", SUBNETS, [9093], directions=("dport", "sport"))
    assert counted(rules, "forward", "10.0.2.11", "10.0.1.250", 9093, 40000) == ["dc2_to_dc1"]
    assert counted(rules, "forward", "10.0.1.250", "10.0.2.11", 40000, 9093) == ["dc1_to_dc2"]
    assert "hook input" not in rules


def test_only_what_crosses_into_a_dc_that_reads_is_counted_and_a_reading_dc_needs_its_hosts():
    rules = netcount.routed_ruleset("t", SUBNETS, [9093], readers={"dc1": READERS["dc1"]})
    assert netcount.routed_pairs(SUBNETS, {"dc1": READERS["dc1"]}) == [("dc2", "dc1")]
    assert counted(rules, "forward", "10.0.1.12", "10.0.2.20", 9093, 40000) == []
    assert "dc1_to_dc2" not in rules
    with pytest.raises(ValueError, match="DC 'dc2' has no reading host to count"):
        netcount.routed_ruleset("t", SUBNETS, [9093], readers={"dc1": ["10.0.1.20"], "dc2": []})
    with pytest.raises(ValueError, match="DC 'dc3' reads but has no network"):
        netcount.routed_ruleset("t", SUBNETS, [9093], readers={"dc3": ["10.0.3.20"]})


def test_each_reads_hosts_are_its_workers_and_the_driver_by_address(monkeypatch):
    names = {"w1.dc1": "10.1.0.20", "w1.dc2": "10.2.0.20"}
    monkeypatch.setattr(run.socket, "gethostbyname", lambda name: names.get(name, name))
    masters = ["--dc-master=dc1=spark://m1:7077", "--dc-master=dc2=spark://m2:7077"]
    confs = ["--dc-spark-conf=dc1:spark.driver.host=10.1.0.1", "--dc-spark-conf=dc2:spark.driver.host=10.2.0.1"]
    networks = ["--dc-network=dc1=10.1.0.0/16", "--dc-network=dc2=10.2.0.0/16"]
    a = cli(*masters, *confs, *networks, "--dc-hosts=dc1=w1.dc1", "--dc-hosts=dc2=w1.dc2")
    assert reading_hosts(a, spark_clusters(a)) == {"dc1": ["10.1.0.1", "10.1.0.20"], "dc2": ["10.2.0.1", "10.2.0.20"]}
    # Counting whole networks would take every other client's bytes: a DC without its hosts is refused.
    lacking = cli(*masters, *confs, *networks, "--dc-hosts=dc1=w1.dc1")
    with pytest.raises(checks.SmokeError, match="DC 'dc2' has no reading hosts \\(--dc-hosts dc2="):
        reading_hosts(lacking, spark_clusters(lacking))
    assert reading_hosts(cli(), spark_clusters(cli())) == {}


def test_without_its_address_a_dcs_driver_is_reached_at_the_runners_address_toward_its_master(monkeypatch):
    monkeypatch.setattr(run, "driver_address", {"spark://m1:7077": "10.1.0.1", "spark://m2:7077": "10.2.0.1"}.get)
    a = cli(
        "--dc-master=dc1=spark://m1:7077", "--dc-master=dc2=spark://m2:7077", "--dc-spark-conf=dc2:spark.driver.host=r2"
    )
    clusters = spark_clusters(a)
    assert clusters["dc1"][1] == ["spark.driver.host=10.1.0.1"]
    assert clusters["dc2"][1] == ["spark.driver.host=r2"]


def test_received_ruleset_counts_what_a_host_gets_from_each_dcs_listeners_at_one_hook():
    rules = netcount.received_ruleset("t", {"dc2": "10.0.2.0/24", "dc1": "10.0.1.0/24"}, [9093, 9092])
    assert "counter from_dc1 { }" in rules
    assert "counter from_dc2 { }" in rules
    assert "type filter hook input priority -150" in rules
    assert "ip saddr 10.0.1.0/24 meta l4proto tcp th sport { 9092, 9093 } counter name from_dc1" in rules
    assert "ip saddr 10.0.2.0/24 meta l4proto tcp th sport { 9092, 9093 } counter name from_dc2" in rules
    listing = json.dumps({"nftables": [{"counter": {"name": "from_dc1", "bytes": 7, "packets": 1}}]})
    with pytest.raises(RuntimeError, match="from_dc2 not found in table t"):
        netcount.parse_received(listing, "t", ["dc1", "dc2"])
    listing = json.dumps({"nftables": [{"counter": {"name": f"from_{dc}", "bytes": b, "packets": 1}}
                                       for dc, b in (("dc1", 7), ("dc2", 9))]})  # fmt: skip
    assert netcount.parse_received(listing, "t", ["dc2", "dc1"]) == {"dc1": (7, 1), "dc2": (9, 1)}


def cli(*extra):
    return parse_args(["--bootstrap-servers", "h:9093", "--dc", "dc1", "--dc", "dc2", *extra])


def test_each_dcs_read_runs_on_its_own_cluster_and_the_control_read_on_the_first(monkeypatch):
    monkeypatch.setattr(run, "driver_address", lambda master: "10.9.0.1")
    a = cli(
        "--dc-master=dc1=spark://m1:7077",
        "--dc-master=dc2=spark://m2:7077",
        "--dc-spark-conf=dc1:k=v",
        "--dc-spark-properties=dc1=/p/dc1.properties",
        "--dc-spark-properties=dc2=/p/dc2.properties",
    )
    here = "spark.driver.host=10.9.0.1"
    assert spark_clusters(a) == {"dc1": ("spark://m1:7077", ["k=v", here], "/p/dc1.properties"),
                                 "dc2": ("spark://m2:7077", [here], "/p/dc2.properties"),
                                 None: ("spark://m1:7077", ["k=v", here], "/p/dc1.properties")}  # fmt: skip
    assert spark_clusters(cli("--master", "local[3]")) == {dc: ("local[3]", [], None) for dc in ("dc1", "dc2", None)}
    local = cli("--master", "local[3]", "--spark-properties", "/p/default.properties")
    assert spark_clusters(local)[None] == ("local[3]", [], "/p/default.properties")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--dc-master=dc1=spark://m1:7077"], "DC 'dc2' has no Spark master"),
        (["--dc-master=dc1=spark://m1:7077", "--dc-master=dc1=spark://m9:7077", "--dc-master=dc2=spark://m2:7077"],
         "DC 'dc1' is given 2 masters"),
        (["--dc-master=dc1=spark://m1:7077", "--dc-master=dc2=spark://m2:7077", "--dc-master=dc9=spark://x:1"],
         "names 'dc9', which is not a DC read"),
        (["--dc-spark-conf=dc1:k=v"], "no DC has its own master"),
        (["--dc-spark-properties=dc1=/p/dc1.properties"], "names 'dc1', but no DC has its own master"),
        (["--dc-master=dc1=spark://m1:7077", "--dc-master=dc2=spark://m2:7077", "--dc-spark-properties=dc1=/a",
          "--dc-spark-properties=dc1=/b"], "DC 'dc1' is given 2 masters or settings files: /a, /b"),
        (["--dc-master=dc1=spark://m1:7077", "--dc-master=dc2=spark://m2:7077", "--dc-spark-properties=dc3=/a"],
         "names 'dc3', which is not a DC read"),
        (["--dc-master=dc1"], "is not of the form DC=MASTER"),
    ],
)  # fmt: skip
def test_bad_dc_clusters_are_refused_by_name(extra, message):
    with pytest.raises(checks.SmokeError, match=message):
        spark_clusters(cli(*extra))


def test_dc_networks_need_every_dc_and_a_cluster_per_dc():
    masters = ["--dc-master=dc1=spark://m1:7077", "--dc-master=dc2=spark://m2:7077"]
    assert dc_networks(cli(*masters, "--dc-network=dc1=10.1.0.0/16", "--dc-network=dc2=10.2.0.0/16")) == {
        "dc1": "10.1.0.0/16", "dc2": "10.2.0.0/16"}  # fmt: skip
    assert dc_networks(cli()) == {}
    with pytest.raises(checks.SmokeError, match="DC 'dc2' has no network"):
        dc_networks(cli(*masters, "--dc-network=dc1=10.1.0.0/16", "--dc-network=dc3=10.3.0.0/16"))
    with pytest.raises(checks.SmokeError, match="names only 'dc1': bytes crossing DCs need two"):
        dc_networks(cli(*masters, "--dc-network=dc1=10.1.0.0/16"))
    with pytest.raises(checks.SmokeError, match="must run there"):
        dc_networks(cli("--dc-network=dc1=10.1.0.0/16", "--dc-network=dc2=10.2.0.0/16"))


def test_inventory_clusters_become_the_smoke_tests_arguments():
    clusters = {
        "dc2": {"master": "spark://m2:7077", "hosts": ["w2"], "network": "10.2.0.0/16"},
        "dc1": {"master": "spark://m1:7077", "conf": ["a=b"], "hosts": ["w1", "w1b"], "network": "10.1.0.0/16"},
    }
    assert smoke_cluster_args(clusters, "/tmp/s") == [
        "--spark-properties=/tmp/s/default.properties",
        "--dc-master=dc1=spark://m1:7077", "--dc-spark-conf=dc1:a=b", "--dc-spark-properties=dc1=/tmp/s/dc1.properties",
        "--dc-network=dc1=10.1.0.0/16", "--dc-hosts=dc1=w1,w1b",
        "--dc-master=dc2=spark://m2:7077", "--dc-spark-properties=dc2=/tmp/s/dc2.properties",
        "--dc-network=dc2=10.2.0.0/16", "--dc-hosts=dc2=w2"]  # fmt: skip
    with pytest.raises(ValueError, match=r"kafka_smoke_spark_clusters\['dc1'\] needs a master"):
        smoke_cluster_args({"dc1": {"conf": []}}, "/tmp/s")
    with pytest.raises(ValueError, match=r"kafka_smoke_spark_clusters\['dc1'\] has a network but no hosts"):
        smoke_cluster_args({"dc1": {"master": "spark://m1:7077", "network": "10.1.0.0/16"}}, "/tmp/s")


SPARK_SECRETS = {"dc1": "dc1-spark-secret-0123456789", "dc2": "dc2-spark-secret-9876543210"}


def test_each_clusters_settings_file_holds_its_own_secret_and_the_local_one_none():
    clusters = {dc: {"master": f"spark://m-{dc}:7077", "secret": secret} for dc, secret in SPARK_SECRETS.items()}
    files = {f["name"]: f["content"] for f in smoke_spark_files(clusters, "local[2]", "")}
    assert sorted(files) == ["dc1.properties", "dc2.properties", "default.properties"]
    for dc, secret in SPARK_SECRETS.items():
        assert f"spark.authenticate.secret={secret}\n" in files[f"{dc}.properties"]
        assert "spark.ui.enabled=false\n" in files[f"{dc}.properties"]
    assert "spark.authenticate.secret" not in files["default.properties"]
    assert smoke_spark_problems(clusters, "local[2]", "", ["spark.cores.max=2"]) == []


def test_a_smoke_read_on_a_cluster_without_its_secret_is_refused_by_name():
    clusters = {"dc1": {"master": "spark://m1:7077", "secret": SPARK_SECRETS["dc1"]}, "dc2": {"master": "spark://m2"}}
    problems = smoke_spark_problems(clusters, "spark://m0:7077", "", [f"spark.authenticate.secret={'x' * 20}"])
    assert problems[0].startswith("kafka_smoke_spark_clusters['dc2'].secret is missing or empty: the read runs")
    assert problems[1].startswith("kafka_smoke_spark_secret is missing or empty: kafka_smoke_spark_master")
    assert problems[2].startswith("kafka_smoke_spark_conf sets spark.authenticate.secret, which the roles derive")
    assert len(problems) == 3
    assert not any(SPARK_SECRETS["dc1"] in p or "x" * 20 in p for p in problems)


def test_a_spark_settings_file_others_can_read_is_refused(tmp_path):
    path = tmp_path / "dc1.properties"
    with pytest.raises(checks.SmokeError, match="cannot read the Spark settings in"):
        checks.check_spark_properties(path)
    path.write_text("spark.authenticate=true\n")
    path.chmod(0o644)
    with pytest.raises(checks.SmokeError, match=r"readable by other users \(mode 0644\): they hold the cluster's"):
        checks.check_spark_properties(path)
    path.chmod(0o600)
    checks.check_spark_properties(path)


def test_the_kafka_clients_own_log_lines_go_to_the_log_file_not_to_stderr(tmp_path, capfd):
    # A producer pointed at a closed port: librdkafka logs its failed connection.
    log = tmp_path / "smoke.clients.log"
    producer = Producer({"bootstrap.servers": "127.0.0.1:1", **checks.client_settings(None, log)})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "127.0.0.1:1" not in (log.read_text() if log.exists() else ""):
        producer.poll(0.2)
    producer.flush(0)
    assert "127.0.0.1:1" in log.read_text(), "the client's log never reached the log file"
    assert "%" not in capfd.readouterr().err, "a librdkafka log line went to stderr, where the summary shows it"


def test_spark_submit_runs_with_its_own_spark_home_whatever_python_drives_it(tmp_path, monkeypatch):
    # The role's smoke test runs from a virtualenv of its own, without pyspark: a pip-installed spark-submit would
    # look for pyspark with that Python, unless SPARK_HOME names its install.
    release = tmp_path / "spark-4.0.0"
    (release / "bin").mkdir(parents=True)
    (release / "jars").mkdir()
    (release / "bin" / "spark-submit").touch()
    (tmp_path / "spark-submit").symlink_to(release / "bin" / "spark-submit")
    assert submit.spark_home(tmp_path / "spark-submit") == str(release)
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "spark-submit").touch()
    (venv / "python").write_text("#!/bin/sh\necho /venv/lib/python3.11/site-packages/pyspark\n")
    (venv / "python").chmod(0o755)
    assert submit.spark_home(venv / "spark-submit") == "/venv/lib/python3.11/site-packages/pyspark"
    assert submit.spark_home(tmp_path / "nowhere" / "spark-submit") is None
    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert submit.submit_env(str(tmp_path / "spark-submit"))["SPARK_HOME"] == str(release)
    monkeypatch.setenv("SPARK_HOME", "/opt/spark")
    assert submit.submit_env(str(tmp_path / "spark-submit"))["SPARK_HOME"] == "/opt/spark"
