from __future__ import annotations

import os

# Qt tests and plot rendering run without a display.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
