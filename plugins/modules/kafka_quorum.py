"""Ansible module: plan a change of the KRaft voter set and wait until each step is safe, or until it is done."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_quorum
short_description: Plan, gate and check a change of the KRaft controller quorum's voters (KIP-853)
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Reads the quorum from the controllers (voters and observers with their directory ids, the
    high watermark) and works out, in module_utils/quorum.py, what it takes to add, remove or
    replace one controller's voter key.
  - C(mode=precheck) refuses, before any host is touched, a change whose voter ids would break
    the DC rule, and returns the voter ids once it is done.
  - C(mode=plan) returns the steps and the voter set once they are done, and refuses a change
    that would leave the voters without three DCs or with a DC whose loss leaves no majority.
  - C(mode=step) waits until one step is safe to run now (for an add, the new controller is an
    observer that has caught up; for both, the voters left hold a caught-up majority).
  - C(mode=settled) waits until the voters are exactly the planned keys, all caught up, and the
    change is committed.
  - Changes nothing itself; the steps are run with kafka-metadata-quorum on the node. Runs in
    check mode too.
options:
  mode:
    description: What to do.
    type: str
    choices: [precheck, plan, step, settled]
    required: true
  action:
    description: The change (C(mode=precheck), C(mode=plan)).
    type: str
    choices: [add, remove, replace]
  controller:
    description:
      - C(host), C(node_id) and C(dc) of the controller the change is about, and for C(mode=plan)
        C(directory_id), read from its meta.properties.
    type: dict
  nodes:
    description: Every inventory controller's record (C(host), C(node_id), C(dc)), for the DC rule.
    type: list
    elements: dict
    default: []
  step:
    description: One step of a plan, C(op), C(id), C(directory_id) (C(mode=step)).
    type: dict
  voters_after:
    description: The planned voter keys, as [id, directory id] pairs (C(mode=settled)).
    type: list
    elements: list
    default: []
  max_lag:
    description: Records a replica may lag the quorum leader and still count as caught up.
    type: int
    default: 5
  timeout:
    description: Seconds to wait (for a quorum with a leader to read, for a step to be safe, for the change to settle).
    type: int
    default: 300
  interval:
    description: Seconds between reads.
    type: float
    default: 2
extends_documentation_fragment:
  - stretch.kafka.kafka_admin
"""

EXAMPLES = r"""
- name: Plan the replacement of the tiebreaker whose host was rebuilt
  stretch.kafka.kafka_quorum:
    bootstrap_controllers: 10.0.1.10:9093,10.0.2.10:9093,10.0.3.10:9093
    mode: plan
    action: replace
    controller: {host: dc3-controller, node_id: 3, dc: dc3, directory_id: pZ6P8dJ5TnWhm1yKXGQ9Ag}
    nodes: "{{ kafka_cluster.controllers }}"
  delegate_to: localhost
"""

RETURN = r"""
steps:
  description: The steps of the plan, in order (C(mode=plan)).
  returned: success
  type: list
  elements: dict
voter_ids_after:
  description: The voter ids once the change is done (C(mode=precheck)).
  returned: success
  type: list
  elements: int
voters_after:
  description: The voter keys once the steps are done (C(mode=plan)).
  returned: success
  type: list
  elements: list
notes:
  description: Why nothing is to be done, when nothing is.
  returned: success
  type: list
  elements: str
voters:
  description: The voter keys as last read, as "id (directory id)".
  returned: always
  type: list
  elements: str
problems:
  description: What the last read saw blocking the step or the settling.
  returned: always
  type: list
  elements: str
waited:
  description: Seconds spent waiting.
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import kafka_admin, quorum  # noqa: E402


def led(state):
    return [] if state.get("leader", -1) >= 0 else ["the quorum has no leader"]


def describe(state):
    return sorted(f"{r['id']} ({r['directory_id']})" for r in (state or {}).get("replicas", {}).get("voters", []))


def main():
    module = AnsibleModule(
        argument_spec={
            **kafka_admin.ARGUMENT_SPEC,
            "mode": {"type": "str", "required": True, "choices": ["precheck", "plan", "step", "settled"]},
            "action": {"type": "str", "choices": list(quorum.ACTIONS)},
            "controller": {"type": "dict"},
            "nodes": {"type": "list", "elements": "dict", "default": []},
            "step": {"type": "dict"},
            "voters_after": {"type": "list", "elements": "list", "default": []},
            "max_lag": {"type": "int", "default": 5},
            "timeout": {"type": "int", "default": 300},
            "interval": {"type": "float", "default": 2},
        },
        supports_check_mode=True,
        required_if=[
            ("mode", "plan", ["action", "controller"]),
            ("mode", "precheck", ["action", "controller"]),
            ("mode", "step", ["step"]),
        ],
    )
    kafka_admin.require(module)
    params = module.params
    admin = kafka_admin.Admin(params["bootstrap_servers"], params["client_config"], timeout=15,
                              bootstrap_controllers=params["bootstrap_controllers"])  # fmt: skip
    mode, max_lag = params["mode"], params["max_lag"]
    try:
        if mode in ("precheck", "plan"):
            # A leader that just went away leaves the quorum unreadable until the next one is elected.
            read = quorum.wait(admin.quorum, led, params["timeout"], params["interval"])
            if not read["passed"]:
                module.fail_json(msg=f"cannot read the quorum after {read['waited']} s: " + "; ".join(read["problems"]))
            state = read["quorum"]
            args = (state, params["action"], params["controller"], params["nodes"])
            if mode == "precheck":
                module.exit_json(changed=False, voters=describe(state), voter_ids_after=quorum.precheck(*args),
                                 problems=[], waited=read["waited"])  # fmt: skip
            module.exit_json(changed=False, voters=describe(state), problems=[], waited=read["waited"],
                             **quorum.plan(*args))  # fmt: skip
        if mode == "step":
            step = dict(params["step"], id=int(params["step"]["id"]))
            outcome = quorum.wait(admin.quorum, lambda q: quorum.blockers(q, step, max_lag),
                                  params["timeout"], params["interval"])  # fmt: skip
            what = f"{step['op']} of voter {step['id']} ({step['directory_id']})"
        else:
            after = [[int(k[0]), k[1]] for k in params["voters_after"]]
            outcome = quorum.wait(admin.quorum, lambda q: quorum.settled(q, after, max_lag),
                                  params["timeout"], params["interval"])  # fmt: skip
            what = "the voter change"
    except (quorum.QuorumChangeError, kafka_admin.AdminError) as exc:
        module.fail_json(msg=f"refused: {exc}", changed=False)
    finally:
        admin.close()
    state = outcome.pop("quorum")
    result = {"changed": False, "voters": describe(state), "problems": outcome["problems"], "waited": outcome["waited"]}
    if not outcome["passed"]:
        module.fail_json(msg=f"{what} still blocked after {outcome['waited']} s: " + "; ".join(outcome["problems"]),
                         **result)  # fmt: skip
    module.exit_json(**result)


if __name__ == "__main__":
    main()
