"""A seeded generator of small PyTorch-style test files that exercise the linter's corners.

`generate(rng)` returns `(source, truth)`: `truth` maps each class name to what the
generator put there on purpose and what the rules cannot read from the letter:
  deviations  the tool's deliberate deviations the class is in (by what was generated)
  gpu         the class or its tests need a device (a guard, data placed on one, a device API
              called); a device used only as a value, a probe, an attribute write are no need
  needs       per test (in order): (takes device, the device it needs or None, the one device
              an @only<X> guard keeps or None)
  class_need  the device every test of the class needs (class decorator, setUp, an `if` around
              the class, a guarded run_tests()), or None
A test that calls the class's `_helper` needs what the helper needs (one level); an accelerator
no label names (`if torch.mtia.is_available() ...` around a class) counts as "gpu".
  labelled    the class was generated with a label of its own
  redefined   the class is defined twice (which one the linter checks depends on the scan order)
The shapes include accelerator calls the newer linter flags (in methods, their decorators and
defaults, class attributes, nested functions, lambdas, `torch.backends.cuda.matmul....()`) and
the ones it does not (aliases, getattr, attribute reads and writes).
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
    ("self, dtype", False), ("self, device, dtype", True), ("self, n=torch.cuda.device_count()", False),
]
# (decorator, the device the test then needs, the one device an @only guard keeps)
METHOD_DECORATORS = [
    ("", None, None), ("", None, None), ("@onlyCUDA\n", None, "CUDA"), ("@onlyAccelerator\n", None, None),
    ("@cdt.onlyOn(['cuda'])\n", None, None), ("@onlyROCM\n", None, None), ("@dtypes(torch.float)\n", None, None),
    ("@onlyNativeDeviceTypes\n", None, None), ("@unittest.skipIf(not TEST_CUDA, 'no cuda')\n", "CUDA", None),
    ("@unittest.skipIf(not torch.cuda.is_available(), 'cuda')\n", "CUDA", None), ("@requires_cuda\n", "CUDA", None),
    ("@requires_gpu_and_triton\n", "gpu", None), ("@unittest.skipIf(torch.accelerator.is_available(), 'cpu')\n", None, None),
    ("@onlyCPU\n", None, "CPU"), ("@skip_if_lt_x_gpu(2)\n", "gpu", None),
]
# A body that calls the class's `_helper`: it needs what that helper needs (if the class has one).
HELPER = "helper"
# (body, the device the test then needs)
BODIES = [
    ("pass", None), ("pass", None), ("x = torch.ones(1, device='cuda')", "CUDA"),
    ("y = torch.ones(1).cuda()", "CUDA"), ("self.assertEqual(1, 1)", None), ("torch.cuda.synchronize()", "CUDA"),
    ("z = torch.ones(2, device=GPU_TYPE)", "gpu"), ("d = torch.device('cuda:0')\n        hash(d)", None),
    ("torch.backends.cuda.matmul.allow_tf32 = True", None), ("torch.backends.cuda.matmul.set_flags(True)", "CUDA"),
    ("th.cuda.is_available()", None), ("getattr(torch, 'cuda').is_available()", None),
    ("p = torch.cuda.get_device_properties(0).total_memory", "CUDA"), ("torch.cuda.device(0).__enter__()", "CUDA"),
    ("torch.foo('a.cuda.b').bar()", None), ("def inner():\n            torch.cuda.synchronize()\n        inner()", "CUDA"),
    ("f = lambda: torch.xpu.synchronize()\n        f()", "XPU"), ("w = torch.ones(2).to('xpu')", "XPU"),
    ("if torch.accelerator.is_available():\n            pass", None), ("torch.mps.synchronize()", "MPS"),
    ("self._helper()", HELPER),
]
# (decorator, forbidden @only on the class, the device every test then needs, the one device it keeps)
CLASS_DECORATORS = [("", False, None, None), ("", False, None, None), ("@onlyCUDA\n", True, None, "CUDA"),
                    ("@onlyAccelerator\n", False, None, None),
                    ("@unittest.skipIf(not TEST_GPU, 'gpu')\n", False, "gpu", None),
                    ("@unittest.skipIf(not torch.cuda.is_available(), 'cuda')\n", False, "CUDA", None),
                    ("@requires_cuda\n", False, "CUDA", None)]
# Class members besides the tests: (text, the device every test then needs)
CLASS_MEMBERS = [
    ("", None), ("", None), ("", None), ("    N = torch.xpu.device_count()\n", None),
    ("    F = staticmethod(lambda: torch.mps.synchronize())\n", None),
    ("    USE = torch.backends.cuda.matmul.allow_tf32\n", None),
    ("    def setUp(self):\n        torch.cuda.synchronize()\n", "CUDA"),
    ("    def _helper(self):\n        torch.cuda.empty_cache()\n", None),
    ("    def _helper(self):\n        return 1\n", None),
]
# What a test that calls `_helper` needs, by the class member that defines it.
HELPER_NEEDS = {CLASS_MEMBERS[-2][0]: "CUDA"}
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
           "while", "whileelse", "ifcuda", "ifmtia"]
HIDDEN = ["trystar", "match"]


def wrap(where: str, text: str) -> str:
    """`text` (module-level lines) placed under `where`."""
    ind = "".join("    " + line if line.strip() else line for line in text.splitlines(True))
    ind2 = "".join("        " + line if line.strip() else line for line in text.splitlines(True))
    return {
        "module": text,
        "if": "if COND:\n" + ind,
        "ifcuda": "if TEST_CUDA:\n" + ind,
        "ifmtia": "if torch.mtia.is_available() and COND:\n" + ind,
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
    truth = {"deviations": set(), "gpu": False, "labelled": False, "needs": [], "class_need": None}
    dec, forbidden, class_need, class_keeps = rng.choice(CLASS_DECORATORS)
    truth["class_forbidden"] = forbidden
    truth["class_need"] = class_need
    truth["class_keeps"] = class_keeps
    lines = [f"{dec}class {name}(TestCase):\n"]
    if rng.random() < 0.15:
        truth["labelled"] = True
        lines.append("    " + rng.choice(LABELS).format(rng.choice(MEMBERS)) + "\n")
    member, member_need = rng.choice(CLASS_MEMBERS)
    lines.append(member)
    truth["class_need"] = _one(truth["class_need"], member_need)
    device_style = rng.random()
    for i in range(rng.randint(1, 3)):
        params, takes = rng.choice(PARAMS[1:3] if device_style < 0.4 else PARAMS[:1] if device_style < 0.7
                                   else PARAMS)
        mdec, dec_need, keeps = rng.choice(METHOD_DECORATORS)
        body, body_need = rng.choice(BODIES)
        if body_need == HELPER:
            body_need = HELPER_NEEDS.get(member)
        kw = "async def" if rng.random() < 0.1 else "def"
        test = rng.choice(TEST_NAMES) + (f"_{i}" if i else "")
        lines.append("".join("    " + x + "\n" for x in mdec.splitlines()))
        lines.append(f"    {kw} {test}({params}):\n        {body}\n")
        truth["needs"].append((takes, _one(dec_need, body_need), keeps))
    truth["gpu"] = bool(truth["class_need"]) or any(n for _, n, _ in truth["needs"])
    if rng.random() < 0.3:
        lines.append("    def _test_helper(self, device):\n        pass\n")
    return "".join(lines), truth


def _one(*needs):
    """The device a test needs from several pieces of evidence: the one specific device, else
    "gpu" (some accelerator), else None; "several" when they name different devices."""
    specific = {n for n in needs if n and n != "gpu"}
    if len(specific) > 1:
        return "several"
    return specific.pop() if specific else ("gpu" if "gpu" in needs else None)


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
            parts.append(wrap(rng.choice([w for w in SCANNED if w not in ("ifcuda", "ifmtia")]), _class(rng, name)[0]))
            t["redefined"] = True
        parts.append(wrap(where, text))
        t["scanned"] = where not in HIDDEN + ["function"]
        if where in ("ifcuda", "ifmtia"):
            t["class_need"] = _one(t["class_need"], "CUDA" if where == "ifcuda" else "gpu")
            t["gpu"] = True
        truth[name] = t
    if rng.random() < 0.1:
        parts.append("class Helper:\n    pass\n")
        names.append("Helper")
        truth["Helper"] = {"deviations": set(), "gpu": False, "labelled": False, "scanned": True,
                           "class_forbidden": False, "needs": [], "class_need": None, "class_keeps": None}
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
    if rng.random() < 0.08:  # the module runs its tests only with a GPU: every class needs one
        parts.append("if __name__ == '__main__':\n    if HAS_GPU:\n        run_tests()\n")
        for t in truth.values():
            t["class_need"] = _one(t["class_need"], "gpu")
            t["gpu"] = True
    else:
        parts.append("if __name__ == '__main__':\n    run_tests()\n")
    return "".join(parts), truth


# Values each deviation refuses (the linter would accept them; they would be false).
REFUSES = {
    "options-out-of-sight": set(MEMBERS),
    "class-only-decorator": {"ACCELERATOR"},
    "hidden-instantiation": set(MEMBERS),
}
