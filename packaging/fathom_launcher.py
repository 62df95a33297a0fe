"""Entry point of the frozen build (build.spec): the same as ``python -m app``."""

import multiprocessing
import sys

from app.cli import main

if __name__ == "__main__":
    # A frozen program re-runs itself for worker processes; this answers them.
    multiprocessing.freeze_support()
    sys.exit(main())
