"""Runs the smoke test: checks, producer step, one Spark read per DC and a control read.

    python -m kafka_smoke --bootstrap-servers h1:9092,h2:9092 --topic smoke --dc dc1 --dc dc2 \
        --master 'local[2]' --jars dir/ --report reports/smoke.json

Each DC's read may run on that DC's own Spark cluster (--dc-master
dc1=spark://m1:7077, with --dc-spark-conf dc1:KEY=VALUE for its driver
settings and --dc-spark-properties dc1=FILE for the cluster's security
settings and secret); the control read then runs on the first DC's. A DC's
executors reach the driver at its --dc-spark-conf spark.driver.host, else at
this runner's own address toward the DC's master. With --dc-network
dc1=CIDR and --dc-hosts dc1=HOST,... per DC, the runner, routing between the
DCs' networks, also counts the bytes that crossed from another DC into the
hosts that read for the DC (those, and the driver's address there) during
each read; other clients of the DCs are not counted.

Nothing is written to the topic unless every check passes. Exits non-zero
when a check fails, a read misses, duplicates or corrupts a record, a DC read
is served below --threshold from its own DC, or the control read is not near
an even split (which would mean the measurement cannot tell).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

from . import checks, locality, produce, records
from .checks import SettingError, SmokeError
from .netcount import NetworkCounters, RoutedBytes
from .submit import app_command, submit_command, submit_env


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m kafka_smoke", description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--topic", default="smoke")
    p.add_argument("--dc", action="append", required=True, help="a DC to read as (client.rack); repeat")
    p.add_argument("--no-control", dest="control", action="store_false", help="skip the read without client.rack")
    p.add_argument(
        "--client-config",
        metavar="FILE",
        help="client settings (security) for the producer, the checks and the Spark consumers, as key=value lines",
    )
    p.add_argument("--master", default="local[2]", help="Spark master: local[N], spark://, k8s://, yarn")
    p.add_argument("--spark-submit", default=shutil.which("spark-submit") or "spark-submit")
    p.add_argument("--jars", default="", help="spark-sql-kafka jars: a directory or a comma-separated list")
    p.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument(
        "--spark-properties",
        metavar="FILE",
        help="Spark settings for the reads on --master (spark-submit's --properties-file): security, and the "
        "cluster's secret, which never goes on a command line",
    )
    p.add_argument(
        "--dc-master",
        action="append",
        default=[],
        metavar="DC=MASTER",
        help="the Spark master of that DC's cluster, where its read runs (instead of --master); repeat per DC",
    )
    p.add_argument(
        "--dc-spark-conf",
        action="append",
        default=[],
        metavar="DC:KEY=VALUE",
        help="a Spark setting for the reads on that DC's cluster (the driver's address there); repeat",
    )
    p.add_argument(
        "--dc-spark-properties",
        action="append",
        default=[],
        metavar="DC=FILE",
        help="the Spark settings file of that DC's cluster (its security settings and secret); repeat per DC",
    )
    p.add_argument(
        "--dc-network",
        action="append",
        default=[],
        metavar="DC=CIDR",
        help="that DC's network: count the bytes the listeners send from one DC's network to the other DCs' "
        "reading hosts (--dc-hosts), on this runner, which must route between them (needs --dc-master, root and "
        "nft); repeat per DC",
    )
    p.add_argument(
        "--dc-hosts",
        action="append",
        default=[],
        metavar="DC=HOST[,HOST]",
        help="with --dc-network, the hosts that read for that DC (its Spark workers): only the bytes that cross "
        "into them, and into the driver's address there, are counted; repeat per DC",
    )
    p.add_argument("--metrics-port", type=int, default=7071, help="the brokers' Prometheus JMX exporter port")
    p.add_argument(
        "--network-counters",
        action="store_true",
        help="also count in the kernel the bytes each broker sends to the Spark reads, run in a network "
        "namespace of their own (needs root, iproute2 and nft)",
    )
    p.add_argument(
        "--agreement",
        type=float,
        default=0.05,
        help="largest difference allowed between the brokers' and the network's locality",
    )
    p.add_argument("--records-per-partition", type=int, default=2000)
    p.add_argument("--record-bytes", type=int, default=1024)
    p.add_argument("--threshold", type=float, default=0.99, help="least locality a DC read must show")
    p.add_argument(
        "--control-band",
        type=float,
        nargs=2,
        default=(0.25, 0.75),
        metavar=("LOW", "HIGH"),
        help="each DC's share of the control read must fall in this band",
    )
    p.add_argument("--report", default="reports/smoke.json")
    return p.parse_args(argv)


def pairs(values, sep, what):
    """{left: [right, ...]} of 'left<sep>right' arguments; a value without sep is refused, named."""
    out = {}
    for value in values:
        left, found, right = value.partition(sep)
        if not found or not left or not right:
            raise SmokeError(f"{what} {value!r} is not of the form {what.split()[-1]}")
        out.setdefault(left, []).append(right)
    return out


def spark_clusters(args):
    """{dc: (master, [KEY=VALUE, ...], settings file or None)} of each DC's read (None: the control read), from
    the arguments."""
    masters = pairs(args.dc_master, "=", "--dc-master DC=MASTER")
    confs = pairs(args.dc_spark_conf, ":", "--dc-spark-conf DC:KEY=VALUE")
    files = pairs(args.dc_spark_properties, "=", "--dc-spark-properties DC=FILE")
    if not masters:
        named = {**confs, **files}
        if named:
            raise SmokeError(
                f"--dc-spark-conf or --dc-spark-properties names {min(named)!r}, but no DC has its own master "
                "(--dc-master)"
            )
        return {dc: (args.master, [], args.spark_properties) for dc in [*args.dc, None]}
    for dc, values in (*masters.items(), *files.items()):
        if len(values) > 1:
            raise SmokeError(f"DC {dc!r} is given {len(values)} masters or settings files: {', '.join(values)}")
    unknown = sorted({*masters, *confs, *files} - set(args.dc))
    if unknown:
        raise SmokeError(
            f"--dc-master, --dc-spark-conf or --dc-spark-properties names {unknown[0]!r}, which is not a DC read (--dc)"
        )
    for dc in args.dc:
        if dc not in masters:
            raise SmokeError(f"DC {dc!r} has no Spark master (--dc-master {dc}=...), though other DCs do")
    clusters = {dc: (masters[dc][0], with_driver_host(masters[dc][0], confs.get(dc, [])), files.get(dc, [None])[0])
                for dc in args.dc}  # fmt: skip
    clusters[None] = clusters[args.dc[0]]
    return clusters


def driver_address(master):
    """This runner's address toward a Spark master (host:port): the address its executors reach a driver here at.
    No packet is sent: the kernel picks the source address of the route."""
    url = urlparse(master)
    family, kind, proto, _name, address = socket.getaddrinfo(url.hostname, url.port, type=socket.SOCK_DGRAM)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.connect(address)
        return probe.getsockname()[0]


def with_driver_host(master, confs):
    """A DC cluster's settings, with spark.driver.host this runner's address toward its master unless they set it."""
    if any(conf.startswith("spark.driver.host=") for conf in confs):
        return list(confs)
    try:
        return [*confs, f"spark.driver.host={driver_address(master)}"]
    except OSError as exc:
        raise SmokeError(f"no route from this runner to the Spark master {master}: {exc}") from exc


def reading_hosts(args, clusters):
    """{dc: [addresses]} of the hosts whose bytes the router counts for each DC's read: its --dc-hosts and its
    driver's address (spark.driver.host), or {} without --dc-network. A DC without hosts is refused: counting its
    whole network would take every other client's bytes."""
    if not args.dc_network:
        return {}
    hosts = {dc: [h for value in values for h in value.split(",") if h]
             for dc, values in pairs(args.dc_hosts, "=", "--dc-hosts DC=HOST[,HOST]").items()}  # fmt: skip
    out = {}
    for dc in args.dc:
        if not hosts.get(dc):
            raise SmokeError(
                f"DC {dc!r} has no reading hosts (--dc-hosts {dc}=HOST,...): the router would count every client of "
                "its network"
            )
        drivers = [c.split("=", 1)[1] for c in clusters[dc][1] if c.startswith("spark.driver.host=")]
        try:
            out[dc] = sorted({socket.gethostbyname(h) for h in [*hosts[dc], *drivers]})
        except OSError as exc:
            raise SmokeError(f"DC {dc!r}: cannot resolve its reading hosts {hosts[dc] + drivers}: {exc}") from exc
    return out


def dc_networks(args):
    """{dc: network} of --dc-network, for every DC read, or {} without it."""
    networks = {dc: nets[0] for dc, nets in pairs(args.dc_network, "=", "--dc-network DC=CIDR").items()}
    if networks and not args.dc_master:
        raise SmokeError("--dc-network counts bytes between DCs, so each DC's read must run there (--dc-master)")
    if len(networks) == 1:
        raise SmokeError(f"--dc-network names only {min(networks)!r}: bytes crossing DCs need two DCs' networks")
    missing = [dc for dc in args.dc if networks and dc not in networks]
    if missing:
        raise SmokeError(f"DC {missing[0]!r} has no network (--dc-network {missing[0]}=CIDR), though other DCs do")
    return networks


def spark_read(args, cluster, manifest_path, dc, workdir, counters=None):
    """One bounded read with spark-submit on cluster (master, settings), as dc (None: the control read),
    in the counters' namespace if any."""
    master, cluster_conf, properties = cluster
    out = Path(workdir) / f"seen-{dc or 'control'}.json"
    confs = [*args.spark_conf, *cluster_conf, *(counters.spark_conf if counters else ())]
    submit = submit_command(args.spark_submit, master, f"kafka-smoke-{dc}", args.jars, confs, properties)
    job_args = [
        "--manifest",
        str(manifest_path),
        "--bootstrap-servers",
        args.bootstrap_servers,
        "--client-rack",
        dc or "",
        "--out",
        str(out),
    ]
    if args.client_config:
        job_args += ["--client-config", str(Path(args.client_config).resolve())]
    cmd = app_command(submit, "kafka_smoke.job", job_args)
    env = submit_env(args.spark_submit)
    if counters:
        cmd = counters.wrap(cmd)
    began = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)
    if proc.returncode != 0:
        raise SmokeError(f"Spark read for {dc or 'control'} failed (rc={proc.returncode}):\n{proc.stderr[-3000:]}")
    seen = json.loads(out.read_text())
    seen["spark_submit_seconds"] = round(time.monotonic() - began, 2)
    return seen


def run(args):
    Path(args.report).parent.mkdir(parents=True, exist_ok=True)
    report = {"topic": args.topic, "threshold": args.threshold, "timings": {}, "client_log": str(client_log(args))}
    client_config = checks.client_settings(args.client_config, client_log(args))
    t = time.monotonic()
    checks.check_bootstrap(args.bootstrap_servers)
    brokers, partitions = checks.cluster_view(args.bootstrap_servers, args.topic, client_config)
    checks.check_dcs(args.dc, brokers)
    clusters = spark_clusters(args)
    networks = dc_networks(args)
    readers = reading_hosts(args, clusters)
    if networks and args.network_counters:
        raise SmokeError("--network-counters counts a job on this runner, --dc-network jobs in the DCs: pick one")
    for master in sorted({cluster[0] for cluster in clusters.values()}):
        checks.check_spark_master(master)
    for properties in sorted({cluster[2] for cluster in clusters.values() if cluster[2]}):
        checks.check_spark_properties(properties)
    report["timings"]["checks_seconds"] = round(time.monotonic() - t, 2)
    report["masters"] = {dc or "control": cluster[0] for dc, cluster in clusters.items()}
    racks = {b: broker[1] for b, broker in brokers.items()}
    hosts = {b: broker[0] for b, broker in brokers.items()}

    t = time.monotonic()
    run_id = uuid.uuid4().hex[:12]
    manifest = produce.produce(
        args.bootstrap_servers,
        args.topic,
        partitions,
        run_id,
        args.records_per_partition,
        args.record_bytes,
        client_config,
    )
    report["timings"]["produce_seconds"] = round(time.monotonic() - t, 2)
    report["run_id"], report["manifest"] = run_id, manifest
    expected = {p: v["expected"] for p, v in manifest["partitions"].items()}

    report["reads"], ok = [], True
    port = args.bootstrap_servers.split(",")[0].rsplit(":", 1)[1]
    network = NetworkCounters(hosts, port) if args.network_counters else contextlib.nullcontext()
    crossing = RoutedBytes(networks, [port], readers=readers) if networks else contextlib.nullcontext()
    with (
        tempfile.TemporaryDirectory(prefix="kafka-smoke-") as workdir,
        network as counters,
        crossing as routed,
    ):
        manifest_path = Path(workdir) / "manifest.json"
        manifest_path.write_text(json.dumps(manifest))
        for dc in [*args.dc, *([None] if args.control else [])]:
            before = locality.scrape(hosts, args.topic, args.metrics_port)
            net_before = counters.read() if counters else None
            routed_before = routed.read() if routed else None
            seen = spark_read(args, clusters[dc], manifest_path, dc, workdir, counters)
            after = locality.scrape(hosts, args.topic, args.metrics_port)
            t = time.monotonic()
            read = {"dc": dc, "control": dc is None, **judged_locality(before, after, racks, dc)}
            read["master"] = clusters[dc][0]
            if counters:
                read["network"] = locality.locality(net_before, counters.read(), racks, dc)
            if routed:
                read["crossed"] = judged_crossing(routed_before, routed.read(), dc or args.dc[0])
            read["validation"] = records.validation(expected, seen["observed"])
            read["records"], read["value_bytes"] = seen["records"], seen["value_bytes"]
            seconds = max(seen["read_seconds"], 1e-6)
            read["records_per_second"] = round(seen["records"] / seconds)
            read["mb_per_second"] = round(seen["value_bytes"] / seconds / 1e6, 2)
            read["timings"] = {k: seen[k] for k in ("spark_startup_seconds", "read_seconds", "spark_submit_seconds")}
            read["problems"] = problems(read, args)
            read["timings"]["validation_seconds"] = round(time.monotonic() - t, 3)
            ok = ok and not read["problems"]
            report["reads"].append(read)
    report["ok"] = ok
    return report


def judged_locality(before, after, racks, dc):
    """locality.locality of the read, or, when a broker's counter cannot be compared (it restarted between the
    two scrapes), no figures and why ("unjudged"): the read fails, it is never judged on a guess."""
    try:
        return locality.locality(before, after, racks, dc)
    except locality.CounterReset as exc:
        return {"bytes_by_broker": {}, "bytes_by_dc": {}, "bytes_total": 0, "locality_ratio": None,
                "unjudged": str(exc)}  # fmt: skip


def judged_crossing(before, after, dc):
    """locality.crossed of the read, or, when a DC pair's count cannot be compared (the router's counter was reset
    between the two reads), no figures and why ("unjudged"): the read fails, it is never judged on a guess."""
    try:
        return locality.crossed(before, after, dc)
    except locality.CounterReset as exc:
        return {"dc": dc, "unjudged": str(exc)}


def problems(read, args):
    out = []
    v = read["validation"]
    if not v["ok"]:
        out.append(
            f"{v['missing']} missing, {v['duplicate']} duplicate, {v['corrupt']} corrupt, "
            f"{v['foreign']} foreign of {v['expected']} records"
        )
    if read.get("unjudged"):
        out.append(f"locality not judged: {read['unjudged']}")
        return out
    if not read["bytes_total"]:
        out.append("the brokers report no bytes served to the read: the measurement saw nothing")
    elif read["control"]:
        low, high = args.control_band
        shares = {dc: b / read["bytes_total"] for dc, b in read["bytes_by_dc"].items()}
        read["share_by_dc"] = {dc: round(s, 4) for dc, s in shares.items()}
        if len(shares) < 2 or not all(low <= s <= high for s in shares.values()):
            out.append(
                f"control read is not split between the DCs ({read['share_by_dc']}), so locality "
                "cannot be told from chance"
            )
    elif read["locality_ratio"] < args.threshold:
        out.append(f"locality {read['locality_ratio']:.4f} is below the threshold {args.threshold}")
    if read.get("crossed", {}).get("unjudged"):
        out.append(f"the router's count not judged: {read['crossed']['unjudged']}")
    elif "crossed" in read and read["bytes_total"]:
        crossed = read["crossed"]
        # What the brokers of the other DCs served this read, against what the router saw cross into its DC.
        foreign = read["bytes_total"] - read["bytes_by_dc"].get(crossed["dc"], 0)
        crossed["brokers_bytes_from_other_dcs"] = foreign
        share = crossed["bytes_in"] / read["bytes_total"]
        crossed["share"] = round(share, 4)
        if abs(crossed["bytes_in"] - foreign) > args.agreement * read["bytes_total"]:
            out.append(
                f"the brokers served {foreign} B from outside {crossed['dc']} but {crossed['bytes_in']} B crossed "
                f"into it: the two measurements disagree by more than {args.agreement:.0%} of the read"
            )
        # The router's measurement is judged like the brokers': a DC read must stay in its DC, and the
        # control read must be seen crossing, or the counters cannot tell.
        low, high = args.control_band
        if read["control"] and not low <= share <= high:
            out.append(f"the control read crossed {share:.2%} into {crossed['dc']}, not {low:.0%}-{high:.0%}")
        elif not read["control"] and 1 - share < args.threshold:
            out.append(f"{share:.2%} of the read crossed into {crossed['dc']}: below the threshold {args.threshold}")
    if "network" in read and read["bytes_total"]:
        net = read["network"]
        dc = read["dc"] or min(read["bytes_by_dc"])
        brokers_share = read["bytes_by_dc"].get(dc, 0) / read["bytes_total"]
        network_share = net["bytes_by_dc"].get(dc, 0) / net["bytes_total"] if net["bytes_total"] else 0.0
        net["share_of_" + dc] = round(network_share, 4)
        if abs(brokers_share - network_share) > args.agreement:
            out.append(
                f"the brokers' counters ({brokers_share:.4f} from {dc}) and the network's "
                f"({network_share:.4f}) disagree"
            )
    return out


def summary(report):
    lines = [
        f"smoke test of topic {report['topic']} (run {report['run_id']}): {'PASSED' if report['ok'] else 'FAILED'}"
    ]
    m = report["manifest"]
    lines.append(
        f"  produced {sum(p['expected'] for p in m['partitions'].values())} records "
        f"x {m['record_bytes']} B in {m['produce_seconds']}s (acks=all, idempotent)"
    )
    for read in report["reads"]:
        name = "control (no client.rack)" if read["control"] else f"as {read['dc']}"
        v = read["validation"]
        if read.get("unjudged"):
            measure = "locality not judged"
        elif read["control"]:
            measure = f"shares {read.get('share_by_dc')}"
        else:
            measure = f"locality {read['locality_ratio']:.2%}"
        where = f" on {read['master']}"
        if "crossed" in read:
            c = read["crossed"]
            pairs_text = ", ".join(f"{pair} {n} B" for pair, n in c["bytes_by_pair"].items())
            where += f"; crossed into {c['dc']}: {c['bytes_in']} B ({c.get('share', 0):.2%}) [{pairs_text}]"
        lines.append(
            f"  read {name}: {v['read']}/{v['expected']} records, {measure}, "
            f"{read['records_per_second']} rec/s, {read['mb_per_second']} MB/s{where}"
            + ("" if not read["problems"] else "  <-- " + "; ".join(read["problems"]))
        )
    return lines


def client_log(args):
    """Where the Kafka clients' own log lines go: beside the report."""
    return Path(args.report).with_suffix(".clients.log")


def main(argv=None):
    args = parse_args(argv)
    try:
        report = run(args)
    except (SmokeError, SettingError) as exc:
        print(f"smoke test refused: {exc}", file=sys.stderr)
        return 2
    Path(args.report).parent.mkdir(parents=True, exist_ok=True)
    Path(args.report).write_text(json.dumps(report, indent=2) + "\n")
    print("\n".join(summary(report)))
    print(f"  report: {args.report}; the Kafka clients' log: {report['client_log']}")
    return 0 if report["ok"] else 1
