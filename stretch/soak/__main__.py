"""python -m stretch.soak: the soak's command line (its code is stretch.soak.cli)."""

import sys

from .cli import interrupted_main

if __name__ == "__main__":
    sys.exit(interrupted_main())
