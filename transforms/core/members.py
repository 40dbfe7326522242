"""The one statement of the enum's facts: its name, home, members and attribute.

Every other module (the facts and their reading, the rule table, the editor, the CLI) imports these;
nothing else spells the six members out.
"""

from __future__ import annotations

from transforms.core.strenum import StrEnum

__all__ = ["COMMON_UTILS", "DEVICE_MEMBERS", "ENUM_NAME", "HW_ATTRIBUTE", "MEMBERS", "Member", "normalise_member"]

ENUM_NAME = "HardwareClassification"
COMMON_UTILS = "torch.testing._internal.common_utils"
HW_ATTRIBUTE = "hw_classification"


class Member(StrEnum):
    """A classification value, spelled as the label writes it (`HardwareClassification.CUDA`):
    each member is its own name (the upstream enum's values are the lowercase names)."""

    # In the order the upstream enum defines them.
    GENERIC = "GENERIC"
    ACCELERATOR = "ACCELERATOR"
    CPU = "CPU"
    CUDA = "CUDA"
    MPS = "MPS"
    XPU = "XPU"


MEMBERS: tuple[Member, ...] = tuple(Member)
# Tied to one device: instantiated with only_for=<that device, lowercase>.
DEVICE_MEMBERS: tuple[Member, ...] = (Member.CPU, Member.CUDA, Member.MPS, Member.XPU)


def normalise_member(name: str) -> Member:
    """'cuda' -> CUDA; also accepts 'HardwareClassification.CUDA'. ValueError otherwise."""
    text = str(name).strip()
    if text.startswith(ENUM_NAME + "."):
        text = text[len(ENUM_NAME) + 1 :]
    upper = text.upper()
    if upper not in MEMBERS:
        raise ValueError(f"unknown classification {name!r}: expected one of {', '.join(MEMBERS)}")
    return Member(upper)
