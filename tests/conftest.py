"""Makes the stretch.kafka collection (ansible_collections.stretch.kafka) and the smoke package importable."""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "collections"))
sys.path.insert(0, str(REPO))
