"""The building blocks of the rules' examples: small modules around a class `TestFoo`."""

from __future__ import annotations

from transforms.core.members import Member
from transforms.rules.registry import Example

__all__ = ["CLS", "DEVICE_TEST", "PLAIN_TEST", "ex", "inst"]

CLS = "class TestFoo(TestCase):\n"
DEVICE_TEST = CLS + "    def test_a(self, device):\n        pass\n"
PLAIN_TEST = CLS + "    def test_a(self):\n        pass\n"


def ex(value: str, source: str) -> Example:
    return Example(Member(value), source)


def inst(args: str = "") -> str:
    """An instantiate_device_type_tests(TestFoo, globals(), <args>) line."""
    return f"instantiate_device_type_tests(TestFoo, globals(){args})\n"
