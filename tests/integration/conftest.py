import json
import os
import re
import subprocess
import sys
import time

import pytest
import testinfra
from confluent_kafka.admin import NewTopic

from . import inventory

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


@pytest.fixture(scope="session")
def cluster():
    return inventory.load()


@pytest.fixture(scope="session")
def hosts(cluster):
    hosts = {}
    for node in cluster.nodes:
        spec, kwargs = node.testinfra_spec()
        hosts[node.host] = testinfra.get_host(spec, **kwargs)
    return hosts


def wait_until(check, timeout=90, interval=2):
    """Poll check() until it returns a truthy value; return its last result."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(interval)


def create_topic(admin, name, partitions, replication_factor, timeout=60):
    """Create a topic with Kafka's own placement; return its metadata once every partition has a leader.

    CreateTopics answers once the controllers have committed the topic. A
    broker that has not applied that record yet answers Metadata for it with
    UNKNOWN_TOPIC_OR_PART and no partitions, so whoever reads the partition
    list straight after creating must wait until it is whole.
    """
    admin.create_topics([NewTopic(name, partitions, replication_factor)])[name].result(timeout=timeout)
    answers = []

    def whole():
        topic = admin.list_topics(name, timeout=10).topics.get(name)
        if topic is None or topic.error is not None:
            answers.append(str(topic.error) if topic is not None else "topic missing from the reply")
            return None
        leaders = [p.leader for p in topic.partitions.values()]
        if len(leaders) != partitions or min(leaders) < 0:
            answers.append(f"{len(leaders)} partitions, leaders {leaders}")
            return None
        return topic

    topic = wait_until(whole, timeout=timeout, interval=0.5)
    assert topic, f"topic {name}: the metadata never showed {partitions} partitions with leaders; last: {answers[-3:]}"
    return topic


def playbook(cluster, name, *args, check=False, timeout=900, **extra):
    """Run playbooks/<name>.yml against the cluster's inventory with extra vars.

    The result carries changed (the runner host's changed count, from the
    recap) and text (the output with whitespace folded and the YAML callback's
    doubled quotes undone, for matching messages).
    """
    cmd = [ANSIBLE_PLAYBOOK, "-i", cluster.inventory, f"playbooks/{name}.yml", "-e", json.dumps(extra), *args]
    proc = subprocess.run(
        cmd + (["--check"] if check else []),
        cwd=inventory.REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        # Molecule forces colour on; the recap is parsed, so turn it off here.
        env=dict(os.environ, ANSIBLE_CONFIG=str(inventory.REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                 ANSIBLE_FORCE_COLOR="0"),
    )  # fmt: skip
    proc.stdout = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout)
    runner = cluster.brokers[0].host
    recap = re.search(rf"^{re.escape(runner)}\s*:.*changed=(\d+)", proc.stdout, re.M)
    proc.changed = int(recap.group(1)) if recap else None
    proc.text = re.sub(r"\s+", " ", proc.stdout.replace("''", "'"))
    return proc


def start_times(cluster, hosts):
    """Each node's kafka service start time: it changes when, and only when, the node restarts."""
    return {
        n.host: hosts[n.host].check_output("systemctl show kafka -p ExecMainStartTimestampMonotonic --value")
        for n in cluster.nodes
    }
