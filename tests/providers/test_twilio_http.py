"""Twilio's transport (``providers/twilio_http.py``): the request the SDK asked for, sent
once through a urllib3 pool, with the environment's proxy and CA bundle as requests reads them.
Sending through the fake provider, the answers and every error path are covered by
``tests/reviews/services/test_sending.py`` (refused, hang, drop, 5xx: one attempt each) and
``tests/e2e/processes/test_faults.py``."""

from __future__ import annotations

import base64
import json

import pytest
import requests
import urllib3

from providers.twilio_http import PooledHttpClient, encode_form
from tests.support.fake_providers import FakeProviders


def client(base_url: str = "https://api.twilio.com") -> PooledHttpClient:
    return PooledHttpClient(base_url=base_url, connect_timeout=1, read_timeout=2, pool_size=4)


def test_a_form_repeats_a_lists_key_and_leaves_out_none_as_requests_does():
    values = {"To": "+15005550006", "MediaUrl": ["https://a/1", "https://a/2"], "From": None}
    assert encode_form(values) == requests.models.RequestEncodingMixin._encode_params(values)
    assert (
        encode_form(values)
        == "To=%2B15005550006&MediaUrl=https%3A%2F%2Fa%2F1&MediaUrl=https%3A%2F%2Fa%2F2"
    )


def test_the_sdks_request_reaches_the_provider_with_its_form_query_and_basic_auth():
    seen = []
    with FakeProviders() as fake:
        original = fake._twilio_create

        def spy(account_sid, form):
            seen.append(form)
            return original(account_sid, form)

        fake._twilio_create = spy
        http = client(fake.url)
        created = http.request(
            "post",
            f"{fake.url}/2010-04-01/Accounts/ACx/Messages.json",
            data={"To": "+15005550006", "Body": "Hé there", "StatusCallback": None},
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            auth=("ACx", "secret"),
        )
        listed = http.request(
            "GET",
            f"{fake.url}/2010-04-01/Accounts/ACx/Messages.json",
            params={"To": "+15005550006", "PageSize": 50},
            auth=("ACx", "secret"),
        )
    assert created.status_code == 201 and json.loads(created.text)["body"] == "Hé there"
    assert seen == [{"To": "+15005550006", "Body": "Hé there"}]
    assert [m["sid"] for m in json.loads(listed.text)["messages"]] == [
        json.loads(created.text)["sid"]
    ]


def test_basic_auth_is_the_header_requests_would_write():
    header = {}

    class Pool:
        def request(self, method, url, **kwargs):
            header.update(kwargs["headers"])
            raise urllib3.exceptions.NewConnectionError(None, "refused")

    http = client()
    http.pool = Pool()
    with pytest.raises(urllib3.exceptions.NewConnectionError):
        http.request("GET", "https://api.twilio.com/x", auth=("ACx", "tök"))
    expected = requests.auth._basic_auth_str("ACx", "tök")
    assert (
        header["Authorization"]
        == expected
        == "Basic " + base64.b64encode("ACx:tök".encode("latin-1")).decode()
    )


def test_the_environments_proxy_with_its_credentials_and_no_proxy_are_honoured(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://user:p%40ss@127.0.0.1:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    proxied = client()
    assert isinstance(proxied.pool, urllib3.ProxyManager)
    assert proxied.pool.proxy.port == 3128
    assert (
        proxied.pool.proxy_headers["proxy-authorization"]
        == urllib3.make_headers(proxy_basic_auth="user:p@ss")["proxy-authorization"]
    )
    monkeypatch.setenv("NO_PROXY", "api.twilio.com")
    assert not isinstance(client().pool, urllib3.ProxyManager)


def test_certificates_are_checked_against_the_bundle_requests_would_use(monkeypatch, tmp_path):
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    default = client().pool.connection_pool_kw
    assert default["cert_reqs"] == "CERT_REQUIRED"
    assert default["ca_certs"] == requests.utils.DEFAULT_CA_BUNDLE_PATH
    bundle = tmp_path / "corporate.pem"
    bundle.write_text("")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))
    assert client().pool.connection_pool_kw["ca_certs"] == str(bundle)


def test_nothing_is_retried_by_the_pool():
    # urllib3's default is 3 retries of a connection error; a create sent again can text twice.
    assert client().pool.connection_pool_kw["retries"].total is False
