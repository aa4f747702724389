"""Webhook targets: https to public addresses only (IP literals here: no DNS needed)."""

from __future__ import annotations

import socket

import pytest

from events.targets import UnsafeTarget, target_url_check

PUBLIC = ["https://93.184.216.34/hook", "https://[2606:2800:220:1:248:1893:25c8:1946]:8443/h"]
REFUSED_ALWAYS = [
    "https://169.254.169.254/latest/meta-data/",  # cloud metadata (link-local)
    "https://[fe80::1]/",
    "https://224.0.0.1/",  # multicast
    "https://0.0.0.0/",
    "https://240.0.0.1/",  # reserved
    "https://[::ffff:169.254.169.254]/",  # IPv4-mapped
]
PRIVATE = [
    "https://127.0.0.1/",
    "https://localhost/",
    "https://[::1]/",
    "https://10.1.2.3/",
    "https://192.168.0.10/",
    "https://172.16.5.4/",
    "https://100.64.0.1/",  # shared address space (carrier NAT)
    "https://[fd00:ec2::254]/",  # a unique-local (AWS's IPv6 metadata)
    "https://[::ffff:127.0.0.1]/",
    "https://[2002:7f00:1::]/",  # 6to4 around 127.0.0.1
]


@pytest.mark.parametrize("url", PUBLIC)
def test_public_https_targets_pass(url, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    assert target_url_check(url)


@pytest.mark.parametrize("url", PRIVATE + REFUSED_ALWAYS)
def test_private_and_reserved_targets_are_refused(url, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    with pytest.raises(UnsafeTarget, match="private or reserved"):
        target_url_check(url)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://93.184.216.34/hook", "must be an https"),
        ("ftp://93.184.216.34/", "must be an https"),
        ("https:///path", "no host"),
        ("https://93.184.216.34:99999/", "not a valid URL"),
        ("", "required"),
        ("https://93.184.216.34/" + "a" * 2000, "longer than"),
    ],
)
def test_malformed_targets_are_refused_with_the_reason(url, why, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    with pytest.raises(UnsafeTarget, match=why):
        target_url_check(url)


def test_the_development_setting_allows_http_and_loopback_but_never_metadata(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    assert target_url_check("http://127.0.0.1:8080/hook") == ["127.0.0.1"]
    assert target_url_check("http://10.0.0.5/hook")
    for url in REFUSED_ALWAYS:
        with pytest.raises(UnsafeTarget):
            target_url_check(url)


def test_a_name_is_checked_on_every_address_it_resolves_to(monkeypatch, settings):
    """DNS is the network boundary: faked here, so no query leaves the machine."""
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    answers = {
        "hooks.example.com": ["93.184.216.34"],
        "rebind.example.com": ["93.184.216.34", "10.0.0.7"],
    }

    def getaddrinfo(host, port, *args, **kwargs):
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in answers[host]]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    assert target_url_check("https://hooks.example.com/h") == ["93.184.216.34"]
    with pytest.raises(UnsafeTarget, match=r"resolves to 10\.0\.0\.7"):
        target_url_check("https://rebind.example.com/h")
    with pytest.raises(UnsafeTarget, match="does not resolve"):
        target_url_check("https://nowhere.example.com/h")
