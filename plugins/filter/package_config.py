"""Filters: the Python packages the roles install on hosts (module_utils/packages.py): the collection's own,
bundled in it and hash-checked, and third-party ones, each pinned."""

from __future__ import annotations

from ansible_collections.stretch.kafka.plugins.filter.kafka_config import _guard
from ansible_collections.stretch.kafka.plugins.module_utils import packages


class FilterModule:
    def filters(self):
        return {
            "bundle_problems": _guard(packages.bundle_problems),
            "index_problems": _guard(packages.index_problems),
            "own_requirements": _guard(packages.own_requirements),
            "requirement_problems": _guard(packages.requirement_problems),
            "requirements_missing": _guard(packages.requirements_missing),
        }
