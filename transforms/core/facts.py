"""The facts `analysis.analyse` reads about a module's test classes: plain frozen dataclasses.

These are what the rule table (`rules/`, `label/classify.py`), the restructuring advice
(`diagnosis/`) and the editor see of a module, and what the CLI dumps as JSON
(`dataclasses.asdict`).  They hold values only: reading them from the AST is
`analysis.py` (the module) and `class_reading.py` (one class).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from transforms.core.members import HW_ATTRIBUTE
from transforms.core.strenum import StrEnum

__all__ = [
    "DEVICE_PARAMS",
    "UNKNOWN",
    "CallForm",
    "DeviceList",
    "DeviceNeed",
    "ExistingLabel",
    "Flag",
    "IgnoredClass",
    "IgnoredReason",
    "Instantiation",
    "ModuleFacts",
    "Need",
    "Option",
    "TestClassFacts",
    "TestMethod",
    "TorchCall",
    "Unread",
]

# Parameter names through which instantiate_device_type_tests passes the device.
DEVICE_PARAMS = ("device", "devices")


class Unread(StrEnum):
    """An argument whose value cannot be read statically (a name, a call, ...)."""

    UNKNOWN = "unknown"


UNKNOWN = Unread.UNKNOWN

# only_for / except_for: None (absent or literal None), a tuple of strings, or UNKNOWN.
DeviceList = None | tuple[str, ...] | Unread
# allow_mps / allow_xpu: None (absent), a bool literal, or UNKNOWN (anything else,
# a literal None included: the linter skips the check then).
Flag = None | bool | Unread


class Option(StrEnum):
    """The options of instantiate_device_type_tests the rules read (each an `Instantiation` field)."""

    EXCEPT_FOR = "except_for"
    ONLY_FOR = "only_for"
    ALLOW_MPS = "allow_mps"
    ALLOW_XPU = "allow_xpu"


class CallForm(StrEnum):
    """How an instantiate_device_type_tests call names the function."""

    NAME = "name"  # instantiate_device_type_tests(...)
    ATTRIBUTE = "attribute"  # module.instantiate_device_type_tests(...)


class IgnoredReason(StrEnum):
    """Why the linter does not check a class that looks like a test class."""

    HELPER = "no test methods (helper base)"
    NESTED = "nested in function/class"
    UNSCANNED = "under try/except* or match (the linter does not scan there)"
    REDEFINED = "redefined later in the file (only the last definition is linted)"


class Need(StrEnum):
    """A device a test needs to do what it tests (read by `device_needs.py`)."""

    CUDA = "cuda"  # CUDA specifically: torch.cuda.*, .cuda(), "cuda", TEST_CUDA, @requires_cuda
    ROCM = "rocm"  # a ROCm build (torch.version.hip): PyTorch's CUDA device, on AMD
    XPU = "xpu"
    MPS = "mps"
    GPU = "gpu"  # some accelerator, whichever: GPU_TYPE, HAS_GPU, @requires_gpu, torch.accelerator
    # Accelerators no label names: a test that needs one needs *a* device, but no value says which.
    MTIA = "mtia"
    HPU = "hpu"


@dataclass(frozen=True)
class DeviceNeed:
    """One piece of evidence that a test (or every test of a class) needs `device`."""

    device: Need
    line: int
    what: str  # as written: "device=GPU_TYPE", "@requires_cuda", "torch.cuda.synchronize()"


@dataclass(frozen=True)
class TorchCall:
    """A call in a class body whose callee, as `ast.unparse` spells it, starts with `torch.` and
    names a device module (`torch.cuda.is_available`, `torch.ones(2).cuda`): what the newer
    linter's accelerator_availability rule reads.  `owner` is `Class.method` for a call in a
    method (its decorators and defaults included), else `Class`."""

    line: int
    owner: str
    callee: str


@dataclass(frozen=True, kw_only=True)
class TestMethod:
    """A method whose name starts with `test`, defined directly in a test class body."""

    __test__ = False  # not a pytest test class

    name: str
    line: int  # the `def` line
    params: tuple[str, ...]  # every parameter, `self` included; `*args`/`**kw` with their stars
    is_async: bool
    decorators: tuple[str, ...]  # dotted names; a call is rendered by its callee
    # What the test needs a device for: its guards, the device it places data on, the
    # device APIs it calls (a device used only as a value is not a need).
    needs: tuple[DeviceNeed, ...] = ()
    # Derived once, here: each rule of each of the six values asks again (7 times a method).
    # The linter's test: a positional-only, normal or keyword-only parameter named
    # device/devices (`*devices` and `**device` are rendered with their stars).
    takes_device: bool = field(init=False, repr=False, compare=False)
    # The names the linter matches: the last part of a name, attribute or callee.
    decorator_names: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "takes_device", any(p in DEVICE_PARAMS for p in self.params))
        object.__setattr__(self, "decorator_names", tuple(d.rsplit(".", 1)[-1] for d in self.decorators))

    def signature(self) -> str:
        return f"{self.name}({', '.join(self.params)})"


@dataclass(frozen=True, kw_only=True)
class Instantiation:
    """A module-level `instantiate_device_type_tests(Cls, ...)` statement.

    The four options are what the linter sees: keyword arguments only.
    `positional` names the options passed by position and `star` is true when
    `*args`/`**kwargs` may carry any of them: facts the linter does not see."""

    line: int
    target: str  # the class name
    only_for: DeviceList = None
    except_for: DeviceList = None
    allow_mps: Flag = None
    allow_xpu: Flag = None
    form: CallForm = CallForm.NAME
    text: str = ""  # the call, as `ast.unparse` renders it
    positional: tuple[Option, ...] = ()
    star: bool = False
    # What Python passes for the options given by position (the linter does not see these).
    positional_values: tuple[tuple[Option, DeviceList | Flag], ...] = ()

    def actual(self, option: Option) -> DeviceList | Flag:
        """The value Python uses for `option`: positional if given so, else the keyword's."""
        value: DeviceList | Flag = dict(self.positional_values).get(option, getattr(self, option))
        return value

    def actual_devices(self, option: Option) -> DeviceList:
        """`actual` of only_for / except_for, which are read as device lists (never as flags)."""
        value = self.actual(option)
        assert not isinstance(value, bool), option
        return value


@dataclass(frozen=True, kw_only=True)
class ExistingLabel:
    """A `hw_classification` assignment found in a class body."""

    line: int
    member: str | None  # the attribute name when the value is `X.MEMBER`, else None
    form: str  # source text of the value
    valid: bool
    problem: str | None = None
    # Later assignments in the same body: Python keeps the last, the linter reads the first.
    shadowed_by: tuple[int, ...] = ()

    def render(self) -> str:
        return f"{HW_ATTRIBUTE} = {self.form}"


@dataclass(frozen=True)
class IgnoredClass:
    """A class the linter does not check, with the reason why."""

    name: str
    line: int
    reason: IgnoredReason


@dataclass(frozen=True, kw_only=True)
class TestClassFacts:
    """Everything the rule table needs to know about one test class."""

    __test__ = False  # not a pytest test class

    name: str
    line: int  # the `class` keyword line (ast.ClassDef.lineno)
    end_line: int
    decorators: tuple[str, ...]
    bases: tuple[str, ...]
    docstring_end_line: int | None
    first_stmt_line: int  # first body statement's first line, decorators included
    test_methods: tuple[TestMethod, ...]
    other_methods: tuple[str, ...]
    instantiations: tuple[Instantiation, ...] = ()  # every scanned call, in the linter's order
    parametrized: tuple[int, ...] = ()  # lines of instantiate_parametrized_tests(Cls)
    label: ExistingLabel | None = None
    nested_in: None = None
    # Calls the linter cannot see (under try/except* or match).
    hidden_instantiations: tuple[Instantiation, ...] = ()
    # What every test of the class needs: class decorators, setUp-style methods, a module-level
    # guard around the class or around the module's run (`if HAS_GPU: run_tests()`).
    needs: tuple[DeviceNeed, ...] = ()
    # Calls of torch's device modules anywhere in the class body (not its decorators or bases).
    device_calls: tuple[TorchCall, ...] = ()

    @property
    def instantiated(self) -> bool:
        return bool(self.instantiations)

    @property
    def instantiation(self) -> Instantiation | None:
        """The call the linter checks: the last one."""
        return self.instantiations[-1] if self.instantiations else None

    @property
    def decorator_names(self) -> tuple[str, ...]:
        return tuple(d.rsplit(".", 1)[-1] for d in self.decorators)


@dataclass(frozen=True, kw_only=True)
class ModuleFacts:
    classes: tuple[TestClassFacts, ...]
    ignored: tuple[IgnoredClass, ...] = ()
    instantiations: tuple[Instantiation, ...] = ()
    duplicate_classes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    duplicate_instantiations: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def get(self, name: str) -> TestClassFacts | None:
        """The first test class called `name`, if any."""
        for cls in self.classes:
            if cls.name == name:
                return cls
        return None
