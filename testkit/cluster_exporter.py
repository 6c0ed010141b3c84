"""The cluster's exporter as the kafka_monitoring role installs it (the stretch-exporter package,
packages/stretch-exporter): the tests and drills have this machine, their Prometheus host, installed by the role
(playbooks/monitoring.yml) and run the entry point it installed, with the settings it wrote: one copy of the code,
installed as operators install it."""

from __future__ import annotations

from pathlib import Path

# Where the role installs it here (kafka_monitoring_exporter_home): the user's cache, as the smoke test's runner
# keeps its own; kept between runs, so a run after the first changes nothing.
HOME = Path.home() / ".cache" / "stretch-exporter"


def command(settings, listen, home=HOME):
    """The exporter's command line: the entry point in the role's virtualenv under home, reading settings (the
    role's stretch-exporter.json) and serving /metrics on listen (host:port)."""
    return [str(Path(home) / "venv" / "bin" / "stretch-exporter"), f"--config={settings}", f"--listen={listen}"]
