"""A real Prometheus on this host, scraping every node's exporter with the roles' targets and alert rules.

The targets, rules and thresholds come from playbooks/monitoring.yml, as an
operator's Prometheus would get them: every node's JMX exporter, every host's
node exporter and the WAN probes between the DCs (roles/node_exporter). The
binaries are Debian's (testbed/setup-test-tools.sh unpacks them into the
virtualenv). Beside it, a blackbox exporter probes each node's TLS listener
(the role's stretch-tls-targets.json), verifying the certificate against the
CAs the role wrote, with the admin runner's certificate for listeners that
want one; and the cluster's exporter the role installed on this machine
(consumer lag per DC, the partitions' eligible leaders) runs with the settings
the role wrote, on the admin certificate as the admin modules do. All listen on the loopback only;
Prometheus scrapes and evaluates every 5 s and keeps its data in a temporary
directory; the cluster's exporter reads the cluster every 2 s.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

from testkit import cluster_exporter
from testkit.cluster import playbook

PROMETHEUS = Path(sys.executable).parent / "prometheus"
BLACKBOX = Path(sys.executable).parent / "prometheus-blackbox-exporter"
INTERVAL_SECONDS = 5
INTERVAL = f"{INTERVAL_SECONDS}s"
# How often the cluster's exporter reads the cluster here, and Prometheus scrapes it: short enough to see a lost
# DC's lag rise and fall within the seconds a takeover takes (a group drops a killed member in about 6 s).
EXPORTER_INTERVAL_SECONDS = 2


def loaded_alerts(data):
    """{alert name: health} from the data of /api/v1/rules: "ok", "err" (with its lastError), or "unknown".

    health is "unknown" until a rule's first evaluation. A rule file that did
    not parse leaves no group at all, so a missing name means a missing rule.
    """
    out = {}
    for group in data.get("groups") or []:
        for rule in group.get("rules") or []:
            if rule.get("type") == "alerting":
                health = rule.get("health", "unknown")
                out[rule["name"]] = f"err: {rule.get('lastError')}" if health == "err" else health
    return out


def rules_problems(loaded, expected):
    """What keeps the loaded rules from being the expected ones, each evaluated without error; empty when none."""
    problems = [f"alert rule {name} is not loaded" for name in sorted(set(expected) - set(loaded))]
    problems += [
        f"alert rule {name} is loaded but not in the rule file" for name in sorted(set(loaded) - set(expected))
    ]
    problems += [f"alert rule {name}: {health}" for name, health in sorted(loaded.items()) if health != "ok"]
    return problems


def write_rules(cluster, rules):
    """Runs playbooks/monitoring.yml for the cluster into the directory rules (its targets, alert rules and the
    cluster's exporter's settings, and the exporter installed on this machine); returns rules."""
    rules = Path(rules)
    written = playbook(cluster, "monitoring", kafka_monitoring_dir=str(rules), log_dir=rules.parent,
                       kafka_monitoring_exporter_interval=EXPORTER_INTERVAL_SECONDS,
                       kafka_monitoring_exporter_home=str(cluster_exporter.HOME))  # fmt: skip
    if not written.ok:
        raise RuntimeError(f"playbooks/monitoring.yml failed; see {written.log}")
    return rules


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    def __init__(self, cluster, workdir, rules):
        """rules: the directory playbooks/monitoring.yml wrote for this cluster (write_rules)."""
        self.cluster, self.workdir, self.rules_dir = cluster, Path(workdir), Path(rules)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.blackbox_port = _free_port()
        self.exporter_port = _free_port()
        self.proc = self.blackbox = self.exporter = None

    def _blackbox_config(self, rules):
        """The blackbox exporter's one module: a TLS handshake verified against the role's CA bundle."""
        tls = {"ca_file": str(rules / "stretch-ca.pem"), "cert_file": self.cluster.admin_config["ssl_certfile"],
               "key_file": self.cluster.admin_config["ssl_keyfile"]}  # fmt: skip
        return {"modules": {"kafka_tls": {"prober": "tcp", "timeout": "4s", "tcp": {"tls": True, "tls_config": tls}}}}

    def __enter__(self):
        rules = self.rules_dir
        (self.workdir / "blackbox.yml").write_text(json.dumps(self._blackbox_config(rules)))
        config = {
            "global": {"scrape_interval": INTERVAL, "evaluation_interval": INTERVAL, "scrape_timeout": "4s"},
            "rule_files": [str(rules / "stretch-alerts.yml"), str(rules / "stretch-thresholds.yml")],
            "scrape_configs": [
                {"job_name": "kafka", "file_sd_configs": [{"files": [str(rules / "stretch-targets.json")]}]},
                {"job_name": "node", "file_sd_configs": [{"files": [str(rules / "stretch-node-targets.json")]}]},
                # The probe's module and target are the target groups' own labels.
                {"job_name": "wan", "file_sd_configs": [{"files": [str(rules / "stretch-wan-targets.json")]}]},
                {
                    "job_name": "stretch",
                    "scrape_interval": f"{EXPORTER_INTERVAL_SECONDS}s",
                    "scrape_timeout": f"{EXPORTER_INTERVAL_SECONDS}s",
                    "static_configs": [
                        {"targets": [f"127.0.0.1:{self.exporter_port}"], "labels": {"exporter": "stretch"}}
                    ],
                },
                {
                    "job_name": "kafka-tls",
                    "metrics_path": "/probe",
                    "params": {"module": ["kafka_tls"]},
                    "file_sd_configs": [{"files": [str(rules / "stretch-tls-targets.json")]}],
                    "relabel_configs": [
                        {"source_labels": ["__address__"], "target_label": "__param_target"},
                        {"target_label": "__address__", "replacement": f"127.0.0.1:{self.blackbox_port}"},
                    ],
                },
            ],
        }
        (self.workdir / "prometheus.yml").write_text(json.dumps(config))
        self.log = open(self.workdir / "prometheus.log", "w")  # noqa: SIM115 - closed in __exit__
        self.exporter = subprocess.Popen(
            cluster_exporter.command(rules / "stretch-exporter.json", f"127.0.0.1:{self.exporter_port}"),
            stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.blackbox = subprocess.Popen(
            [str(BLACKBOX), f"--config.file={self.workdir / 'blackbox.yml'}",
             f"--web.listen-address=127.0.0.1:{self.blackbox_port}"],
            stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.proc = subprocess.Popen(
            [str(PROMETHEUS), f"--config.file={self.workdir / 'prometheus.yml'}",
             f"--storage.tsdb.path={self.workdir / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                self._get("/-/ready")
                return self
            except OSError:
                if self.proc.poll() is not None:
                    break
                time.sleep(1)
        self.__exit__()
        raise RuntimeError(f"Prometheus did not become ready; see {self.workdir / 'prometheus.log'}")

    def __exit__(self, *exc):
        for proc in (self.proc, self.blackbox, self.exporter):
            if proc and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
        self.log.close()

    def _get(self, path, **params):
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=10) as response:
            return response.read().decode()

    def _api(self, path, **params):
        answer = json.loads(self._get(f"/api/v1/{path}", **params))
        if answer.get("status") != "success":
            raise RuntimeError(f"Prometheus {path}: {answer}")
        return answer["data"]

    def targets(self):
        """{(job, node or instance, peer DC or ""): health ("up", "down", "unknown")} of the active targets."""
        return {
            (
                t["labels"]["job"],
                t["labels"].get("node", t["labels"].get("instance")),
                t["labels"].get("peer_dc", ""),
            ): t["health"]
            for t in self._api("targets")["activeTargets"]
        }

    def query_range(self, expr, start, end, step):
        """[(labels, [(time, value)])] of a range query (times in epoch seconds)."""
        data = self._api("query_range", query=expr, start=start, end=end, step=step)
        return [(r["metric"], [(float(t), float(v)) for t, v in r["values"]]) for r in data["result"]]

    def query(self, expr):
        """[(labels, value)] of an instant query."""
        return [(r["metric"], float(r["value"][1])) for r in self._api("query", query=expr)["result"]]

    def rules(self):
        """{alert name: health} of the alerting rules Prometheus has loaded and evaluates (/api/v1/rules)."""
        return loaded_alerts(self._api("rules", type="alert"))

    def alerts(self, state="firing"):
        """[labels] of the alerts in that state (firing or pending)."""
        return [a["labels"] for a in self._api("alerts")["alerts"] if a["state"] == state]
