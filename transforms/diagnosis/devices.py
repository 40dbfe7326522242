"""Device sets: where a test runs today, and what a guard or an instantiation keeps.

Device sets are spelled over `cpu`, `cuda`, `mps`, `xpu`, other device names a whitelist
spells out (`meta`, ...) and `other-accelerators` (HPU, PrivateUse1 and the like, which the
default device list includes whenever they are present); `generic` means "runs once,
without a device" (a GENERIC test).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from transforms.core.facts import UNKNOWN, Instantiation, Option

GENERIC = "generic"
OTHER = "other-accelerators"
UNREAD = "unknown"  # the devices cannot be read (a non-literal argument)
NOT_INSTANTIATED = "not-instantiated"  # a test that takes `device` in a class never instantiated
ACCELERATORS = ("cuda", "mps", "xpu")
# Devices a whitelist may name that dropping it keeps (mps / xpu with their allow_* flag).
DEFAULT_LIST = ("cpu", "cuda", OTHER)
_ORDER = ("cpu", "cuda", "mps", "xpu", OTHER)

# Method decorators that restrict the devices a test runs on -> the devices kept.
NATIVE = ("cpu", "cuda", "mps", "xpu")
DEVICE_GUARDS: Mapping[str, tuple[str, ...]] = {
    "onlyCPU": ("cpu",),
    "onlyCUDA": ("cuda",),
    "onlyMPS": ("mps",),
    "onlyXPU": ("xpu",),
    "onlyHPU": ("hpu",),
    "onlyPRIVATEUSE1": ("privateuse1",),
    "onlyCUDAAndPRIVATEUSE1": ("cuda", "privateuse1"),
    "onlyNativeDeviceTypes": NATIVE,
}
ACCELERATOR_GUARD = "onlyAccelerator"


def ordered(devices: Iterable[str]) -> tuple[str, ...]:
    found = set(devices)
    known = [d for d in _ORDER if d in found]
    return tuple(known + sorted(found - set(_ORDER)))


def instantiated_devices(
    only_for: object = None, except_for: object = None, allow_mps: object = None, allow_xpu: object = None
) -> tuple[str, ...] | None:
    """The devices `instantiate_device_type_tests` makes a class for; None when unknown."""
    if UNKNOWN in (only_for, except_for, allow_mps, allow_xpu):
        return None
    pool = list(DEFAULT_LIST) + (["mps"] if allow_mps is True else []) + (["xpu"] if allow_xpu is True else [])
    if isinstance(only_for, tuple):
        wanted = {d.lower() for d in only_for}
        # Names off the default list (meta, lazy, hpu...) stay as written: they may exist.
        pool = [d for d in pool if d in wanted] + sorted(wanted - set(_ORDER) - {"mps", "xpu"})
    if isinstance(except_for, tuple):
        pool = [d for d in pool if d not in {d.lower() for d in except_for}]
    return ordered(pool)


def class_devices(inst: Instantiation | None) -> tuple[str, ...] | None:
    if inst is None:
        return (GENERIC,)
    return instantiated_devices(
        inst.actual(Option.ONLY_FOR),
        inst.actual(Option.EXCEPT_FOR),
        inst.actual(Option.ALLOW_MPS),
        inst.actual(Option.ALLOW_XPU),
    )


def guarded(
    devices: tuple[str, ...] | None, guard_devices: tuple[str, ...] | None, accelerator: bool
) -> tuple[str, ...]:
    if devices is None:
        return (UNREAD,)
    if devices == (GENERIC,):
        return devices
    kept = [
        d
        for d in devices
        if guard_devices is None or d in guard_devices or (d == OTHER and any(g not in _ORDER for g in guard_devices))
    ]
    if accelerator:
        kept = [d for d in kept if d != "cpu"]
    return ordered(kept)
