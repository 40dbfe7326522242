"""The value a class's own mechanics make true, whatever a linter accepts.

`true_value(cls)` reads the facts: how the class is instantiated (for which devices) and which
devices its tests need (`TestMethod.needs`, `TestClassFacts.needs`):
- instantiated with `only_for` one device -> that device; several devices -> no one value (a
  whitelist is never given one device's value); not a literal -> unknown;
- instantiated for the default device list, every test taking `device` -> ACCELERATOR, or the
  one device every test is guarded to (`@onlyCUDA` on each test or on the class);
- not instantiated, no test taking `device`: the one device every test needs (CUDA for ROCm,
  since PyTorch's CUDA device runs there) -> that device; otherwise GENERIC: the class runs once,
  without a device (the tests that need one make it a GENERIC label that misleads: the warning).
The classification (`classify.py`) writes this value when the generation accepts it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from transforms.core.device_needs import needed_value, test_needs
from transforms.core.facts import UNKNOWN, DeviceNeed, TestClassFacts
from transforms.core.members import Member
from transforms.rules.checks import FORBIDDEN_ONLY_DECORATORS

__all__ = ["Truth", "true_value"]
# Method (or class) decorators that keep a device test to one device.
_ONE_DEVICE_GUARDS = {"onlyCPU": Member.CPU, "onlyCUDA": Member.CUDA, "onlyMPS": Member.MPS, "onlyXPU": Member.XPU}


@dataclass(frozen=True)
class Truth:
    value: Member | None  # None: no one value is true (mixed devices, a whitelist, unknown)
    reason: str  # why, ready to print
    needing: tuple[str, ...] = ()  # GENERIC by mechanics, but these tests need a device


def _evidence(needs: Iterable[DeviceNeed], limit: int = 2) -> str:
    shown = sorted({f"line {n.line}: {n.what}" for n in needs})
    more = f" (+{len(shown) - limit} more)" if len(shown) > limit else ""
    return "; ".join(shown[:limit]) + more


def _instantiated(cls: TestClassFacts) -> Truth:
    inst = cls.instantiation
    assert inst is not None
    only_for = inst.only_for
    if only_for == UNKNOWN:
        return Truth(None, f"only_for at line {inst.line} is not a literal: the devices cannot be read")
    if isinstance(only_for, tuple):
        named = sorted({d.lower() for d in only_for})
        if len(named) == 1 and named[0].upper() in ("CPU", "CUDA", "MPS", "XPU"):
            return Truth(Member(named[0].upper()), f"instantiated only for {named[0]} (line {inst.line})")
        return Truth(None, f"only_for={list(only_for)!r} names several devices: no one value is true")
    if not cls.test_methods or not all(m.takes_device for m in cls.test_methods):
        return Truth(None, "instantiated, but not every test takes `device`")
    class_guards = [_ONE_DEVICE_GUARDS[d] for d in cls.decorator_names if d in _ONE_DEVICE_GUARDS]
    guards = {
        m.name: {_ONE_DEVICE_GUARDS[d] for d in m.decorator_names if d in _ONE_DEVICE_GUARDS} | set(class_guards)
        for m in cls.test_methods
    }
    ones = {next(iter(g)) if len(g) == 1 else None for g in guards.values()}
    if len(ones) == 1 and None not in ones:
        value = ones.pop()
        assert value is not None
        guard = next(name for name, v in _ONE_DEVICE_GUARDS.items() if v == value)
        return Truth(value, f"every test runs only on {value.lower()} (@{guard})")
    forbidden = any(d in FORBIDDEN_ONLY_DECORATORS for m in cls.test_methods for d in m.decorator_names)
    if forbidden or class_guards:
        return Truth(None, "some tests are guarded to particular devices and others not")
    return Truth(Member.ACCELERATOR, "instantiated for the default device list; every test takes `device`")


def true_value(cls: TestClassFacts) -> Truth:
    """The value the class's mechanics and its tests' needs make true."""
    if cls.instantiation is not None:
        return _instantiated(cls)
    if any(m.takes_device for m in cls.test_methods):
        return Truth(None, "tests take `device` but the class is not passed to instantiate_device_type_tests")
    devices = {m.name: needed_value(test_needs(cls, m)) for m in cls.test_methods}
    found = set(devices.values())
    if len(found) == 1 and None not in found:
        value = found.pop()
        assert value is not None
        every = [n for m in cls.test_methods for n in test_needs(cls, m)]
        return Truth(value, f"not instantiated; every test needs {value}: {_evidence(every)}")
    needing = [m.name for m in cls.test_methods if test_needs(cls, m)]
    return Truth(Member.GENERIC, "not instantiated; no test takes `device`", needing=tuple(needing))
