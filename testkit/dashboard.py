"""The stretch cluster's Grafana dashboard as code, with Grafana's own SDK (grafana-foundation-sdk).

    python -m testkit.dashboard > roles/kafka_monitoring/files/stretch-dashboard.json   (make dashboard)

The panels are plain data (PANELS): each its queries, each query with the
DCs it must return series for ("every": each DC with a node; "brokers": the
broker DCs; None: a model line without a DC). The SDK turns them into the
dashboard JSON Grafana imports (schema 41: Grafana 11.6 and 12.x); the
drills evaluate the same queries against the testbed's Prometheus, and
testkit.dashboard_png draws the main panels from them. The metric names are
the project's own (the JMX exporter's rules in metrics-agent.yaml.j2, the
node exporter's, the WAN probe's, the cluster's exporter's), so the usual
Kafka dashboards do not read them.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field

UID = "stretch-kafka"
TITLE = "Kafka stretch cluster"
# Grafana's own interval variable for rate(); evaluated outside Grafana as RATE_WINDOW.
RATE = "$__rate_interval"
RATE_WINDOW = "1m"
EVERY, BROKERS = "every", "brokers"


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str
    dcs: str | None = BROKERS  # the DCs it must return series for: EVERY, BROKERS, or None

    def promql(self):
        """The expression as Prometheus takes it outside Grafana."""
        return self.expr.replace(RATE, RATE_WINDOW)


@dataclass(frozen=True)
class Panel:
    title: str
    description: str
    unit: str
    queries: tuple
    main: bool = False  # drawn in the picture of a DC loss (testkit.dashboard_png)
    width: int = 12


@dataclass(frozen=True)
class Row:
    title: str
    panels: tuple = field(default_factory=tuple)


CONTROLLERS = 'role=~".*controller", exporter=""'
BROKER_UP = 'up{role=~"broker.*", kafka_listener="", exporter=""}'
# Each broker's address (the fetcher's brokerhost) with its DC as leader_dc: to say which DC a follower fetched from.
LEADER_DC = (
    "count by (brokerhost, leader_dc) (label_replace(label_replace(" + BROKER_UP + ', "brokerhost", "$1", "instance", '
    '"(.+):[0-9]+"), "leader_dc", "$1", "dc", "(.+)"))'
)


def _quorum(title, description, expr, legend="{{node}} ({{dc}})", unit="none"):
    """A quorum panel: one query, a series for each controller (or DC), in every DC with one."""
    return Panel(title, description, unit, (Query(expr, legend, EVERY),), width=6)


def _request_time(request):
    return Panel(
        f"{request} request time per DC (p99, by part)",
        f"Where the brokers of each DC spent the time of {request} requests, the slowest broker of the DC per part: "
        "queued, local work, waiting on other replicas (RemoteTimeMs: for acks=all produce, the other DC's "
        "followers; for fetches, waiting for data), response queued and sent. The 99th percentile of recent requests.",
        "ms",
        (
            Query(
                f'max by (dc, part) (kafka_network_request_time_ms{{request="{request}", quantile="0.99"}})',
                "{{dc}} {{part}}",
            ),
        ),
        main=request == "Produce",
    )


ROWS = (
    Row(
        "Quorum",
        (
            _quorum(
                "Quorum leader, as each voter sees it",
                "The node id each controller takes for the KRaft quorum's leader (-1: none known). All voters agreeing "
                "on one id is a healthy quorum.",
                f"kafka_raft_current_leader{{{CONTROLLERS}}}",
            ),
            _quorum(
                "Active controller per DC",
                "1 for the DC whose controller is active (the quorum's leader), 0 for the others.",
                f"max by (dc) (kafka_controller_active_count{{{CONTROLLERS}}})",
                legend="{{dc}}",
            ),
            _quorum(
                "Quorum epoch",
                "The quorum's epoch as each controller sees it: one more per controller election.",
                f"kafka_raft_current_epoch{{{CONTROLLERS}}}",
            ),
            _quorum(
                "Voter lag behind the quorum's high watermark",
                "Records each controller's metadata log ends behind the highest high watermark any voter reports; "
                "KafkaQuorumVoterLagging fires above 1000 for 2 minutes.",
                f"scalar(max(kafka_raft_high_watermark{{{CONTROLLERS}}})) - kafka_raft_log_end_offset{{{CONTROLLERS}}}",
                unit="short",
            ),
        ),
    ),
    Row(
        "Brokers per DC",
        (
            Panel(
                "Brokers up per DC, and fenced brokers",
                "Brokers whose JMX exporter answers, per DC; and the registered brokers the active controller counts "
                "fenced (down, or cut off from the controllers).",
                "none",
                (
                    Query(f"sum by (dc) ({BROKER_UP})", "{{dc}} up"),
                    Query(
                        "max(kafka_controller_fenced_brokers and on (node) kafka_controller_active_count == 1)",
                        "fenced",
                        None,
                    ),
                ),
                main=True,
                width=8,
            ),
            Panel(
                "Partitions under-replicated, under and at min ISR, per DC",
                "Partitions each DC's brokers lead: under-replicated (fewer in sync than assigned), at min ISR (a lost "
                "DC leaves its partitions there: two of four) and under min ISR (acks=all writes refused).",
                "none",
                (
                    Query(
                        "sum by (dc) (kafka_server_replicamanager_underreplicatedpartitions)", "{{dc}} under-replicated"
                    ),
                    Query("sum by (dc) (kafka_server_replicamanager_atminisrpartitioncount)", "{{dc}} at min ISR"),
                    Query(
                        "sum by (dc) (kafka_server_replicamanager_underminisrpartitioncount)", "{{dc}} under min ISR"
                    ),
                ),
                main=True,
                width=8,
            ),
            Panel(
                "ISR shrinks and expands per DC",
                "Replicas leaving and rejoining the ISR of partitions each DC's brokers lead, per second.",
                "ops",
                (
                    Query(f"sum by (dc) (rate(kafka_server_isr_shrinks_total[{RATE}]))", "{{dc}} shrinks"),
                    Query(f"sum by (dc) (rate(kafka_server_isr_expands_total[{RATE}]))", "{{dc}} expands"),
                ),
                width=8,
            ),
            Panel(
                "Eligible leader replicas (ELR)",
                "Replicas each DC's brokers hold that left the ISR below min ISR but stay eligible to lead (KIP-966); "
                "partitions under min ISR with none left (KafkaUnderMinIsrWithoutEligibleLeader), by leader's DC; and "
                "the active controller's elections from the ELR and unclean ones.",
                "none",
                (
                    Query("sum by (dc) (stretch_eligible_leader_replicas)", "{{dc}} eligible replicas"),
                    Query("sum by (dc) (stretch_partitions_under_min_isr_without_elr)", "{{dc}} without ELR"),
                    Query(
                        f"sum by (kind) (increase(kafka_controller_leader_elections_total[{RATE}]))", "{{kind}}", None
                    ),
                ),
            ),
            Panel(
                "Replication throttle",
                "Bytes per second each DC's brokers fetch for throttled replicas (non-zero only while a replication "
                "throttle is on: a DC's recovery), against all they send to followers.",
                "Bps",
                (
                    Query("sum by (dc) (kafka_server_followerreplication_byte_rate)", "{{dc}} throttled fetches"),
                    Query(
                        f"sum by (dc) (rate(kafka_server_brokertopicmetrics_replicationbytesout_total[{RATE}]))",
                        "{{dc}} sent to followers",
                    ),
                ),
            ),
        ),
    ),
    Row(
        "Requests per DC",
        tuple(_request_time(r) for r in ("Produce", "FetchConsumer", "FetchFollower")),
    ),
    Row(
        "Cross-DC traffic",
        (
            Panel(
                "Replication bytes by leader's and follower's DC, against the 2.5N model",
                "Bytes each DC's followers fetch from each DC's leaders (leader's DC -> follower's DC); with RF 4 "
                "(two replicas per DC) each produced byte crosses to the leader's other DC twice (2N), and 2.5N "
                "in all when producers write to leaders split evenly between the DCs (docs/observability.md).",
                "Bps",
                (
                    Query(
                        f"sum by (dc, leader_dc) (rate(kafka_server_fetcherstats_bytes_total[{RATE}]) "
                        f"* on (brokerhost) group_left (leader_dc) {LEADER_DC})",
                        "{{leader_dc}} -> {{dc}}",
                    ),
                    Query(
                        f"2 * sum(rate(kafka_server_brokertopicmetrics_bytesin_total[{RATE}]))",
                        "2N: the replicas in the leader's other DC",
                        None,
                    ),
                    Query(
                        f"2.5 * sum(rate(kafka_server_brokertopicmetrics_bytesin_total[{RATE}]))",
                        "2.5N: with produce split evenly",
                        None,
                    ),
                ),
                main=True,
                width=24,
            ),
        ),
    ),
    Row(
        "Consumers",
        (
            Panel(
                "Consumer lag per group and DC",
                "Records each group has still to read, summed over the partitions each DC's members own (the "
                "cluster's exporter; a member's DC from its address): from its commit, or from the log start for a "
                "partition a member owns and the group never committed. unassigned: partitions no member owns.",
                "short",
                (Query("sum by (group, dc) (stretch_consumer_group_lag)", "{{group}} {{dc}}"),),
                main=True,
            ),
            Panel(
                "Group members per DC",
                "Each group's members, by the DC their address is in.",
                "none",
                (Query("sum by (group, dc) (stretch_consumer_group_members)", "{{group}} {{dc}}"),),
            ),
        ),
    ),
    Row(
        "WAN",
        (
            Panel(
                "Round trip between the DCs",
                "A TCP connect from each DC's first host to another DC's (the blackbox exporter of role "
                "node_exporter): one round trip of the link; and the threshold KafkaWanRoundTripHigh fires above, "
                "from the inventory.",
                "s",
                (
                    Query('probe_duration_seconds{exporter="wan"}', "{{dc}} -> {{peer_dc}}", EVERY),
                    Query("stretch_wan_rtt_alert_seconds", "alert above, {{dc}} -> {{peer_dc}}", EVERY),
                ),
                main=True,
                width=24,
            ),
        ),
    ),
    Row(
        "Hosts",
        (
            Panel(
                "Disk used per node",
                "Each filesystem the node exporter reports (a Kafka log dir's, the root); NodeDiskFilling fires "
                "above 85% for 5 minutes, NodeDiskFull above 97%.",
                "percent",
                (
                    Query(
                        '100 * (1 - node_filesystem_avail_bytes{exporter="node"} '
                        '/ node_filesystem_size_bytes{exporter="node"})',
                        "{{node}} {{mountpoint}}",
                        EVERY,
                    ),
                ),
            ),
            Panel(
                "Memory used per node",
                "The share of the host's memory not available to new work (MemAvailable); a container reports its "
                "host's.",
                "percentunit",
                (
                    Query(
                        '1 - node_memory_MemAvailable_bytes{exporter="node"} '
                        '/ node_memory_MemTotal_bytes{exporter="node"}',
                        "{{node}}",
                        EVERY,
                    ),
                ),
            ),
        ),
    ),
)


def panels():
    return [panel for row in ROWS for panel in row.panels]


def build():
    """The dashboard as Grafana's JSON model (a dict)."""
    from grafana_foundation_sdk.builders import dashboard, prometheus, timeseries  # noqa: PLC0415
    from grafana_foundation_sdk.cog.encoder import JSONEncoder  # noqa: PLC0415
    from grafana_foundation_sdk.models.dashboard import DataSourceRef  # noqa: PLC0415

    source = DataSourceRef(type_val="prometheus", uid="${datasource}")
    board = (
        dashboard.Dashboard(TITLE)
        .uid(UID)
        .tags(["kafka", "stretch"])
        .description("A Kafka stretch cluster over two DCs and a tiebreaker, per DC (stretch.kafka collection).")
        .refresh("30s")
        .time("now-1h", "now")
        .with_variable(dashboard.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
    )
    ident = 1
    for row in ROWS:
        board = board.with_row(dashboard.Row(row.title).id(ident))
        ident += 1
        for panel in row.panels:
            built = (
                timeseries.Panel()
                .id(ident)
                .title(panel.title)
                .description(panel.description)
                .unit(panel.unit)
                .datasource(source)
                .height(8)
                .span(panel.width)
            )
            for ref, query in zip("ABCDEFGH", panel.queries, strict=False):
                built = built.with_target(
                    prometheus.Dataquery().expr(query.expr).legend_format(query.legend).ref_id(ref).datasource(source)
                )
            board = board.with_panel(built)
            ident += 1
    return json.loads(JSONEncoder(sort_keys=True, indent=2).encode(board.build()))


def render():
    return json.dumps(build(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
