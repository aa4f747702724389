"""``python -m bench.scale``: ``make bench-scale`` (``bench/scale/__init__.py`` says what)."""

import contextlib
import sys

from bench.scale.run import main

with contextlib.suppress(KeyboardInterrupt):
    sys.exit(main())
