from __future__ import annotations

import sys

from kernel_lab.cli import main

if __name__ == "__main__":
    sys.exit(main())
