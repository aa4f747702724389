"""Settings for processes that tests start: the service's own, plus the test hasher.

The suite hashes passwords and client secrets with a fast hasher (tests/conftest.py); processes
started against the test database must be able to check those hashes too. Nothing else differs.
"""

import os

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",
    *PASSWORD_HASHERS,  # noqa: F405
]

# Each started service counts rate limits under its own Redis key prefix (service_env): Redis
# keys outlive a test run, and one test's requests must not use up another's limit.
RATE_LIMIT_KEY_PREFIX = os.environ.get("TEST_RATE_LIMIT_KEY_PREFIX", RATE_LIMIT_KEY_PREFIX)  # noqa: F405
