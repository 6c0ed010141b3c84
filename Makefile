# The two commands in the README:
#   make demo   set up this machine, bring up the local 2.5-DC cluster, show it, smoke-test it
#   make test   lint, unit and preflight tests, `molecule test` of the full topology and of the failover drill
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
export PATH := $(CURDIR)/.venv/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
LOCAL := -i inventories/local

.PHONY: demo test setup up converge status smoke verify down lint unit molecule bench bench-topics drill-restart drill-failover

demo: setup up converge smoke

test: setup lint unit molecule

# OS packages, podman settings, the virtualenv, the Kafka archive and the node image.
setup:
	testbed/setup-host.sh
	testbed/build-kafka-archive.sh
	testbed/fetch-jars.sh
	testbed/build-image.sh

up:
	ansible-playbook $(LOCAL) testbed/up.yml

# site.yml ends by waiting for the cluster and printing its nodes, DCs and quorum.
converge:
	ansible-playbook $(LOCAL) playbooks/site.yml

status:
	ansible-playbook $(LOCAL) playbooks/status.yml

# Produce, read back with PySpark as each DC and once without client.rack,
# and prove locality from the brokers' byte counters (reports/smoke.json).
smoke:
	ansible-playbook $(LOCAL) playbooks/smoke-test.yml

# The integration checks against the running testbed (Molecule's verify step).
verify:
	python -m pytest -p no:cacheprovider -q tests/integration

down:
	ansible-playbook $(LOCAL) testbed/down.yml

lint:
	yamllint --strict .
	ansible-lint --profile production
	ruff check .
	ruff format --check .

unit:
	python -m pytest -p no:cacheprovider -q tests/unit tests/preflight

# The default scenario (deploy, idempotence, smoke test, integration tests),
# then the DC failover drill on a fresh testbed.
molecule:
	molecule test
	molecule test -s failover

# Prints converge, smoke-test and molecule wall times, the idempotence changed count,
# the smoke test's locality and step times, and the testbed's peak memory. Recreates the testbed.
bench: setup
	python scripts/bench.py

# Topics and quotas figures against the running testbed (make up converge):
# placement time and replicas moved, bytes copied by a reassignment against the
# minimum, and the wall time of a no-op reconcile over 200 topics and 50 quotas.
bench-topics:
	python scripts/bench_topics.py

# Three rolling restarts in a row under load, against the running testbed:
# records lost (must be 0), reordering, produce errors, latency and stalls,
# and each restart's wall time and time spent in gates.
drill-restart:
	python scripts/restart_drill.py

# The DC failover drill under load, against the running testbed: lose dc2,
# bring it back under the replication throttle, lose the tiebreaker, cut dc1
# from dc2; failover and recovery seconds, records lost (must be 0).
drill-failover:
	python scripts/failover_drill.py
