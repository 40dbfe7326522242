# Owner(s): ["module: example"]
"""Device-agnostic checks on shape arithmetic (a bundled example for decouple)."""

import unittest

from torch.testing._internal.common_utils import run_tests, TestCase


class ShapeHelpers(TestCase):
    def make_shape(self, *dims):
        return tuple(dims)


class TestShapeArithmetic(ShapeHelpers):
    """Pure-Python shape logic: no device anywhere."""

    def test_numel(self):
        self.assertEqual(len(self.make_shape(2, 3)), 2)

    def test_broadcast_rank(self):
        self.assertEqual(max(len((1, 2)), len((3,))), 2)


if __name__ == "__main__":
    run_tests()
