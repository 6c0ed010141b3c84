# The two commands in the README:
#   make demo   set up this machine, bring up the local 2.5-DC cluster and each DC's Spark cluster,
#               deploy it from the built collection, show it, smoke-test it (each DC's read on its own Spark cluster)
#   make test   lint, the collection's build and sanity, unit tests (minutes), then `molecule test`: the full
#               topology, its idempotence, the smoke test, the integration tests and the drills on one testbed
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
export PATH := $(CURDIR)/.venv/bin:$(PATH)
# The testbed's own playbooks (testbed/up.yml, down.yml) and the checks of the
# source run with this checkout's settings; the tools outside Ansible import
# the collection's module_utils through collections/ (pytest reads the same
# path from pyproject.toml). The project's tools (testkit) are installed into
# the virtualenv.
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PYTHONPATH := $(CURDIR)/collections
LOCAL := -i examples/consumer/inventory
# The testbed is deployed as an operator deploys: from examples/consumer, an
# Ansible project of its own with the built collection installed into it.
CONSUMER := examples/consumer
PLAY := cd $(CONSUMER) && ANSIBLE_CONFIG=ansible.cfg ansible-playbook
VERSION := $(shell sed -n 's/^version: //p' galaxy.yml)
ARTIFACT := build/stretch-kafka-$(VERSION).tar.gz
# Outside this checkout: under a git work tree ansible-test lists only the files git tracks.
SANITY_ROOT := /tmp/stretch-kafka-sanity

.PHONY: demo test setup setup-os setup-python setup-test-tools setup-testbed testbed-maven testbed-spark testbed-wheels \
        wheels \
        collection sanity up converge status smoke \
        verify drills down lint unit molecule \
        bench bench-tls bench-topics bench-spark bench-group-source traffic drill-restart drill-failover drill-failover-late \
        drill-rotate drill-quorum drill-brokers \
        drill-upgrade drill-group drill-stream drill-active-active drill-active-active-short drill-oneway docs wan bench-wan \
        bench-kernel bench-scale test-trixie test-upgrade changelog \
        soak soak-schedule soak-fault soak-heal dashboard dashboard-png drill-alerts

demo: setup up converge smoke

test: setup-python setup-test-tools lint collection sanity setup-testbed unit molecule

setup: setup-testbed

# OS packages and podman's settings: what every later step needs.
setup-os:
	testbed/setup-host.sh os

# The virtualenv (Ansible, the clients, PySpark, the project's tools).
setup-python: setup-os
	testbed/setup-host.sh python

# What only the tests use: ansible-test's bootstrap and Prometheus's tools.
setup-test-tools:
	testbed/setup-test-tools.sh

# The Kafka archive and jars from Maven Central, the Spark archive (from the
# pinned pyspark), the wheels the streaming jobs and the smoke test need
# (from PyPI, and the project's own), and the node images of the two Debian
# releases the testbed's nodes run: side by side, as they share nothing (the
# two Maven steps share its local repository, so they go one after the other).
# The images and the Maven steps need only the OS packages, so on a new
# machine they run beside the virtualenv's install, which the Spark archive
# and the wheels wait for.
setup-testbed:
	$(MAKE) --no-print-directory -j 5 testbed-maven testbed-spark testbed-wheels testbed-image-bookworm testbed-image-trixie

testbed-maven: setup-os
	testbed/build-kafka-archive.sh
	testbed/fetch-jars.sh

testbed-spark: setup-python
	testbed/build-spark-archive.sh

testbed-wheels: setup-python
	testbed/fetch-wheels.sh

testbed-image-%: setup-os
	testbed/build-image.sh $*

# The project's own Python packages (packages/: the kafka-group source, the
# smoke test and the cluster's exporter) as wheels in
# roles/python_venv/files/wheels, with bundle.json (each one's version and
# sha256), where the roles install them from: they ship in the collection.
# Rebuilt only when their sources changed.
wheels:
	release/build-collection.sh --wheels-only

# The stretch.kafka artifact as it ships (release/build-collection.sh: the
# collection with its packages' wheels and README.collection.md as its
# README), built into build/ and installed into the consumer project as an
# operator installs it: every run against the testbed uses that installed
# artifact.
collection:
	release/build-collection.sh build
	cp $(ARTIFACT) $(CONSUMER)/
	cd $(CONSUMER) && ANSIBLE_CONFIG=ansible.cfg ansible-galaxy collection install --offline --force -r requirements.yml -p collections

# ansible-test sanity on the artifact, installed on its own, for Python 3.11
# (the nodes' Debian 12 and the controller's virtualenv).
sanity: collection
	rm -rf $(SANITY_ROOT)
	ansible-galaxy collection install --offline --no-deps --force -p $(SANITY_ROOT) $(ARTIFACT)
	cd $(SANITY_ROOT)/ansible_collections/stretch/kafka && ansible-test sanity --python 3.11 --local

up:
	ansible-playbook $(LOCAL) testbed/up.yml

# site.yml ends by waiting for the cluster and printing its nodes, DCs and quorum.
converge: collection
	$(PLAY) stretch.kafka.site

status: collection
	$(PLAY) stretch.kafka.status

# Produce, read back with PySpark as each DC and once without client.rack,
# and prove locality from the brokers' byte counters (reports/smoke.json).
smoke: collection
	$(PLAY) stretch.kafka.smoke_test

# The integration tests against the running testbed.
verify: collection
	python -m pytest -p no:cacheprovider -q tests/integration

# The whole testbed on Debian 13 (trixie), where `make test` runs dc1 on Debian 12 and dc2,
# dc3 on 13: every node recreated on it, deployed, converged again with no change and
# smoke-tested from a copy of the consumer project, then a rolling restart under load with
# nothing lost (about 25 minutes). `make down up` puts the inventory's mixed testbed back.
test-trixie: setup collection
	ansible-playbook $(LOCAL) testbed/down.yml
	ansible-playbook $(LOCAL) testbed/up.yml -e testbed_release=trixie
	$(PLAY) stretch.kafka.site
	STRETCH_RELEASE=13 STRETCH_RESTARTS=1 python -m pytest -p no:cacheprovider -q -s \
	  tests/integration/test_release.py tests/integration/test_consumer_project.py tests/drills/test_restart_drill.py

# The drills, against the running testbed: `make test` runs the first and the
# third (the failover drill and the short active/active one); the group drill
# and the quorum drill (which rebuilds the tiebreaker's container, so it goes
# last) only here and in their own targets.
drills: collection
	python -m pytest -p no:cacheprovider -q -s tests/drills/test_failover_drill.py tests/drills/test_group_drill.py \
	  tests/drills/test_active_active_drill.py tests/drills/test_quorum_drill.py

down:
	ansible-playbook $(LOCAL) testbed/down.yml

# The WAN between the testbed's DCs (testbed_wan in examples/consumer/inventory): `make wan`
# shows each direction's delay and the delayer's counters, and measures the round
# trips from a node in each DC; `make wan RTT=100 [TIEBREAKER_RTT=120]` changes
# the broker DCs' round trip (and theirs to the tiebreaker) on the running
# testbed; `make up` puts the inventory's WAN back.
wan:
	python -m testkit.wan $(if $(RTT),set --rtt $(RTT) $(if $(TIEBREAKER_RTT),--tiebreaker-rtt $(TIEBREAKER_RTT)),show)

# ansible-test sanity on the collection, for Python 3.11 (the nodes' Debian 12
# and the controller's virtualenv), in the virtualenvs setup-python made.
lint:
	yamllint --strict .
	antsibull-changelog lint
	ansible-builder introspect collections > /dev/null
	ansible-lint --profile production
	ruff check .
	ruff format --check .

# The plain-Python logic and the packages' own tests (packages/*/tests: the
# kafka-group source's start a single-node broker from the testbed's Kafka
# archive and a local SparkSession), two at a time: the tests that need the
# broker or Spark are one xdist_group, so one worker starts them once
# (1:49 here, against 3:11 in one process); then the playbooks' refusals
# (tests/preflight: each test its own ansible-playbook run, on no host, so
# two at a time (a file whose module fixtures build an artifact or start
# containers is one xdist_group, run by one worker): 4:50-7:30 in CI, not 10.
unit: setup-test-tools collection
	python -m pytest -p no:cacheprovider -q -n 2 --dist loadgroup tests/unit $(wildcard packages/*/tests)
	python -m pytest -p no:cacheprovider -q -n 2 --dist loadgroup tests/preflight

# One testbed: destroy, syntax, create, converge, verify (the second converge,
# which must change nothing, the smoke test, the integration tests, the
# drills), destroy.
molecule: collection
	rm -f reports/verify.log
	molecule test || { status=$$?; echo "--- reports/verify.log (tail)"; \
	  tail -n 60 reports/verify.log 2>/dev/null || echo "(no verify log: verify did not run)"; exit $$status; }

# CHANGELOG.md from changelogs/: the releases (changelog.yaml) and the next one's fragments.
changelog:
	antsibull-changelog generate

# Docs generated from the roles' argument specs and the plugins' own documentation
# (ansible-doc); a unit test fails when they differ.
docs:
	python -m testkit.docs_variables > docs/variables.md
	python -m testkit.docs_plugins > docs/plugins.md

# The Grafana dashboard, generated with Grafana's SDK from testkit/dashboard.py
# (a unit test fails when the checked-in JSON differs).
dashboard:
	python -m testkit.dashboard > roles/kafka_monitoring/files/stretch-dashboard.json

# The dashboard's main panels over the failover drill's DC loss and recovery,
# from what the drill's Prometheus answered to their queries
# (reports/dashboard-dc-loss.json, written by `make drill-failover` and `make test`).
dashboard-png:
	python -m testkit.dashboard_png reports/dashboard-dc-loss.json docs/images/dashboard-dc-loss.png

# Fresh and no-op converge times and their ratio (the no-op must change
# nothing), the smoke test's figures and the testbed's peak memory.
# Recreates the testbed.
bench: setup collection
	python -m testkit.bench.converge

# The cost of TLS + SCRAM + ACLs against PLAINTEXT on the same testbed, as
# ratios measured in one run. Recreates the testbed twice.
bench-tls: setup collection
	python -m testkit.bench.tls

# Topics and quotas figures against the running testbed (make up converge).
bench-topics: collection
	python -m testkit.bench.topics

# What each operation costs at about 100, 1,000 and 4,000 partitions (RF 4) in
# one run, and the DC-loss stall phase by phase in both quorum cases; against
# the running testbed with the WAN on (81 minutes for the three sizes, a DC
# away 10 minutes at each). reports/bench-scale.json, docs/images/bench-scale.png, the table for
# docs/benchmarks.md. AWAY=<minutes> to change how long the DC stays away,
# SIZES="100 4000" to measure other sizes (the targets compare the run's own),
# STEPS="converges exporter" to measure only some steps (restart heap
# controller dc_loss are the others; a partial run fails the targets it skips),
# PROBE_CLIENT=kafka-python to measure the DC loss's stall with kafka-python's
# producer instead of confluent-kafka's (every loss also runs a producer per
# partition beside the probe, on the same partitions: PROBE_CLIENT=per-partition
# makes it the probe), PROBE="linger.ms=10" to set the
# probe's client (under its names), PROBE_LOG=1 for its log in
# reports/bench-scale/ (librdkafka's debug contexts: PROBE="debug=msg,eos"). A DC
# loss over its floor's target runs again with the survivors' fsync skipped
# (libeatmydata, downloaded with apt-get): the seconds that takes off are the disk's.
bench-scale: collection
	python -m testkit.bench.scale $(if $(AWAY),--away $(AWAY)) $(foreach size,$(SIZES),--size $(size)) \
	  $(foreach step,$(STEPS),--step $(step)) $(foreach setting,$(PROBE),--probe $(setting)) \
	  $(if $(PROBE_CLIENT),--probe-client $(PROBE_CLIENT)) $(if $(PROBE_LOG),--probe-log)

# Cross-DC bytes of four runs by a client in dc1 (produce with leaders split
# evenly, produce to dc1's leaders only, read back with and without
# client.rack), from the brokers' counters and the host's routed bytes,
# against the 2.5N model; against the running testbed. reports/traffic.json.
traffic: collection
	python -m testkit.bench.traffic

# What the WAN costs: produce, end-to-end and lag at RTT 0, 30 and 100 ms between
# the broker DCs, a controller failover and a rolling restart at each, every
# figure beside its model; against the running testbed (about an hour).
# reports/bench-wan.json, docs/images/wan-latency-cdf.png. RTTS="30" for one.
bench-wan: collection
	python -m testkit.bench.wan $(foreach r,$(RTTS),--rtt $(r))

# One replication stream's throughput over the WAN at 30 and 100 ms RTT, with
# Linux's default TCP buffer maxima and with the ones kafka_node sizes for
# kafka_wan_link, against the running testbed (about 10 minutes).
# reports/bench-kernel.json, docs/images/kernel-buffers.png.
bench-kernel: collection
	python -m testkit.bench.kernel

# The smoke read's throughput on the DC Spark clusters against local[2],
# against the running testbed. reports/bench-spark.json.
bench-spark: collection
	python -m testkit.bench.spark

# The kafka-group source's throughput beside Spark's own Kafka source (and the
# ceiling of PySpark's Python data sources), in one run, on a single-node broker
# on this machine and local[2], not the testbed (a few minutes; needs the
# testbed's Kafka archive and Spark's Kafka jars, `make setup-testbed`).
# reports/bench-group-source.json.
bench-group-source:
	python -m testkit.bench.group_source

# The streaming job on dc1's Spark cluster through a rolling restart and the
# loss of dc2, then moved to dc2 from its checkpoint, against the running
# testbed (about 12 minutes; not in `make test`, for CI's budget).
drill-stream: collection
	python -m pytest -p no:cacheprovider -q -s tests/drills/test_stream_drill.py

# The active/active streaming job on both DCs' Spark clusters in one consumer
# group (playbooks/streaming.yml): a calm period (no rebalance, each DC local),
# one DC's driver killed (takeover), restarted by systemd, the DC's nodes lost
# and recovered, nothing missing; against the running testbed. The full drill
# has 10 calm minutes (about 25 minutes in all); the short one, which `make test`
# runs, 1 minute and no DC loss. reports/active-active-drill.json.
drill-active-active: collection
	STRETCH_DRILL_FULL=1 python -m pytest -p no:cacheprovider -q -s tests/drills/test_active_active_drill.py

drill-active-active-short: collection
	python -m pytest -p no:cacheprovider -q -s tests/drills/test_active_active_drill.py

# The seeded fault soak over the WAN, against the running testbed (docs/faults.md; not in
# `make test`): a schedule of faults chosen by SEED (default: a random one, printed) over
# DURATION (default 30m) under steady load in both DCs, judged by an independent verifier:
# reports/soak.json and docs/images/soak-timeline.png. `make soak SEED=<seed> DURATION=<d>`
# replays a run's schedule; `make soak-schedule ...` prints it without running anything.
soak: collection
	python -m testkit.soak run --duration $(or $(DURATION),30m) $(if $(SEED),--seed $(SEED))

soak-schedule:
	python -m testkit.soak schedule --duration $(or $(DURATION),30m) $(if $(SEED),--seed $(SEED))

# One of the soak's faults alone, on and off again: make soak-fault KIND=oneway
# [TARGET='dc2>dc1'] [HOLD=60]; `python -m testkit.soak kinds` lists the kinds and targets.
soak-fault: collection
	@test -n "$(KIND)" || { echo "usage: make soak-fault KIND=<kind> [TARGET=<target>] [HOLD=<s>]" >&2; exit 2; }
	python -m testkit.soak fault $(KIND) $(if $(TARGET),--target '$(TARGET)') --hold $(or $(HOLD),30)

# Every fault off and the cluster whole again (after a soak or a fault was interrupted hard).
soak-heal: collection
	python -m testkit.soak heal

# One broker DC's packets to the other dropped for 60 s, then the reverse, under load:
# who leads, ISR and high watermarks over time, writes on each side (reports/oneway-drill.json).
drill-oneway: collection
	python -m pytest -p no:cacheprovider -q -s tests/drills/test_oneway_drill.py

# The alerts no other drill raises, each made to fire once against the running
# testbed: the WAN's round trip raised, a broker's data volume filled, an
# unclean leader election and a partition under min ISR without an eligible
# leader on scratch topics (about 10 minutes; reports/alert-drill.json).
drill-alerts: collection
	python -m pytest -p no:cacheprovider -q -s tests/drills/test_alert_drill.py

# The active/active consumer group: two members per DC, one DC's members
# killed, then its nodes, against the running testbed.
drill-group: collection
	python -m pytest -p no:cacheprovider -q -s tests/drills/test_group_drill.py

# Three rolling restarts in a row under load, against the running testbed.
drill-restart: collection
	python -m pytest -p no:cacheprovider -q -s tests/drills/test_restart_drill.py

# The DC failover drill under load, against the running testbed, the
# recovery's smoke test included (`make test` leaves that to the integration tests).
drill-failover: collection
	STRETCH_DRILL_FULL=1 python -m pytest -p no:cacheprovider -q -s tests/drills/test_failover_drill.py

# The failover timed from Kafka's record however late the run: the playbook run
# more than 300 s after the loss, then with the quorum's leader in the lost DC,
# each followed by the recovery (about 20 minutes, against the running testbed;
# outside `make test` for CI's time). reports/failover-late-drill.json.
drill-failover-late: collection
	python -m pytest -p no:cacheprovider -q -s tests/drills/test_failover_late_drill.py

# New leaves, then a new CA, each under load, against the running testbed
# (about 20 minutes: every step restarts every node).
drill-rotate: collection
	python -m pytest -p no:cacheprovider -q -s tests/drills/test_rotation_drill.py

# Refused voter changes, then a lost tiebreaker and a wiped controller
# replaced under load, against the running testbed (it rebuilds dc3-controller).
drill-quorum: collection
	python -m pytest -p no:cacheprovider -q -s tests/drills/test_quorum_drill.py

# A retirement refused, then a third dc1 broker added (site.yml) and retired
# (brokers.yml) under load, against the running testbed.
drill-brokers: collection
	python -m pytest -p no:cacheprovider -q -s tests/drills/test_broker_drill.py

# Kafka 4.2.0 -> 4.3.1 under load: roll, roll back, roll, finalize, refuse the
# rollback. Recreates the testbed at 4.2.0 (its archive from Maven Central).
drill-upgrade: setup collection
	testbed/build-kafka-archive.sh 4.2.0
	ansible-playbook $(LOCAL) testbed/down.yml
	ansible-playbook $(LOCAL) testbed/up.yml
	$(PLAY) stretch.kafka.site -e kafka_node_version=4.2.0
	python -m pytest -p no:cacheprovider -q -s tests/drills/test_upgrade_drill.py

# The upgrade from the previous release (changelogs/changelog.yaml): its artifact, built from the commit
# that set its version, deploys a recreated testbed with its own inventory; this checkout's artifact then
# converges it, restarting only the nodes whose files changed; the smoke test passes, and a second
# converge changes nothing (about 20 minutes; not in `make test`). reports/upgrade.json.
test-upgrade: setup collection
	python -m testkit.upgrade
