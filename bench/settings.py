"""Settings for benchmark runs: the service's own, plus the baseline views under /bench/.

Only the URLconf differs, so every level runs through the same middleware, gunicorn settings
and database configuration as production.
"""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
