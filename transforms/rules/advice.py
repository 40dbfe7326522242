"""Restructuring advice: what fits when a label alone cannot satisfy the rules.

The names (the keys of `ADVICE`) are what a decision's `patterns`, a deviation's fitting
restructuring and a diagnosis's advice name; the text says what each does.  Which advice fits
a class is the diagnosis's to say (`transforms/diagnosis/`); the transforms that carry it
out live in `transforms/restructure/`.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["ADVICE"]

# Every piece of advice, with what it does: the restructuring transforms (transforms/restructure/),
# then the advice no transform carries out.
ADVICE: Mapping[str, str] = {
    "keyword-args": (
        "pass only_for/except_for/allow_* of instantiate_device_type_tests as keywords (the linter reads keywords only)"
    ),
    "inline-only-for": "inline the module-level literal the only_for/except_for name is bound to",
    "drop-only-for": (
        "drop the only_for whitelist: with cpu listed, ACCELERATOR on the default device list "
        "(keeps every listed device, adds the other accelerators: a widening); accelerators "
        "only, except_for=('cpu',) with allow_mps/allow_xpu=True where listed"
    ),
    "split-class": (
        "split the class: a test-less base with the shared members, the device-free tests "
        "in a GENERIC class (keeps the name), the device tests in a class per guard "
        "(@onlyCPU -> CPU, CUDA-only APIs -> CUDA, unguarded -> ACCELERATOR)"
    ),
    "cuda-to-accelerator": (
        "@onlyCUDA -> @onlyAccelerator and torch.cuda.<fn> -> its torch.accelerator "
        "equivalent, where every CUDA-specific use of the test has one"
    ),
    "inject-device": (
        "give the tests a `device` parameter in place of hard-coded 'cuda' / .cuda() (manual: no transform does this)"
    ),
    "move-instantiation": (
        "move the instantiate_device_type_tests call out of the try/except* (or match) block, "
        "e.g. to module level (the linter does not look inside)"
    ),
}
