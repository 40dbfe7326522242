# Owner(s): ["module: example"]

import torch
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyCUDA,
)
from torch.testing._internal.common_utils import (
    instantiate_parametrized_tests,
    parametrize,
    run_tests,
    TestCase,
)


class TestElementwise(TestCase):
    @dtypes(torch.float32, torch.float64)
    def test_add(self, device, dtype):
        x = torch.ones(3, device=device, dtype=dtype)
        self.assertEqual((x + x).sum().item(), 6)

    def test_neg(self, device):
        self.assertEqual((-torch.ones(2, device=device)).sum().item(), -2)


class TestCpuKernels(TestCase):
    def test_threads(self, device):
        self.assertGreaterEqual(torch.get_num_threads(), 1)


class TestMixed(TestCase):
    def test_on_device(self, device):
        self.assertTrue(torch.zeros(1, device=device).eq(0).all())

    def test_no_device(self):
        self.assertEqual(1 + 1, 2)


class TestCudaOnly(TestCase):
    @onlyCUDA
    def test_memory(self, device):
        torch.cuda.synchronize()


class TestParams(TestCase):
    @parametrize("n", [1, 2])
    def test_range(self, n):
        self.assertEqual(len(range(n)), n)


instantiate_device_type_tests(TestElementwise, globals(), except_for="cpu")
instantiate_device_type_tests(TestCpuKernels, globals(), only_for="cpu")
instantiate_device_type_tests(TestMixed, globals())
instantiate_device_type_tests(TestCudaOnly, globals())
instantiate_parametrized_tests(TestParams)

if __name__ == "__main__":
    run_tests()
