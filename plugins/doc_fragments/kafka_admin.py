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
notes:
  - The modules of the C(stretch.kafka.admin) action group (meta/runtime.yml) share these options,
    so a play sets them once for all of them, with C(module_defaults) on
    C(group/stretch.kafka.admin) (the roles' playbooks set it to the cluster model's C(kafka_cluster.admin)).
requirements:
  - kafka-python >= 3.0 on the host that runs the module (usually the controller)
"""
