"""`StrEnum`: enum members that are their own string values (the base of every typed model field).

The result models serialise to JSON and are compared with literal strings in reports and
tests; a `str` mix-in keeps both working, and `__str__`/`__format__` print the value (not
`Class.MEMBER`) on every Python the tool supports. Python 3.11's `enum.StrEnum` does the same;
the tool still supports 3.10.
"""

from __future__ import annotations

import sys
from enum import Enum

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:

    class StrEnum(str, Enum):
        def __str__(self) -> str:
            return str.__str__(self)

        def __format__(self, spec: str) -> str:
            return str.__format__(self, spec)


__all__ = ["StrEnum"]
