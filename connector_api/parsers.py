"""The API's JSON parser: DRF's, accepting only strict JSON and never failing with a 500.

Python's ``json`` accepts what JSON does not (``NaN``, ``Infinity``) and turns ``1e400`` into
an infinite float, which PostgreSQL's jsonb then refuses (a 500 further down); deeply nested
arrays exhaust the recursion limit with a ``RecursionError`` that DRF's parser does not catch
(a 500). Each is a 400 ``invalid_request`` here.

The 1 MB body limit needs nothing here: for JSON, DRF reads ``request.body``, where Django
enforces ``DATA_UPLOAD_MAX_MEMORY_SIZE`` with ``RequestDataTooBig``, which the exception handler
answers with 413 ``request_too_large`` (tested with a real 1.1 MB body).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import IO, Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} is out of range")
    return value


class JSONParser(parsers.JSONParser):
    def parse(
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> Any:  # any JSON value (a list too): views check that a body is the object they take
        get_encoding = parsers.get_encoding  # type: ignore[attr-defined]  # missing from the stubs
        encoding: str = get_encoding(parser_context or {})
        try:
            text = stream.read().decode(encoding)
        except UnicodeDecodeError as exc:
            raise ParseError(f"JSON parse error - the body is not valid {encoding}.") from exc
        try:
            return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        except RecursionError as exc:
            raise ParseError("JSON parse error - nested too deeply.") from exc
