from __future__ import annotations

import json
import logging

from core.logs import JsonFormatter
from core.request_id import RequestIdLogFilter, request_id_var


def test_every_response_carries_a_request_id(client):
    generated = client.get("/accounts/login/")["X-Request-ID"]
    assert len(generated) == 32


def test_a_sane_incoming_request_id_is_kept_and_a_hostile_one_replaced(client):
    kept = client.get("/accounts/login/", HTTP_X_REQUEST_ID="trace-1234-abcd")
    replaced = client.get("/accounts/login/", HTTP_X_REQUEST_ID="<script>alert(1)</script>")
    assert kept["X-Request-ID"] == "trace-1234-abcd"
    assert replaced["X-Request-ID"] != "<script>alert(1)</script>"


def test_log_lines_are_json_with_the_request_id_and_extra_fields():
    record = logging.makeLogRecord(
        {
            "name": "reviews",
            "levelname": "INFO",
            "msg": "sent %s",
            "args": ("m1",),
            "channel": "sms",
        }
    )
    token = request_id_var.set("req-42")
    try:
        RequestIdLogFilter().filter(record)
    finally:
        request_id_var.reset(token)
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "sent m1"
    assert line["request_id"] == "req-42"
    assert line["channel"] == "sms"
    assert line["level"] == "INFO"
