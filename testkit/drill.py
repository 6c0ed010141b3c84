"""The load a drill runs through its operations: what it acknowledged, and the proof nothing was lost."""

from __future__ import annotations

import contextlib
import json
import statistics
import time
from pathlib import Path

from testkit.loadtest.background import BackgroundLoad
from testkit.wan import control, rtt


class Load:
    """The load harness (acks=all, idempotent, 200 records/s, read as each broker DC) through a block of a drill.

    Its client trusts trusted.pem as it is when the load starts. On leaving
    the block without an error, the load must have acknowledged records, and
    lost, reordered, failed or left unconfirmed none (load_problems); its
    report goes into figures["loads"][label], with the round trips between the
    DCs measured from the nodes meanwhile (on a testbed with a WAN): what the
    drill's load did to the delay.
    """

    def __init__(self, cluster, workdir, label, figures):
        self.label, self.figures = label, figures
        Path(workdir).mkdir()
        self.load = BackgroundLoad(
            cluster.bootstrap_servers, cluster.dcs, rate=200, workdir=workdir, duration=3600,
            client_config_file=cluster.client_config_file(workdir, "kafka-load"),
        )  # fmt: skip
        self.rtt = wan_probe()

    def __enter__(self):
        self.load.start()
        if self.rtt:
            self.rtt.start()
        return self

    def __exit__(self, *exc):
        time.sleep(5)  # some load after the last operation too
        self.load.stop()
        report = self.load.report()
        if self.rtt:
            report["wan_rtt"] = self.rtt.stop()
            print(f"WAN round trips through {self.label}: " + "; ".join(
                f"{pair} p50 {r['p50_ms']} ms, p99 {r['p99_ms']} ms, max {r['max_ms']} ms, {r['failed']} of {r['n']} "
                "unanswered" for pair, r in report["wan_rtt"].items()), flush=True)  # fmt: skip
        self.figures["loads"][self.label] = report
        print(
            f"load through {self.label}: {report['acknowledged']} acknowledged, lost {report['lost']}, reordered "
            f"{report['reordered']}, produce errors {report['produce_errors']}, unconfirmed "
            f"{report['unconfirmed']}, latency p99 "
            f"{report['latency_p99_ms']} ms after a {report['warmup_seconds']:g} s warm-up (warm-up p99 "
            f"{report['warmup_latency_p99_ms']} ms), longest stall {report['longest_stall_seconds']} s",
            flush=True,
        )
        if exc[0] is None:
            problems = load_problems(report)
            assert not problems, f"load through {self.label}: " + "; ".join(problems)


# What a load's report must show for a drill to pass, and how a shortfall reads.
REQUIRED_ZERO = (
    ("lost", "acknowledged record(s) lost"),
    ("reordered", "record(s) reordered within a partition"),
    ("produce_errors", "write(s) failed with an error"),
    ("unconfirmed", "write(s) neither acknowledged nor reported failed when the producer stopped"),
)


def load_problems(report):
    """Why a load's report fails a drill; empty when every write was acknowledged and read back in order.

    A count missing from the report is a problem too: an outcome nobody
    counted cannot be taken as zero.
    """
    problems = []
    for key in ("acknowledged", *(key for key, _ in REQUIRED_ZERO)):
        if not isinstance(report.get(key), int):
            problems.append(f"the load's report has no {key} count")
    if problems:
        return problems
    if report["acknowledged"] == 0:
        problems.append("no write was acknowledged")
    for key, what in REQUIRED_ZERO:
        if report[key]:
            kinds = f" ({', '.join(report.get('produce_error_kinds') or [])})" if key == "produce_errors" else ""
            problems.append(f"{report[key]} {what}{kinds}")
    if report.get("accounting_error"):
        problems.append(f"the load's counts do not add up: {report['accounting_error']}")
    return problems


def wan_probe(state=None):
    """A probe of the round trips between the DCs, one connect per second from each DC's probe node, or None
    on a cluster without the testbed's WAN."""
    try:
        probes = (state or control.State()).config()["probes"]
    except RuntimeError:
        return None
    return rtt.RttProbe({dc: tuple(p) for dc, p in probes.items()}, interval=1.0)


def writable_for(record, topic):
    """When Kafka's record (a failover's kafka_failover_record) lets acks=all writes to one topic resume: the
    last fencing of the lost DC's brokers, and the relaxed min.insync.replicas that topic waited for (the
    cluster-wide one, its own). Other topics' relaxations are not its: a topic left with a stricter minimum
    becomes writable later. None when the record has no fencing (it is then no figure, not a zero)."""
    fenced = [float(v) for v in (record.get("fenced") or {}).values() if v not in (None, "")]
    if not fenced:
        return None
    relaxed = [record.get("min_isr_at"), (record.get("relaxed_at") or {}).get(topic)]
    return max(fenced + [float(v) for v in relaxed if v not in (None, "")])


@contextlib.contextmanager
def recorded(path):
    """What a drill measures, {"steps": [{"step", ...}], "loads": {label: report}}, merged into the JSON file path."""
    path = Path(path)
    path.parent.mkdir(exist_ok=True)
    found = {"steps": [], "loads": {}}
    yield found
    previous = json.loads(path.read_text()) if path.exists() else {}
    previous.update({step["step"]: step for step in found["steps"]})
    previous.update({f"load through {label}": report for label, report in found["loads"].items()})
    path.write_text(json.dumps(previous, indent=2) + "\n")


def lag_rise_and_fall(points, calm, lost, settled):
    """Judges one DC's consumer lag around the loss of its consumers, from its points [(time, records)].

    calm, lost, settled: (from, to) windows: before the loss; from the loss
    until the other DC's consumers took every partition over; after that.
    In the calm the lag saw-tooths between commits, and one slow batch
    lifts it far above its usual top. While the DC's partitions wait nobody
    commits them, so their lag only climbs: it rose when its peak while
    lost is above the calm's upper quartile (calm_q3) and has climbed from
    the first value read after the loss by more than the calm's
    interquartile range (calm_iqr: a saw-tooth's usual swing), which needs
    two points while lost. It fell when every value once settled is back at
    or under the calm's highest (calm_max; a DC that owns nothing any more
    counts 0). Returns {calm_q3, calm_iqr, calm_max, peak, climb,
    settled_max, rose, fell}; a window without a point (or the calm with
    fewer than four), or None, counts as not shown.
    """

    def within(window):
        return [v for t, v in points if window and window[0] <= t <= window[1]]

    calm_values, lost_values, settled_values = within(calm), within(lost), within(settled)
    calm_q1, _, calm_q3 = statistics.quantiles(calm_values, n=4) if len(calm_values) >= 4 else (None, None, None)
    calm_iqr = None if calm_q3 is None else calm_q3 - calm_q1
    calm_max = max(calm_values) if calm_values else None
    peak = max(lost_values) if lost_values else None
    climb = peak - lost_values[0] if len(lost_values) >= 2 else None
    settled_max = max(settled_values) if settled_values else None
    rose = None not in (calm_q3, climb) and peak > calm_q3 and climb > calm_iqr
    fell = None not in (calm_max, settled_max) and settled_max <= calm_max
    return {"calm_q3": calm_q3, "calm_iqr": calm_iqr, "calm_max": calm_max, "peak": peak, "climb": climb,
            "settled_max": settled_max, "rose": rose, "fell": fell}  # fmt: skip


def loss_windows(members, killed_at, until):
    """The lost and settled windows ((from, to) or None) of a DC whose consumers were killed at killed_at, from
    the dashboard's own count of that DC's members [(time, members)], read with its lag in the same scrape: lost
    from the kill until the first point after it without a member (the group has dropped the killed consumers and
    their partitions went to the other DC), settled from then until the first point with a member again (the
    consumers restarted) or until. A window the panel never showed is None."""
    after = [(t, n) for t, n in members if t > killed_at]
    left = next((i for i, (_, n) in enumerate(after) if n == 0), None)
    if left is None:
        return (killed_at, until), None
    back = next((i for i, (_, n) in enumerate(after) if i > left and n > 0), None)
    lost = (killed_at, after[left - 1][0]) if left else None
    settled = (after[left][0], after[back - 1][0] if back is not None else until)
    return lost, settled
