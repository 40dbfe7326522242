"""The facts `analysis.analyse` reads about a module's test classes: plain frozen dataclasses.

These are what the rule table (`rules/`, `label/classify.py`), the restructuring advice
(`diagnosis/`) and the editor see of a module, and what the CLI dumps as JSON
(`dataclasses.asdict`).  They hold values only: reading them from the AST is
`analysis.py` (the module) and `class_reading.py` (one class).
"""

from __future__ import annotations

from dataclasses import dataclass

from transforms.core.members import HW_ATTRIBUTE

__all__ = [
    "DEVICE_PARAMS",
    "UNKNOWN",
    "DeviceList",
    "ExistingLabel",
    "Flag",
    "IgnoredClass",
    "Instantiation",
    "ModuleFacts",
    "TestClassFacts",
    "TestMethod",
]

# Parameter names through which instantiate_device_type_tests passes the device.
DEVICE_PARAMS = ("device", "devices")

# Marker for an argument whose value cannot be read statically.
UNKNOWN = "unknown"

# only_for / except_for: None (absent or literal None), a tuple of strings, or UNKNOWN.
DeviceList = None | tuple[str, ...] | str
# allow_mps / allow_xpu: None (absent), a bool literal, or UNKNOWN (anything else,
# a literal None included: the linter skips the check then).
Flag = None | bool | str


@dataclass(frozen=True)
class TestMethod:
    """A method whose name starts with `test`, defined directly in a test class body."""

    __test__ = False  # not a pytest test class

    name: str
    line: int  # the `def` line
    params: tuple[str, ...]  # every parameter, `self` included; `*args`/`**kw` with their stars
    is_async: bool
    decorators: tuple[str, ...]  # dotted names; a call is rendered by its callee
    # Device names the body hard-codes ("cuda", "xpu", "mps"), from string
    # literals such as "cuda" / "cuda:0" and calls such as `.cuda()`.
    hardcoded_devices: tuple[str, ...] = ()
    # Decorators that skip the test without a GPU (`skipIf(not TEST_CUDA, ...)`), as written.
    gpu_guards: tuple[str, ...] = ()

    @property
    def takes_device(self) -> bool:
        """The linter's test: a positional-only, normal or keyword-only parameter named
        device/devices (`*devices` and `**device` are rendered with their stars)."""
        return any(p in DEVICE_PARAMS for p in self.params)

    @property
    def decorator_names(self) -> tuple[str, ...]:
        """The name the linter matches: the last part of a name, attribute or callee."""
        return tuple(d.rsplit(".", 1)[-1] for d in self.decorators)

    def signature(self) -> str:
        return f"{self.name}({', '.join(self.params)})"


@dataclass(frozen=True)
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
    form: str = "name"  # "name" or "attribute" (module.instantiate_device_type_tests)
    text: str = ""  # the call, as `ast.unparse` renders it
    positional: tuple[str, ...] = ()
    star: bool = False
    # What Python passes for the options given by position (the linter does not see these).
    positional_values: tuple[tuple[str, object], ...] = ()

    def actual(self, option: str) -> object:
        """The value Python uses for `option`: positional if given so, else the keyword's."""
        return dict(self.positional_values).get(option, getattr(self, option))


@dataclass(frozen=True)
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
    reason: str


@dataclass(frozen=True)
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
    # Class decorators that skip everything without a GPU (`skipIf(not TEST_CUDA, ...)`).
    gpu_guards: tuple[str, ...] = ()

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


@dataclass(frozen=True)
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
