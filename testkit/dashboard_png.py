"""The dashboard's main panels over a DC loss and recovery, drawn from the drill's Prometheus data.

    python -m testkit.dashboard_png [reports/dashboard-dc-loss.json] [docs/images/dashboard-dc-loss.png]

The failover drill keeps, at its end, what its Prometheus answered to the
main panels' own queries over the drill (testkit.dashboard_check), with the
moments the second DC was lost, began to recover and was back; this draws
them as the dashboard shows them, one plot per panel, a line per series
with the panel's legend.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from testkit import REPO

DATA = REPO / "reports/dashboard-dc-loss.json"
PICTURE = REPO / "docs/images/dashboard-dc-loss.png"
# Grafana's units and how a plot's axis says them.
UNITS = {"ms": (1, "ms"), "s": (1000, "ms"), "Bps": (1 / 1e6, "MB/s"), "none": (1, ""), "short": (1, "records")}


def legend(template, labels):
    """A series' name as Grafana writes it from the query's legend format ({{label}} replaced)."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: str(labels.get(m.group(1), "")), template)


def lines(panel, start):
    """[(name, [seconds since start], [values in the axis' unit])] of a panel's series."""
    scale, _ = UNITS.get(panel["unit"], (1, panel["unit"]))
    out = []
    for query in panel["queries"]:
        for series in query["series"]:
            points = series["points"]
            out.append(
                (
                    legend(query["legend"], series["labels"]),
                    [t - start for t, _ in points],
                    [v * scale for _, v in points],
                )
            )
    return out


def draw(data, path):
    import matplotlib  # noqa: PLC0415  only where the picture is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    panels = data["panels"]
    rows = (len(panels) + 1) // 2
    fig, axes = plt.subplots(rows, 2, figsize=(15, 3.6 * rows), squeeze=False)
    start = data["start"]
    for ax, panel in zip(axes.flat, panels, strict=False):
        for name, xs, ys in lines(panel, start):
            ax.plot(xs, ys, label=name, linewidth=1.2)
        for mark, at in sorted(data["marks"].items(), key=lambda m: m[1]):
            ax.axvline(at - start, color="grey", linestyle="--", linewidth=0.8)
            ax.annotate(mark, (at - start, 1), xycoords=("data", "axes fraction"), rotation=90, fontsize=7,
                        va="top", ha="right", color="dimgrey")  # fmt: skip
        ax.set_title(panel["title"], fontsize=9)
        ax.set_ylabel(UNITS.get(panel["unit"], (1, panel["unit"]))[1], fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6, loc="upper left", ncol=2)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("seconds since the drill started", fontsize=8)
    fig.suptitle("Kafka stretch cluster: the dashboard's main panels over a DC's loss and recovery", fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    source = Path(argv[0]) if argv else DATA
    target = Path(argv[1]) if len(argv) > 1 else PICTURE
    if not source.exists():
        print(
            f"dashboard_png: {source} is missing: run the failover drill first (make drill-failover)", file=sys.stderr
        )
        return 2
    print(draw(json.loads(source.read_text()), target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
