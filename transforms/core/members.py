"""The one statement of the enum's facts: its name, home, members and attribute.

Every other module (the facts and their reading, the rule table, the editor, the CLI) imports these;
nothing else spells the six members out.
"""

from __future__ import annotations

__all__ = ["COMMON_UTILS", "DEVICE_MEMBERS", "ENUM_NAME", "HW_ATTRIBUTE", "MEMBERS", "normalise_member"]

ENUM_NAME = "HardwareClassification"
COMMON_UTILS = "torch.testing._internal.common_utils"
HW_ATTRIBUTE = "hw_classification"

# In the order the upstream enum defines them (values are the lowercase names).
MEMBERS = ("GENERIC", "ACCELERATOR", "CPU", "CUDA", "MPS", "XPU")
# Tied to one device: instantiated with only_for=<that device, lowercase>.
DEVICE_MEMBERS = ("CPU", "CUDA", "MPS", "XPU")


def normalise_member(name: str) -> str:
    """'cuda' -> 'CUDA'; also accepts 'HardwareClassification.CUDA'. ValueError otherwise."""
    text = str(name).strip()
    if text.startswith(ENUM_NAME + "."):
        text = text[len(ENUM_NAME) + 1 :]
    upper = text.upper()
    if upper not in MEMBERS:
        raise ValueError(f"unknown classification {name!r}: expected one of {', '.join(MEMBERS)}")
    return upper
