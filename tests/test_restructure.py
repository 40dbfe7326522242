"""Diagnosis, advice, the restructuring transforms' checks, the test-id map and the CLI."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codemod.ab.comparison.compare import compare_arms
from codemod.ab.comparison.compare import map_nodeid, read_map_file
from codemod.ab.result.model import ArmResult, Outcome
from transforms.diagnosis import devices, diagnose, reading
from transforms.label import HwLabel
from transforms.restructure import REGISTRY, Restructure, moves_from_findings, parse_selection, widenings_from_findings
from transforms.restructure.model import Move, map_document
from transforms.restructure.verify import RestructureCheckError, check_step
from transforms.rules.advice import BY_HAND, WIDENING, Pattern

FIX = Path(__file__).resolve().parent / "fixtures" / "restructure"
HEAD = (
    "import torch\n"
    "from torch.testing._internal.common_device_type import (\n"
    "    instantiate_device_type_tests, onlyCPU, onlyCUDA)\n"
    "from torch.testing._internal.common_utils import TestCase\n"
)


def _diag(body: str, widen: bool = False) -> diagnose.ClassDiagnosis:
    text = HEAD + textwrap.dedent(body)
    (found,) = diagnose.diagnose(ast.parse(text), text, widen=widen)
    return found


def _label_finding(body: str):
    text = HEAD + textwrap.dedent(body)
    result = HwLabel().run(text, ast.parse(text))
    (finding,) = [f for f in result.findings if f.rule.startswith("hw/")]
    return finding


def test_a_diagnosis_of_some_classes_is_theirs_in_a_diagnosis_of_all():
    """`only` (the label transform diagnoses just the classes it leaves to a human) changes which
    classes are diagnosed, never a diagnosis: the module's constants are still read for all."""
    text = HEAD + textwrap.dedent(
        """
        DEVICES = ("cpu", "cuda")
        class TestA(TestCase):
            def test_a(self, device): pass
        class TestB(TestCase):
            def test_b(self): torch.cuda.synchronize()
        class TestC(TestCase):
            @onlyCUDA
            def test_c(self, device): pass
        instantiate_device_type_tests(TestA, globals(), only_for=DEVICES)
        instantiate_device_type_tests(TestC, globals())
        """
    )
    tree = ast.parse(text)
    every = diagnose.diagnose(tree, text)
    assert [d.name for d in every] == ["TestA", "TestB", "TestC"]
    for kept in ([every[0]], [every[1], every[2]], [every[2]], []):
        assert list(diagnose.diagnose(tree, text, only={d.line for d in kept})) == kept
    assert every[0].only_for_literal == ("cpu", "cuda")  # read from the constant


# --------------------------------------------------------------------------- the four wrong advices

CPU_CUDA = """
class TestA(TestCase):
    def test_a(self, device): pass
instantiate_device_type_tests(TestA, globals(), only_for=("cpu", "cuda"))
"""


def test_cpu_cuda_whitelist_is_dropped_not_turned_into_except_cpu():
    d = _diag(CPU_CUDA, widen=True)
    assert d.advice == ("drop-only-for",)
    assert d.devices == ("cpu", "cuda")
    auto = _diag(CPU_CUDA)  # what auto does: it widens nothing, says what would
    assert auto.advice == () and [w.step for w in auto.could_widen] == ["drop-only-for"]
    finding = _label_finding(CPU_CUDA)
    assert finding.data["patterns"] == ["drop-only-for"]  # what fits; the message says it widens
    assert "whitelist-to-blacklist" not in finding.message
    assert "could be widened: drop-only-for widens test_a: adds other-accelerators" in finding.message
    assert "--restructure drop-only-for" in finding.message  # the widening is said, never silent
    text = HEAD + textwrap.dedent(CPU_CUDA)
    assert Restructure(parse_selection("auto")).run(text, ast.parse(text)).text == text
    out = Restructure(parse_selection("drop-only-for")).run(text, ast.parse(text))
    assert "instantiate_device_type_tests(TestA, globals())\n" in out.text
    (moves,) = [f for f in out.findings if f.rule == "restructure/moves"]
    assert moves.data["moves"][0]["before"] == ["cpu", "cuda"]
    assert moves.data["moves"][0]["after"] == ["cpu", "cuda", "other-accelerators"]


ONLY_CPU = """
class TestA(TestCase):
    def test_a(self, device): pass
    @onlyCPU
    def test_b(self, device): pass
instantiate_device_type_tests(TestA, globals())
"""


def test_onlycpu_tests_get_a_cpu_class_not_onlyaccelerator():
    d = _diag(ONLY_CPU)
    assert d.advice == ("split-class",)
    assert "cuda-to-accelerator" not in d.advice
    text = HEAD + textwrap.dedent(ONLY_CPU)
    out = Restructure(parse_selection("auto")).run(text, ast.parse(text)).text
    assert "class TestACpuOnly(TestCase):\n    @onlyCPU\n    def test_b" in out
    assert 'instantiate_device_type_tests(TestACpuOnly, globals(), only_for="cpu")' in out
    assert "onlyAccelerator" not in out


CUDA_GRAPH = """
class TestA(TestCase):
    def test_a(self, device): pass
    @onlyCUDA
    def test_g(self, device):
        g = torch.cuda.CUDAGraph()
        torch.cuda.synchronize()
instantiate_device_type_tests(TestA, globals())
"""


def test_cuda_graph_user_goes_to_a_cuda_class():
    d = _diag(CUDA_GRAPH)
    test = next(t for t in d.tests if t.name == "test_g")
    assert test.cuda_only_apis == ("torch.cuda.CUDAGraph",)
    assert [u.equivalent for u in test.cuda_uses] == [None, "torch.accelerator.synchronize"]
    assert d.advice == ("split-class",)
    finding = _label_finding(CUDA_GRAPH)
    assert finding.data["patterns"] == ["split-class"] and "cuda-to-accelerator" not in finding.message
    text = HEAD + textwrap.dedent(CUDA_GRAPH)
    out = Restructure(parse_selection("auto")).run(text, ast.parse(text)).text
    assert "class TestACudaOnly(TestCase):" in out and "torch.cuda.CUDAGraph()" in out
    assert "torch.cuda.synchronize()" in out  # untouched: the test stays a CUDA test


CONSTANT = """
DEVICES = ("cuda",)
class TestA(TestCase):
    def test_a(self, device): pass
instantiate_device_type_tests(TestA, globals(), only_for=DEVICES)
"""


def test_only_for_constant_gets_inline_advice():
    assert _diag(CONSTANT).advice == ("inline-only-for",)
    finding = _label_finding(CONSTANT)
    assert finding.data["patterns"] == ["inline-only-for"]
    assert "inline the module-level literal" in finding.fix
    rebound = CONSTANT + "DEVICES = ('cpu',)\n"
    d = _diag(rebound)
    assert d.advice == () and "not bound once" in d.manual[0]


def test_cuda_uses_are_found_however_the_reference_is_spelled_and_only_where_they_are():
    # A body is walked for torch.cuda uses only when its lines spell `cuda`: a reference split over
    # lines or with odd spacing still does; a body without one gets none.
    d = _diag("""
    class TestA(TestCase):
        @onlyCUDA
        def test_split(self, device):
            (torch
                .cuda
                .synchronize())
            torch . cuda.CUDAGraph()

        @onlyCUDA
        def test_plain(self, device):
            x = torch.ones(3, device=device)
    instantiate_device_type_tests(TestA, globals())
    """)
    uses = {t.name: [(u.api, u.line) for u in t.cuda_uses] for t in d.tests}
    assert uses["test_split"] == [("torch.cuda.synchronize", 9), ("torch.cuda.CUDAGraph", 12)]  # HEAD: 3 lines
    assert uses["test_plain"] == []


ONLY_CUDA = """
class TestA(TestCase):
    @onlyCUDA
    def test_a(self, device):
        torch.cuda.synchronize()
instantiate_device_type_tests(TestA, globals())
"""


def test_convertible_onlycuda_gets_cuda_to_accelerator_only_when_named():
    d = _diag(ONLY_CUDA, widen=True)
    assert d.advice == ("cuda-to-accelerator",)
    assert d.widening == ("cuda-to-accelerator widens test_a: adds other-accelerators",)
    auto = _diag(ONLY_CUDA)
    assert auto.advice == () and auto.widening == ()
    (could,) = auto.could_widen
    assert (could.step, could.tests, could.adds) == ("cuda-to-accelerator", ("test_a",), ("other-accelerators",))
    assert auto.manual == ("every test keeps to cuda (@onlyCUDA): only_for='cuda' in its instantiation fits (by hand)",)


def test_auto_leaves_a_class_a_label_fits_and_names_the_widening():
    """The bundled example's TestCudaOnly: CUDA under gen2. auto keeps it as it is and reports
    cuda-to-accelerator as a finding the survey can read; named, the step runs and says it widens."""
    text = HEAD + textwrap.dedent(ONLY_CUDA)
    auto = Restructure(parse_selection("auto"), rules="gen2").run(text, ast.parse(text))
    assert auto.text == text
    assert [f.rule for f in auto.findings] == ["restructure/could-widen"]
    assert auto.findings[0].severity == "info" and "could be widened: cuda-to-accelerator" in auto.findings[0].message
    (found,) = widenings_from_findings(auto.findings)["TestA"]
    assert (found.step, found.tests, found.adds) == ("cuda-to-accelerator", ("test_a",), ("other-accelerators",))
    named = Restructure(parse_selection("cuda-to-accelerator"), rules="gen2").run(text, ast.parse(text))
    assert "@onlyAccelerator" in named.text and "torch.accelerator.synchronize()" in named.text
    (summary,) = [f for f in named.findings if f.rule == "restructure/cuda-to-accelerator"]
    assert summary.severity == "warning" and "WIDENS" in summary.message
    assert not widenings_from_findings(named.findings)  # it ran: nothing left to propose


def test_device_sets():
    f = devices.instantiated_devices
    assert f() == ("cpu", "cuda", "other-accelerators")
    assert f(only_for=("cpu",)) == ("cpu",)
    assert f(except_for=("cpu",), allow_xpu=True) == ("cuda", "xpu", "other-accelerators")
    assert f(only_for=("mps",)) == ()  # no allow_mps: never instantiated on mps
    assert f(only_for=("mps",), allow_mps=True) == ("mps",)
    assert f(only_for="unknown") is None


def test_every_equivalent_exists_in_torch_2_14(tmp_path):
    py = os.environ.get("DECOUPLE_TORCH_PYTHON")
    if not py:
        pytest.skip("DECOUPLE_TORCH_PYTHON is not set")
    names = sorted({v for v in reading.CUDA_EQUIVALENTS.values() if v})
    code = ("import torch, operator, functools\n"
            f"missing = [n for n in {names!r} if not hasattr(functools.reduce(getattr, n.split('.')[1:-1], torch), n.rsplit('.', 1)[1])]\n"
            "print(missing)")
    out = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- selection and checks


def test_parse_selection():
    auto = parse_selection("auto")
    assert auto.auto and not auto.widen
    assert auto.steps == tuple(p for p in REGISTRY if p not in WIDENING)
    assert set(REGISTRY) == set(Pattern) - BY_HAND  # every step but what is done by hand
    named = parse_selection("split-class,keyword-args")
    assert named.steps == ("keyword-args", "split-class") and not named.auto and not named.widen
    assert parse_selection("cuda-to-accelerator").widen
    for bad in ("", "auto,split-class", "nope"):
        with pytest.raises(ValueError):
            parse_selection(bad)


SPLIT_SRC = (FIX / "split_mixed.in.py").read_text()


def test_check_step_catches_a_changed_test_body():
    good = Restructure(parse_selection("split-class")).run(SPLIT_SRC, ast.parse(SPLIT_SRC)).text
    check_step(SPLIT_SRC, good, {"TestMixed"}, {"TestMixedBase", "TestMixedAccelerator"},
               {"TestMixed", "TestMixedAccelerator"})
    bad = good.replace("sum().item(), 8)", "sum().item(), 9)", 1)
    with pytest.raises(RestructureCheckError, match="test inventory changed"):
        check_step(SPLIT_SRC, bad, {"TestMixed"}, {"TestMixedBase", "TestMixedAccelerator"})
    dropped = good.replace("    def _helper(self, x):\n        return x + 1\n", "")
    with pytest.raises(RestructureCheckError, match="members"):
        check_step(SPLIT_SRC, dropped, {"TestMixed"}, {"TestMixedBase", "TestMixedAccelerator"})
    elsewhere = good.replace('if __name__ == "__main__":', 'if __name__ == "__foo__":')
    with pytest.raises(RestructureCheckError, match="outside"):
        check_step(SPLIT_SRC, elsewhere, {"TestMixed"}, {"TestMixedBase", "TestMixedAccelerator"})


def test_restructure_is_idempotent_and_stable():
    first = Restructure(parse_selection("auto")).run(SPLIT_SRC, ast.parse(SPLIT_SRC)).text
    again = Restructure(parse_selection("auto")).run(first, ast.parse(first))
    assert again.text == first and not [f for f in again.findings if f.rule == "restructure/moves"]


# --------------------------------------------------------------------------- the map


def _move(test, new_class, new_instantiated, before, after) -> Move:
    return Move(transform="split-class", test=test, old_class="TestMixed", new_class=new_class, old_instantiated=True,
                new_instantiated=new_instantiated, before=before, after=after)


def _moves() -> list:
    every = ("cpu", "cuda", "other-accelerators")
    return [
        _move("test_shape", "TestMixed", False, every, ("generic",)),
        _move("test_add", "TestMixedAccelerator", True, every, every),
        _move("test_add_scalar", "TestMixed", False, every, ("generic",)),
        _move("test_graph", "TestMixedCudaOnly", True, ("cuda",), ("cuda",)),
    ]


def test_a_test_that_stays_is_no_move_and_the_map_leaves_its_ids_alone():
    """Split-class keeps test_add in TestMixed (ACCELERATOR part, same devices): no move is
    listed for it; test_add_cpu_only moves, and its pattern does not take test_add's ids...
    nor the ids of test_add_cpu_only_extra, which stayed (kept_longer)."""
    text = HEAD + textwrap.dedent(
        """
        class TestMixed(TestCase):
            def test_add(self, device): pass
            @onlyCPU
            def test_add_cpu_only(self, device): pass
            def test_add_cpu_only_extra(self, device): pass
        instantiate_device_type_tests(TestMixed, globals())
        """
    )
    out = Restructure(parse_selection("auto")).run(text, ast.parse(text))
    (moves,) = [f.data["moves"] for f in out.findings if f.rule == "restructure/moves"]
    assert [(m["test"], m["new_class"], m["kept_longer"]) for m in moves] == [
        ("test_add_cpu_only", "TestMixedCpuOnly", ["test_add_cpu_only_extra"])
    ]
    (summary,) = [f for f in out.findings if f.rule == "restructure/split-class"]
    assert "TestMixed (2 tests), TestMixedCpuOnly (1 test)" in summary.message
    assert [m["test"] for m in summary.data["moves"]] == ["test_add_cpu_only"]
    mapping = {e["old"]: e["new"] for e in map_document({"t.py": moves_from_findings(out.findings)})["map"]}
    assert map_nodeid("t.py::TestMixedCPU::test_add_cpu_only_cpu", mapping) == "t.py::TestMixedCpuOnlyCPU::test_add_cpu_only_cpu"
    assert map_nodeid("t.py::TestMixedCUDA::test_add_cpu_only_cuda", mapping) == ""  # skipped by its guard in A
    for stayed in ("t.py::TestMixedCPU::test_add_cpu_only_extra_cpu", "t.py::TestMixedCUDA::test_add_cuda"):
        assert map_nodeid(stayed, mapping) is None, stayed


def test_map_handles_generated_names():
    doc = map_document({"test/test_x.py": _moves()})
    mapping = {e["old"]: e["new"] for e in doc["map"]}
    assert map_nodeid("test/test_x.py::TestMixedCPU::test_shape_cpu", mapping) == "test/test_x.py::TestMixed::test_shape"
    assert map_nodeid("test_x.py::TestMixedCUDA::test_add_cuda_float32", mapping) == \
        "test_x.py::TestMixedAcceleratorCUDA::test_add_cuda_float32"
    assert map_nodeid("test_x.py::TestMixedXPU::test_add_big_xpu", mapping) == \
        "test_x.py::TestMixedAcceleratorXPU::test_add_big_xpu"
    # test_add never captures test_add_scalar
    assert map_nodeid("test_x.py::TestMixedCPU::test_add_scalar_cpu", mapping) == "test_x.py::TestMixed::test_add_scalar"
    assert map_nodeid("test_x.py::TestMixedCUDA::test_graph_cuda", mapping) == \
        "test_x.py::TestMixedCudaOnlyCUDA::test_graph_cuda"
    assert map_nodeid("test_x.py::TestMixedCPU::test_graph_cpu", mapping) == ""  # retired
    assert map_nodeid("other.py::TestMixedCPU::test_shape_cpu", mapping) is None
    ids = doc["files"]["test/test_x.py"][0]
    assert ids["old_ids"] == ["test/test_x.py::TestMixedCPU::test_shape_cpu", "test/test_x.py::TestMixedCUDA::test_shape_cuda"]
    assert ids["new_ids"] == ["test/test_x.py::TestMixed::test_shape"]


def _arm(name, outcomes):
    arm = ArmResult(name=name, label=name, root="/tmp", source="dir")
    for nodeid, outcome in outcomes.items():
        arm.outcomes[nodeid] = Outcome(nodeid=nodeid, outcome=outcome)
    arm.ran = True
    return arm


def test_compare_with_map_has_nothing_missing():
    mapping = {e["old"]: e["new"] for e in map_document({"t.py": _moves()})["map"]}
    a = _arm("A", {"t.py::TestMixedCPU::test_shape_cpu": "passed", "t.py::TestMixedCPU::test_add_cpu": "passed",
                   "t.py::TestMixedCPU::test_graph_cpu": "skipped"})
    b = _arm("B", {"t.py::TestMixed::test_shape": "passed", "t.py::TestMixedAcceleratorCPU::test_add_cpu": "passed"})
    rows = {r.nodeid: r.category for r in compare_arms(a, b, mapping)}
    assert rows == {"t.py::TestMixed::test_shape": "same-pass", "t.py::TestMixedAcceleratorCPU::test_add_cpu": "same-pass",
                    "t.py::TestMixedCPU::test_graph_cpu": "same-skip"}
    a.outcomes["t.py::TestMixedCPU::test_graph_cpu"].outcome = "passed"  # it ran: retiring it is a loss
    rows = {r.nodeid: r.category for r in compare_arms(a, b, mapping)}
    assert rows["t.py::TestMixedCPU::test_graph_cpu"] == "coverage-lost"


def test_read_map_file_errors(tmp_path):
    bad = tmp_path / "m.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match="not a test map"):
        read_map_file(str(bad))
    bad.write_text(json.dumps({"schema_version": 1, "map": [{"old": "re:(", "new": ""}]}))
    with pytest.raises(ValueError, match="bad regex"):
        read_map_file(str(bad))


# --------------------------------------------------------------------------- CLI


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "codemod", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_cli_restructure_writes_map_and_rejects_bad_input(tmp_path):
    shutil.copy(FIX / "split_mixed.in.py", tmp_path / "test_mixed.py")
    bad = _cli("apply", "--restructure", "nope", "test_mixed.py", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown transform nope" in bad.stderr
    bad = _cli("apply", "--map-out", "m.json", "test_mixed.py", cwd=tmp_path)
    assert bad.returncode == 2 and "--map-out goes with --restructure" in bad.stderr
    ok = _cli("apply", "--restructure", "auto", "--map-out", "m.json", "test_mixed.py", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "test_mixed.py").read_text() == (FIX / "split_mixed.out.py").read_text()
    doc = json.loads((tmp_path / "m.json").read_text())
    tests = {m["test"]: m["new_class"] for m in doc["files"]["test_mixed.py"]}
    assert tests == {"test_shape": "TestMixed", "test_len": "TestMixed", "test_add": "TestMixedAccelerator",
                     "test_add_scalar": "TestMixedAccelerator"}
    assert read_map_file(str(tmp_path / "m.json"))


@pytest.mark.torch
def test_end_to_end_ab_with_the_produced_map_is_safe(tmp_path):
    py = os.environ.get("DECOUPLE_TORCH_PYTHON")
    if not py:
        pytest.skip("DECOUPLE_TORCH_PYTHON is not set")
    for arm in ("a", "b"):
        (tmp_path / arm).mkdir()
        shutil.copy(FIX / "mixed_all_guards.in.py", tmp_path / arm / "test_mixed.py")
    done = _cli("apply", "--restructure", "auto", "--map-out", "map.json", "b/test_mixed.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run = _cli("ab", "test_mixed.py", "--a-root", "a", "--b-root", "b", "--map-file", "map.json", "--python", py,
               "-q", "-j", "2", "--json", "ab.json", cwd=tmp_path)
    result = json.loads((tmp_path / "ab.json").read_text())
    assert run.returncode == 0, run.stdout + run.stderr
    assert result["verdict"] == "SAFE"
    categories = {t["nodeid"]: t["category"] for t in result["tests"]}
    assert "missing-in-b" not in categories.values() and "added-in-b" not in categories.values()
    # every A test is compared with its old self: moved ones through the map
    mapped = {t["mapped_from"] for t in result["tests"] if t.get("mapped_from")}
    assert {"test_mixed.py::TestMixedCPU::test_shape_cpu", "test_mixed.py::TestMixedCPU::test_add_cpu",
            "test_mixed.py::TestMixedCPU::test_cpu_thing_cpu"} <= mapped
    assert categories["test_mixed.py::TestMixed::test_shape"] == "same-pass"
    assert categories["test_mixed.py::TestMixedCpuOnlyCPU::test_cpu_thing_cpu"] == "same-pass"
    assert categories["test_mixed.py::TestMixedCPU::test_graph_cpu"] == "same-skip"


def test_bench_share_is_what_the_readme_says():
    out = subprocess.run([sys.executable, "scripts/bench_restructure.py"], capture_output=True, text=True,
                         timeout=300, cwd=Path(__file__).resolve().parent.parent)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "classes needing manual work before: 24" in out.stdout
    assert "resolved by --restructure auto:    14 (58%" in out.stdout
    assert "resolved with every step named:    19 (79%" in out.stdout
    assert "manual_native_guard.in.py TestExchange: test_roundtrip: guard onlyNativeDeviceTypes" in out.stdout
    readme = " ".join((Path(__file__).resolve().parent.parent / "docs" / "restructure.md").read_text().split())
    assert "24 classes need manual work; `auto` resolves **14 (58%)**" in readme
    assert "with every step named, **19 (79%)**" in readme
