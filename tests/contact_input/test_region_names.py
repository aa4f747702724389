"""contact_input.region_names: the phone regions' English names, written out so that no process
loads phonenumbers' geocoder (~100 MB) for them."""

from __future__ import annotations

import json
import subprocess
import sys

import phonenumbers
from phonenumbers import geocoder

from contact_input.region_names import REGION_NAMES


def test_the_table_says_what_the_installed_phonenumbers_says():
    expected = {}
    for region in sorted(phonenumbers.SUPPORTED_REGIONS):
        example = phonenumbers.example_number(region)
        name = geocoder.country_name_for_number(example, "en") if example else ""
        if name:
            expected[region] = name
    table = "".join(
        f"    {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},\n" for k, v in expected.items()
    )
    assert expected == REGION_NAMES, f"paste into contact_input/region_names.py:\n{table}"


def test_validating_a_phone_number_does_not_load_the_geocoder():
    """A fresh interpreter, as a web or worker process starts: the phone rules' module and a
    refused number's message, without ``phonenumbers.geocoder`` in memory."""
    code = (
        "import sys\n"
        "from django.conf import settings\n"
        "settings.configure(USE_I18N=False)\n"
        "from contact_input.normalize import normalize_phone\n"
        "try:\n"
        "    normalize_phone('+44 7700 900123', 'US')\n"
        "except Exception as exc:\n"
        "    print(exc)\n"
        "print('phonenumbers.geocoder' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert "United Kingdom (GB)" in out[0]
    assert out[-1] == "False"
