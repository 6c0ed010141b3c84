"""The project's own tools outside the collection: the testbed's WAN, the load harness, the helpers the tests and
drills share, and the benchmarks. The kafka-group source and the smoke test are packages of their own (packages/)."""

from pathlib import Path

# The repository: its inventories, playbooks and roles, which the tools run and read.
REPO = Path(__file__).resolve().parents[1]
