"""The POST an admin change page would send as it stands: its form's and every inline's values
(management forms included), for tests that change one thing and submit the page."""

from __future__ import annotations

from typing import Any


def _add(data: dict[str, Any], form, name: str) -> None:
    field = form.fields[name]
    if field.disabled:
        return
    value = form[name].value()
    if value is None or value is False:
        return
    if isinstance(value, list | tuple):
        data[form.add_prefix(name)] = [str(v) for v in value]
    elif value is True:
        data[form.add_prefix(name)] = "on"
    else:
        data[form.add_prefix(name)] = str(value)


def change_page_data(response) -> dict[str, Any]:
    """The values of the change page ``response`` shows, as its form would post them."""
    data: dict[str, Any] = {}
    form = response.context["adminform"].form
    for name in form.fields:
        _add(data, form, name)
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        management = formset.management_form
        for name in management.fields:
            data[management.add_prefix(name)] = str(management[name].value())
        for child in formset.forms:
            for name in child.fields:
                _add(data, child, name)
    return data


def inline_prefix(response, model_name: str) -> str:
    """The form prefix of the page's inline of ``model_name`` (e.g. ``"location"``)."""
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        if formset.model._meta.model_name == model_name:
            return formset.prefix
    raise LookupError(model_name)
