"""A generated PyTorch-shaped checkout for the survey's tests and benchmark (written for this
project: no upstream file or code).

Folders like upstream's (test/, test/distributed/..., test/inductor, test/dynamo, test/jit, the
vendored test/cpython), `# Owner(s):` headers, test files of every shape the survey tells apart
(`KINDS`, with the status each must get under either generation of the rules), a stand-in
linter at tools/linter/adapters that rejects the files carrying a marker comment or an
unlabelled test class (the tool knows no such linter: `--rules auto` takes the nearest, gen2),
and an allowlist that shrinks over several commits (files labelled and graduated), with one
entry added and one file deleted on the way.

    make_tree(root, counts)   -> Tree (the files by kind, the history's expected sizes)
    python tests/survey_tree.py OUT [--files 1200]   (the benchmark's tree)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
from dataclasses import dataclass, field

ALLOWLIST = "tools/linter/adapters/test_linter_allowlist.json"
LINTER = "tools/linter/adapters/test_linter.py"
REJECT_MARK = "# stand-in linter: reject"

# The kind of file -> the status the survey must give it.
KINDS = {
    "generic": "ready",  # device-free tests: GENERIC
    "accelerator": "ready",  # instantiated, every test takes device: ACCELERATOR
    "cpu_only": "ready",  # instantiated only_for="cpu": CPU
    "labelled": "ready",  # labelled already: only the allowlist entry goes
    "torch_load": "ready",  # GENERIC, with bare torch.load calls (needs discovery)
    "gpu_guarded": "ready",  # not instantiated, CUDA-guarded: gen1 GENERIC (with a warning), gen2 CUDA
    "split": "restructure",  # a device-free test in an instantiated class: split-class
    "whitelist": "manual",  # only_for=("cpu", "cuda"): only drop-only-for fits, which widens (never by auto)
    "self_super": "manual",  # a mixed class naming itself in super(): the split is refused
    "meta": "manual",  # only_for=("cpu", "meta"): meta is on no default device list
    "no_tests": "ready",  # a helper module without test classes: the linter accepts it, graduate only
    "pytest_only": "ready",  # pytest test functions, no test class: graduate only
    "rejected": "manual",  # labels fit, but the checkout's linter rejects the output
    "syntax": "error",
}

# folder -> its owner header (None: the files carry none)
FOLDERS = {
    "test": "module: nn",
    "test/distributed": "oncall: distributed",
    "test/distributed/fsdp": "oncall: distributed",
    "test/inductor": "module: inductor",
    "test/dynamo": "module: dynamo",
    "test/jit": "oncall: jit",
    "test/profiler": None,
}
VENDORED = "test/cpython"  # excluded by default

STAND_IN_LINTER = f'''\
"""A stand-in for the upstream test linter, written for decouple's survey tests: it rejects
the files carrying the marker comment, and a file with a test class but no label at all (as
the real linter rejects an unlabelled class: the gate's canary); it says nothing else."""
import json
import re
import sys

for name in sys.argv[1:]:
    with open(name, encoding="utf-8") as f:
        text = f.read()
    unlabelled = re.search(r"^class Test", text, re.M) and "hw_classification" not in text
    if {REJECT_MARK!r} in text or unlabelled:
        print(json.dumps({{"path": name, "line": 1, "char": None, "code": "TEST_LINTER", "severity": "error",
                          "name": "[stand_in]", "original": None, "replacement": None,
                          "description": "the stand-in linter rejects this file"}}))
'''

HEAD = "import torch\nfrom torch.testing._internal.common_utils import run_tests, TestCase\n"
DEVICE_HEAD = (
    "import torch\nfrom torch.testing._internal.common_device_type import instantiate_device_type_tests\n"
    "from torch.testing._internal.common_utils import run_tests, TestCase\n"
)
LABELLED_HEAD = (
    "import torch\n"
    "from torch.testing._internal.common_utils import HardwareClassification, run_tests, TestCase\n"
)
MAIN = '\n\nif __name__ == "__main__":\n    run_tests()\n'


def _tests(rng: random.Random, n: int, device: bool, placed: str = "") -> str:
    """`n` tests; taking `device` and placing their data there, or placing it as `placed` says."""
    params = "self, device" if device else "self"
    where = ", device=device" if device else placed
    out = []
    for i in range(n):
        size = rng.randint(2, 9)
        out.append(
            f"    def test_case_{i}({params}):\n"
            f"        x = torch.ones({size}{where})\n"
            f"        self.assertEqual(x.sum().item(), {size})\n"
        )
    return "\n".join(out)


def _class(rng: random.Random, name: str, kind: str, n: int) -> str:
    if kind in ("generic", "torch_load", "rejected"):
        body = _tests(rng, n, device=False)
        if kind == "torch_load":
            body += (
                "\n    def test_roundtrip(self):\n        buf = io.BytesIO()\n"
                "        torch.save(torch.nn.Linear(2, 2), buf)\n        buf.seek(0)\n"
                "        self.assertIsInstance(torch.load(buf), torch.nn.Linear)\n"
            )
        return f"class {name}(TestCase):\n{body}\n"
    if kind == "labelled":
        return f"class {name}(TestCase):\n    hw_classification = HardwareClassification.GENERIC\n\n{_tests(rng, n, False)}\n"
    if kind in ("accelerator", "cpu_only", "whitelist", "meta"):
        option = {
            "accelerator": "",
            "cpu_only": ', only_for="cpu"',
            "whitelist": ', only_for=("cpu", "cuda")',
            "meta": ', only_for=("cpu", "meta")',
        }[kind]
        return f"class {name}(TestCase):\n{_tests(rng, n, True)}\n\ninstantiate_device_type_tests({name}, globals(){option})\n"
    if kind == "gpu_guarded":
        body = _tests(rng, n, device=False, placed=', device="cuda"')
        return f'@unittest.skipIf(not torch.cuda.is_available(), "needs CUDA")\nclass {name}(TestCase):\n{body}\n'
    if kind in ("split", "self_super"):
        setup = (
            f"    def setUp(self):\n        super({name}, self).setUp()\n\n" if kind == "self_super" else ""
        )
        plain = "    def test_plain(self):\n        self.assertTrue(True)\n\n"
        return f"class {name}(TestCase):\n{setup}{plain}{_tests(rng, n, True)}\n\ninstantiate_device_type_tests({name}, globals())\n"
    raise ValueError(kind)


def file_text(kind: str, stem: str, owner: str | None, rng: random.Random, classes: int = 1, tests: int = 3) -> str:
    header = f'# Owner(s): ["{owner}"]\n\n' if owner else ""
    if kind == "syntax":
        return header + HEAD + "\n\nclass Broken(TestCase):\n    def test_a(self:\n        pass\n"
    if kind == "no_tests":
        return header + "import torch\n\n\ndef make_inputs(n):\n    return [torch.ones(i) for i in range(n)]\n"
    if kind == "pytest_only":
        return header + "import torch\n\n\ndef test_ones():\n    assert torch.ones(2).sum().item() == 2\n"
    head = {"labelled": LABELLED_HEAD}.get(kind, HEAD)
    if kind in ("accelerator", "cpu_only", "whitelist", "meta", "split", "self_super"):
        head = DEVICE_HEAD
    if kind == "torch_load":
        head = "import io\n\n" + head
    if kind == "gpu_guarded":
        head = "import unittest\n\n" + head
    if kind in ("split", "self_super", "meta", "whitelist"):
        classes = 1  # the one class that needs the restructuring (or stays manual)
    parts = [header + head]
    if kind == "rejected":
        parts.append(f"{REJECT_MARK}\n")
    base = "".join(w.capitalize() for w in stem.removeprefix("test_").split("_"))
    for c in range(classes):
        parts.append("\n\n" + _class(rng, f"Test{base}{c if c else ''}", kind, tests))
    return "".join(parts) + MAIN


@dataclass
class Tree:
    root: str
    kinds: dict[str, str] = field(default_factory=dict)  # path relative to root -> kind
    vendored: list[str] = field(default_factory=list)  # allowlisted, excluded by default
    stale: list[str] = field(default_factory=list)  # allowlisted, file deleted
    history: list[int] = field(default_factory=list)  # the allowlist's size at each commit that changed it
    graduated: list[str] = field(default_factory=list)  # labelled and removed on the way

    def expected(self) -> dict[str, str]:
        return {p: KINDS[k] for p, k in self.kinds.items()}


def _write(root: str, rel: str, text: str) -> None:
    full = os.path.join(root, *rel.split("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def _git(root: str, *args: str, date: str | None = None) -> None:
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME="Survey Test",
        GIT_AUTHOR_EMAIL="survey@example.invalid",
        GIT_COMMITTER_NAME="Survey Test",
        GIT_COMMITTER_EMAIL="survey@example.invalid",
    )
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    subprocess.run(["git", "-C", root, *args], check=True, capture_output=True, env=env)


def _commit(root: str, message: str, date: str, allowlist: list[str]) -> None:
    _write(root, ALLOWLIST, json.dumps(sorted(allowlist), indent=2) + "\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", message, date=date)


def make_tree(root: str, counts: dict[str, int], seed: int = 0, size: tuple[int, int] = (1, 1)) -> Tree:
    """`counts`: how many files of each kind (spread over the folders); `size`: the most classes
    per file and tests per class (ready kinds; files get 1..size)."""
    rng = random.Random(seed)
    os.makedirs(root, exist_ok=True)
    _git(root, "init", "-q", "-b", "main")
    _write(root, LINTER, STAND_IN_LINTER)
    tree = Tree(root=root)
    folders = list(FOLDERS)
    n = 0
    for kind, count in counts.items():
        for i in range(count):
            folder = folders[n % len(folders)]
            n += 1
            stem = f"test_{kind}_{i}"
            rel = f"{folder}/{stem}.py"
            classes, tests = rng.randint(1, size[0]), rng.randint(3, 3 + size[1])
            _write(root, rel, file_text(kind, stem, FOLDERS[folder], rng, classes, tests))
            tree.kinds[rel] = kind
    for i in range(2):
        rel = f"{VENDORED}/test_vendored_{i}.py"
        _write(root, rel, file_text("generic", f"test_vendored_{i}", None, rng))
        tree.vendored.append(rel)
    # Files labelled upstream on the way, the deleted one, the late one.
    early = [f"test/test_graduated_{i}.py" for i in range(3)]
    for rel in early:
        _write(root, rel, file_text("generic", os.path.basename(rel)[:-3], "module: nn", rng))
    gone, late = "test/jit/test_removed.py", "test/dynamo/test_late.py"
    _write(root, gone, file_text("generic", "test_removed", "oncall: jit", rng))
    listed = sorted([*tree.kinds, *tree.vendored, *early, gone])
    late_kind = "generic"

    _commit(root, "tests and their allowlist", "2026-01-05T10:00:00+00:00", listed)
    tree.history.append(len(listed))
    for step, (rel, date) in enumerate(zip(early, ("2026-02-02", "2026-03-02", "2026-03-30"), strict=True)):
        _write(root, rel, file_text("labelled", os.path.basename(rel)[:-3], "module: nn", rng))
        listed.remove(rel)
        tree.graduated.append(rel)
        if step == 1:  # a new test file arrives on the allowlist; an old one is deleted, its entry kept
            _write(root, late, file_text(late_kind, "test_late", "module: dynamo", rng))
            listed.append(late)
            tree.kinds[late] = late_kind
            os.remove(os.path.join(root, *gone.split("/")))
        _commit(root, f"label and graduate {rel}", f"{date}T10:00:00+00:00", listed)
        tree.history.append(len(listed))
    tree.stale.append(gone)
    return tree


# A mix like the real allowlist's: most files one `refactor` away, a tenth restructured, a tenth manual.
BENCH_MIX = {
    "generic": 0.49,
    "accelerator": 0.14,
    "cpu_only": 0.04,
    "labelled": 0.04,
    "torch_load": 0.05,
    "split": 0.05,
    "whitelist": 0.04,
    "self_super": 0.04,
    "meta": 0.03,
    "no_tests": 0.05,
    "rejected": 0.02,
    "syntax": 0.01,
}


def bench_counts(files: int) -> dict[str, int]:
    counts = {k: int(files * share) for k, share in BENCH_MIX.items()}
    counts["generic"] += files - sum(counts.values())
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--files", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    tree = make_tree(args.out, bench_counts(args.files), seed=args.seed, size=(5, 20))
    print(f"{len(tree.kinds)} test files in {args.out}; allowlist sizes {tree.history}")


if __name__ == "__main__":
    main()
