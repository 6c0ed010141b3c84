"""The node exporter's filesystems: the pseudo and runtime mounts left out, every place a Kafka log dir or a Spark
work dir may live reported (the disk alerts read only what it reports)."""

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEFAULTS = yaml.safe_load((REPO / "roles/node_exporter/defaults/main.yml").read_text())
KAFKA_NODE = yaml.safe_load((REPO / "roles/kafka_node/defaults/main.yml").read_text())


def left_out(mount_point):
    # The node exporter matches the expression anywhere in the mount point (Go's MatchString); it is anchored.
    return re.search(DEFAULTS["node_exporter_mount_points_exclude"], mount_point) is not None


@pytest.mark.parametrize(
    "mount_point",
    [
        "/",
        "/mnt/kafka",
        "/mnt/disk1",
        "/media/data",
        "/var/lib/kafka",
        "/data/kafka",
        "/srv/kafka",
        "/var/lib/spark",
        *KAFKA_NODE["kafka_node_log_dirs"],
        KAFKA_NODE["kafka_node_metadata_log_dir"],
    ],
)
def test_every_place_a_log_dir_may_live_is_reported(mount_point):
    assert not left_out(mount_point)


@pytest.mark.parametrize(
    "mount_point",
    ["/proc", "/sys/fs/cgroup", "/dev/shm", "/run/user/1000", "/etc/hosts", "/var/lib/docker/overlay2/x/merged",
     "/var/lib/containers/storage/overlay"],
)  # fmt: skip
def test_pseudo_and_runtime_mounts_are_left_out(mount_point):
    assert left_out(mount_point)
