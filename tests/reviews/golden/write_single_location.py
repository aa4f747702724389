"""Write ``single_location.json``: what a one-location business produces (run on the code whose
output is the reference, from the project's root)::

    .venv/bin/python tests/reviews/golden/write_single_location.py
"""

import os
import subprocess
import sys

TEST = "tests/reviews/test_single_location_golden.py"

if __name__ == "__main__":
    env = {**os.environ, "GOLDEN_WRITE": "1"}
    sys.exit(
        subprocess.call(
            [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-rs", TEST], env=env
        )
    )
