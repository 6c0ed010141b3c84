"""python -m stretch_exporter: the exporter (its code is stretch_exporter.service, which is what other code imports)."""

import sys

from .service import main

if __name__ == "__main__":
    sys.exit(main())
