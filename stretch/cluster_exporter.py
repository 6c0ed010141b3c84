"""The cluster's exporter as the kafka_monitoring role ships it (roles/kafka_monitoring/files/stretch_exporter.py),
loaded from that file for the tests and the drills: one copy of its code, the one operators run."""

from __future__ import annotations

import importlib.util
import sys

from stretch import REPO

PATH = REPO / "roles/kafka_monitoring/files/stretch_exporter.py"


def _load():
    spec = importlib.util.spec_from_file_location("stretch_exporter", PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("stretch_exporter", module)
    spec.loader.exec_module(module)
    return module


exporter = _load()
