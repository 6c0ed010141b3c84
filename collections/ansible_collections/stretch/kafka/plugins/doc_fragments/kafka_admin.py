"""The connection options every admin-protocol module of stretch.kafka shares."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  bootstrap_servers:
    description: Brokers to connect to, host:port comma-separated; each is tried in turn.
    type: str
    required: true
  client_config:
    description: Extra kafka-python KafkaAdminClient settings (security_protocol, sasl_*, ssl_*).
    type: dict
    default: {}
requirements:
  - kafka-python >= 3.0 on the host that runs the module (usually the controller)
"""
