# Owner(s): ["module: example"]
"""Saves whole modules and loads them back with a bare torch.load (a bundled example for decouple).

Since torch 2.6 torch.load defaults to weights_only=True, which refuses a pickled module:
`decouple apply --torch-load ...` makes the call say what it needs.
"""

import io

import torch
from torch.testing._internal.common_utils import run_tests, TestCase


class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 2)

    def forward(self, x):
        return torch.relu(self.proj(x))


class TestModuleCheckpoint(TestCase):
    def _roundtrip(self, module):
        buffer = io.BytesIO()
        torch.save(module, buffer)
        buffer.seek(0)
        return torch.load(buffer)

    def test_whole_module_roundtrip(self):
        net = TinyNet()
        loaded = self._roundtrip(net)
        x = torch.ones(1, 3)
        self.assertEqual(loaded(x), net(x))

    def test_sequential_roundtrip(self):
        seq = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Tanh())
        loaded = self._roundtrip(seq)
        self.assertIsInstance(loaded[1], torch.nn.Tanh)


if __name__ == "__main__":
    run_tests()
