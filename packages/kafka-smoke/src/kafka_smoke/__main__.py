"""python -m kafka_smoke: the smoke test (its code is kafka_smoke.run, which is what other code imports)."""

import sys

from .run import main

if __name__ == "__main__":
    sys.exit(main())
