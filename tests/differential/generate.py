"""A seeded generator of small PyTorch-style test files that exercise the linter's corners.

`generate(rng)` returns `(source, truth)`: `truth` maps each class name to what the
generator put there on purpose and what the rules cannot read from the letter:
  deviations  the tool's deliberate deviations the class is in (by what was generated)
  gpu         the class's tests carry GPU evidence (hard-coded "cuda", .cuda(), GPU skip guards)
  labelled    the class was generated with a label of its own
Nothing here imports the tool.
"""

from __future__ import annotations

import random

HEADER = (
    "import torch\n"
    "import unittest\n"
    "import torch.testing._internal.common_device_type as cdt\n"
    "from torch.testing._internal.common_utils import TestCase, run_tests\n"
    "from torch.testing._internal.common_device_type import instantiate_device_type_tests\n"
)

TEST_NAMES = ["test_add", "testAdd", "test", "test_mul_2"]
PARAMS = [
    ("self", False), ("self, device", True), ("self, devices", True), ("self, *devices", False),
    ("self, **device", False), ("self, *, device", True), ("self, device, /", True),
    ("self, dtype", False), ("self, device, dtype", True),
]
METHOD_DECORATORS = [
    ("", False), ("", False), ("@onlyCUDA\n", False), ("@onlyAccelerator\n", False),
    ("@cdt.onlyOn(['cuda'])\n", False), ("@onlyROCM\n", False), ("@dtypes(torch.float)\n", False),
    ("@onlyNativeDeviceTypes\n", False), ("@unittest.skipIf(not TEST_CUDA, 'no cuda')\n", True),
]
BODIES = [("pass", False), ("pass", False), ("x = torch.ones(1, device='cuda')", True),
          ("y = torch.ones(1).cuda()", True), ("self.assertEqual(1, 1)", False)]
CLASS_DECORATORS = [("", False, False), ("", False, False), ("@onlyCUDA\n", True, False),
                    ("@onlyAccelerator\n", False, False),
                    ("@unittest.skipIf(not TEST_GPU, 'gpu')\n", False, True)]
LABELS = ["hw_classification = HardwareClassification.{}",
          "hw_classification: HardwareClassification = HardwareClassification.{}",
          "hw_classification = HC.{}", "hw_classification = HardwareClassification.GPU"]
MEMBERS = ["GENERIC", "ACCELERATOR", "CPU", "CUDA", "MPS", "XPU"]
ONLY_FOR = [None, "only_for=None", "only_for='cpu'", "only_for='cuda'", "only_for='CUDA'",
            "only_for=['cuda']", "only_for=('mps',)", "only_for='xpu'", "only_for=('cuda', 'xpu')",
            "only_for=[]", "only_for=DEVICES", "only_for=['cuda', OTHER]"]
EXCEPT_FOR = [None, None, "except_for='cpu'", "except_for=('cpu',)", "except_for=SKIPPED",
              "except_for=None"]
FLAGS = [None, None, "{}=True", "{}=False", "{}=None", "{}=HAS_IT"]

CLEAN_OPTIONS = ["", "except_for='cpu'", "only_for='cpu'", "only_for='cuda'", "only_for=['cuda']",
                 "only_for='mps', allow_mps=True", "only_for=('xpu',), allow_xpu=True",
                 "only_for='mps', allow_mps=MACOS_15"]

# Where a class or an instantiation goes: (opening lines, indent, visible to the linter?)
SCANNED = ["module", "if", "else", "try", "except", "tryelse", "finally", "with", "for", "forelse",
           "while", "whileelse"]
HIDDEN = ["trystar", "match"]


def wrap(where: str, text: str) -> str:
    """`text` (module-level lines) placed under `where`."""
    ind = "".join("    " + line if line.strip() else line for line in text.splitlines(True))
    ind2 = "".join("        " + line if line.strip() else line for line in text.splitlines(True))
    return {
        "module": text,
        "if": "if COND:\n" + ind,
        "else": "if COND:\n    pass\nelse:\n" + ind,
        "try": "try:\n" + ind + "except ImportError:\n    pass\n",
        "except": "try:\n    pass\nexcept ImportError:\n" + ind,
        "tryelse": "try:\n    pass\nexcept ImportError:\n    pass\nelse:\n" + ind,
        "finally": "try:\n    pass\nfinally:\n" + ind,
        "with": "with ctx():\n" + ind,
        "for": "for _i in range(1):\n" + ind,
        "forelse": "for _i in range(1):\n    pass\nelse:\n" + ind,
        "while": "while COND:\n" + ind + "    break\n",
        "whileelse": "while COND:\n    break\nelse:\n" + ind,
        "trystar": "try:\n    pass\nexcept* ValueError:\n" + ind,
        "match": "match COND:\n    case _:\n" + ind2,
        "function": "def _load():\n" + ind,
    }[where]


def _class(rng: random.Random, name: str) -> tuple[str, dict]:
    truth = {"deviations": set(), "gpu": False, "labelled": False}
    dec, forbidden, gpu_class = rng.choice(CLASS_DECORATORS)
    truth["class_forbidden"] = forbidden
    truth["gpu"] |= gpu_class
    lines = [f"{dec}class {name}(TestCase):\n"]
    if rng.random() < 0.15:
        truth["labelled"] = True
        lines.append("    " + rng.choice(LABELS).format(rng.choice(MEMBERS)) + "\n")
    device_style = rng.random()
    for i in range(rng.randint(1, 3)):
        params, _ = rng.choice(PARAMS[1:3] if device_style < 0.4 else PARAMS[:1] if device_style < 0.7
                               else PARAMS)
        mdec, gpu_guard = rng.choice(METHOD_DECORATORS)
        body, gpu_body = rng.choice(BODIES)
        truth["gpu"] |= gpu_guard or gpu_body
        kw = "async def" if rng.random() < 0.1 else "def"
        test = rng.choice(TEST_NAMES) + (f"_{i}" if i else "")
        lines.append("".join("    " + x + "\n" for x in mdec.splitlines()))
        lines.append(f"    {kw} {test}({params}):\n        {body}\n")
    if rng.random() < 0.3:
        lines.append("    def _test_helper(self, device):\n        pass\n")
    return "".join(lines), truth


def _call(rng: random.Random, name: str) -> tuple[str, bool]:
    """An instantiate_device_type_tests call; True when options are out of the linter's sight."""
    args = [name, "globals()"]
    hidden_options = False
    r = rng.random()
    if r < 0.07:
        args += ["None", rng.choice(["'cuda'", "'cpu'", "None"])]
        hidden_options = True
    elif r < 0.12:
        args += ["*EXTRA"]
        hidden_options = True
    if rng.random() < 0.5:  # the shapes real files use: the rules can pass
        args.append(rng.choice(CLEAN_OPTIONS))
        func = rng.choice(["instantiate_device_type_tests", "cdt.instantiate_device_type_tests"])
        return f"{func}({', '.join(a for a in args if a)})\n", hidden_options
    for choices in (ONLY_FOR, EXCEPT_FOR):
        opt = rng.choice(choices)
        if opt:
            args.append(opt)
    for flag in ("allow_mps", "allow_xpu"):
        opt = rng.choice(FLAGS)
        if opt:
            args.append(opt.format(flag))
    if rng.random() < 0.05:
        args.append("**OPTIONS")
        hidden_options = True
    func = rng.choice(["instantiate_device_type_tests", "cdt.instantiate_device_type_tests"])
    return f"{func}({', '.join(args)})\n", hidden_options


def generate(rng: random.Random) -> tuple[str, dict]:
    parts = [HEADER]
    truth: dict = {}
    names = [f"Test{c}" for c in "ABC"[: rng.randint(1, 3)]]
    for name in names:
        where = rng.choice(SCANNED + ["module"] * 6 + (["trystar", "match", "function"] if rng.random() < 0.1 else []))
        text, t = _class(rng, name)
        if rng.random() < 0.05 and where in SCANNED:  # defined twice: the last one counts
            parts.append(wrap(rng.choice(SCANNED), _class(rng, name)[0]))
        parts.append(wrap(where, text))
        t["scanned"] = where not in HIDDEN + ["function"]
        truth[name] = t
    if rng.random() < 0.1:
        parts.append("class Helper:\n    pass\n")
        names.append("Helper")
        truth["Helper"] = {"deviations": set(), "gpu": False, "labelled": False, "scanned": True,
                           "class_forbidden": False}
    for name in names:
        visible = hidden = 0
        for _ in range(rng.choice([0, 1, 1, 1, 2])):
            where = rng.choice(SCANNED + ["module"] * 8 + HIDDEN + ["function"])
            call, out_of_sight = _call(rng, name)
            parts.append(wrap(where, call))
            if where in HIDDEN:
                hidden += 1
            elif where != "function":
                visible += 1
                if out_of_sight:
                    truth[name]["deviations"].add("options-out-of-sight")
        if hidden and not visible:
            truth[name]["deviations"].add("hidden-instantiation")
        if truth[name]["class_forbidden"]:
            truth[name]["deviations"].add("class-only-decorator")
        if rng.random() < 0.1:
            parts.append(f"instantiate_parametrized_tests({name})\n")
    parts.append("if __name__ == '__main__':\n    run_tests()\n")
    return "".join(parts), truth


# Values each deviation refuses (the linter would accept them; they would be false).
REFUSES = {
    "options-out-of-sight": set(MEMBERS),
    "class-only-decorator": {"ACCELERATOR"},
    "hidden-instantiation": set(MEMBERS),
}
