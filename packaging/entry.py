"""Entry point of the frozen app (PyInstaller): the same ``kernel-lab`` command."""

import multiprocessing
import sys

from kernel_lab.cli import main

if __name__ == "__main__":
    multiprocessing.freeze_support()  # the window's worker process re-enters here
    sys.exit(main())
