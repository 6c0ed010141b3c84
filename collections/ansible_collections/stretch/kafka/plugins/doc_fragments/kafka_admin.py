"""The connection options every admin-protocol module of stretch.kafka shares."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  bootstrap_servers:
    description:
      - Brokers to connect to, host:port comma-separated; each is tried in turn.
      - Empty for a module that reads only the controllers (O(bootstrap_controllers)).
    type: str
    default: ""
  bootstrap_controllers:
    description:
      - Controllers to connect to, host:port comma-separated, for what is asked of the controllers
        themselves (the KRaft quorum); empty when the module needs none.
    type: str
    default: ""
  client_config:
    description: Extra kafka-python KafkaAdminClient settings (security_protocol, sasl_*, ssl_*).
    type: dict
    default: {}
requirements:
  - kafka-python >= 3.0 on the host that runs the module (usually the controller)
"""
