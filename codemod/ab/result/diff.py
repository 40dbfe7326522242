"""What the diff between the arms does, as the A/B result records it ("What changed"): per
file the lines, per class the labels and torch.load edits, the instantiate options that
changed, the tests that moved, the imports, and the device sets B narrows (lost coverage
where those devices are). Read by `codemod/ab/arms/changes.py` and `structure.py`; part of
the result model (`model.ABResult.changes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from transforms.core.strenum import StrEnum


class NarrowedBy(StrEnum):
    """What makes B run tests on fewer devices than A."""

    INSTANTIATION = "instantiation"  # the instantiate options (only_for, except_for, allow_mps, allow_xpu)
    DECORATOR = "decorator"  # a device guard on the test (`@onlyCPU`, `@onlyAccelerator`, ...)
    LABEL = "label"  # `hw_classification` moved to a label the linter's rules tie to fewer devices


@dataclass(kw_only=True)
class DeviceNarrowing:
    """Tests B no longer runs on some devices A ran them on: on a machine with those devices
    they are lost coverage, which this run cannot see where the machine lacks them."""

    cls: str
    test: str = ""  # the test a decorator narrows; "" = every test of the class
    by: NarrowedBy
    devices: list[str] = field(default_factory=list)  # the devices B no longer runs them on
    before: str = ""  # what A writes: the options, the guards, the label
    after: str = ""  # ... and B
    # the --map entry that says where they went (set by the comparison); "" = none: lost
    mapped: str = ""


@dataclass(kw_only=True)
class ClassChange:
    """What the diff between the arms does inside one class."""

    name: str
    labels: list[str] = field(default_factory=list)  # `hw_classification = HardwareClassification.X` added
    removed_labels: list[str] = field(default_factory=list)
    torch_load: list[str] = field(default_factory=list)  # torch.load edits: "weights_only=False", "safe_globals([...])"


@dataclass(kw_only=True)
class InstantiationChange:
    """An `instantiate_device_type_tests(Cls, ...)` whose options differ between the arms."""

    cls: str
    before: str = ""  # the call's options in A (`only_for=('cpu', 'cuda')`); "" = no call
    after: str = ""  # ... in B
    removed: list[str] = field(default_factory=list)  # options A has that B has not (or changed)
    added: list[str] = field(default_factory=list)
    devices_before: list[str] = field(default_factory=list)  # empty: not instantiated or unknown
    devices_after: list[str] = field(default_factory=list)
    widened: list[str] = field(default_factory=list)  # devices B adds


@dataclass(kw_only=True)
class TestMove:
    """A test function that lives in another class in B."""

    test: str
    old_class: str
    new_class: str


@dataclass(kw_only=True)
class FileChange:
    path: str
    added: int = 0
    removed: int = 0
    classes: list[ClassChange] = field(default_factory=list)
    torch_load: list[str] = field(default_factory=list)  # torch.load edits outside any class
    imports: list[str] = field(default_factory=list)  # import statements added (whole, from schema 4)
    imports_extended: list[str] = field(
        default_factory=list
    )  # schema 4: existing imports extended (B's whole statement)
    instantiations: list[InstantiationChange] = field(default_factory=list)  # schema 4
    moves: list[TestMove] = field(default_factory=list)  # schema 4
    narrowed: list[DeviceNarrowing] = field(default_factory=list)  # schema 5


@dataclass(kw_only=True)
class Changes:
    """What differs between the arms, read from `git diff REF` (arms from git only)."""

    ref: str = ""
    stat: str = ""  # `git diff --stat` text
    files: list[FileChange] = field(default_factory=list)
    error: str = ""  # why the diff could not be read


def lost_devices(changes: Changes | None) -> list[tuple[str, DeviceNarrowing]]:
    """(file, narrowing) for every narrowed device set no `--map` entry explains."""
    files = changes.files if changes is not None else []
    return [(fc.path, n) for fc in files for n in fc.narrowed if not n.mapped]
