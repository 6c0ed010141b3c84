"""The operating systems the roles install on, and the refusal of any other before anything changes.

Facts come as Ansible's setup module reports them (ansible_facts with its
distribution subset). Each installing role keeps its packages per release
in vars/<release>.yml, named by release(); every role's meta/main.yml
lists the same releases as SUPPORTED.
"""

from __future__ import annotations

# {distribution: {major version: codename}}, as Ansible's facts name them.
SUPPORTED = {"Debian": {"12": "bookworm", "13": "trixie"}}


def supported_names():
    """'Debian 12 (bookworm), Debian 13 (trixie)': what a refusal names."""
    return ", ".join(
        f"{distribution} {version} ({codename})"
        for distribution, versions in SUPPORTED.items()
        for version, codename in sorted(versions.items(), key=lambda item: int(item[0]))
    )


def _found(facts):
    distribution = str(facts.get("distribution") or "")
    version = str(facts.get("distribution_major_version") or "")
    codename = str(facts.get("distribution_release") or "")
    return distribution, version, codename


def problem(host, facts):
    """Why the roles cannot install on host, or '' when its OS is one they support.

    facts: the host's ansible_facts; facts that do not name a distribution and
    a major version are a refusal too (the check fails closed)."""
    distribution, version, codename = _found(facts or {})
    if not distribution or not version:
        return f"{host}: its operating system could not be read (distribution {distribution or '?'}, version " \
               f"{version or '?'}): the roles support {supported_names()}"  # fmt: skip
    if version not in SUPPORTED.get(distribution, {}):
        named = f"{distribution} {version}" + (f" ({codename})" if codename else "")
        return f"{host} runs {named}: the roles support {supported_names()}"
    return ""


def release(facts):
    """The name of a supported host's per-release variables file: 'debian-12'. Raises ValueError otherwise."""
    distribution, version, _codename = _found(facts or {})
    if version not in SUPPORTED.get(distribution, {}):
        raise ValueError(f"{distribution or '?'} {version or '?'} is not a release the roles support")
    return f"{distribution.lower()}-{version}"
