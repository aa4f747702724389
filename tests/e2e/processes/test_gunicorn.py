"""gunicorn's access lines from a real web process: JSON whatever the path, with the time and the
request id."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
import requests

from tests.support.processes import ServiceProcesses


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_access_lines_are_json_with_iso_time_and_the_request_id_whatever_the_path(tmp_path):
    """A quote and a backslash in the path once made gunicorn's templated line invalid JSON."""
    with ServiceProcesses(tmp_path, ["web"], embedded_broker=True) as svc:
        svc.wait_for(lambda: requests.get(f"{svc.base_url}/healthz", timeout=2).ok, what="web")
        hostile = requests.get(
            f"{svc.base_url}/healthz%22x%5C", headers={"X-Request-ID": "trace-hostile-1"}
        )

        def access_line():
            for raw in svc.log().splitlines():
                _, _, rest = raw.partition(" | ")
                if "gunicorn.access" in rest and "trace-hostile-1" in rest:
                    return json.loads(rest)  # raises (and fails the test) if not JSON
            return None

        line = svc.wait_for(access_line, timeout=20, what="the access line")

    assert line["logger"] == "gunicorn.access"
    assert line["level"] == "INFO"
    assert datetime.fromisoformat(line["time"]).utcoffset() == timedelta(0)
    assert line["method"] == "GET"
    assert line["path"] == '/healthz"x\\'
    assert line["status"] == hostile.status_code
    assert line["request_id"] == hostile.headers["X-Request-ID"] == "trace-hostile-1"
    assert isinstance(line["duration_ms"], float)
