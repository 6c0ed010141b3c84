"""A real Prometheus on this host, scraping every node's exporter with the roles' targets and alert rules.

The targets and rules come from playbooks/monitoring.yml, as an operator's
Prometheus would get them; the binary is Debian's (testbed/setup-host.sh
unpacks it into the virtualenv). It listens on the loopback only, scrapes
and evaluates every 5 s, and keeps its data in a temporary directory.
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

from tests.cluster import playbook

PROMETHEUS = Path(sys.executable).parent / "prometheus"
INTERVAL_SECONDS = 5
INTERVAL = f"{INTERVAL_SECONDS}s"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    def __init__(self, cluster, workdir):
        self.cluster, self.workdir = cluster, Path(workdir)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def __enter__(self):
        rules = self.workdir / "rules"
        written = playbook(self.cluster, "monitoring", kafka_monitoring_dir=str(rules), log_dir=self.workdir)
        if not written.ok:
            raise RuntimeError(f"playbooks/monitoring.yml failed; see {written.log}")
        config = {
            "global": {"scrape_interval": INTERVAL, "evaluation_interval": INTERVAL, "scrape_timeout": "4s"},
            "rule_files": [str(rules / "stretch-alerts.yml")],
            "scrape_configs": [
                {"job_name": "kafka", "file_sd_configs": [{"files": [str(rules / "stretch-targets.json")]}]}
            ],
        }
        (self.workdir / "prometheus.yml").write_text(json.dumps(config))
        self.log = open(self.workdir / "prometheus.log", "w")  # noqa: SIM115 - closed in __exit__
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
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
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
        """{node: health ("up", "down", "unknown")} of the active targets."""
        return {t["labels"]["node"]: t["health"] for t in self._api("targets")["activeTargets"]}

    def query(self, expr):
        """[(labels, value)] of an instant query."""
        return [(r["metric"], float(r["value"][1])) for r in self._api("query", query=expr)["result"]]

    def alerts(self, state="firing"):
        """[labels] of the alerts in that state (firing or pending)."""
        return [a["labels"] for a in self._api("alerts")["alerts"] if a["state"] == state]
