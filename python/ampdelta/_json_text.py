"""Values handed to the extension as JSON text (it speaks JSON with the package)."""

from __future__ import annotations

import json
from typing import Any

from ._errors import InvalidInputError


def json_text(value: Any, what: str) -> str:
    """`value` as JSON text for the extension; InvalidInputError naming `what` for values
    JSON cannot hold and for text that is not valid Unicode."""
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(
            f"{what} holds a value that is not a string, number, boolean, list or dict: "
            f"{error}") from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        bad = error.object[max(error.start - 20, 0):error.end + 20]
        raise InvalidInputError(
            f"{what} holds text that is not valid Unicode (a path decoded from "
            f"non-UTF-8 bytes?): {bad!r}") from None
    return text
