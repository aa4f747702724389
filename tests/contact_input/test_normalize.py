"""Contact input parsing: one set of rules for every entry point (API, admin, CSV import)."""

from __future__ import annotations

import copy
import string
import unicodedata

import phonenumbers
import pytest
from django.core.exceptions import ValidationError
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from contact_input.normalize import (
    CONTACT_FIELD_KEYS,
    MAX_METADATA_BYTES,
    NEED_EMAIL_OR_PHONE,
    clean_contact_input,
    clean_name,
    clean_text,
    email_key,
    normalize_email,
    normalize_phone,
    parse_delay_hours,
    parse_metadata,
)


def _errors(exc: pytest.ExceptionInfo) -> dict[str, list[str]]:
    return exc.value.message_dict


# --- e-mail ---------------------------------------------------------------------------------------


def test_email_key_is_lower_case_and_trimmed_while_the_display_form_is_kept():
    assert normalize_email("  Jane.Smith@Example.COM \n") == (
        "Jane.Smith@Example.COM",
        "jane.smith@example.com",
    )


@pytest.mark.parametrize("value", [None, "", "   "])
def test_blank_email_means_not_given(value):
    assert normalize_email(value) == ("", "")


@pytest.mark.parametrize(
    "value", ["jane", "jane@", "@example.com", "jane smith@example.com", "a..b@example.com"]
)
def test_invalid_email_is_rejected(value):
    with pytest.raises(ValidationError):
        normalize_email(value)


def test_email_longer_than_254_characters_is_rejected():
    with pytest.raises(ValidationError, match="at most 254"):
        normalize_email("a" * 64 + "@" + "b" * 186 + ".com")


def test_email_does_not_strip_gmail_dots_or_plus_tags():
    assert normalize_email("j.ane+shop@gmail.com")[1] == "j.ane+shop@gmail.com"


@settings(max_examples=200, deadline=None)
@given(st.emails())
def test_email_key_is_idempotent(address):
    try:
        _, key = normalize_email(address)
    except ValidationError:
        assume(False)
    assert normalize_email(key) == (key, key)


@settings(max_examples=200, deadline=None)
@given(st.emails(), st.randoms(use_true_random=False), st.sampled_from(["", " ", "\t", "  \n"]))
def test_email_key_is_stable_across_case_and_surrounding_whitespace(address, rnd, pad):
    try:
        _, key = normalize_email(address)
    except ValidationError:
        assume(False)
    variant = "".join(
        ch.upper() if ch in string.ascii_letters and rnd.random() < 0.5 else ch for ch in address
    )
    assert normalize_email(pad + variant + pad)[1] == key


FULL_WIDTH_EXAMPLE = "\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45"  # "example", full-width


@pytest.mark.parametrize(
    "value",
    [
        "x@bücher.de",
        "X@BÜCHER.DE",
        "x@xn--bcher-kva.de",
        "X@XN--BCHER-KVA.DE",
        "x@bu\u0308cher.de",  # decomposed ü (NFD)
        "x@bü\u00adcher.de",  # a soft hyphen, which IDNA ignores
    ],
)
def test_email_key_writes_the_domain_as_its_idna_a_label(value):
    assert normalize_email(value)[1] == "x@xn--bcher-kva.de"


def test_email_key_reads_full_width_letters_as_plain_ones():
    typed = f"x@{FULL_WIDTH_EXAMPLE}.com"
    assert normalize_email(typed) == (typed, "x@example.com")


def test_email_key_keeps_ascii_labels_that_idna_2008_would_refuse():
    assert normalize_email("a@ab--cd.example.com")[1] == "a@ab--cd.example.com"


def test_email_key_of_a_stored_address_is_the_key_the_api_computes():
    for address in ["x@bücher.de", f"X@{FULL_WIDTH_EXAMPLE}.com", "Jane@Example.COM"]:
        assert email_key(address) == normalize_email(address)[1]
    # An address IDNA refuses (stored before the rule) keeps a lower-cased key.
    assert email_key("X@\u2603.COM") == "x@\u2603.com"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a@localhost", "public domain"),
        ("a@Localhost", "public domain"),
        ("a@mail.localhost", "public domain"),
        ("a@intranet", "public domain"),
        ("user@[127.0.0.1]", "not an IP address"),
        ("user@[IPv6:2001:db8::1]", "not an IP address"),
        ("user@127.0.0.1", "not an IP address"),
        ("user@\u2603.com", "not a valid domain name"),  # a symbol: not a valid IDN
        ("a@" + "ü" * 60 + ".com", "not a valid"),  # its A-label is over 63 characters
    ],
)
def test_email_without_a_public_domain_name_is_rejected_with_a_reason(value, message):
    with pytest.raises(ValidationError, match=message):
        normalize_email(value)


def test_email_whose_ascii_form_exceeds_254_characters_is_rejected():
    domain = ".".join(["ü" * 20] * 10) + ".de"  # 212 characters; 332 in ASCII
    with pytest.raises(ValidationError, match="at most 254"):
        normalize_email("jane@" + domain)


# --- phone ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "(415) 555-2671",
        "415.555.2671",
        "415-555-2671",
        "4155552671",
        "1 415 555 2671",
        "+1 415 555 2671",
        "+1 (415) 555-2671",
        "+14155552671",
        "001 415 555 2671",
        "0014155552671",
        "011 1 415 555 2671",
        "tel:+1-415-555-2671",
        "  +1 415 555 2671  ",
    ],
)
def test_any_reasonable_us_format_becomes_e164(value):
    assert normalize_phone(value, "US") == "+14155552671"


def test_national_numbers_are_read_with_the_owners_region():
    assert normalize_phone("020 7946 0958", "GB") == "+442079460958"
    assert normalize_phone("0044 20 7946 0958", "US") == "+442079460958"
    assert normalize_phone("0044 20 7946 0958", "GB") == "+442079460958"


def test_a_json_number_is_read_as_digits():
    assert normalize_phone(4155552671, "US") == "+14155552671"


def test_a_negative_json_number_is_not_a_phone_number():
    # phonenumbers skips the minus sign as punctuation: -4155552671 must not become a number.
    with pytest.raises(ValidationError, match="not a valid phone number"):
        normalize_phone(-4155552671, "US")


@pytest.mark.parametrize("value", ["+12001230101", "555-1234", "hello", "+1", "12345678901234"])
def test_possible_but_invalid_numbers_are_rejected(value):
    with pytest.raises(ValidationError, match="not a valid phone number"):
        normalize_phone(value, "US")


@pytest.mark.parametrize("value", ["+44 7700 900123", "0044 7700 900123"])
def test_a_number_with_a_country_code_is_refused_for_its_digits_not_its_region(value):
    """+44 7700 900xxx is reserved for fiction: the country code was given, so the message
    must not talk about numbers without one."""
    with pytest.raises(ValidationError) as caught:
        normalize_phone(value, "US")
    (message,) = caught.value.messages
    assert "without a country code" not in message
    assert message == (
        "Is not a valid phone number: +44 is United Kingdom (GB), and 7700900123 is not a "
        "number in use there; check the digits."
    )
    assert normalize_phone("+44 7700 123456", "US") == "+447700123456"


def test_phone_input_longer_than_32_characters_is_rejected():
    with pytest.raises(ValidationError, match="at most 32"):
        normalize_phone("+1 415 555 2671" + " " * 5 + "x" * 20, "US")


@pytest.mark.parametrize("value", [None, "", "  "])
def test_blank_phone_means_not_given(value):
    assert normalize_phone(value, "US") == ""


def _valid_numbers():
    """Valid numbers of every region phonenumbers knows, varied in their last digits."""

    def build(region, suffix):
        example = phonenumbers.example_number_for_type(
            region, phonenumbers.PhoneNumberType.MOBILE
        ) or phonenumbers.example_number(region)
        if example is None:
            return None
        national = str(example.national_number)
        if suffix and len(suffix) < len(national):
            national = national[: -len(suffix)] + suffix
        number = copy.copy(example)  # keeps flags such as Italy's leading zero
        number.national_number = int(national)
        return (region, number) if phonenumbers.is_valid_number(number) else None

    return st.builds(
        build,
        st.sampled_from(sorted(phonenumbers.SUPPORTED_REGIONS)),
        st.text(alphabet="0123456789", min_size=0, max_size=3),
    ).filter(lambda pair: pair is not None)


@settings(max_examples=300, deadline=None)
@given(_valid_numbers(), st.sampled_from(sorted(phonenumbers.SUPPORTED_REGIONS)))
def test_phone_e164_is_idempotent_whatever_the_default_region(pair, other_region):
    _, number = pair
    e164 = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    assert normalize_phone(e164, other_region) == e164


@settings(max_examples=300, deadline=None)
@given(
    _valid_numbers(),
    st.sampled_from(
        [
            phonenumbers.PhoneNumberFormat.E164,
            phonenumbers.PhoneNumberFormat.INTERNATIONAL,
            phonenumbers.PhoneNumberFormat.NATIONAL,
            phonenumbers.PhoneNumberFormat.RFC3966,
        ]
    ),
)
def test_phone_is_stable_across_formats_of_one_number(pair, number_format):
    region, number = pair
    e164 = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
    written = phonenumbers.format_number(number, number_format)
    assume(len(written) <= 32)
    # National formats are read with the number's own region, as the owner's default region.
    assert normalize_phone(written, region) == e164
    assert normalize_phone(normalize_phone(written, region), "US") == e164


# --- delay_hours ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "hours"), [(0, 0), (24, 24), ("24", 24), (" 7 ", 7), ("0008", 8), (8760, 8760)]
)
def test_delay_hours_accepts_whole_numbers_and_digit_strings(value, hours):
    assert parse_delay_hours(value) == hours


@pytest.mark.parametrize("value", [None, "", "  "])
def test_blank_delay_means_the_business_default(value):
    assert parse_delay_hours(value) is None


@pytest.mark.parametrize(
    "value", [1.5, 2.0, "1.5", -1, "-1", True, False, "soon", "1e3", "٣", [], {}, 8761, "8761"]
)
def test_delay_hours_rejects_floats_negatives_booleans_words_and_more_than_a_year(value):
    with pytest.raises(ValidationError):
        parse_delay_hours(value)


# --- metadata -------------------------------------------------------------------------------------


def test_metadata_is_an_object():
    assert parse_metadata({"order": {"id": 1001, "items": [1, 2]}}) == {
        "order": {"id": 1001, "items": [1, 2]}
    }
    assert parse_metadata(None) == {}


@pytest.mark.parametrize("value", [[1, 2], "source=shopify", 3, True])
def test_metadata_that_is_not_an_object_is_rejected(value):
    with pytest.raises(ValidationError, match="JSON object"):
        parse_metadata(value)


def test_metadata_of_16_kb_is_accepted_and_one_byte_more_is_not():
    # {"k":"..."} is 8 bytes of JSON around the value.
    parse_metadata({"k": "x" * (MAX_METADATA_BYTES - 8)})
    with pytest.raises(ValidationError, match="16 KB"):
        parse_metadata({"k": "x" * (MAX_METADATA_BYTES - 7)})


@pytest.mark.parametrize(
    "value",
    [
        {"k": "nul\x00"},
        {"nul\x00": 1},
        {"k": "\ud800"},
        {"k": float("nan")},
        {"k": float("inf")},
        {"k": object()},
    ],
)
def test_metadata_rejects_what_postgresql_jsonb_cannot_store(value):
    with pytest.raises(ValidationError):
        parse_metadata(value)


def test_metadata_nested_too_deeply_is_rejected():
    deep: dict = {}
    node = deep
    for _ in range(12):
        node["k"] = {}
        node = node["k"]
    with pytest.raises(ValidationError, match="nest deeper"):
        parse_metadata(deep)


# --- text -----------------------------------------------------------------------------------------


def test_text_is_trimmed_and_inner_whitespace_collapsed():
    assert clean_text("  Jane \n  Marie\t", 100) == "Jane Marie"


@pytest.mark.parametrize("value", ["nul\x00", "bell\x07", "\ud800"])
def test_text_with_control_characters_or_lone_surrogates_is_rejected(value):
    with pytest.raises(ValidationError):
        clean_text(value, 100)


def test_text_longer_than_its_limit_is_rejected():
    clean_text("x" * 100, 100)
    with pytest.raises(ValidationError, match="at most 100"):
        clean_text("x" * 101, 100)


@pytest.mark.parametrize(
    ("value", "clean"),
    [
        ("\u202eevil\u202c", "evil"),  # bidi override and pop
        ("Ja\u200bne", "Jane"),  # zero-width space
        ("\ufeffJane", "Jane"),  # byte-order mark
        ("Jane\U000f0000", "Jane"),  # supplementary private use
        ("Ja\x00ne\x1b", "Jane"),  # control characters
        ("Jane\u2028Marie\x85x", "Jane Marie x"),  # line separators are spaces
        ("\uff2a\uff41\uff4e\uff45 \ufb01", "Jane fi"),  # NFKC
        ("Zoë", "Zoë"),
        ("\u200b\u202e \ufeff", ""),  # nothing left: not given
    ],
)
def test_name_is_nfkc_without_control_format_or_private_use_characters(value, clean):
    assert clean_name(value, 100) == clean


def test_name_longer_than_its_limit_after_cleaning_is_rejected():
    assert clean_name("x" * 100 + "\u200b" * 50, 100) == "x" * 100
    with pytest.raises(ValidationError, match="at most 100"):
        clean_name("x" * 101, 100)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=60))
def test_name_cleaning_is_idempotent_and_leaves_nothing_invisible(value):
    clean = clean_name(value, 1000)
    assert clean_name(clean, 1000) == clean
    assert clean == clean.strip()
    assert not any(unicodedata.category(ch) in {"Cc", "Cf", "Co"} for ch in clean)


def test_clean_contact_input_treats_an_invisible_name_as_absent():
    clean = clean_contact_input(
        {"first_name": "\u200b", "company_name": "\ue000", "email": "jane@example.com"},
        default_region="US",
    )
    assert (clean.first_name, clean.company_name) == ("", "")


# --- the whole input ------------------------------------------------------------------------------


def test_clean_contact_input_needs_an_email_or_a_phone_and_names_both_fields():
    with pytest.raises(ValidationError) as exc:
        clean_contact_input(
            {"first_name": "Jane", "email": "  ", "mobile_phone_number": ""}, default_region="US"
        )
    assert _errors(exc) == {
        "email": [NEED_EMAIL_OR_PHONE],
        "mobile_phone_number": [NEED_EMAIL_OR_PHONE],
    }


def test_clean_contact_input_reports_every_bad_field_at_once():
    with pytest.raises(ValidationError) as exc:
        clean_contact_input(
            {
                "first_name": "x" * 101,
                "email": "nope",
                "mobile_phone_number": "123",
                "delay_hours": -3,
                "metadata": [],
            },
            default_region="US",
        )
    assert set(_errors(exc)) == {
        "first_name",
        "email",
        "mobile_phone_number",
        "delay_hours",
        "metadata",
    }


def test_clean_contact_input_ignores_unknown_keys():
    clean = clean_contact_input(
        {"email": "jane@example.com", "favourite_colour": "blue"}, default_region="US"
    )
    assert clean.email_normalized == "jane@example.com"
    assert "favourite_colour" not in CONTACT_FIELD_KEYS
