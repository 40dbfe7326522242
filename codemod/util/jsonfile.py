"""Reading a JSON file that the user named with a command-line option."""

from __future__ import annotations

import json
from typing import Any


def read_option_json(path: str, option: str) -> Any:
    """The parsed contents of `path`; ValueError, naming `option` and the
    path, when the file cannot be read or is not JSON."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise ValueError(f"cannot read {option} {path}: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{option} {path} is not JSON: {e}") from None
