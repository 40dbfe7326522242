"""Generate a PyTorch-shaped test tree for benchmarks: many files, each with a few test
classes of the shapes the refactor meets (generic, device-instantiated, only_for, mixed).

    python scripts/make_corpus.py OUT_DIR [--files 600] [--seed 0]
"""

import argparse
import os
import random

HEADER_STYLES = [
    "import torch\nfrom torch.testing._internal.common_device_type import instantiate_device_type_tests\n"
    "from torch.testing._internal.common_utils import run_tests, TestCase\n",
    "import torch\nfrom torch.testing._internal.common_device_type import (\n    dtypes,\n"
    "    instantiate_device_type_tests,\n    onlyCUDA,\n)\nfrom torch.testing._internal.common_utils import (\n"
    "    instantiate_parametrized_tests,\n    parametrize,\n    run_tests,\n    TestCase,\n)\n",
    "import os\nimport sys\n\nimport torch\n\nsys.path.append(os.path.dirname(__file__))\n"
    "from torch.testing._internal.common_device_type import instantiate_device_type_tests  # noqa: E402\n"
    "from torch.testing._internal.common_utils import TestCase, run_tests  # noqa: E402\n",
]


def make_class(rng: random.Random, name: str) -> tuple[str, str]:
    kind = rng.choice(["generic", "generic", "accel", "cpu", "mixed"])
    device = kind != "generic"
    lines = [f"class {name}(TestCase):"]
    if rng.random() < 0.5:
        lines.append(f'    """Tests for {name}."""\n')
    for i in range(rng.randint(3, 12)):
        params = "self, device" if device and not (kind == "mixed" and i == 0) else "self"
        if rng.random() < 0.3:
            lines.append("    @parametrize(\"n\", [1, 2, 3])" if not device else "    @dtypes(torch.float32)")
            params += ", n" if not device else ", dtype"
        lines.append(f"    def test_case_{i}({params}):")
        lines.append("        x = torch.ones(3, device=device)" if device else "        x = torch.ones(3)")
        lines.append("        self.assertEqual(x.sum().item(), 3)\n")
    inst = ""
    if kind == "accel" or kind == "mixed":
        inst = f"instantiate_device_type_tests({name}, globals(), except_for=\"cpu\")\n"
    elif kind == "cpu":
        inst = f"instantiate_device_type_tests({name}, globals(), only_for=\"cpu\")\n"
    return "\n".join(lines) + "\n", inst


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--files", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    classes = 0
    for n in range(args.files):
        sub = os.path.join(args.out, "test", f"area{n % 12}")
        os.makedirs(sub, exist_ok=True)
        parts, insts = [rng.choice(HEADER_STYLES), "\n"], []
        for c in range(rng.randint(2, 8)):
            body, inst = make_class(rng, f"Test{n}Case{c}")
            parts.append("\n" + body + "\n")
            insts.append(inst)
            classes += 1
        parts.append("\n" + "".join(insts) + '\nif __name__ == "__main__":\n    run_tests()\n')
        with open(os.path.join(sub, f"test_generated_{n}.py"), "w") as f:
            f.write("".join(parts))
    print(f"{args.files} files, {classes} classes in {args.out}")


if __name__ == "__main__":
    main()
