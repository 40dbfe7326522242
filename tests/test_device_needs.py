"""What a test needs a device for (transforms/core/device_needs.py): the idioms PyTorch's tests
say it with, and what is not a need (a device used only as a value, a probe, skipIfRocm)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from transforms.core.analysis import analyse
from transforms.label.classify import infer
from transforms.rules.generations import GENERATIONS


def classes(src: str, with_text: bool = True):
    src = textwrap.dedent(src)
    return {c.name: c for c in analyse(ast.parse(src), src if with_text else None).classes}


def needs(src: str, with_text: bool = True) -> dict[str, set[str]]:
    """test (or class) name -> the devices it needs."""
    out = {}
    for cls in classes(src, with_text).values():
        out[cls.name] = {n.device for n in cls.needs}
        for m in cls.test_methods:
            out[m.name] = {n.device for n in m.needs}
    return out


@pytest.mark.parametrize("with_text", [True, False])
@pytest.mark.parametrize(
    "body, expected",
    [
        ("x = torch.ones(2, device='cuda')", {"cuda"}),
        ("x = torch.ones(2, device=GPU_TYPE)", {"gpu"}),
        ("x = torch.rand(2).to(GPU_TYPE)", {"gpu"}),
        ("x = torch.rand(2).to('cuda:1')", {"cuda"}),
        ("m = Model().cuda()", {"cuda"}),
        ("x = torch.rand(2).xpu()", {"xpu"}),
        ("torch.cuda.synchronize()", {"cuda"}),
        ("torch.backends.cuda.enable_flash_sdp(False)", {"cuda"}),
        ("torch.accelerator.synchronize()", {"gpu"}),
        ("torch.mps.synchronize()", {"mps"}),
        ("with torch.device('xpu'):\n    pass", {"xpu"}),
        ("torch.set_default_device('cuda')", {"cuda"}),
        ("device = 'cuda'\nx = torch.ones(2, device=device)", {"cuda"}),
        ("x = torch.ones(2, device=f'cuda:{i}')", {"cuda"}),
        ("with torch.autocast(device_type='cuda'):\n    pass", {"cuda"}),
        ("if not torch.cuda.is_available():\n    self.skipTest('cuda')", {"cuda"}),
        ("if not HAS_GPU:\n    raise unittest.SkipTest('gpu')", {"gpu"}),
        # not needs: a device as a value, probes that choose a branch, no-op seeding, attributes
        ("h = hash(torch.device('cuda:0'))", set()),
        ("self.assertEqual(_gen_rank_device(5, 'cuda'), 'cpu')", set()),
        ("self.assertEqual(x.device.type, 'cuda')", set()),
        ("if torch.cuda.is_available():\n    pass", set()),
        ("torch.cuda.manual_seed(0)", set()),
        ("torch.backends.cuda.matmul.allow_tf32 = True", set()),
        ("ok = torch.backends.cuda.is_flash_attention_available()", set()),
        ("with mock.patch.object(torch.cuda, 'is_available', return_value=False):\n    pass", set()),
        # what a branch does that runs only with the device: the test runs without it too
        ("x = torch.ones(2)\nif torch.cuda.is_available():\n    x = x.cuda()", set()),
        ("if not HAS_GPU:\n    pass\nelse:\n    torch.cuda.synchronize()", set()),
        ("y = torch.ones(2).to('cuda') if TEST_CUDA else torch.ones(2)", set()),
        ("t = torch.ones(2)\nif t.device.type == 'cuda':\n    torch.cuda.synchronize()", set()),
        ("t = torch.ones(2)\nif 'cuda' not in str(t.device):\n    pass\nelse:\n    torch.cuda.synchronize()", set()),
        # ... unless the other branch skips the test: a guard
        ("if TEST_CUDA:\n    torch.cuda.synchronize()\nelse:\n    self.skipTest('cuda')", {"cuda"}),
        ("if not torch.cuda.is_available():\n    return\ntorch.cuda.synchronize()", {"cuda"}),
    ],
)
def test_needs_in_a_test_body(body, expected, with_text):
    found = needs("class TestA(TestCase):\n    def test_a(self):\n" + textwrap.indent(body, " " * 8) + "\n", with_text)
    assert found["test_a"] == expected


@pytest.mark.parametrize(
    "decorator, expected",
    [
        ("@unittest.skipIf(not TEST_CUDA, 'cuda')", {"cuda"}),
        ("@unittest.skipIf(not TEST_MULTIGPU, 'two GPUs')", {"cuda"}),
        ("@skipUnless(HAS_CUDA, 'cuda')", {"cuda"}),
        ("@unittest.skipIf(not torch.version.hip, 'ROCm only')", {"rocm"}),
        ("@unittest.skipIf(torch.cuda.device_count() < 2, 'two GPUs')", set()),  # skipped only with few
        ("@unittest.skipUnless(torch.cuda.device_count() >= 2, 'two GPUs')", {"cuda"}),
        ("@unittest.skipIf(not (TEST_CUDA and HAS_TRITON), 'cuda')", {"cuda"}),
        ("@unittest.skipIf(not TEST_CUDA or not TEST_CUDNN, 'cudnn')", {"cuda"}),
        ("@unittest.skipIf(TEST_CUDA, 'CPU only')", set()),
        ("@requires_cuda", {"cuda"}),
        ("@requires_cuda_and_triton", {"cuda"}),
        ("@requires_gpu_and_triton", {"gpu"}),
        ("@requires_gpu()", {"gpu"}),
        ("@skip_if_lt_x_gpu(2)", {"gpu"}),
        ("@common_distributed.skip_if_lt_x_gpu(4)", {"gpu"}),
        ("@skip_if_lt_x_gpu(2, allow_cpu=True)", set()),  # runs on a CPU-only machine too
        ("@skip_if_lt_x_gpu(2, allow_cpu=False)", {"gpu"}),
        ("@skip_if_no_gpu", {"gpu"}),
        ("@requires_nccl()", {"cuda"}),
        ("@requires_xccl()", {"xpu"}),
        ("@unittest.skipIf(not torch.mtia.is_available(), 'mtia')", {"mtia"}),
        ("@skipIfRocm", set()),  # "not on ROCm builds": CPU tests say so too
        ("@unittest.skipIf(IS_WINDOWS, 'windows')", set()),
    ],
)
def test_needs_from_a_guard(decorator, expected):
    found = needs(f"class TestA(TestCase):\n    {decorator}\n    def test_a(self):\n        pass\n")
    assert found["test_a"] == expected


def test_class_level_needs():
    found = needs(
        """
        @requires_gpu_and_triton
        class TestDecorated(TestCase):
            def test_a(self): pass

        class TestSetUp(TestCase):
            def setUp(self):
                torch.cuda.empty_cache()
            def test_a(self): pass

        if HAS_CUDA:
            class TestUnderIf(TestCase):
                def test_a(self): pass
        else:
            class TestElse(TestCase):
                def test_a(self): pass
        """
    )
    assert found["TestDecorated"] == {"gpu"}
    assert found["TestSetUp"] == {"cuda"}
    assert found["TestUnderIf"] == {"cuda"} and found["TestElse"] == set()


@pytest.mark.parametrize(
    "module, expected",
    [
        ("if __name__ == '__main__':\n    if HAS_GPU:\n        run_tests()\n", {"gpu"}),
        ("if __name__ == '__main__':\n    if IS_LINUX and HAS_GPU_AND_TRITON:\n        run_tests()\n", {"gpu"}),
        ("if __name__ == '__main__':\n    if HAS_GPU:\n        run_tests()\n    else:\n        run_tests()\n", set()),
        ("if not TEST_CUDA:\n    print('skip')\n    TestCase = NoTest\n", {"cuda"}),
        ("if not TEST_CUDA:\n    sys.exit(0)\n", {"cuda"}),
        ("if __name__ == '__main__':\n    run_tests()\n", set()),
    ],
)
def test_a_module_that_runs_its_tests_only_with_a_device(module, expected):
    found = needs("class TestA(TestCase):\n    def test_a(self): pass\n" + module)
    assert found["TestA"] == expected


def test_the_modules_own_flags():
    found = needs(
        """
        GPU_HOME = CUDA_HOME or ROCM_HOME
        TWO = TEST_CUDA and torch.cuda.device_count() >= 2
        class TestA(TestCase):
            def test_a(self):
                if not GPU_HOME:
                    self.skipTest("no toolkit")
            @unittest.skipIf(not TWO, "two")
            def test_b(self): pass
        """
    )
    assert found["test_a"] == {"cuda"} and found["test_b"] == {"cuda"}


def test_the_issues_idioms_decide_the_warning_and_the_gen2_value():
    cls = classes(
        """
        class TestHash(TestCase):
            def test_hash_device(self):
                self.assertEqual(hash(torch.device("cuda:0")), hash(torch.device("cuda:0")))

        class TestKernel(TestCase):
            def test_a(self):
                x = torch.randn(4, device=GPU_TYPE)

        @requires_gpu_and_triton
        class TestBisect(TestCase):
            def test_a(self): pass
            @requires_cuda
            def test_b(self):
                x = torch.randn(4, device=GPU_TYPE)
        """
    )
    gen1, gen2 = GENERATIONS["gen1"], GENERATIONS["gen2"]
    assert not infer(cls["TestHash"], gen1).warnings  # a device used only as a value
    assert infer(cls["TestKernel"], gen1).warnings and infer(cls["TestBisect"], gen1).warnings
    # Under gen2: GPU_TYPE is some accelerator (GENERIC, warned); one test needs CUDA, the other
    # only some GPU: not one device for the class.
    assert [infer(cls[n], gen2).value for n in ("TestHash", "TestKernel", "TestBisect")] == ["GENERIC"] * 3
    assert infer(cls["TestBisect"], gen2).warnings


def test_torch_calls_are_read_as_the_newer_linter_reads_them():
    (cls,) = classes(
        """
        class TestA(TestCase):
            N = torch.xpu.device_count()
            @unittest.skipIf(not torch.cuda.is_available(), "cuda")
            def test_a(self, n=torch.cuda.current_device()):
                torch.cuda.device(0).__enter__()
                torch.ones(2).cuda()
                th.cuda.synchronize()
                f = lambda: torch.mps.synchronize()
        """
    ).values()
    calls = [(c.line, c.owner, c.callee) for c in cls.device_calls]
    assert (3, "TestA", "torch.xpu.device_count") in calls
    assert (4, "TestA.test_a", "torch.cuda.is_available") in calls
    assert (5, "TestA.test_a", "torch.cuda.current_device") in calls
    assert (6, "TestA.test_a", "torch.cuda.device(0).__enter__") in calls
    assert (6, "TestA.test_a", "torch.cuda.device") in calls
    assert (7, "TestA.test_a", "torch.ones(2).cuda") in calls
    assert not any(c.callee.startswith("th.") for c in cls.device_calls)
    assert (9, "TestA.test_a", "torch.mps.synchronize") in calls


def test_the_methods_a_test_uses_on_self_lend_it_their_needs():
    """One level: a helper's device calls, placements and guards are the needs of the tests (and
    setUp-style methods) that call it or pass it on; a helper nobody uses lends nothing, and a
    helper's helper is not followed."""
    found = needs(
        """
        class TestA(TestCase):
            def _device(self):
                device = torch.device("cuda", self.rank)
                return device
            def _capture(self):
                g = torch.cuda.CUDAGraph()
                return self._device()
            def _unused(self):
                torch.xpu.synchronize()
            def _plain(self):
                return 1
            @skip_if_lt_x_gpu(2)
            def test_graph(self):
                self._capture()
            def test_subtests(self):
                self.run_subtests({"x": [1]}, self._device)
            def test_plain(self):
                self.assertEqual(self._plain(), 1)

        class TestB(TestCase):
            def setUp(self):
                self._init()
            def _init(self):
                torch.cuda.set_device(0)
            def test_b(self):
                pass
        """
    )
    assert found["test_graph"] == {"gpu", "cuda"}  # its guard, and _capture's CUDAGraph
    assert found["test_subtests"] == {"cuda"}  # _device, passed on to run_subtests
    assert found["test_plain"] == set()
    assert found["TestB"] == {"cuda"}  # what setUp uses, every test needs


def test_a_helper_that_uses_the_device_only_when_it_is_there_lends_no_need():
    """A helper (or setUp) that moves data to the device behind a probe (`if
    torch.cuda.is_available():`) runs without the device too: the tests that use it need none,
    so gen2 does not write CUDA for them and gen1 does not warn."""
    cls = classes(
        """
        class TestA(TestCase):
            def setUp(self):
                super().setUp()
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
            def _place(self, x):
                if TEST_CUDA:
                    x = x.cuda()
                return x
            def test_a(self):
                self.assertEqual(self._place(torch.ones(2)).sum(), 2)
            def test_b(self):
                self._place(torch.zeros(2))
        """
    )["TestA"]
    assert cls.needs == () and all(m.needs == () for m in cls.test_methods)
    assert infer(cls, GENERATIONS["gen1"]).warnings == ()
    assert infer(cls, GENERATIONS["gen2"]).value is None  # GENERIC breaks accelerator_availability, CUDA is not true


def test_a_helpers_need_names_the_helper():
    (cls,) = classes(
        """
        class TestA(TestCase):
            def _sync(self):
                torch.cuda.synchronize()
            def test_a(self):
                self._sync()
        """
    ).values()
    ((test,),) = [m.needs for m in cls.test_methods]
    assert (test.device, test.line, test.what) == ("cuda", 4, "self._sync: torch.cuda.synchronize()")


@pytest.mark.parametrize(
    "condition, expected",
    [
        ("torch.mtia.is_available() and has_triton()", {"mtia"}),
        ("torch.cuda.is_available() and not IS_WINDOWS", {"cuda"}),
        ("TEST_CUDA and TEST_MULTIGPU", {"cuda"}),
        ("torch.xpu.is_available()", {"xpu"}),
        ("torch.hpu.is_available()", {"hpu"}),
        ("torch.cuda.is_available() or torch.xpu.is_available()", set()),  # either: not one device
        ("has_triton()", set()),
    ],
)
def test_a_module_level_guard_around_the_class(condition, expected):
    found = needs(f"if {condition}:\n    class TestA(TestCase):\n        def test_a(self):\n            pass\n")
    assert found["TestA"] == expected


def test_helpers_decide_the_gen2_value_and_the_gen1_warning():
    """The issue's shape: the tests carry only @skip_if_lt_x_gpu(2), their helpers place data on
    CUDA and capture a CUDA graph. gen2 accepts CUDA, and CUDA is true; gen1 accepts only GENERIC,
    which is written with the warning that names the helpers."""
    cls = classes(
        """
        class TestCollectives(MultiProcessTestCase):
            @property
            def world_size(self):
                return 2
            def _pg(self):
                device = torch.device("cuda", self.rank)
                return c10d.new_group(backend="nccl", device_id=device)
            def _graph(self):
                return torch.cuda.CUDAGraph()
            @requires_nccl()
            @skip_if_lt_x_gpu(2)
            def test_all_reduce(self):
                self._pg()
            @skip_if_lt_x_gpu(2)
            def test_graph_capture(self):
                self._graph()
        """
    )["TestCollectives"]
    gen1, gen2 = GENERATIONS["gen1"], GENERATIONS["gen2"]
    assert infer(cls, gen2).value == "CUDA"
    decision = infer(cls, gen1)
    assert decision.value == "GENERIC"
    texts = [w.text for w in decision.warnings]
    assert any("self._pg: device = torch.device('cuda', self.rank)" in t for t in texts), texts
    assert any("self._graph: torch.cuda.CUDAGraph()" in t for t in texts), texts


def test_methods_inherited_from_the_modules_classes_count_too():
    """A helper or setUp a class inherits from a class of the same module (at any depth of
    bases) is read as if the class defined it; its own definition of the name wins."""
    found = needs(
        """
        class _Base(TestCase):
            def setUp(self):
                torch.cuda.set_device(0)
        class _Helpers(TestCase):
            def _graph(self):
                return torch.cuda.CUDAGraph()
            def _plain(self):
                return torch.xpu.synchronize()
        class _Middle(_Helpers):
            pass
        class TestA(_Base):
            def test_a(self):
                pass
        class TestB(_Middle):
            def _plain(self):
                return 1
            def test_graph(self):
                self._graph()
            def test_plain(self):
                self._plain()
        """
    )
    assert found["TestA"] == {"cuda"}  # _Base.setUp runs before each of its tests
    assert found["test_graph"] == {"cuda"} and found["test_plain"] == set()
