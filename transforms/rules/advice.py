"""Restructuring advice: what fits when a label alone cannot satisfy the rules.

The names (the keys of `ADVICE`) are what a decision's `patterns`, a deviation's fitting
restructuring and a diagnosis's advice name; the text says what each does.  Which advice fits
a class is the diagnosis's to say (`transforms/diagnosis/`); the transforms that carry it
out live in `transforms/restructure/`.
"""

from __future__ import annotations

from collections.abc import Mapping

from transforms.core.strenum import StrEnum

__all__ = ["ADVICE", "BY_HAND", "WIDENING", "Pattern"]


class Pattern(StrEnum):
    """A piece of restructuring advice: the restructuring transforms (transforms/restructure/),
    then the advice no transform carries out."""

    KEYWORD_ARGS = "keyword-args"
    INLINE_ONLY_FOR = "inline-only-for"
    DROP_ONLY_FOR = "drop-only-for"
    SPLIT_CLASS = "split-class"
    CUDA_TO_ACCELERATOR = "cuda-to-accelerator"
    INJECT_DEVICE = "inject-device"
    MOVE_INSTANTIATION = "move-instantiation"


# What each piece of advice does.
ADVICE: Mapping[Pattern, str] = {
    Pattern.KEYWORD_ARGS: (
        "pass only_for/except_for/allow_* of instantiate_device_type_tests as keywords (the linter reads keywords only)"
    ),
    Pattern.INLINE_ONLY_FOR: "inline the module-level literal the only_for/except_for name is bound to",
    Pattern.DROP_ONLY_FOR: (
        "drop the only_for whitelist: with cpu listed, ACCELERATOR on the default device list "
        "(keeps every listed device, adds the other accelerators: a widening, run only when named); "
        "accelerators only, except_for=('cpu',) with allow_mps/allow_xpu=True where listed"
    ),
    Pattern.SPLIT_CLASS: (
        "split the class: a test-less base with the shared members, the device-free tests "
        "in a GENERIC class (keeps the name), the device tests in a class per guard "
        "(@onlyCPU -> CPU, CUDA-only APIs -> CUDA, unguarded -> ACCELERATOR)"
    ),
    Pattern.CUDA_TO_ACCELERATOR: (
        "@onlyCUDA -> @onlyAccelerator and torch.cuda.<fn> -> its torch.accelerator "
        "equivalent, where every CUDA-specific use of the test has one (adds the other "
        "accelerators: a widening, run only when named)"
    ),
    Pattern.INJECT_DEVICE: (
        "give the tests a `device` parameter in place of hard-coded 'cuda' / .cuda() (manual: no transform does this)"
    ),
    Pattern.MOVE_INSTANTIATION: (
        "move the instantiate_device_type_tests call out of the try/except* (or match) block, "
        "e.g. to module level (the linter does not look inside)"
    ),
}

# The advice no restructuring step carries out: done by hand.
BY_HAND: frozenset[Pattern] = frozenset({Pattern.INJECT_DEVICE, Pattern.MOVE_INSTANTIATION})
# The steps that add devices some tests run on (a change of what is tested, never silent):
# `--restructure auto` never runs them; they run only where named (`--restructure cuda-to-accelerator`).
WIDENING: frozenset[Pattern] = frozenset({Pattern.DROP_ONLY_FOR, Pattern.CUDA_TO_ACCELERATOR})
