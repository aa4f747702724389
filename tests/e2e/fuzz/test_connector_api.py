"""schemathesis against the live API: a real gunicorn on the test database, real tokens.

Every check is on (``--checks all``): no 5xx, every status code documented, bodies, content types
and headers as the schema says, schema-invalid input refused, schema-valid input accepted (see
``schemathesis.toml`` for the one place where the schema cannot say everything), 401 without the
token, 405 with ``Allow`` for undocumented methods. Bounded: a fixed number of examples per
operation and a fixed seed, so a run takes the same (short) time and finds the same things.

The disconnect endpoint (``POST /api/oauth/zapier/revoke``) revokes every token the caller's
owner holds for the calling client: fuzzed with the main token, it would revoke that token in the
middle of the run and turn every later request into a 401. So it runs second, with a token of
its own (another owner and client), and the main run excludes it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.factories import UserFactory
from tests.support.oauth import issue_tokens, make_application
from tests.support.processes import ROOT, ServiceProcesses

pytestmark = [
    pytest.mark.fuzz,
    pytest.mark.processes,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(600),
]

SCHEMA = ROOT / "docs" / "openapi.yaml"
MAX_EXAMPLES = 150
SEED = 20261121


def schemathesis(
    base_url: str, token: str, *args: str, report: Path
) -> subprocess.CompletedProcess:
    command = [
        str(Path(sys.executable).parent / "schemathesis"),
        "--config-file",
        str(ROOT / "schemathesis.toml"),
        "run",
        str(SCHEMA),
        "--url",
        base_url,
        "--header",
        f"Authorization: Bearer {token}",
        "--checks",
        "all",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        "--phases",
        "examples,coverage,fuzzing",
        "--workers",
        "2",
        "--request-timeout",
        "20",
        "--report",
        "junit",
        "--report-junit-path",
        str(report),
        *args,
    ]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=420)


def test_the_live_api_matches_its_schema_under_fuzzing(tmp_path):
    owner = UserFactory()
    access, _ = issue_tokens(owner, scope="read write", application=make_application())
    # The disconnect run's own owner and client: revoking them cannot touch the main token.
    revoke_access, _ = issue_tokens(
        UserFactory(), scope="read write", application=make_application(name="Revoke fuzz")
    )
    # A high limit: 429s are documented, but they would stop the fuzzer reaching the handlers.
    with ServiceProcesses(tmp_path, ["web"], env={"RATE_LIMIT_PER_HOUR": "1000000"}) as svc:
        svc.wait_for(lambda: requests.get(f"{svc.base_url}/healthz", timeout=2).ok, what="gunicorn")
        main = schemathesis(
            svc.base_url,
            access,
            "--exclude-operation-id",
            "revoke",
            report=tmp_path / "main.xml",
        )
        assert main.returncode == 0, main.stdout[-20000:] + main.stderr[-4000:]
        # The main token survived the whole run (nothing revoked it).
        me = requests.get(
            f"{svc.base_url}/api/zapier/me",
            headers={"Authorization": f"Bearer {access}"},
            timeout=5,
        )
        assert me.status_code == 200
        disconnect = schemathesis(
            svc.base_url,
            revoke_access,
            "--include-operation-id",
            "revoke",
            report=tmp_path / "revoke.xml",
        )
        assert disconnect.returncode == 0, disconnect.stdout[-20000:] + disconnect.stderr[-4000:]
        assert "Traceback" not in svc.log()
