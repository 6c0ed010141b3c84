"""Filters: what a host must be and hold beneath Kafka: a supported OS (module_utils/platforms.py), the
kernel settings sized for the WAN (module_utils/kernel.py), and the values its systemd units hold, checked and
escaped for systemd (module_utils/systemd.py)."""

from __future__ import annotations

from ansible_collections.stretch.kafka.plugins.filter.kafka_config import _guard
from ansible_collections.stretch.kafka.plugins.module_utils import kernel, platforms, systemd


def kernel_settings(link, overrides=None):
    """The sysctl settings of a Kafka host on link ({bandwidth_mbit, rtt_ms}), with overrides on top."""
    return {**kernel.settings(link), **{str(k): kernel.normalize(v) for k, v in (overrides or {}).items()}}


class FilterModule:
    def filters(self):
        return {
            "kernel_settings": _guard(kernel_settings),
            "platform_problem": _guard(platforms.problem),
            "platform_release": _guard(platforms.release),
            "systemd_text": _guard(systemd.text),
            "systemd_word": _guard(systemd.word),
            "systemd_environment": _guard(systemd.environment),
            "systemd_path": _guard(systemd.path),
            "systemd_account": _guard(systemd.account),
        }
