# Owner(s): ["oncall: quantization"]
"""Weight prepacking on every quantized engine the build lists (a bundled example for decouple).

`supported_engines` can name an engine this CPU cannot run: the A/B report's environment
facts include a prepack smoke test per engine for exactly that reason.
"""

import torch
from torch.testing._internal.common_quantized import override_quantized_engine
from torch.testing._internal.common_utils import run_tests, TestCase


def _engines():
    return [e for e in torch.backends.quantized.supported_engines if e != "none"]


class TestQuantizedEngine(TestCase):
    def test_current_engine_is_listed(self):
        self.assertIn(torch.backends.quantized.engine, torch.backends.quantized.supported_engines)

    def test_linear_prepack_roundtrip(self):
        weight = torch.quantize_per_tensor(torch.randn(4, 4), scale=0.1, zero_point=0, dtype=torch.qint8)
        for engine in _engines():
            with self.subTest(engine=engine), override_quantized_engine(engine):
                packed = torch.ops.quantized.linear_prepack(weight, None)
                unpacked, bias = torch.ops.quantized.linear_unpack(packed)
                self.assertEqual(unpacked.int_repr(), weight.int_repr())
                # qnnpack hands back a zero bias where the others keep None
                self.assertTrue(bias is None or not bias.any())


if __name__ == "__main__":
    run_tests()
