"""The cause table: why a test fails in both arms (or only in B), and how to confirm it.

Data, one entry per cause. Each `Cause` has
  - `matches(ctx)`: a predicate on the normalised failure (exception type, message,
    signature) and the environment facts, where `ctx` is a small `Context`;
  - `experiment`: how the cause is confirmed: a diagnostic arm's variables (rerun the
    failing tests with them: the cause is confirmed when they all pass), or a probe fact
    (read from the environment the run already probed), or an import check of a module
    in the target interpreter;
  - the explanation and the remedy, in English and Chinese, as templates over the
    evidence (`{global}`, `{engine}`, `{module}`, ...);
  - `examples`: failures it must and must not match (run by the tests, Fixit-style).

`analyse(result)` matches every group of identical failures against the table and
judges the evidence already in the result (diagnostic arms, probe facts, import
checks); it is pure. `codemod.ab.execution.diagnose` runs the missing experiments
(`decouple ab --diagnose`).  The views read the table's texts (`BY_ID`) and
`findings_of`: this module is part of the model level, with no runner in it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from codemod.ab.result.model import (
    FAILING,
    ABResult,
    BaseArm,
    Category,
    CauseFinding,
    CauseId,
    CauseStatus,
    Environment,
    ExperimentKind,
    Outcome,
    OutcomeValue,
    Scope,
    TestComparison,
    file_of,
)


@dataclass(frozen=True)
class Context:
    """What a matcher sees: one representative failure of a group and the environment."""

    outcome: Outcome
    scope: Scope
    env: Environment

    @property
    def text(self) -> str:
        o = self.outcome
        return " ".join(filter(None, [o.exc_type, " ".join(o.exc_chain), o.signature, o.message]))


@dataclass(frozen=True, kw_only=True)
class Experiment:
    kind: ExperimentKind
    variables: dict[str, str] = field(default_factory=dict)  # kind "diag": the diagnostic arm's variables
    name: str = ""  # kind "diag": the diagnostic arm's name


@dataclass(frozen=True, kw_only=True)
class Cause:
    id: CauseId
    matches: Callable[[Context], bool]
    experiment: Experiment
    explanation: dict[str, str]  # lang -> template over the evidence
    remedy: dict[str, str]  # lang -> template over the evidence
    evidence: Callable[[Context], dict[str, str]] = lambda ctx: {}
    # kind "probe": (status, extra evidence) from the environment facts
    judge: Callable[[Context], tuple[CauseStatus, dict[str, str]]] | None = None
    # (text of a failure as "ExcType: message", scope, expected match)
    examples: tuple[tuple[str, Scope, bool], ...] = ()


# ---------------------------------------------------------------------------
# matchers and evidence
# ---------------------------------------------------------------------------

_GLOBAL = re.compile(r"GLOBAL ([A-Za-z_][\w.]*)")
_MODULE = re.compile(r"No module named '([\w.]+)'")
_HWC = re.compile(r"HardwareClassification")
# Optional test dependencies of PyTorch's test suite (requirements-ci / common_utils imports).
OPTIONAL_TEST_MODULES = frozenset(
    {
        "expecttest",
        "hypothesis",
        "scipy",
        "numpy",
        "parameterized",
        "psutil",
        "pytest_subtests",
        "xdoctest",
        "tabulate",
        "pandas",
        "librosa",
        "onnx",
        "onnxruntime",
        "onnxscript",
        "networkx",
        "sympy",
        "mpmath",
        "jinja2",
        "filelock",
        "fsspec",
        "optree",
        "z3",
        "pytest_rerunfailures",
        "pytest_flakefinder",
        "pytest_xdist",
        "xdist",
        "unittest_xml_reporting",
        "xmlrunner",
        "dill",
        "einops",
        "transformers",
        "torchvision",
        "torchaudio",
        "tensorboard",
        "PIL",
        "cv2",
        "matplotlib",
        "lark",
        "pynvml",
        "redis",
        "coremltools",
        "astunparse",
        "opt_einsum",
        "ninja",
        "pytest_cpp",
    }
)


def _is_weights_only(ctx: Context) -> bool:
    text = ctx.text
    return "UnpicklingError" in text and bool(
        re.search(r"Weights only load failed|WeightsUnpickler|Unsupported (global|class)", text)
    )


def _weights_only_evidence(ctx: Context) -> dict[str, str]:
    m = _GLOBAL.search(ctx.text)
    return {"global": m.group(1) if m else "?", "torch": ctx.env.torch_version or "?"}


def _core(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    m = re.match(r"^[\w.]+(Error|Exception|Warning)?:\s*(.*)$", first)
    return (m.group(2) if m else first).strip().lower()


def broken_engines(env: Environment) -> dict[str, str]:
    """Engines whose prepack smoke test failed: engine -> error."""
    return {e: s for e, s in env.prepack.items() if s and s.strip().lower() != "ok"}


def _engine_of(ctx: Context) -> str | None:
    haystack = ctx.text.lower()
    for engine, error in broken_engines(ctx.env).items():
        core = _core(error)
        if core and core in haystack:
            return engine
    return None


_QUANT_TEXT = re.compile(
    r"unknown architecure|unknown architecture|quantized engine|qengine|prepack|"
    r"Didn't find engine for operation quantized|NoQEngine|fbgemm|qnnpack|onednn",
    re.I,
)


def _is_quantized_engine(ctx: Context) -> bool:
    return _engine_of(ctx) is not None or bool(_QUANT_TEXT.search(ctx.text))


def _prepack_judge(ctx: Context) -> tuple[CauseStatus, dict[str, str]]:
    engine = _engine_of(ctx)
    if engine:
        return CauseStatus.CONFIRMED, {"engine": engine, "error": ctx.env.prepack[engine]}
    broken = broken_engines(ctx.env)
    if broken:
        engine, error = next(iter(broken.items()))
        return CauseStatus.NOT_CONFIRMED, {"engine": engine, "error": error}
    if ctx.env.prepack:
        return CauseStatus.NOT_CONFIRMED, {"engine": ", ".join(ctx.env.prepack), "error": "ok"}
    return CauseStatus.SUSPECTED, {"engine": "?", "error": "?"}


def _quant_evidence(ctx: Context) -> dict[str, str]:
    env = ctx.env
    cpu = ", ".join(x for x in (env.cpu_model, env.machine, " ".join(env.cpu_flags)) if x) or "?"
    return {"cpu": cpu, "engine": _engine_of(ctx) or "?"}


def _is_missing_hwc(ctx: Context) -> bool:
    return (
        ctx.scope != Scope.BOTH
        and bool(_HWC.search(ctx.text))
        and bool(re.search(r"ImportError|NameError|AttributeError|cannot import name", ctx.text))
    )


def _hwc_judge(ctx: Context) -> tuple[CauseStatus, dict[str, str]]:
    has = ctx.env.has_hw_classification
    if has is False:
        return CauseStatus.CONFIRMED, {}
    if has is True:
        return CauseStatus.NOT_CONFIRMED, {}
    return CauseStatus.SUSPECTED, {}


_BACKEND_TEXT = re.compile(
    r"torch_npu|torch_mlu|torch_musa|torch_gcu|habana|intel_extension_for_pytorch|"
    r"device backend|backend extension|TORCH_DEVICE_BACKEND_AUTOLOAD|"
    r"entry_points|_import_device_backends|autoload",
    re.I,
)


def _is_backend_autoload(ctx: Context) -> bool:
    return bool(_BACKEND_TEXT.search(ctx.text))


def _module_of(ctx: Context) -> str | None:
    m = _MODULE.search(ctx.text)
    return m.group(1) if m else None


def _is_missing_optional(ctx: Context) -> bool:
    mod = _module_of(ctx)
    return (
        mod is not None
        and mod.split(".")[0] in OPTIONAL_TEST_MODULES
        and bool(re.search(r"ModuleNotFoundError|ImportError", ctx.text))
    )


# ---------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------

CAUSES: tuple[Cause, ...] = (
    Cause(
        id=CauseId.WEIGHTS_ONLY_DEFAULT,
        matches=_is_weights_only,
        experiment=Experiment(
            kind=ExperimentKind.DIAG, variables={"TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"}, name="noweightsonly"
        ),
        evidence=_weights_only_evidence,
        explanation={
            "en": "the test's own `torch.load` reads a whole pickled object (`GLOBAL {global}`), which torch "
            ">= 2.6 refuses by default (`weights_only=True`; this is torch {torch}).",
            "zh": "测试自身的 `torch.load` 加载的是完整的 pickle 对象（`GLOBAL {global}`），而 torch 2.6 起默认 "
            "`weights_only=True` 会拒绝此类对象（当前为 torch {torch}）。",
        },
        remedy={
            "en": "make the call explicit in the test: `decouple apply --torch-load auto --globals globals.json "
            "{file}` after `decouple discover-globals {file} --out globals.json` (allowlists `{global}` with "
            "`torch.serialization.safe_globals` when it is safe), or `decouple apply --torch-load "
            "weights-only-false {file}` (the test loads a checkpoint it wrote itself).",
            "zh": "在测试中显式指定：先运行 `decouple discover-globals {file} --out globals.json`，再运行 "
            "`decouple apply --torch-load auto --globals globals.json {file}`（若 `{global}` 安全，则用 "
            "`torch.serialization.safe_globals` 放行）；或运行 `decouple apply --torch-load "
            "weights-only-false {file}`（测试加载的是它自己保存的文件）。",
        },
        examples=(
            (
                "_pickle.UnpicklingError: Weights only load failed. WeightsUnpickler error: Unsupported global: "
                "GLOBAL a.Net was not an allowed global by default.",
                Scope.BOTH,
                True,
            ),
            ("_pickle.UnpicklingError: invalid load key, 'x'.", Scope.BOTH, False),
            ("RuntimeError: weights mismatch", Scope.BOTH, False),
        ),
    ),
    Cause(
        id=CauseId.QUANTIZED_ENGINE,
        matches=_is_quantized_engine,
        experiment=Experiment(kind=ExperimentKind.PROBE),
        evidence=_quant_evidence,
        judge=_prepack_judge,
        explanation={
            "en": "the quantized engine `{engine}` cannot prepack weights on this CPU ({cpu}): the "
            "environment's prepack smoke test fails with the same error as the tests, independently of "
            "the change.",
            "zh": "量化引擎 `{engine}` 无法在此 CPU（{cpu}）上完成权重预打包：环境探测中的预打包冒烟测试以与"
            "这些测试相同的错误失败，与改动无关。",
        },
        remedy={
            "en": "run these tests on a CPU the engine supports, or select a working engine "
            "(`torch.backends.quantized.engine`) / skip the engine in the test (PyTorch's "
            "`skipIfNoFBGEMM`, `supported_qengines`).",
            "zh": "在该引擎支持的 CPU 上运行这些测试，或选择可用的量化引擎（`torch.backends.quantized.engine`），"
            "或在测试中跳过该引擎（PyTorch 的 `skipIfNoFBGEMM`、`supported_qengines`）。",
        },
        examples=(
            ("RuntimeError: unknown architecure", Scope.BOTH, True),
            ("RuntimeError: Didn't find engine for operation quantized::linear_prepack NoQEngine", Scope.BOTH, True),
            ("AssertionError: Tensor-likes are not close!", Scope.BOTH, False),
        ),
    ),
    Cause(
        id=CauseId.HW_CLASSIFICATION_MISSING,
        matches=_is_missing_hwc,
        experiment=Experiment(kind=ExperimentKind.PROBE),
        judge=_hwc_judge,
        evidence=lambda ctx: {"torch": ctx.env.torch_version or "?"},
        explanation={
            "en": "the modified file imports `HardwareClassification`, which the target torch ({torch}) does "
            "not have: a real REGRESSION on this interpreter, caused by the torch version, not by the "
            "test logic.",
            "zh": "修改后的文件导入了 `HardwareClassification`，而目标 torch（{torch}）中没有它：在此解释器上"
            "这是真实的回归，原因是 torch 版本，而非测试逻辑。",
        },
        remedy={
            "en": "run the A/B run with a torch that has `HardwareClassification` (2.14 or a current nightly): "
            "`decouple ab ... --python /path/to/that/python`.",
            "zh": "使用包含 `HardwareClassification` 的 torch（2.14 或最新 nightly）重新运行 A/B："
            "`decouple ab ... --python /path/to/that/python`。",
        },
        examples=(
            (
                "ImportError: cannot import name 'HardwareClassification' from 'torch.testing._internal.common_utils'",
                Scope.B_ONLY,
                True,
            ),
            ("NameError: name 'HardwareClassification' is not defined", Scope.B_ONLY, True),
            ("ImportError: cannot import name 'HardwareClassification'", Scope.BOTH, False),
        ),
    ),
    Cause(
        id=CauseId.DEVICE_BACKEND_AUTOLOAD,
        matches=_is_backend_autoload,
        experiment=Experiment(
            kind=ExperimentKind.DIAG, variables={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, name="noautoload"
        ),
        evidence=lambda ctx: {"backends": ", ".join(f"{k} {v}" for k, v in ctx.env.backends.items()) or "?"},
        explanation={
            "en": "an out-of-tree device backend ({backends}) that `import torch` loads automatically fails "
            "to load, in both arms.",
            "zh": "`import torch` 时自动加载的外部设备后端（{backends}）加载失败，两组均如此。",
        },
        remedy={
            "en": "install a backend build that matches this torch, or run with "
            "`TORCH_DEVICE_BACKEND_AUTOLOAD=0` when the tests do not need the device.",
            "zh": "安装与当前 torch 匹配的后端版本；若测试不需要该设备，可设置 `TORCH_DEVICE_BACKEND_AUTOLOAD=0` 运行。",
        },
        examples=(
            (
                "RuntimeError: Failed to load the backend extension: torch_npu. You can disable extension "
                "auto-loading with TORCH_DEVICE_BACKEND_AUTOLOAD=0.",
                Scope.BOTH,
                True,
            ),
            ("RuntimeError: CUDA error: out of memory", Scope.BOTH, False),
        ),
    ),
    Cause(
        id=CauseId.MISSING_TEST_DEPENDENCY,
        matches=_is_missing_optional,
        experiment=Experiment(kind=ExperimentKind.IMPORT),
        evidence=lambda ctx: {"module": _module_of(ctx) or "?"},
        explanation={
            "en": "the optional test dependency `{module}` is not installed in the target interpreter.",
            "zh": "目标解释器中未安装可选的测试依赖 `{module}`。",
        },
        remedy={
            "en": "install it into the target interpreter: `python -m pip install {package}`.",
            "zh": "在目标解释器中安装：`python -m pip install {package}`。",
        },
        examples=(
            ("ModuleNotFoundError: No module named 'expecttest'", Scope.BOTH, True),
            ("ModuleNotFoundError: No module named 'hypothesis.strategies'", Scope.BOTH, True),
            ("ModuleNotFoundError: No module named 'my_private_helpers'", Scope.BOTH, False),
        ),
    ),
)

BY_ID = {c.id: c for c in CAUSES}
# Distribution names where they differ from the module imported.
PACKAGE_OF = {
    "PIL": "pillow",
    "cv2": "opencv-python",
    "z3": "z3-solver",
    "xmlrunner": "unittest-xml-reporting",
    "pytest_subtests": "pytest-subtests",
    "xdist": "pytest-xdist",
    "yaml": "pyyaml",
}


# ---------------------------------------------------------------------------
# analysis (pure)
# ---------------------------------------------------------------------------


def outcome_from_text(text: str) -> Outcome:
    """An Outcome for "ExcType: message" (the table's examples)."""
    exc, _, message = text.partition(": ")
    return Outcome(
        nodeid="example", outcome=OutcomeValue.FAILED, exc_type=exc, message=message, signature=f"call failed {text}"
    )


def match(ctx: Context) -> Cause | None:
    """The first cause whose matcher accepts `ctx` (table order = priority)."""
    return next((c for c in CAUSES if c.matches(ctx)), None)


_SCOPE_ORDER = {scope: i for i, scope in enumerate(Scope)}


def failure_groups(result: ABResult) -> list[tuple[Scope, list[TestComparison]]]:
    """(scope, tests) for every group of identical failures worth a cause: failing identically
    in both arms ("both"), in both but differently ("b-changed"), or only in B ("b-only").
    Flaky tests are left out: their failure does not reproduce."""
    groups: dict[tuple[Scope, Category, str | None, str | None], list[TestComparison]] = {}
    for c in result.tests:
        if c.category == Category.FLAKY or c.b is None or c.b.outcome not in FAILING:
            continue
        if c.a is not None and c.a.outcome in FAILING:
            identical = c.category in (Category.PRE_EXISTING, Category.SIMILAR_FAILURE)
            scope = Scope.BOTH if identical else Scope.B_CHANGED
        else:
            scope = Scope.B_ONLY
        key = (scope, c.category, c.a.signature if c.a else None, c.b.signature)
        groups.setdefault(key, []).append(c)
    return sorted(
        ((k[0], v) for k, v in groups.items()), key=lambda sv: (_SCOPE_ORDER[sv[0]], -len(sv[1]), sv[1][0].nodeid)
    )


def _diag_result(result: ABResult, exp: Experiment, base: BaseArm, nodeids: list[str]) -> tuple[int, int, str] | None:
    """(passed, total, diagnostic name) for the tests of a group in a diagnostic arm with
    exactly `exp.variables` on `base`, if the result has one that ran them."""
    for d in result.diagnostics:
        if d.based_on != base or any(d.variables.get(k) != v for k, v in exp.variables.items()):
            continue
        arm = result.arm(d.name)
        if arm is not None:
            ran = [n for n in nodeids if n in arm.outcomes]
            passed = sum(1 for n in ran if arm.outcomes[n].outcome == OutcomeValue.PASSED)
        else:
            ran = [n for n in nodeids if n in d.changed]
            passed = sum(1 for n in ran if d.changed[n][-1] == OutcomeValue.PASSED)
        if ran:
            return passed, len(ran), d.name
    return None


def judge(
    result: ABResult, scope: Scope, members: list[TestComparison], imports: dict[str, bool] | None = None
) -> CauseFinding:
    """The finding for one group: the matching cause and what the evidence in `result` says."""
    ref = members[0].b if members[0].b is not None else members[0].a
    assert ref is not None  # a failure group's tests fail in B
    ctx = Context(ref, scope, result.environment)
    nodeids = [c.nodeid for c in members]
    finding = CauseFinding(
        nodeids=nodeids,
        scope=scope,
        category=members[0].category,
        signature=ref.signature or "",
        exc_type=ref.exc_type or "",
    )
    cause = match(ctx)
    if cause is None:
        finding.status = CauseStatus.UNKNOWN
        return finding
    finding.cause = cause.id
    finding.experiment = cause.experiment.kind
    finding.evidence = {k: str(v) for k, v in cause.evidence(ctx).items()}
    finding.evidence["file"] = " ".join(sorted({file_of(n) for n in nodeids}))
    if cause.experiment.kind == ExperimentKind.DIAG:
        base: BaseArm = "A" if scope == Scope.BOTH else "B"
        finding.variables = dict(cause.experiment.variables)
        finding.based_on = base
        seen = _diag_result(result, cause.experiment, base, nodeids)
        if seen is None:
            finding.status = CauseStatus.SUSPECTED
        else:
            passed, total, name = seen
            finding.evidence.update(passed=str(passed), total=str(total), diag=name)
            finding.status = CauseStatus.CONFIRMED if passed == total else CauseStatus.NOT_CONFIRMED
    elif cause.experiment.kind == ExperimentKind.PROBE:
        status, extra = cause.judge(ctx) if cause.judge else (CauseStatus.SUSPECTED, {})
        finding.status = status
        finding.evidence.update({k: str(v) for k, v in extra.items()})
    else:  # import check of the module in the target interpreter
        top = finding.evidence.get("module", "?").split(".")[0]
        finding.evidence["package"] = PACKAGE_OF.get(top, top)
        found = (imports or {}).get(top)
        if found is None:
            finding.status = CauseStatus.SUSPECTED
        else:
            finding.status = CauseStatus.NOT_CONFIRMED if found else CauseStatus.CONFIRMED
    return finding


def analyse(result: ABResult, imports: dict[str, bool] | None = None) -> list[CauseFinding]:
    """One finding per group of identical failures (in both arms, or in B only)."""
    return [judge(result, scope, members, imports) for scope, members in failure_groups(result)]


def findings_of(result: ABResult) -> list[CauseFinding]:
    """The findings a report shows: the ones the run recorded, else computed now
    (a result written before causes existed)."""
    return list(result.causes) if result.causes else analyse(result)
