"""Merge fields (reviews.merge_fields): the known fields replaced, anything else in braces refused,
values escaped in HTML parts only when asked and never rendered as templates themselves."""

from __future__ import annotations

import html

import pytest

from reviews import merge_fields
from tests.support.delivery import VALUES


def test_render_replaces_known_fields_and_keeps_doubled_braces_literal():
    text = merge_fields.render("Hi {first_name}, {{not a field}} {review_link}", VALUES)
    assert text == "Hi Jane, {not a field} https://reviews.example.com/r/abc/"


@pytest.mark.parametrize(
    "template",
    [
        "Hi {name}",
        "Hi {first_name.__class__}",
        "Hi {first_name!r}",
        "Hi {first_name:>99999999}",
        "Hi {0}",
        "Hi { first_name }",
        "Hi {first_name",
        "Hi first_name}",
    ],
)
def test_anything_but_a_known_field_in_braces_is_refused(template):
    with pytest.raises(merge_fields.MergeFieldError):
        merge_fields.fields_used(template)
    with pytest.raises(merge_fields.MergeFieldError):
        merge_fields.render(template, VALUES)


def test_values_are_escaped_in_html_parts_only_when_asked():
    assert merge_fields.render("{business_name}", VALUES) == "Acme <b>Plumbing</b>"
    assert (
        merge_fields.render("<p>{business_name}</p>", VALUES, escape=html.escape)
        == "<p>Acme &lt;b&gt;Plumbing&lt;/b&gt;</p>"
    )


def test_values_are_not_rendered_as_templates_themselves():
    values = {**VALUES, "first_name": "{review_link}"}
    assert merge_fields.render("Hi {first_name}", values) == "Hi {review_link}"
