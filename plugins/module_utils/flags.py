"""The inventory's yes/no settings (the opt-ins), read strictly.

An extra var is a string: `-e kafka_min_insync_replicas_one_opt_in=false`
gives "false", which Python's truthiness reads as true. Each flag is read
as Ansible reads a boolean argument (true/false, yes/no, on/off, 1/0, y/n,
t/f, any case), and anything else is refused, naming the variable.
"""

from __future__ import annotations

from ansible.module_utils.parsing.convert_bool import boolean


class FlagError(ValueError):
    pass


def flag(value, variable):
    """value as a bool; FlagError naming variable when it is not a boolean or a boolean's string."""
    try:
        return boolean(value, strict=True)
    except TypeError:
        raise FlagError(f"{variable}={value!r} is not a boolean: set it to true or false") from None
