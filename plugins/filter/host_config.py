"""Filters: what a host must be and hold beneath Kafka: a supported OS (module_utils/platforms.py), the
kernel settings sized for the WAN (module_utils/kernel.py), the values its systemd units hold, checked and
escaped for systemd (module_utils/systemd.py); the host pattern of the groups an inventory has."""

from __future__ import annotations

from ansible_collections.stretch.kafka.plugins.filter.kafka_config import _guard
from ansible_collections.stretch.kafka.plugins.module_utils import kernel, platforms, sizing, systemd


def kernel_settings(link, overrides=None, map_areas=0):
    """The sysctl settings of a Kafka host on link ({bandwidth_mbit, rtt_ms}) whose segments need map_areas
    memory maps, with overrides on top."""
    derived = kernel.settings(link, map_areas)
    return {**derived, **{str(k): kernel.normalize(v) for k, v in (overrides or {}).items()}}


def host_pattern(groups, *names):
    """A play's host pattern of those of the groups names that the inventory has ('all:!all' for none).

    A pattern naming a group the inventory lacks makes Ansible warn on every run; an inventory without Spark
    hosts has no spark_masters or spark_workers.
    """
    present = [str(name) for name in names if name in (groups or {})]
    return ":".join(present) or "all:!all"


class FilterModule:
    def filters(self):
        return {
            "host_pattern": _guard(host_pattern),
            "kernel_settings": _guard(kernel_settings),
            "node_layout": _guard(sizing.node_layout),
            "platform_problem": _guard(platforms.problem),
            "start_timeout": _guard(sizing.start_timeout),
            "platform_release": _guard(platforms.release),
            "systemd_text": _guard(systemd.text),
            "systemd_word": _guard(systemd.word),
            "systemd_environment": _guard(systemd.environment),
            "systemd_path": _guard(systemd.path),
            "systemd_account": _guard(systemd.account),
        }
