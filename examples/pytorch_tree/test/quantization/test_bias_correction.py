# Owner(s): ["oncall: quantization"]

import torch
from torch.testing._internal.common_quantization import QuantizationTestCase, skipIfNoFBGEMM


class TestBiasCorrectionExample(QuantizationTestCase):
    @skipIfNoFBGEMM
    def test_linear_chain(self):
        self.assertIsNotNone(torch.nn.Linear(2, 2))

    @skipIfNoFBGEMM
    def test_conv_chain(self):
        self.assertIsNotNone(torch.nn.Conv2d(1, 1, 1))
