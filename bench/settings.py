"""Settings for benchmark runs: the service's own, plus the baseline views under /bench/.

Only the URLconf differs, so every level runs through the same middleware, gunicorn settings
and database configuration as production. The harness (``bench/run.py``) runs on these settings
too; with ``--against`` it reads and seeds the old tree's database through the alias ``old``
(the old tree's own processes run on that tree's ``config.settings``).
"""

import os

from config.settings import *  # noqa: F403
from config.settings import DATABASES

ROOT_URLCONF = "bench.urls"

if os.environ.get("BENCH_OLD_DATABASE_NAME"):
    DATABASES["old"] = {**DATABASES["default"], "NAME": os.environ["BENCH_OLD_DATABASE_NAME"]}
