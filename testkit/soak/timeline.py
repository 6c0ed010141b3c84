"""The soak's timeline picture: acknowledged writes per second and produce latency, each fault marked as a span.

Drawn from the producers' acknowledgement logs and the soak's fault record
only (the verifier's inputs), so a run's directory redraws it:
`python -m testkit.soak verify DIR --picture PATH`.
"""

from __future__ import annotations

import math
from collections import defaultdict

# One colour per kind, so the same kind reads the same in every picture.
COLOURS = {
    "broker-kill": "#d62728",
    "controller-kill": "#9467bd",
    "broker-pause": "#ff7f0e",
    "dc-loss": "#8c564b",
    "cut": "#1f77b4",
    "oneway": "#17becf",
    "tiebreaker-isolated": "#7f7f7f",
    "disk-full": "#bcbd22",
    "rolling-restart": "#2ca02c",
    "two-dcs-lost": "#000000",
}


def series(acks_by_producer, t0):
    """Per second since t0: {producer: [acks in that second]}, and the p50 and max latency (ms) of its acks."""
    seconds = 1 + int(max((a["ta"] for acks in acks_by_producer.values() for a in acks), default=t0) - t0)
    rates = {name: [0] * seconds for name in acks_by_producer}
    latency = defaultdict(list)
    for name, acks in acks_by_producer.items():
        for a in acks:
            second = int(a["ta"] - t0)
            if 0 <= second < seconds:
                rates[name][second] += 1
                latency[second].append((a["ta"] - a["ts"]) * 1000)
    p50, worst = [], []
    for second in range(seconds):
        values = sorted(latency.get(second, []))
        p50.append(values[len(values) // 2] if values else math.nan)
        worst.append(values[-1] if values else math.nan)
    return rates, p50, worst


def draw(report, acks_by_producer, path, title=""):
    """Write the picture to path (PNG). report: the verifier's (its t0 and faults)."""
    import matplotlib  # noqa: PLC0415  only where the picture is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    t0 = report["t0"]
    rates, p50, worst = series(acks_by_producer, t0)
    minutes = [s / 60 for s in range(len(p50))]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(14, 7), sharex=True, gridspec_kw={"height_ratios": [1, 1]})
    for name, per_second in sorted(rates.items()):
        top.plot(minutes, per_second, linewidth=0.7, label=f"acknowledged/s, producer in {name}")
    bottom.plot(minutes, worst, linewidth=0.6, color="#d62728", label="max latency in the second")
    bottom.plot(minutes, p50, linewidth=0.8, color="#1f77b4", label="median latency in the second")
    bottom.set_yscale("log")
    top.set_ylabel("acknowledged writes / s")
    bottom.set_ylabel("produce latency (ms)")
    bottom.set_xlabel("minutes since the load started")
    seen = set()
    for fault in report["faults"]:
        start, end = fault["start"] / 60, max(fault["end"], fault["start"] + 1) / 60
        colour = COLOURS.get(fault["kind"], "#888888")
        label = fault["kind"] if fault["kind"] not in seen else None
        seen.add(fault["kind"])
        for axis in (top, bottom):
            axis.axvspan(start, end, color=colour, alpha=0.18, hatch=None if fault["in_model"] else "//",
                         label=label if axis is top else None)  # fmt: skip
        top.annotate(f"#{fault['id']}", (start, 1.0), xycoords=("data", "axes fraction"), fontsize=6,
                     va="bottom", rotation=90)  # fmt: skip
    top.legend(loc="upper left", fontsize=7, ncol=4)
    bottom.legend(loc="upper left", fontsize=7)
    fig.suptitle(title or "soak", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
