"""Differential tests: the tool against an independent statement of the linter's rules.

A seeded generator (tests/differential/generate.py) writes small PyTorch-style test
files full of the linter's corner cases; the expected findings come from
tests/differential/linter_model.py, a table-driven re-statement of the rules that
imports nothing from the tool. For every file:
  1. the tool's prediction of the linter's messages (`lint_module`) equals the model's;
  2. the tool's output (the transform, run in-process) carries no label the model rejects;
  3. every class the tool does not label as the model would is one of the documented
     deliberate deviations the generator put there, and the tool then leaves it for manual work;
  4. a GENERIC label on tests with GPU evidence comes with the warning, and only then.
`DECOUPLE_DIFF_SEEDS` (default "1,2") and `DECOUPLE_DIFF_FILES` (per seed, default 1000) scale it.

With `DECOUPLE_UPSTREAM_LINTER=/path/to/test_linter.py`, the same files also go through a real
upstream linter (run on a temporary mirror with an empty allowlist): its messages must equal the
model's on the inputs, and it must reject no label the tool wrote.
"""

from __future__ import annotations

import ast
import json
import os
import random
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from differential.generate import REFUSES, generate
from differential.linter_model import accepted_values, collect, model_messages
from transforms.core.analysis import analyse
from transforms.label import HwLabel
from transforms.rules.linter import lint_module

SEEDS = [int(s) for s in os.environ.get("DECOUPLE_DIFF_SEEDS", "1,2").split(",") if s.strip()]
FILES = int(os.environ.get("DECOUPLE_DIFF_FILES", "1000"))


def corpus(seed: int, n: int = FILES):
    rng = random.Random(seed)
    return [generate(rng) for _ in range(n)]


def tool_messages(source: str):
    return sorted((m.name, m.line) for m in lint_module(analyse(ast.parse(source), source)))


def compare(source: str, truth: dict, stats: Counter) -> list[str]:
    """The differences between tool and model on one file (empty: they agree)."""
    problems = []
    predicted, expected_messages = tool_messages(source), model_messages(source)
    if predicted != expected_messages:
        problems.append(f"prediction {predicted} != model {expected_messages}")
    result = HwLabel().run(source, ast.parse(source))
    decisions = {f.cls: f for f in result.findings if f.rule.startswith("hw/") and "status" in f.data}
    warned = {f.cls for f in result.findings if f.rule == "hw/generic-needs-gpu"}
    after = accepted_values(result.text)
    out_messages = model_messages(result.text)
    for name, (line, accepted) in accepted_values(source).items():
        t = truth[name]
        if t["labelled"]:
            continue
        stats["classes"] += 1
        d = decisions[name]
        wrote = d.data["value"] if d.data["status"] == "label" else None
        if wrote is not None:
            new_line = after[name][0]
            own = [m for m in out_messages if m[1] == new_line and not m[0].startswith("[duplicate")]
            if own or wrote not in after[name][1]:
                problems.append(f"{name}: wrote {wrote}, the model rejects it")
                stats["rejected labels"] += 1
        expected = accepted[0] if accepted else None
        refused = set().union(*(REFUSES[x] for x in t["deviations"])) if t["deviations"] else set()
        if expected is not None:
            stats["the linter accepts a value"] += 1
            stats["labelled as the linter accepts"] += wrote == expected
        if wrote == expected:
            stats["agree"] += 1
        elif wrote is None and expected in refused:
            stats["deviation " + "+".join(sorted(t["deviations"]))] += 1
        else:
            problems.append(f"{name}: tool {wrote}, model {expected}, deviations {sorted(t['deviations'])}")
        if expected in refused and wrote is not None:
            problems.append(f"{name}: labelled {wrote} despite deviation {sorted(t['deviations'])}")
        if wrote == "GENERIC" and t["gpu"] != (name in warned):
            problems.append(f"{name}: GPU evidence {t['gpu']} but warning {name in warned}")
    return problems


@pytest.mark.parametrize("seed", SEEDS)
def test_tool_agrees_with_the_model_on_generated_files(seed):
    stats: Counter = Counter()
    failures = []
    for i, (source, truth) in enumerate(corpus(seed)):
        problems = compare(source, truth, stats)
        if problems:
            failures.append(f"--- seed {seed} file {i}\n{source}\n" + "\n".join(problems))
    assert not failures, f"{len(failures)} file(s) differ; first:\n{failures[0]}"
    # The generator reaches every corner it is meant to (else the test proves little).
    assert stats["classes"] > FILES
    assert stats["rejected labels"] == 0
    for dev in REFUSES:
        assert any(dev in k for k in stats if k.startswith("deviation")), (dev, stats)
    print(dict(stats))


def test_generator_is_deterministic_and_varied():
    a, b = corpus(7, 50), corpus(7, 50)
    assert a == b
    assert len({src for src, _ in a}) == 50
    sources = "".join(src for src, _ in corpus(3, 400))
    for needle in ("testAdd", "*devices", "**device", "except* ValueError", "while COND", "for _i in",
                   "**OPTIONS", "allow_mps=HAS_IT", "match COND", "None, 'cuda'"):
        assert needle in sources, needle


# --------------------------------------------------------------------------- a real upstream linter

UPSTREAM = os.environ.get("DECOUPLE_UPSTREAM_LINTER")


def _run_upstream(linter: str, root, sources: list[str]) -> dict[int, list]:
    adapters = root / "tools" / "linter" / "adapters"
    adapters.mkdir(parents=True)
    shutil.copyfile(linter, adapters / "test_linter.py")
    (adapters / "test_linter_allowlist.json").write_text("[]\n")
    (root / "test").mkdir()
    paths = []
    for i, src in enumerate(sources):
        p = root / "test" / f"test_gen_{i}.py"
        p.write_text(src, encoding="utf-8")
        paths.append(str(p))
    found: dict[int, list] = {i: [] for i in range(len(sources))}
    for start in range(0, len(paths), 400):
        proc = subprocess.run([sys.executable, str(adapters / "test_linter.py"), *paths[start:start + 400]],
                              capture_output=True, text=True, timeout=1800, cwd=root)
        assert proc.returncode == 0, proc.stderr[-2000:]
        for line in proc.stdout.splitlines():
            msg = json.loads(line)
            if msg["severity"] != "error":
                continue
            i = int(os.path.basename(msg["path"])[len("test_gen_"):-3])
            found[i].append((msg["name"], msg["line"] or 0))
    return {i: sorted(v) for i, v in found.items()}


@pytest.mark.skipif(not UPSTREAM, reason="set DECOUPLE_UPSTREAM_LINTER=/path/to/test_linter.py")
@pytest.mark.parametrize("seed", SEEDS)
def test_real_upstream_linter(seed, tmp_path):
    files = corpus(seed)
    sources = [src for src, _ in files]
    outputs = [HwLabel().run(src, ast.parse(src)).text for src in sources]
    before = _run_upstream(UPSTREAM, tmp_path / "in", sources)
    after = _run_upstream(UPSTREAM, tmp_path / "out", outputs)
    stats: Counter = Counter()
    mismatches, rejected, labels = [], [], 0
    for i, (src, truth) in enumerate(files):
        if before[i] != model_messages(src):
            mismatches.append((i, "input", before[i], model_messages(src)))
        if after[i] != model_messages(outputs[i]):
            mismatches.append((i, "output", after[i], model_messages(outputs[i])))
        labelled = {f.cls for f in HwLabel().run(src, ast.parse(src)).findings if f.rule == "hw/label"}
        labels += len(labelled)
        classes, calls, _ = collect(outputs[i])
        for name in labelled:
            cls = classes[name]
            lines = set(range(cls.lineno, cls.end_lineno + 1))
            if name in calls:
                lines.add(calls[name].lineno)
            rejected += [(i, name, m) for m in after[i] if m[1] in lines and not m[0].startswith("[duplicate")]
        compare(src, truth, stats)
    summary = {"seed": seed, "files": len(files), "labels written": labels,
               "labels the upstream linter rejects": len(rejected),
               "upstream == model (inputs and outputs)": not mismatches, **stats}
    print(json.dumps(summary, sort_keys=True))
    assert not mismatches, mismatches[:3]
    assert not rejected, rejected[:3]
