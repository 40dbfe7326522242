"""Tests for the facts (transforms/core/analysis.py, class_reading.py) and transforms/label/classify.py (rule table)."""

from __future__ import annotations

import ast
import json
import os
import textwrap
from dataclasses import asdict, replace

import pytest

from transforms.core.analysis import analyse, labels_of_test_classes, may_have_test_class
from transforms.core.facts import UNKNOWN, IgnoredReason, Instantiation, ModuleFacts, TestClassFacts
from transforms.core.members import MEMBERS
from transforms.core.members import MEMBERS as VALUES
from transforms.core.members import normalise_member as normalise_value
from transforms.label.classify import decide, decision_findings, infer, module_findings
from transforms.rules.advice import ADVICE
from transforms.rules.deviations import DEVIATIONS
from transforms.rules.gen1 import GEN1

# These tests state the rules of the older generation (gen1), whose values exclude each other;
# tests/test_generations.py states both generations side by side.
REGISTRY = GEN1.rules.rules
RULES = GEN1.rules.by_value()
check = GEN1.check


def facts(src: str, with_text: bool = True) -> ModuleFacts:
    src = textwrap.dedent(src)
    return analyse(ast.parse(src), src if with_text else None)


def one(src: str) -> TestClassFacts:
    f = facts(src)
    assert len(f.classes) == 1, f.classes
    return f.classes[0]


def rules(violations) -> set:
    return {v.rule for v in violations}


# --------------------------------------------------------------------------- deviations (the rule examples: test_generations.py)


def _deviation_case_list():
    for d in DEVIATIONS:
        for i, (src, refused) in enumerate(d.fires):
            yield pytest.param(d, src, refused, id=f"{d.name}-fires{i}")
        for i, src in enumerate(d.quiet):
            yield pytest.param(d, src, (), id=f"{d.name}-quiet{i}")


@pytest.mark.parametrize("dev, source, refused", list(_deviation_case_list()))
def test_deviation_example(dev, source, refused):
    cls = facts(source).get("TestFoo")
    hit = dev.find(cls)
    if not refused:
        assert hit is None
        return
    assert hit is not None and hit.deviation == dev.name
    assert set(hit.values) == set(refused)
    assert dev.pattern in ADVICE
    decision = infer(cls, GEN1)
    # A deviation never lets a label through: manual work with the deviation's pattern.
    assert decision.status == "needs-manual", decision.message
    assert dev.pattern in decision.patterns


def test_values_are_mutually_exclusive_on_examples():
    sources = [ex.source for r in REGISTRY for ex in r.valid + r.invalid]
    for source in sources:
        cls = facts(source).get("TestFoo")
        passing = [v for v in VALUES if not check(cls, v)]
        assert len(passing) <= 1, (source, passing)


# --------------------------------------------------------------------------- triage


@pytest.mark.parametrize(
    "text, expected",
    [
        ("class T:\n    def test_x(self): pass\n", True),
        ("class T:\n    async def test_x(self): pass\n", True),
        ("class T:\n    def  test_x(self): pass\n", True),
        ("class T:\n    def\ttest_x(self): pass\n", True),
        ("class T:\n    def testAdd(self): pass\n", True),
        ("def helper(): pass\nx = 'test_'\n", False),
        ("", False),
    ],
)
def test_may_have_test_class(text, expected):
    assert may_have_test_class(text) is expected


# --------------------------------------------------------------------------- test classes


def test_async_test_methods_count():
    cls = one(
        """
        class TestA(TestCase):
            async def test_x(self, device):
                pass
        """
    )
    (m,) = cls.test_methods
    assert m.is_async and m.params == ("self", "device") and m.takes_device


def test_all_parameter_kinds_are_listed():
    cls = one(
        """
        class TestA(TestCase):
            def test_x(self, a, /, b, *args, c, devices=None, **kwargs):
                pass
        """
    )
    assert cls.test_methods[0].params == ("self", "a", "b", "*args", "c", "devices", "**kwargs")
    assert cls.test_methods[0].takes_device


def test_classes_under_if_try_with_are_test_classes():
    f = facts(
        """
        if COND:
            class TestIf(TestCase):
                def test_a(self): pass
        else:
            class TestElse(TestCase):
                def test_a(self): pass
        try:
            class TestTry(TestCase):
                def test_a(self): pass
        except ImportError:
            class TestExcept(TestCase):
                def test_a(self): pass
        else:
            class TestTryElse(TestCase):
                def test_a(self): pass
        finally:
            class TestFinally(TestCase):
                def test_a(self): pass
        with ctx():
            if A:
                try:
                    class TestDeep(TestCase):
                        def test_a(self): pass
                except Exception:
                    pass
        for i in range(2):
            class TestFor(TestCase):
                def test_a(self): pass
        else:
            while False:
                pass
            else:
                class TestWhileElse(TestCase):
                    def test_a(self): pass
        """
    )
    names = [c.name for c in f.classes]
    # The linter's order: try body, else, finally, then the handlers.
    assert names == [
        "TestIf", "TestElse", "TestTry", "TestTryElse", "TestFinally", "TestExcept", "TestDeep",
        "TestFor", "TestWhileElse",
    ]


def test_try_star_and_match_are_not_scanned():
    f = facts(
        """
        class TestA(TestCase):
            def test_a(self, device): pass
        try:
            class TestHidden(TestCase):
                def test_b(self): pass
        except* ValueError:
            instantiate_device_type_tests(TestA, globals())
        match X:
            case 1:
                instantiate_device_type_tests(TestA, globals(), only_for="cpu")
        """
    )
    (cls,) = f.classes
    assert cls.instantiations == ()
    assert sorted(i.line for i in cls.hidden_instantiations) == [8, 11]
    assert {c.name: c.reason for c in f.ignored} == {"TestHidden": IgnoredReason.UNSCANNED}


def test_redefined_class_keeps_the_last_definition_and_last_call():
    f = facts(
        """
        class TestA(TestCase):
            def test_a(self): pass
        class TestA(TestCase):
            def test_a(self, device): pass
        instantiate_device_type_tests(TestA, globals(), only_for="cpu")
        instantiate_device_type_tests(TestA, globals(), except_for="cpu")
        """
    )
    (cls,) = f.classes
    assert cls.line == 4
    assert cls.instantiation.except_for == ("cpu",)
    assert f.duplicate_classes == (("TestA", (2, 4)),)
    assert f.duplicate_instantiations == (("TestA", (6, 7)),)
    assert {c.name: (c.line, c.reason) for c in f.ignored} == {"TestA": (2, IgnoredReason.REDEFINED)}
    assert check(cls, "ACCELERATOR") == []  # the last call decides
    assert rules(check(cls, "CPU")) == {"only_for", "except_for"}


def test_helper_base_and_nested_classes_are_ignored_with_reason():
    f = facts(
        """
        class TestBase(TestCase):
            def setUp(self): pass
        class MyModule(nn.Module):
            def forward(self, x): return x
        class TestReal(TestBase):
            def test_a(self):
                class TestInFunction(TestCase):
                    def test_b(self): pass
            class TestInClass(TestCase):
                def test_c(self): pass
        def make():
            class TestFactory(TestCase):
                def test_d(self): pass
            return TestFactory
        """
    )
    assert [c.name for c in f.classes] == ["TestReal"]
    reasons = {c.name: c.reason for c in f.ignored}
    assert reasons == {
        "TestBase": IgnoredReason.HELPER,
        "TestInFunction": IgnoredReason.NESTED,
        "TestInClass": IgnoredReason.NESTED,
        "TestFactory": IgnoredReason.NESTED,
    }
    assert "MyModule" not in reasons  # plain helpers are not noise-reported
    assert [c.line for c in f.ignored] == sorted(c.line for c in f.ignored)


def test_nested_test_classes_are_found_below_every_kind_of_compound_statement():
    # The search descends only into statements that can hold statements: each kind is here once.
    f = facts(
        """
        class TestReal(TestCase):
            def test_a(self):
                if x:
                    class TestIf(TestCase):
                        def test(self): pass
                else:
                    class TestElse(TestCase):
                        def test(self): pass
                for i in y:
                    pass
                else:
                    class TestForElse(TestCase):
                        def test(self): pass
                while z:
                    class TestWhile(TestCase):
                        def test(self): pass
                with ctx():
                    class TestWith(TestCase):
                        def test(self): pass
                try:
                    class TestTry(TestCase):
                        def test(self): pass
                except E:
                    class TestExcept(TestCase):
                        def test(self): pass
                finally:
                    class TestFinally(TestCase):
                        def test(self): pass
                try:
                    pass
                except* E:
                    class TestExceptStar(TestCase):
                        def test(self): pass
                match v:
                    case 1:
                        class TestCase1(TestCase):
                            def test(self): pass
            async def test_b(self):
                async with ctx():
                    class TestAsyncWith(TestCase):
                        def test(self): pass
                async for i in y:
                    class TestAsyncFor(TestCase):
                        def test(self): pass
        """
    )
    assert sorted(c.name for c in f.ignored if c.reason == IgnoredReason.NESTED) == sorted(
        ["TestIf", "TestElse", "TestForElse", "TestWhile", "TestWith", "TestTry", "TestExcept", "TestFinally",
         "TestExceptStar", "TestCase1", "TestAsyncWith", "TestAsyncFor"]
    )


NESTED_SHAPES_SRC = """
    import unittest


    @decorate(
        "class"
    )
    class TestOuter(TestCase):
        def test_a(self):
            @unittest.skipIf(
                False, "why"
            )
            class TestDecorated(
                TestCase,
            ):
                def test(self): pass
        def test_b(self): pass


    class TestFlat(TestCase):
        hw_classification = HardwareClassification.GENERIC
        subclass = "a class"

        def test_a(self):
            classes = 1


    def helper():
        class\\
          TestInHelper(TestCase):
            def test(self): pass


    def helper2():
        class\tTestTabbed(TestCase):
            def test(self): pass


    match v:
        case 1:
            class TestInMatch(TestCase):
                def test(self): pass
    """


def test_a_body_that_never_spells_class_is_not_walked_and_nothing_nested_is_missed(monkeypatch):
    """With the source, a body whose lines never spell the keyword `class` (`hw_classification`
    does not) is not searched for nested test classes (its statements are not walked); every
    nested class is found all the same, whatever its decorators, header lines and the space after
    the keyword (the same as without the text, which walks every body)."""
    from transforms.core import analysis

    walked = []
    real = analysis.statements_below
    monkeypatch.setattr(analysis, "statements_below", lambda node: walked.append(node) or real(node))
    with_text = facts(NESTED_SHAPES_SRC)
    assert "TestFlat" not in {getattr(node, "name", None) for node in walked}
    assert {getattr(node, "name", None) for node in walked} == {"TestOuter", "helper", "helper2", None}  # None: match
    walked.clear()
    without = facts(NESTED_SHAPES_SRC, with_text=False)
    assert "TestFlat" in {getattr(node, "name", None) for node in walked}
    assert with_text.ignored == without.ignored
    assert sorted(c.name for c in with_text.ignored if c.reason != IgnoredReason.HELPER) == [
        "TestDecorated", "TestInHelper", "TestInMatch", "TestTabbed"]


LABEL_SHAPES_SRC = """
    from torch.testing._internal.common_utils import HardwareClassification as HC

    class TestTwice(TestCase):
        hw_classification = HardwareClassification.CPU
        def test_a(self): pass

    class Helper:
        hw_classification = HardwareClassification.CUDA

    if True:
        class TestUnderIf(TestCase):
            hw_classification: HardwareClassification = HardwareClassification.GENERIC
            def test_a(self): pass
    try:
        pass
    except ImportError:
        class TestInHandler(TestCase):
            hw_classification = HC.CPU
            def test_a(self): pass

    class TestTwice(TestCase):
        hw_classification = HardwareClassification.NOT_A_MEMBER
        def test_b(self): pass

    class TestShadowed(TestCase):
        a = hw_classification = HardwareClassification.CUDA
        hw_classification = HardwareClassification.MPS
        hw_classification = HardwareClassification.XPU
        def test_a(self): pass

    class TestNone(TestCase):
        def test_a(self):
            class TestNested(TestCase):
                hw_classification = HardwareClassification.CPU
                def test(self): pass
    """


@pytest.mark.parametrize("src", [LABEL_SHAPES_SRC, NESTED_SHAPES_SRC], ids=["labels", "nested"])
def test_the_labels_read_without_the_facts_are_the_facts_labels(src):
    """What a label edit is checked against (labels_of_test_classes, a tenth of analyse's cost) is
    analyse's reading: the same classes in the same order (a redefined class is read at its last
    definition, helpers and nested classes are not test classes) with the same label member."""
    src = textwrap.dedent(src)
    read = analyse(ast.parse(src), src)
    assert labels_of_test_classes(ast.parse(src)) == [(c.name, c.label.member if c.label else None) for c in read.classes]
    if src.lstrip().startswith("from torch"):
        assert labels_of_test_classes(ast.parse(src)) == [
            ("TestUnderIf", "GENERIC"), ("TestInHandler", "CPU"), ("TestTwice", "NOT_A_MEMBER"),
            ("TestShadowed", "MPS"), ("TestNone", None)]


def test_methods_starting_with_test_make_a_test_class():
    f = facts(
        """
        class TestOld(TestCase):
            def testFoo(self): pass
            test_attr = 1
        class TestHelpers(TestCase):
            def _test_x(self): pass
            def helper_test(self): pass
        """
    )
    assert [c.name for c in f.classes] == ["TestOld"]
    assert [m.name for m in f.classes[0].test_methods] == ["testFoo"]
    assert [c.name for c in f.ignored] == ["TestHelpers"]


def test_class_facts_fields():
    cls = one(
        '''
        @skipIf(X, "x")
        class TestA(common.TestCase, Mixin):
            """Doc
            string."""

            def setUp(self): pass

            @common_device_type.onlyCUDA
            @dtypes(torch.float)
            def test_a(self, device, dtype): pass

            def helper(self): pass
        '''
    )
    assert cls.name == "TestA"
    assert cls.line == 3  # the `class` line, not the decorator line
    assert cls.end_line == 13
    assert cls.decorators == ("skipIf",)
    assert cls.bases == ("common.TestCase", "Mixin")
    assert cls.docstring_end_line == 5
    assert cls.first_stmt_line == 4
    assert cls.other_methods == ("setUp", "helper")
    (m,) = cls.test_methods
    assert m.decorators == ("common_device_type.onlyCUDA", "dtypes")
    assert m.line == 11
    assert cls.nested_in is None
    json.dumps(asdict(cls))


def test_first_stmt_line_includes_decorators():
    cls = one(
        """
        class TestA(TestCase):
            @dtypes(torch.float)
            def test_a(self, device, dtype): pass
        """
    )
    assert cls.docstring_end_line is None
    assert cls.first_stmt_line == 3


@pytest.mark.parametrize("with_text", [True, False])
def test_hardcoded_devices_hint(with_text):
    cls = facts(
        """
        class TestA(TestCase):
            def test_a(self):
                x = torch.ones(2, device="cuda:0")
                y = x.xpu()
                z = torch.ones(2).to("cpu")
            def test_b(self):
                torch.cuda.is_available()
        """,
        with_text=with_text,
    ).classes[0]
    assert {n.device for n in cls.test_methods[0].needs} == {"cuda", "xpu"}
    assert cls.test_methods[1].needs == ()  # a probe that chooses nothing is no need


# --------------------------------------------------------------------------- instantiations


def _inst(call: str, header: str = "") -> Instantiation:
    f = facts(
        f"""
        {header}
        class TestA(TestCase):
            def test_a(self, device): pass
        {call}
        """
    )
    (inst,) = f.classes[0].instantiations
    return inst


@pytest.mark.parametrize(
    "arg, expected",
    [
        ("", None),
        (", only_for=None", None),
        (", only_for='cpu'", ("cpu",)),
        (", only_for=['cuda']", ("cuda",)),
        (", only_for=('cuda', 'xpu')", ("cuda", "xpu")),
        (", only_for='CUDA'", ("CUDA",)),  # case kept: the rule demands lowercase
        (", only_for=DEVICES", UNKNOWN),
        (", only_for=get_devices()", UNKNOWN),
        (", only_for=f'{dev}'", UNKNOWN),
        (", only_for=['cuda', DEV]", UNKNOWN),
        (", None, 'cpu'", None),  # positional: invisible to the linter
    ],
)
def test_only_for_forms(arg, expected):
    assert _inst(f"instantiate_device_type_tests(TestA, globals(){arg})").only_for == expected


def test_except_for_and_flags():
    inst = _inst(
        "instantiate_device_type_tests(TestA, globals(), except_for=('cpu',), "
        "allow_mps=True, allow_xpu=flag)"
    )
    assert inst.except_for == ("cpu",)
    assert inst.allow_mps is True
    assert inst.allow_xpu == UNKNOWN
    assert inst.only_for is None
    assert inst.form == "name"
    assert inst.text.startswith("instantiate_device_type_tests(TestA, globals()")
    inst = _inst("instantiate_device_type_tests(TestA, globals(), allow_mps=False, allow_xpu=None)")
    # A literal None is not a bool: the linter reads it as non-literal and skips the check.
    assert inst.allow_mps is False and inst.allow_xpu == UNKNOWN
    assert _inst("instantiate_device_type_tests(TestA, globals())").allow_mps is None


def test_options_out_of_the_linters_sight_are_recorded_apart():
    inst = _inst("instantiate_device_type_tests(TestA, globals(), except_for=None, **kw)")
    assert inst.except_for is None and inst.only_for is None  # what the linter sees
    assert inst.star is True and inst.positional == ()
    inst = _inst("instantiate_device_type_tests(TestA, globals(), None, 'cuda', False, True)")
    assert inst.positional == ("except_for", "only_for", "allow_mps")
    assert inst.only_for is None and inst.allow_mps is None
    assert _inst("instantiate_device_type_tests(TestA, *args)").star is True


def test_attribute_form_inside_if_main_block_counts():
    f = facts(
        """
        import torch.testing._internal.common_device_type as common_device_type
        class TestA(TestCase):
            def test_a(self, device): pass
        if __name__ == "__main__":
            common_device_type.instantiate_device_type_tests(TestA, globals(), only_for="cpu")
            run_tests()
        """
    )
    (inst,) = f.classes[0].instantiations
    assert inst.form == "attribute" and inst.line == 6
    assert infer(f.classes[0], GEN1).value == "CPU"


def test_instantiation_inside_function_does_not_count():
    f = facts(
        """
        class TestA(TestCase):
            def test_a(self, device): pass
        def setup():
            instantiate_device_type_tests(TestA, globals())
        x = instantiate_device_type_tests(TestA, globals())
        """
    )
    assert f.instantiations == ()
    assert f.classes[0].instantiations == ()


def test_instantiate_parametrized_tests_is_recorded_separately():
    f = facts(
        """
        class TestA(TestCase):
            def test_a(self): pass
        instantiate_parametrized_tests(TestA)
        """
    )
    cls = f.classes[0]
    assert cls.instantiations == () and cls.parametrized == (4,)
    decision = infer(cls, GEN1)
    assert decision.value == "GENERIC"
    assert any("instantiate_parametrized_tests" in e.text for e in decision.evidence)
    (v,) = check(cls, "ACCELERATOR")[:1]
    assert v.rule == "instantiation" and "does not count" in v.message


# --------------------------------------------------------------------------- labels


@pytest.mark.parametrize(
    "stmt, valid, member, problem_part",
    [
        ("hw_classification = HardwareClassification.GENERIC", True, "GENERIC", None),
        (
            "hw_classification: HardwareClassification = HardwareClassification.CUDA",
            True,
            "CUDA",
            None,
        ),
        ("hw_classification = HC.GENERIC", False, "GENERIC", "aliased"),
        (
            "hw_classification = common_utils.HardwareClassification.GENERIC",
            False,
            "GENERIC",
            "aliased",
        ),
        ("hw_classification = HardwareClassification.GPU", False, "GPU", "unknown member"),
        ("hw_classification = 'generic'", False, None, "not a HardwareClassification"),
        (
            "hw_classification: HC = HardwareClassification.CPU",
            False,
            "CPU",
            "annotation",
        ),
        ("hw_classification: HardwareClassification", False, None, "without a value"),
    ],
)
def test_existing_labels(stmt, valid, member, problem_part):
    cls = one(
        f"""
        class TestA(TestCase):
            {stmt}
            def test_a(self): pass
        """
    )
    label = cls.label
    assert label is not None and label.line == 3
    assert label.valid is valid
    assert label.member == member
    if problem_part is None:
        assert label.problem is None
    else:
        assert problem_part in label.problem


def test_label_assigned_twice_first_one_counts():
    cls = one(
        """
        class TestA(TestCase):
            hw_classification = HardwareClassification.GENERIC
            hw_classification = HardwareClassification.GENERIC
            def test_a(self): pass
        """
    )
    # The linter reads the first; the second is remembered for a warning.
    assert cls.label.valid and cls.label.shadowed_by == (4,)
    d = decide(cls, GEN1)
    assert d.status == "already-disagrees" and "line 4" in d.message


def test_multi_target_label_is_invisible_to_the_linter():
    cls = one(
        """
        class TestA(TestCase):
            x = hw_classification = HardwareClassification.GENERIC
            def test_a(self): pass
        """
    )
    assert not cls.label.valid and "together" in cls.label.problem



# --------------------------------------------------------------------------- rules


def test_decorator_rule_forms_and_onlyaccelerator():
    cls = one(
        """
        import torch.testing._internal.common_device_type as cdt
        class TestA(TestCase):
            @onlyCUDA
            def test_a(self, device): pass
            @cdt.onlyCUDA
            def test_b(self, device): pass
            @onlyOn(["cuda", "xpu"])
            def test_c(self, device): pass
            @onlyAccelerator
            def test_d(self, device): pass
            @cdt.onlyAccelerator
            def test_e(self, device): pass
        instantiate_device_type_tests(TestA, globals())
        """
    )
    found = check(cls, "ACCELERATOR")
    assert rules(found) == {"decorator"}
    assert sorted(v.line for v in found) == [5, 7, 9]
    assert all(v.code == "ACCELERATOR[decorator]" for v in found)
    assert "@cdt.onlyCUDA" in found[1].message and "line 7" in found[1].message


def test_class_level_only_decorator_is_flagged():
    cls = one(
        """
        @onlyCPU
        class TestA(TestCase):
            def test_a(self, device): pass
        instantiate_device_type_tests(TestA, globals())
        """
    )
    # The linter checks method decorators only; the tool refuses ACCELERATOR all the same.
    assert check(cls, "ACCELERATOR") == []
    d = infer(cls, GEN1)
    assert d.status == "needs-manual" and d.value is None
    assert d.patterns[0] == "cuda-to-accelerator"
    assert "would accept ACCELERATOR" in d.message and "@onlyCPU" in d.message
    assert [r.deviation for r in d.refusals] == ["class-only-decorator"]
    forced = decide(cls, GEN1, "ACCELERATOR", force=True)
    assert forced.status == "forced"
    assert decide(cls, GEN1, "ACCELERATOR").status == "refused"


def test_generic_rules_messages_name_lines():
    cls = one(
        """
        class TestA(TestCase):
            def test_a(self, device): pass
        instantiate_device_type_tests(TestA, globals())
        """
    )
    found = check(cls, "GENERIC")
    assert [(v.rule, v.line) for v in found] == [("instantiation", 2), ("device_param", 3)]
    assert "line 4" in found[0].message
    assert "test_a(self, device)" in found[1].message


def test_device_value_rules():
    cls = one(
        """
        class TestA(TestCase):
            def test_a(self, device): pass
            def test_b(self): pass
        instantiate_device_type_tests(TestA, globals(), except_for='cpu')
        """
    )
    assert rules(check(cls, "CUDA")) == {"device_param", "only_for", "except_for"}
    assert rules(check(cls, "XPU")) == {"device_param", "only_for", "except_for", "allow_xpu"}
    assert "omits it" in [v for v in check(cls, "XPU") if v.rule == "allow_xpu"][0].message


def test_not_instantiated_device_values_break_instantiation_only_once():
    cls = one(
        """
        class TestA(TestCase):
            def test_a(self, device): pass
        """
    )
    assert [v.rule for v in check(cls, "CPU")] == ["instantiation"]
    assert [v.rule for v in check(cls, "MPS")] == ["instantiation"]


def test_check_accepts_lowercase_and_rejects_unknown():
    cls = one("class TestA(TestCase):\n    def test_a(self): pass\n")
    assert check(cls, "generic") == []
    with pytest.raises(ValueError):
        check(cls, "GPU")
    assert normalise_value("HardwareClassification.xpu") == "XPU"


def test_needs_manual_non_literal_only_for():
    cls = one(
        """
        class TestA(TestCase):
            def test_a(self, device): pass
        instantiate_device_type_tests(TestA, globals(), only_for=DEVICES)
        """
    )
    d = infer(cls, GEN1)
    assert d.status == "needs-manual"
    assert "only_for is not a literal" in d.message
    assert "not a literal" in [v for v in d.violations["CPU"] if v.rule == "only_for"][0].message


def test_generic_with_hardcoded_device_gets_hint_but_label():
    cls = one(
        """
        class TestA(TestCase):
            def test_a(self):
                torch.ones(2).cuda()
        """
    )
    d = infer(cls, GEN1)
    assert d.status == "label" and d.value == "GENERIC"
    assert d.patterns == ("inject-device",)
    assert "needs cuda (.cuda())" in d.message


def test_evidence_texts():
    cls = one(
        """
        class TestA(TestCase):
            def test_a(self, device): pass
        instantiate_device_type_tests(TestA, globals(), only_for='cpu')
        """
    )
    texts = [e.text for e in infer(cls, GEN1).evidence]
    assert "line 4: instantiate_device_type_tests(TestA, globals(), only_for='cpu')" in texts
    generic = one("class TestA(TestCase):\n    def test_a(self): pass\n")
    texts = [e.text for e in infer(generic, GEN1).evidence]
    assert "not instantiated anywhere the linter looks" in texts
    assert any(t.startswith("no test method takes device/devices") for t in texts)


def test_mixed_class_evidence_lists_both_groups_with_limit():
    methods = "".join(f"    def test_d{i}(self, device): pass\n" for i in range(10))
    methods += "    def test_plain(self): pass\n"
    src = "class TestA(TestCase):\n" + methods + "instantiate_device_type_tests(TestA, globals())\n"
    d = infer(one(src), GEN1)
    texts = [e.text for e in d.evidence]
    assert "line 12: test_plain(self)" in texts
    assert any("2 more with device" in t for t in texts)
    assert d.patterns == ("split-class",)


# --------------------------------------------------------------------------- decide


GENERIC_SRC = "class TestA(TestCase):\n    def test_a(self): pass\n"
ACCEL_SRC = (
    "class TestA(TestCase):\n    def test_a(self, device): pass\n"
    "instantiate_device_type_tests(TestA, globals())\n"
)


def _labelled(member: str, src: str = GENERIC_SRC) -> TestClassFacts:
    return one(
        src.replace(
            "class TestA(TestCase):\n",
            f"class TestA(TestCase):\n    hw_classification = HardwareClassification.{member}\n",
        )
    )


def test_decide_plain_inference():
    d = decide(one(GENERIC_SRC), GEN1)
    assert (d.status, d.value, d.inferred) == ("label", "GENERIC", "GENERIC")
    assert d.edits


def test_decide_already_and_disagrees():
    assert decide(_labelled("GENERIC"), GEN1).status == "already"
    d = decide(_labelled("ACCELERATOR"), GEN1)
    assert d.status == "already-disagrees"
    assert d.value == "ACCELERATOR" and d.inferred == "GENERIC"
    assert set(d.violations) == {"ACCELERATOR"}  # the existing label's broken rules
    assert not d.edits


def test_decide_already_when_inference_impossible():
    src = (
        "class TestA(TestCase):\n    def test_a(self, device): pass\n"
        "    def test_b(self): pass\n"
        "instantiate_device_type_tests(TestA, globals())\n"
    )
    d = decide(_labelled("ACCELERATOR", src), GEN1)
    assert d.status == "already" and d.inferred is None
    assert "device_param" in d.message


def test_decide_label_with_override_is_left_alone():
    assert decide(_labelled("GENERIC"), GEN1, override="generic").status == "already"
    d = decide(_labelled("GENERIC"), GEN1, override="CPU", force=True)
    assert d.status == "already-disagrees" and d.value == "GENERIC"


def test_decide_invalid_label():
    cls = one(
        "class TestA(TestCase):\n    hw_classification = HC.GENERIC\n    def test_a(self): pass\n"
    )
    d = decide(cls, GEN1, override="GENERIC", force=True)
    assert d.status == "invalid-label" and not d.edits
    assert "aliased" in d.message


def test_decide_override_passing_refused_forced():
    cls = one(ACCEL_SRC)
    d = decide(cls, GEN1, override="accelerator")
    assert (d.status, d.value) == ("label", "ACCELERATOR")
    d = decide(cls, GEN1, override="GENERIC")
    assert d.status == "refused" and d.value is None and not d.edits
    assert rules(d.violations["GENERIC"]) == {"instantiation", "device_param"}
    assert d.inferred == "ACCELERATOR"
    d = decide(cls, GEN1, override="GENERIC", force=True)
    assert d.status == "forced" and d.value == "GENERIC" and d.edits
    assert set(d.violations) == {"GENERIC"}


def test_decide_override_on_needs_manual_class():
    src = (
        "class TestA(TestCase):\n    @onlyCUDA\n    def test_a(self, device): pass\n"
        "instantiate_device_type_tests(TestA, globals())\n"
    )
    d = decide(one(src), GEN1, override="ACCELERATOR")
    assert d.status == "refused"
    # no guess from the facts alone: @onlyAccelerator or a CUDA class depends on the bodies
    assert d.patterns == () and "whitelist" not in d.message


def test_decide_rejects_unknown_override():
    with pytest.raises(ValueError, match="unknown classification"):
        decide(one(GENERIC_SRC), GEN1, override="gpu")


# --------------------------------------------------------------------------- findings


@pytest.mark.parametrize(
    "decision, rule, severity",
    [
        (lambda: decide(one(GENERIC_SRC), GEN1), "hw/label", "info"),
        (lambda: decide(_labelled("GENERIC"), GEN1), "hw/already", "info"),
        (lambda: decide(_labelled("CPU"), GEN1), "hw/already-disagrees", "warning"),
        (lambda: decide(one(GENERIC_SRC), GEN1, "CPU"), "hw/refused", "error"),
        (lambda: decide(one(GENERIC_SRC), GEN1, "CPU", force=True), "hw/forced", "warning"),
        (
            lambda: decide(
                one(
                    "class TestA(TestCase):\n"
                    "    hw_classification = 1\n"
                    "    def test_a(self): pass\n"
                ),
                GEN1,
            ),
            "hw/invalid-label",
            "error",
        ),
        (
            lambda: decide(one("class TestA(TestCase):\n    def test_a(self, device): pass\n"), GEN1),
            "hw/needs-manual",
            "warning",
        ),
    ],
)
def test_decision_findings(decision, rule, severity):
    d = decision()
    (finding,) = decision_findings(d)
    assert finding.rule == rule and finding.severity == severity
    assert finding.cls == "TestA" and finding.line == d.line
    data = json.loads(json.dumps(finding.to_json()))["data"]
    assert set(data) >= {"evidence", "violations", "patterns"}
    for vs in data["violations"].values():
        assert all(set(v) == {"value", "rule", "message", "line"} for v in vs)
    if rule in ("hw/label", "hw/forced"):
        assert finding.fix == f"hw_classification = HardwareClassification.{d.value}"


def test_module_findings_duplicates():
    f = facts(
        """
        class TestA(TestCase):
            def test_a(self, device): pass
        class TestA(TestCase):
            def test_b(self, device): pass
        instantiate_device_type_tests(TestA, globals())
        instantiate_device_type_tests(TestA, globals(), only_for='cpu')
        """
    )
    assert f.duplicate_classes == (("TestA", (2, 4)),)
    assert f.duplicate_instantiations == (("TestA", (6, 7)),)
    found = module_findings(f, GEN1)
    assert [x.rule for x in found] == ["hw/duplicate_class", "hw/duplicate_instantiation"]
    assert all(x.severity == "error" for x in found)
    assert "lines 2, 4" in found[0].message


def test_module_facts_are_json_friendly():
    src = REGISTRY[0].valid[0].source
    json.dumps(asdict(analyse(ast.parse(src), src)))


# --------------------------------------------------------------------------- parity corner cases


def test_non_literal_allow_mps_skips_the_check_and_labels_mps():
    cls = one(
        """
        class TestA(TestCase):
            def test_a(self, device): pass
        instantiate_device_type_tests(TestA, globals(), only_for="mps", allow_mps=MACOS_VERSION >= 15)
        """
    )
    d = infer(cls, GEN1)
    assert (d.status, d.value) == ("label", "MPS")


def test_positional_only_for_is_manual_work_with_keyword_advice():
    cls = one(
        """
        class TestA(TestCase):
            def test_a(self, device): pass
        instantiate_device_type_tests(TestA, globals(), None, "cuda")
        """
    )
    assert check(cls, "ACCELERATOR") == []  # what the linter would accept ...
    d = infer(cls, GEN1)
    assert d.status == "needs-manual"  # ... is refused: the tests run on CUDA only
    assert d.patterns[0] == "keyword-args"
    assert "by position" in d.message and "keyword" in d.message
    assert "keyword-args" in ADVICE


def test_star_kwargs_is_manual_work():
    cls = one(
        """
        class TestA(TestCase):
            def test_a(self, device): pass
        instantiate_device_type_tests(TestA, globals(), **OPTIONS)
        """
    )
    d = infer(cls, GEN1)
    assert d.status == "needs-manual" and d.patterns[0] == "keyword-args"


def test_generic_class_that_needs_a_gpu_is_labelled_with_a_warning():
    cls = one(
        """
        class TestA(TestCase):
            @unittest.skipIf(not TEST_CUDA, "no cuda")
            def test_a(self):
                pass
        """
    )
    d = infer(cls, GEN1)
    assert (d.status, d.value) == ("label", "GENERIC")
    assert d.warnings and "skipIf(not TEST_CUDA" in d.warnings[0].text
    found = decision_findings(d)
    assert [f.rule for f in found] == ["hw/label", "hw/generic-needs-gpu"]
    assert found[1].severity == "warning" and "skipIf(not TEST_CUDA" in found[1].message


def test_a_generic_label_on_mixed_needs_offers_the_split():
    """Some tests need an accelerator, others none: the warning offers split-class (by hand under
    gen1, where no non-instantiated device label exists; by the tool under gen2 when the others
    need one device gen2 only declares) and inject-device for the tests that need one."""
    from transforms.rules.gen2 import GEN2

    gpu = one(
        """
        class TestA(TestCase):
            def test_free(self):
                pass
            @requires_gpu()
            def test_gpu(self):
                pass
        """
    )
    d = infer(gpu, GEN1)
    assert d.value == "GENERIC" and d.patterns == ("split-class", "inject-device")
    assert "1 of 2 tests need one (test_gpu)" in d.needs_advice and "by hand" in d.needs_advice
    warning = decision_findings(d)[1]
    assert warning.rule == "hw/generic-needs-gpu" and d.needs_advice in warning.message
    cuda = one(
        """
        class TestA(TestCase):
            def test_free(self):
                pass
            @unittest.skipIf(not TEST_CUDA, "cuda")
            def test_cuda(self):
                pass
        """
    )
    d = infer(cuda, GEN2)  # GENERIC accepted (no accelerator call), CUDA not true for test_free
    assert d.value == "GENERIC" and d.patterns == ("split-class",)
    assert "to a class of their own labelled CUDA" in d.needs_advice
    assert "--restructure split-class" in d.needs_advice
    assert infer(cuda, GEN1).patterns == ("split-class", "inject-device")  # gen1: no such label


def test_a_rule_broken_twice_is_stated_once():
    cls = one(
        """
        class TestA(TestCase):
            def test_a(self, device):
                pass
            def test_b(self):
                pass
            def test_c(self):
                pass
        instantiate_device_type_tests(TestA, globals(), only_for="xpu", allow_xpu=True)
        """
    )
    d = infer(cls, GEN1)
    assert d.status == "needs-manual"
    clause = "XPU test methods must take device or devices, but"
    assert d.message.count(clause) == 1, d.message
    assert "test_b(self) at line 5 does not and test_c(self) at line 7 does not" in d.message


def test_class_gpu_guard_counts_too():
    cls = one(
        """
        @skipUnless(torch.cuda.is_available(), "cuda")
        class TestA(TestCase):
            def test_a(self):
                pass
        """
    )
    assert cls.needs and infer(cls, GEN1).warnings


def test_duplicate_instantiation_of_a_non_test_class_is_an_error_and_manual_work():
    from transforms.label import HwLabel

    src = textwrap.dedent(
        """
        from torch.testing._internal.common_utils import TestCase
        class Helper:
            pass
        class TestA(TestCase):
            def test_a(self): pass
        instantiate_device_type_tests(Helper, globals())
        instantiate_device_type_tests(Helper, globals())
        """
    )
    result = HwLabel(rules="gen1").run(src, ast.parse(src))
    dup = [f for f in result.findings if f.rule == "hw/duplicate_instantiation"]
    assert len(dup) == 1 and dup[0].severity == "error" and dup[0].line == 8
    assert result.manual == 1  # apply exits 1
    assert "hw_classification = HardwareClassification.GENERIC" in result.text


def test_lint_module_predicts_the_linters_messages():
    from transforms.rules.generations import lint_module

    f = facts(
        """
        class TestA(TestCase):
            hw_classification = HardwareClassification.GENERIC
            def test_a(self, device): pass
        class TestA(TestCase):
            hw_classification = HardwareClassification.CUDA
            def test_a(self, device): pass
        class TestB(TestCase):
            def testB(self): pass
        instantiate_device_type_tests(TestA, globals(), only_for="cpu")
        instantiate_device_type_tests(TestA, globals(), only_for="cuda")
        """
    )
    got = [(m.name, m.line) for m in lint_module(f, GEN1)]
    assert got == [("[duplicate_class]", 5), ("[hw_classification]", 8), ("[duplicate_instantiation]", 11)]


# --------------------------------------------------------------------------- advice (facts only)


@pytest.mark.parametrize("call, extra, expected", [
    ("instantiate_device_type_tests(TestA, globals(), only_for=('cuda', 'xpu'))", "", ("drop-only-for",)),
    ("instantiate_device_type_tests(TestA, globals(), only_for=('cpu', 'cuda'))", "", ("drop-only-for",)),
    ("instantiate_device_type_tests(TestA, globals(), None, ('cuda', 'xpu'))", "", ("keyword-args",)),
    ("instantiate_device_type_tests(TestA, globals(), only_for=DEVICES)", "", ("inline-only-for",)),
    ("instantiate_device_type_tests(TestA, globals())", "    @onlyCPU\n    def test_b(self, device): pass\n",
     ("split-class",)),
    ("instantiate_device_type_tests(TestA, globals())", "    def test_b(self): pass\n", ("split-class",)),
])
def test_advice_from_the_facts(call, extra, expected):
    cls = one("class TestA(TestCase):\n    def test_a(self, device): pass\n" + extra + call + "\n")
    d = infer(cls, GEN1)
    assert d.status == "needs-manual"
    assert d.patterns[: len(expected)] == expected
    assert all(p in ADVICE for p in d.patterns)


def _fixture_classes():
    """Every test class of the project's fixture and example trees (about 150, of every shape
    the tool handles: labelled, refused, left to a human, forced)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for base in ("tests/fixtures", "examples"):
        for folder, _, files in sorted(os.walk(os.path.join(root, base))):
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                try:
                    with open(path, encoding="utf-8") as f:
                        src = f.read()
                    yield from analyse(ast.parse(src), src).classes
                except (SyntaxError, UnicodeDecodeError, ValueError):
                    continue


@pytest.mark.parametrize("override, force", [(None, False), ("GENERIC", False), ("CPU", False), ("CUDA", True)])
def test_a_decision_without_the_facts_advice_differs_only_where_a_human_is_left_the_class(override, force):
    """decide(advice=False), which the label transform uses before it diagnoses a class itself,
    gives the same decision as decide() but for the patterns and the message of a class whose
    inference left it to a human (`inferred` None): the only decisions the transform decides again
    with the advice when it does not diagnose them."""
    classes = list(_fixture_classes())
    assert len(classes) > 100
    differing = 0
    for cls in classes:
        full, lean = decide(cls, GEN1, override, force), decide(cls, GEN1, override, force, advice=False)
        if lean != full:
            differing += 1
            assert full.inferred is None and lean.inferred is None, cls.name
            assert replace(lean, patterns=full.patterns, message=full.message) == full, cls.name
    assert differing > 0  # the fixtures do hold classes whose advice comes from their facts
