"""The generations of the linter's rules: their registries and examples, what each predicts, how
a checkout's linter is recognised, and the honest value each writes."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from transforms.core.analysis import analyse
from transforms.core.members import MEMBERS
from transforms.label import HwLabel
from transforms.label.classify import infer
from transforms.rules.generations import GENERATIONS, NEWEST, generation, lint_module
from transforms.rules.identify import identify, read_features

GEN1, GEN2 = GENERATIONS["gen1"], GENERATIONS["gen2"]
LINTERS = Path(__file__).parent / "fixtures" / "linters"


def facts(src: str):
    src = textwrap.dedent(src)
    return analyse(ast.parse(src), src)


def one(src: str):
    (cls,) = facts(src).classes
    return cls


# --------------------------------------------------------------------------- the registries


def _examples():
    for gen in GENERATIONS.values():
        for r in gen.rules.rules:
            for kind in ("valid", "invalid"):
                for i, ex in enumerate(getattr(r, kind)):
                    yield pytest.param(gen, r, kind, ex, id=f"{gen.name}-{r.name}-{r.check.__name__}-{kind}{i}")


@pytest.mark.parametrize("gen, rule, kind, example", list(_examples()))
def test_rule_example(gen, rule, kind, example):
    """Fixit style: every rule's examples, through that rule alone and through the generation."""
    assert example.value in rule.values
    cls = facts(example.source).get("TestFoo")
    assert cls is not None, "TestFoo is not a test class in the example"
    own = rule.check(cls, example.value)
    assert all(v.rule == rule.name and v.value == example.value for v in own)
    if kind == "valid":
        assert own == []
    else:
        assert own, "the invalid example does not break the rule"
        assert rule.name in {v.rule for v in gen.check(cls, example.value)}


def test_every_rule_has_examples_and_the_tables_are_the_linters():
    for gen in GENERATIONS.values():
        for r in gen.rules.rules:
            assert r.valid and r.invalid, (gen.name, r.name, r.values)
    table = {g: {v: [r.name for r in rules] for v, rules in gen.rules.by_value().items()} for g, gen in GENERATIONS.items()}
    assert table["gen1"]["GENERIC"] == ["instantiation", "device_param"]
    assert table["gen1"]["XPU"] == ["instantiation", "device_param", "except_for", "allow_xpu", "only_for"]
    assert table["gen2"]["GENERIC"] == ["instantiation", "device_param", "accelerator_availability"]
    assert table["gen2"]["ACCELERATOR"] == table["gen1"]["ACCELERATOR"]
    assert all(table["gen2"][v] == [] for v in ("CPU", "CUDA", "MPS", "XPU"))
    assert NEWEST == "gen2" and list(GENERATIONS) == ["gen1", "gen2"]
    with pytest.raises(ValueError, match="unknown rules generation"):
        generation("gen9")


def test_gen2_only_declares_the_device_values():
    plain = one("class TestA(TestCase):\n    def test_a(self): pass\n")
    assert [v for v in MEMBERS if not GEN2.check(plain, v)] == ["GENERIC", "CPU", "CUDA", "MPS", "XPU"]
    assert [v for v in MEMBERS if not GEN1.check(plain, v)] == ["GENERIC"]


def test_which_files_each_generation_judges():
    assert GEN1.files.judges("tools/test_x.py") == (True, "")
    assert GEN1.files.judges("test_x.py", inside=False)[0]  # outside the repository too
    assert not GEN1.files.judges("test/helper.py")[0]
    assert GEN2.files.judges("test/a/test_x.py") == (True, "")
    assert GEN2.files.judges("test/a/b_test.py") == (True, "")
    assert GEN2.files.judges("test/test_dir/helper.py")[0]  # fnmatch's * crosses folders
    assert GEN2.files.judges("test/test_x.py", inside=False) == (False, "outside the linter's repository")
    assert "excludes" in GEN2.files.judges("test/cpython/test_x.py")[1]
    assert "patterns" in GEN2.files.judges("tools/test_x.py")[1]


def test_lint_module_per_generation():
    src = """
    class TestA(TestCase):
        hw_classification = HardwareClassification.GENERIC
        def test_a(self):
            torch.cuda.synchronize()
    class TestA(TestCase):
        hw_classification = HardwareClassification.GENERIC
        def test_a(self):
            torch.cuda.synchronize()
    class TestB(TestCase):
        hw_classification = HardwareClassification.CUDA
        def test_b(self): pass
    """
    f = facts(src)
    gen1 = [(m.name, m.line) for m in lint_module(f, GEN1)]
    gen2 = [(m.name, m.line) for m in lint_module(f, GEN2)]
    assert gen1 == [("[duplicate_class]", 6), ("[instantiation]", 10), ("[device_param]", 12)]
    assert gen2 == [("[accelerator_availability]", 9)]


# --------------------------------------------------------------------------- identification


@pytest.mark.parametrize("shape, name", [("gen1_shape", "gen1"), ("gen2_shape", "gen2")])
def test_a_linter_is_identified_by_its_rules(shape, name):
    found = identify((LINTERS / f"{shape}.py").read_text())
    assert found.generation == name and found.exact, found


def test_small_edits_still_match_and_an_unknown_linter_gets_the_nearest():
    gen2 = (LINTERS / "gen2_shape.py").read_text()
    edited = "# reformatted, with a comment\n" + gen2.replace("class OnlyForRule(Rule):", "class OnlyForRule(Rule):  # x")
    assert identify(edited).exact
    newer = gen2.replace(
        "@_register(HardwareClassification.ACCELERATOR)\nclass OnlyForRule",
        "@_register(HardwareClassification.ACCELERATOR, HardwareClassification.CUDA)\nclass OnlyForRule",
    )
    found = identify(newer)
    assert found.generation == "gen2" and found.differences == ("CUDA: the linter also checks only_for",)
    older = identify((LINTERS / "older_shape.py").read_text())
    assert older.generation == "gen1" and not older.exact
    assert "reports duplicates: no (the gen1 rules: yes)" in older.differences
    assert read_features("this is not python (").problem
    assert not identify("").exact


# --------------------------------------------------------------------------- honest labels


GUARDED_AND_PLAIN = """
import unittest
import torch

class TestGuarded(TestCase):
    @unittest.skipIf(not torch.cuda.is_available(), "needs CUDA")
    def test_a(self):
        x = torch.ones(2, device="cuda")

class TestPlain(TestCase):
    def test_b(self):
        self.assertEqual(1, 1)
"""


def test_a_gpu_guarded_class_beside_a_plain_one():
    """The issue's first measurement: under gen2 the guarded class is CUDA (GENERIC would break
    accelerator_availability), the plain one GENERIC; under gen1 both are GENERIC, the guarded one
    with the warning (CUDA would need instantiate_device_type_tests)."""
    src = textwrap.dedent(GUARDED_AND_PLAIN)
    for name, expected in (("gen2", {"TestGuarded": "CUDA", "TestPlain": "GENERIC"}),
                           ("gen1", {"TestGuarded": "GENERIC", "TestPlain": "GENERIC"})):
        result = HwLabel(rules=name).run(src, ast.parse(src))
        labels = {f.cls: f.data["value"] for f in result.findings if f.rule == "hw/label"}
        assert labels == expected, (name, result.findings)
        warned = {f.cls for f in result.findings if f.rule == "hw/generic-needs-gpu"}
        assert warned == ({"TestGuarded"} if name == "gen1" else set())
        assert result.manual == 0
        after = analyse(ast.parse(result.text), result.text)
        assert lint_module(after, generation(name)) == []  # the generation accepts every label


def test_gen2_mixed_class_is_manual_with_the_rule_named():
    cls = one(
        """
        class TestMixed(TestCase):
            def test_free(self):
                pass
            def test_gpu(self):
                torch.cuda.synchronize()
        """
    )
    d = infer(cls, GEN2)
    assert d.status == "needs-manual" and d.value is None
    assert "breaks accelerator_availability" in d.message
    assert "TestMixed.test_gpu calls torch.cuda.synchronize()" in d.message
    assert infer(cls, GEN1).value == "GENERIC"  # gen1 does not look at calls: GENERIC, with the warning
    assert infer(cls, GEN1).warnings


def test_gen2_never_gives_a_whitelist_one_devices_value():
    cls = one(
        """
        class TestFoo(TestCase):
            def test_a(self, device): pass
        instantiate_device_type_tests(TestFoo, globals(), only_for=("cuda", "xpu"))
        """
    )
    d = infer(cls, GEN2)
    assert d.status == "needs-manual" and "drop-only-for" in d.patterns
    assert "names several devices" in d.message


@pytest.mark.parametrize(
    "src, value",
    [
        # an OpInfo-style class instantiated for the CPU only, whose tests take no `device`
        ("class TestFoo(TestCase):\n    def test_a(self, dtype, op): pass\n"
         "instantiate_device_type_tests(TestFoo, globals(), only_for='cpu')\n", "CPU"),
        # every test guarded to one device: that device (gen1: manual, only_for is missing)
        ("class TestFoo(TestCase):\n    @onlyCUDA\n    def test_a(self, device): pass\n"
         "instantiate_device_type_tests(TestFoo, globals())\n", "CUDA"),
        # a ROCm build is PyTorch's CUDA device
        ("@unittest.skipIf(not torch.version.hip, 'ROCm')\nclass TestFoo(TestCase):\n    def test_a(self): pass\n",
         "CUDA"),
        ("class TestFoo(TestCase):\n    @requires_xpu\n    def test_a(self):\n        torch.xpu.synchronize()\n", "XPU"),
        # some accelerator, none in particular: GENERIC (with the warning)
        ("class TestFoo(TestCase):\n    def test_a(self):\n        x = torch.ones(2, device=GPU_TYPE)\n", "GENERIC"),
    ],
)
def test_gen2_device_values(src, value):
    assert infer(one(src), GEN2).value == value


def test_gen1_keeps_its_one_value():
    src = "@unittest.skipIf(not torch.version.hip, 'ROCm')\nclass TestFoo(TestCase):\n    def test_a(self): pass\n"
    d = infer(one(src), GEN1)
    assert d.value == "GENERIC" and d.warnings  # CUDA would need instantiation under gen1


def test_the_rules_page_states_every_generations_rules():
    """docs/rules.md's table names every rule each generation registers, for every value."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "rules.md").read_text()
    table = page[page.index("## The two generations"):page.index("`accelerator_availability` reads")]
    for gen in GENERATIONS.values():
        assert gen.name in table
        for rule in gen.rules.rules:
            assert f"`{rule.name}`" in table, (gen.name, rule.name)
    for value in MEMBERS:
        assert value in table


def test_a_rule_set_checks_a_value_by_its_rules_in_order_also_after_a_rule_is_added():
    from transforms.core.members import Member
    from transforms.rules.registry import RuleCheck, RuleSet, Violation

    def breaks(name):
        return lambda cls, value: [Violation(value=value, rule=name, message=name, line=1)]

    rules = RuleSet()
    rules.add(RuleCheck(name="first", check=breaks("first"), valid=(), invalid=()), Member.CPU, Member.CUDA)
    cls = analyse(ast.parse("class TestA(TestCase):\n    def test_a(self): pass\n")).classes[0]
    assert [v.rule for v in rules.check(cls, Member.CPU)] == ["first"]
    assert rules.check(cls, Member.GENERIC) == []
    rules.add(RuleCheck(name="second", check=breaks("second"), valid=(), invalid=()), Member.CPU)
    assert [v.rule for v in rules.check(cls, "cpu")] == ["first", "second"]  # a name, as --set gives it
    assert [v.rule for v in rules.check(cls, Member.CUDA)] == ["first"]
