"""The project's own Python outside the roles' collection: the testbed's WAN, the smoke job (stretch.smoke, the
kafka_smoke role's files), the load harness, the helpers the tests and drills share, and the benchmarks."""

from pathlib import Path

# The repository: its inventories, playbooks and roles, which the tools run and read.
REPO = Path(__file__).resolve().parents[1]
