"""The testbed's WAN (testbed_wan) is judged before testbed/up.yml starts anything.

The WAN is the testbed's, not the product's: the collection's preflight knows
nothing of it. `python -m testkit.wan check` reads the inventory as `apply`
does and refuses a bad link naming it; up.yml runs it first.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


def inventory(wan):
    hosts = {
        f"{dc}-node": {"kafka_dc": dc, "testbed_ip": f"10.9.{i}.10", "testbed_subnet": f"10.9.{i}.0/24"}
        for i, dc in enumerate(("dc1", "dc2", "dc3"), start=1)
    }
    return {
        "all": {
            "vars": {"testbed_wan": wan},
            "children": {
                "kafka": {
                    "children": {
                        "kafka_controllers": {"hosts": {"dc3-node": None}},
                        "kafka_brokers": {"hosts": {"dc1-node": None, "dc2-node": None}},
                    }
                }
            },
            "hosts": hosts,
        }
    }


def check(tmp_path, wan):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory(wan)))
    return subprocess.run(
        [sys.executable, "-m", "testkit.wan", "check", "--inventory", str(path)],
        capture_output=True, text=True, timeout=60, cwd=REPO, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("wan", "message"),
    [
        ([{"between": ["dc1", "dc9"], "delay_ms": 15}], "testbed_wan[0]: 'dc9' is not a DC of the inventory"),
        (
            [{"between": ["dc1", "dc2"], "delay_ms": 15}, {"from": "dc1", "to": "dc3", "delay_ms": -5}],
            "testbed_wan[1]: delay_ms -5 is negative",
        ),
        (
            [{"between": ["dc1", "dc2"], "delay_ms": float("nan")}],
            "testbed_wan[0]: delay_ms nan is not a finite number",
        ),
        (
            [{"between": ["dc1", "dc2"], "delay_ms": 15, "jitter_ms": float("inf")}],
            "testbed_wan[0]: jitter_ms inf is not a finite number",
        ),
    ],
    ids=["a link to an unknown DC", "a negative delay", "a delay of NaN", "an infinite jitter"],
)
def test_a_bad_wan_is_refused_naming_the_link(tmp_path, wan, message):
    proc = check(tmp_path, wan)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr


def test_a_good_wan_passes_and_lists_its_links(tmp_path):
    proc = check(tmp_path, [{"between": ["dc1", "dc2"], "delay_ms": 15}])
    assert proc.returncode == 0, proc.stderr
    directions = {(link["src"], link["dst"], link["delay_ms"]) for link in json.loads(proc.stdout)["links"]}
    assert directions == {("dc1", "dc2", 15), ("dc2", "dc1", 15)}


def test_up_judges_the_wan_before_it_starts_anything():
    (play,) = yaml.safe_load((REPO / "testbed/up.yml").read_text())
    first = play["tasks"][0]
    assert first["ansible.builtin.command"]["argv"].startswith(
        "{{ [ansible_playbook_python, '-m', 'testkit.wan', 'check']"
    )
