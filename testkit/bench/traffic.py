"""Cross-DC traffic on the testbed: the bytes each run sent between the DCs, by kind, against the 2.5N model.

Run with `make traffic` against the running testbed (`make up converge`).
Four runs on the topic `traffic` (RF 4, two replicas per DC, leaders spread
over the brokers), each by a client that sits in the inventory's first
broker DC, here dc1 (testkit/dcnet.py):

- produce N bytes to every partition in turn: the model's 2.5N;
- read those records back as client.rack dc1: about 0 crossings;
- read them back without client.rack: from the leaders, half of them in dc2;
- produce N bytes to the partitions led from dc1 only (--leader-local): 2.0N.

Each run's cross-DC bytes come from the brokers' counters and, apart, from
the host's routed bytes between the DC subnets; the two must agree, allowing
for the segments the senders' kernels counted as sent again. Prints
the figures and writes reports/traffic.json.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

from testkit import REPO, dcnet, traffic
from testkit import cluster as inventory
from testkit.loadtest import harness

TOPIC = "traffic"
RECORDS, SIZE = 20_000, 1024


def scrape(cluster):
    """{broker id: counters} read from every broker's exporter; any read error stops the run."""
    out = {}
    for node in cluster.brokers:
        url = f"http://{node.address}:{cluster.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            out[node.node_id] = traffic.broker_counters(response.read().decode())
    return out


def settled(cluster, timeout=60, interval=2):
    """The brokers' counters once two reads in a row agree (followers caught up), at most timeout seconds."""
    deadline = time.monotonic() + timeout
    last = scrape(cluster)
    while time.monotonic() < deadline:
        time.sleep(interval)
        now = scrape(cluster)
        if now == last:
            return now
        last = now
    raise RuntimeError(f"the brokers' counters still moved after {timeout} s")


def client(dc_client, cluster, workdir, *args):
    """Run python -m testkit.loadtest.traffic in dc_client's namespace (None: on the host); its JSON answer."""
    cmd = [sys.executable, "-m", "testkit.loadtest.traffic", *args, "--topic", TOPIC,
           "--bootstrap-servers", cluster.bootstrap_servers,
           "--client-config", str(cluster.client_config_file(workdir))]  # fmt: skip
    cmd = dc_client.wrap(cmd) if dc_client is not None else cmd
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=os.environ, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(cluster, routed, resent, run, producer_dc, consumer_dc=None):
    """One run's figures: cross-DC bytes by pair and kind (brokers' counters), the wire's, and how they agree.

    resent: a dcnet.Retransmits of every sender; the wire may hold up to its segments again (each at most
    resent.payload bytes) that the brokers counted once."""
    racks = {n.node_id: n.dc for n in cluster.brokers}
    before, wire_before, resent_before = settled(cluster), routed.read(), resent.read()
    started = time.monotonic()
    answer = run()
    seconds = time.monotonic() - started
    after, wire_after, resent_after = settled(cluster), routed.read(), resent.read()
    flows = traffic.cross_dc(before, after, racks, TOPIC, producer_dc, consumer_dc)
    sums = traffic.totals(flows)
    wire = traffic.wire_payload(dcnet.between(wire_before, wire_after))
    wire_total = sum(wire.values())
    segments = {dc: resent_after.get(dc, 0) - resent_before.get(dc, 0) for dc in sorted(resent_after)}
    allowance = {pair: segments.get(pair[0], 0) * resent.payload for pair in wire}
    produced = traffic.produced(before, after, racks, TOPIC)
    figures = {
        "client": answer,
        "seconds": round(seconds, 1),
        "cross_dc_bytes": {
            f"{a}->{b}": {k: int(v) for k, v in kinds.items()} for (a, b), kinds in sorted(flows.items())
        },
        "cross_dc_total": {k: int(v) for k, v in sums.items()},
        "wire_payload_bytes": {f"{a}->{b}": int(v) for (a, b), v in sorted(wire.items())},
        "wire_payload_total": int(wire_total),
        # What each DC's senders sent again over the run, and the most payload that is.
        "retransmitted_segments": segments,
        "retransmission_allowance_bytes": {f"{a}->{b}": int(v) for (a, b), v in sorted(allowance.items())},
        "wire_disagreement_before_allowance": round(traffic.disagreement(sums["all"], wire_total), 4),
        "wire_disagreement": round(traffic.disagreement_allowing(sums["all"], wire_total, sum(allowance.values())), 4),
        # Per direction, where the brokers counted at least 1 MB.
        "wire_disagreement_by_pair": {
            f"{a}->{b}": round(
                traffic.disagreement_allowing(
                    sum(flows[(a, b)].values()), wire.get((a, b), 0), allowance.get((a, b), 0)
                ),
                4,
            )
            for (a, b) in sorted(flows)
            if sum(flows[(a, b)].values()) >= 1_000_000
        },
    }
    if consumer_dc is None:
        n = sum(produced.values())
        figures.update(
            # The measured ratio: the brokers' counters over the brokers' counters.
            produced_bytes=int(n),
            ratio=round(sums["all"] / n, 3),
            # The model's input is the client's own count of what it wrote to each
            # partition and which broker led it, never the counters checked against it.
            model_ratio=round(traffic.model_ratio(traffic.written_by_leader(answer), racks, producer_dc), 3),
        )
    else:
        by_broker = traffic.served(before, after, racks, TOPIC)
        figures.update(
            # What the client counted of the records' values, for the record; not divided into anything.
            read_value_bytes=answer["value_bytes"],
            served_bytes=int(sum(by_broker.values())),
            # Brokers' bytes over brokers' bytes (record batches as stored).
            consume_cross_share=round(traffic.read_share(flows, by_broker), 4),
        )
    return figures


def run_all(cluster, records=RECORDS, size=SIZE, dc=None):
    """The four runs' figures, by name, from a client in dc (default: the inventory's first broker DC)."""
    dc = dc or cluster.dcs[0]
    admin = cluster.admin()
    try:
        described = admin.topics()
    finally:
        admin.close()
    if TOPIC not in described:
        raise SystemExit(f"topic {TOPIC!r} not found: declare it (examples/consumer/inventory) and converge")
    partitions = sorted(described[TOPIC]["partitions"])
    config = {"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config}
    ports = {cluster.client_port, cluster.replication_port}
    sized = ["--records", str(records), "--size", str(size), "--dc", dc]
    results = {}
    with (
        tempfile.TemporaryDirectory() as workdir,
        dcnet.RoutedBytes(cluster.dcs, ports) as routed,
        dcnet.DcClient(dc) as here,
        dcnet.Retransmits([(n.dc, n.address) for n in cluster.brokers], [here]) as resent,
    ):
        starts = {}

        def even():
            starts.update({str(p): o for p, o in harness.end_offsets(config, TOPIC, partitions).items()})
            return client(here, cluster, workdir, "produce", *sized)

        results["produce, leaders split evenly"] = measure(cluster, routed, resent, even, dc)
        # Read back the first run's records only, before the next run writes.
        reads = ["consume", "--from-offsets", json.dumps(starts)]
        results["consume as client.rack"] = measure(
            cluster, routed, resent, lambda: client(here, cluster, workdir, *reads, "--rack", dc), None, dc
        )
        results["consume without client.rack"] = measure(
            cluster, routed, resent, lambda: client(here, cluster, workdir, *reads), None, dc
        )
        results["produce, leader-local"] = measure(
            cluster, routed, resent, lambda: client(here, cluster, workdir, "produce", *sized, "--leader-local"), dc
        )
    return results


def main():
    cluster = inventory.load()
    results = run_all(cluster)
    for name, f in results.items():
        line = f"{name}: cross-DC {f['cross_dc_total']['all']:,} B"
        if "ratio" in f:
            line += f" = {f['ratio']}N (model {f['model_ratio']}N, N {f['produced_bytes']:,} B)"
        else:
            line += f", {f['consume_cross_share']:.1%} of the {f['served_bytes']:,} B the brokers served the read"
        line += (
            f"; wire {f['wire_payload_total']:,} B, disagreement {f['wire_disagreement']:.1%}"
            f" ({f['wire_disagreement_before_allowance']:.1%} before allowing for {f['retransmitted_segments']}"
            f" segments sent again); {f['seconds']} s"
        )
        print(line)
    out = REPO / "reports" / "traffic.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"figures in {out}")


if __name__ == "__main__":
    main()
