"""python -m testkit.soak: the soak's command line (its code is testkit.soak.cli)."""

import sys

from .cli import interrupted_main

if __name__ == "__main__":
    sys.exit(interrupted_main())
