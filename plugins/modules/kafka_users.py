"""Ansible module: keep the cluster's SCRAM users as declared."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_users
short_description: Keep SCRAM users (name, password, mechanism) as declared
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Adds the declared users that have no credential for their mechanism, sets the password
    again for those whose declared password does not log in (a rotation, or drift), and
    removes the other mechanisms a declared user has. Users that are not declared are
    removed only with I(remove_undeclared).
  - A password is judged by logging in with it on the client listener (I(login_servers));
    Kafka never gives one back. Passwords never appear in the output or the diff.
  - Supports check mode and diff mode.
options:
  users:
    description: Declared users. Only the passwords are kept out of the output; the names show in the changes.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The user's name.
        type: str
        required: true
      password:
        description: The user's password (at least 8 characters).
        type: str
        required: true
      mechanism:
        description: The user's SCRAM mechanism; default I(mechanism).
        type: str
  mechanism:
    description: The mechanism of a user that names none.
    type: str
    default: SCRAM-SHA-512
    choices: [SCRAM-SHA-512, SCRAM-SHA-256]
  remove_undeclared:
    description: Remove the credentials of users that are not declared.
    type: bool
    default: false
  login_servers:
    description: The client listener's bootstrap list, where each declared password is tried.
    type: str
    required: true
  login_config:
    description: kafka-python settings for that listener (TLS), without the user's credentials.
    type: dict
    default: {}
extends_documentation_fragment:
  - stretch.kafka.kafka_admin
"""

EXAMPLES = r"""
- name: Keep the SCRAM users as declared
  stretch.kafka.kafka_users:
    bootstrap_servers: 10.0.1.11:9091
    client_config: "{{ admin_tls_settings }}"
    login_servers: 10.0.1.11:9092
    login_config: {security_protocol: SASL_SSL, ssl_cafile: /etc/kafka/tls/ca.pem}
    users:
      - {name: etl, password: "{{ vault_etl_password }}"}
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
changes:
  description: One line per change (never a password).
  returned: always
  type: list
  elements: str
admin_requests:
  description: The requests sent to Kafka, in all and by API, as kafka-python records each (connections' own too).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402  the documentation blocks come first

from ansible_collections.stretch.kafka.plugins.module_utils import kafka_admin, users  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec={
            **kafka_admin.ARGUMENT_SPEC,
            # Only the passwords are secret: the names stay readable in the changes reported.
            "users": {
                "type": "list",
                "elements": "dict",
                "default": [],
                "options": {
                    "name": {"type": "str", "required": True},
                    "password": {"type": "str", "required": True, "no_log": True},
                    "mechanism": {"type": "str"},
                },
            },
            "mechanism": {"type": "str", "default": "SCRAM-SHA-512", "choices": ["SCRAM-SHA-512", "SCRAM-SHA-256"]},
            "remove_undeclared": {"type": "bool", "default": False},
            "login_servers": {"type": "str", "required": True},
            "login_config": {"type": "dict", "default": {}, "no_log": True},
        },
        supports_check_mode=True,
    )
    params = module.params
    try:
        declared = users.normalize(params["users"], params["mechanism"])
    except users.UserError as exc:
        module.fail_json(msg=str(exc))

    def logs_in(name, password, mechanism):
        return kafka_admin.logs_in(params["login_servers"], params["login_config"], name, password, mechanism)

    with kafka_admin.session(module) as admin:
        changes = users.plan(declared, admin.scram_users(), logs_in, params["remove_undeclared"])
        upserts = {n: (declared[n]["mechanism"], declared[n]["password"]) for n in changes["set"]}
        result = kafka_admin.apply_changes(
            module,
            users.summary(changes),
            lambda: admin.alter_scram_users(upserts, changes["delete"]),
            "user changes",
        )
    module.exit_json(**result, admin_requests=admin.requests.summary())


if __name__ == "__main__":
    main()
