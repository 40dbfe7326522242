"""Differential tests: the tool against an independent statement of the linter's rules, both generations.

A seeded generator (tests/differential/generate.py) writes small PyTorch-style test files full
of the linter's corner cases (for the newer generation: accelerator calls in methods, their
decorators and defaults, class attributes, nested functions, lambdas, and the calls it does not
flag); the expected findings come from tests/differential/linter_model.py, a table-driven
re-statement of both generations' rules that imports nothing from the tool. For every file and
generation:
  1. the tool's prediction of the linter's messages (`lint_module`) equals the model's;
  2. the tool's output (the transform, run in-process) carries no label the model rejects;
  3. the tool writes the value that is true (read from the model and what the generator put
     there) when the generation accepts it, else the one value the generation leaves, else
     nothing; a value it does not write is one a documented deliberate deviation refuses;
  4. a GENERIC label on a class whose tests need a device comes with the warning, and only then.
`DECOUPLE_DIFF_SEEDS` (default "1,2") and `DECOUPLE_DIFF_FILES` (per seed, default 1000) scale it.

With `DECOUPLE_UPSTREAM_LINTER=/path/to/test_linter.py` (either generation: the tool identifies
it, and it must be exactly one it knows), the same files also go through that real linter (on a
temporary mirror with an empty allowlist): its messages must equal the model's on the inputs and
the outputs, it must reject no label the tool wrote, and where it has `--regenerate`, the files
it would drop from the allowlist are the ones the gate graduates.
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
from differential.linter_model import (
    ABSENT,
    FORBIDDEN,
    OPAQUE,
    accelerator_call_lines,
    accepted_values,
    collect,
    is_test_def,
    last_name,
    model_messages,
    string_list,
    takes_device,
)
from transforms.core.analysis import analyse
from transforms.core.words import plural
from transforms.label import HwLabel
from transforms.rules.generations import GENERATIONS, lint_module
from transforms.rules.identify import identify

SEEDS = [int(s) for s in os.environ.get("DECOUPLE_DIFF_SEEDS", "1,2").split(",") if s.strip()]
FILES = int(os.environ.get("DECOUPLE_DIFF_FILES", "1000"))
DEVICE_VALUES = {"CUDA", "XPU", "MPS"}


def corpus(seed: int, n: int = FILES):
    rng = random.Random(seed)
    return [generate(rng) for _ in range(n)]


def tool_messages(source: str, gen: str):
    return sorted((m.name, m.line) for m in lint_module(analyse(ast.parse(source), source), GENERATIONS[gen]))


def true_value(source: str, name: str, t: dict) -> str | None:
    """The value the class's mechanics and its tests' needs make true: the checked call read
    with the model, the needs and guards from what the generator put there."""
    classes, calls, _ = collect(source)
    cls, inst = classes[name], calls.get(name)
    tests = [s for s in cls.body if is_test_def(s)]
    if inst is not None:
        only = string_list(inst, "only_for")
        if only == OPAQUE:
            return None
        if only != ABSENT:
            named = {d.lower() for d in only}
            return named.pop().upper() if len(named) == 1 and named <= {"cpu", "cuda", "mps", "xpu"} else None
        if not tests or not all(takes_device(m) for m in tests):
            return None
        guards = [{k for k in (keeps, t["class_keeps"]) if k} for _, _, keeps in t["needs"]]
        ones = {next(iter(g)) if len(g) == 1 else None for g in guards}
        if len(ones) == 1 and None not in ones:
            return ones.pop()
        if t["class_keeps"] or any(last_name(d) in FORBIDDEN for m in tests for d in m.decorator_list):
            return None
        return "ACCELERATOR"
    if any(takes_device(m) for m in tests):
        return None
    specific = set()
    for _, need, _ in t["needs"]:
        both = {n for n in (need, t["class_need"]) if n and n != "gpu"}
        specific.add(both.pop() if len(both) == 1 and "several" not in both else None)
    if len(specific) == 1 and specific <= DEVICE_VALUES:
        return specific.pop()
    return "GENERIC"


def compare(source: str, truth: dict, gen: str, stats: Counter) -> list[str]:
    """The differences between tool and model on one file (empty: they agree)."""
    problems = []
    predicted, expected_messages = tool_messages(source, gen), model_messages(source, gen)
    if predicted != expected_messages:
        problems.append(f"prediction {predicted} != model {expected_messages}")
    result = HwLabel(rules=gen).run(source, ast.parse(source))
    if tool_messages(result.text, gen) != model_messages(result.text, gen):  # labelled: every rule at work
        problems.append(f"output: prediction {tool_messages(result.text, gen)} != model {model_messages(result.text, gen)}")
    decisions = {f.cls: f for f in result.findings if f.rule.startswith("hw/") and "status" in f.data}
    warned = {f.cls for f in result.findings if f.rule == "hw/generic-needs-gpu"}
    after = accepted_values(result.text, gen)
    out_messages = model_messages(result.text, gen)
    for name, (line, accepted) in accepted_values(source, gen).items():
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
        refused = set().union(*(REFUSES[x] for x in t["deviations"])) if t["deviations"] else set()
        true = None if t.get("redefined") else true_value(source, name, t)
        one = accepted[0] if len(accepted) == 1 else None
        candidate = true if true in accepted else one
        stats["the linter accepts a value"] += bool(accepted)
        stats["labelled"] += wrote is not None
        if t.get("redefined"):  # the generator's truth is the other definition's: acceptance only
            stats["redefined"] += 1
        elif wrote == candidate and wrote is not None:
            stats["agree"] += 1
            stats["agree (true value)" if wrote == true else "agree (the one value the rules leave)"] += 1
        elif wrote is None and candidate in refused:
            stats["deviation " + "+".join(sorted(t["deviations"]))] += 1
        elif wrote is None and candidate is None:
            stats["manual: no value is both true and accepted"] += 1
        else:
            problems.append(
                f"{name}: tool {wrote}, expected {candidate} (true {true}, accepted {accepted}), "
                f"deviations {sorted(t['deviations'])}"
            )
        if candidate in refused and wrote is not None:
            problems.append(f"{name}: labelled {wrote} despite deviation {sorted(t['deviations'])}")
        if wrote == "GENERIC" and t["gpu"] != (name in warned) and not t.get("redefined"):
            problems.append(f"{name}: device needs {t['gpu']} but warning {name in warned}")
    return problems


@pytest.mark.parametrize("gen", list(GENERATIONS))
@pytest.mark.parametrize("seed", SEEDS)
def test_tool_agrees_with_the_model_on_generated_files(seed, gen):
    stats: Counter = Counter()
    failures = []
    for i, (source, truth) in enumerate(corpus(seed)):
        problems = compare(source, truth, gen, stats)
        if problems:
            failures.append(f"--- seed {seed} file {i}\n{source}\n" + "\n".join(problems))
    assert not failures, f"{plural(len(failures), 'file differs', 'files differ')}; first:\n{failures[0]}"
    # The generator reaches every corner it is meant to (else the test proves little).
    assert stats["classes"] > FILES
    assert stats["rejected labels"] == 0
    for dev in REFUSES:
        assert any(dev in k for k in stats if k.startswith("deviation")), (dev, stats)
    assert stats["agree (true value)"] > FILES / 4, stats
    if gen == "gen2":
        assert stats["agree (true value)"] > stats["agree (the one value the rules leave)"], stats
    print(gen, dict(stats))


def test_generator_is_deterministic_and_varied():
    a, b = corpus(7, 50), corpus(7, 50)
    assert a == b
    assert len({src for src, _ in a}) == 50
    sources = "".join(src for src, _ in corpus(3, 400))
    for needle in ("testAdd", "*devices", "**device", "except* ValueError", "while COND", "for _i in",
                   "**OPTIONS", "allow_mps=HAS_IT", "match COND", "None, 'cuda'", "torch.cuda.synchronize()",
                   "torch.backends.cuda.matmul.set_flags(True)", "n=torch.cuda.device_count()",
                   "N = torch.xpu.device_count()", "lambda: torch.xpu.synchronize()", "def inner():",
                   "th.cuda.is_available()", "getattr(torch, 'cuda')", "torch.backends.cuda.matmul.allow_tf32",
                   "@unittest.skipIf(not torch.cuda.is_available()", "if TEST_CUDA:", "if HAS_GPU:",
                   "@skip_if_lt_x_gpu(2)", "self._helper()", "if torch.mtia.is_available() and COND:"):
        assert needle in sources, needle


def test_the_newer_rules_see_calls_the_older_do_not():
    """The same generated files under both models: only gen2 flags accelerator calls (on the
    classes the tool labelled GENERIC too), only gen1 checks the device values and reports
    duplicates (so the two are really different)."""
    names: dict[str, Counter] = {gen: Counter() for gen in GENERATIONS}
    calls = 0
    for source, _ in corpus(11, 300):
        for gen in GENERATIONS:
            names[gen].update(name for name, _ in model_messages(source, gen))
        calls += sum(len(accelerator_call_lines(cls)) for cls in collect(source)[0].values())
    assert calls > 300 and names["gen2"]["[accelerator_availability]"] and not names["gen1"]["[accelerator_availability]"]
    assert names["gen1"]["[except_for]"] and not names["gen2"]["[except_for]"]
    assert names["gen1"]["[duplicate_class]"] and not names["gen2"]["[duplicate_class]"]


# --------------------------------------------------------------------------- a real upstream linter

UPSTREAM = os.environ.get("DECOUPLE_UPSTREAM_LINTER")


def _mirror(linter: str, root, sources: list[str], allowlisted: bool = False) -> list[str]:
    adapters = root / "tools" / "linter" / "adapters"
    adapters.mkdir(parents=True)
    shutil.copyfile(linter, adapters / "test_linter.py")
    (root / "test").mkdir()
    paths = []
    for i, src in enumerate(sources):
        p = root / "test" / f"test_gen_{i}.py"
        p.write_text(src, encoding="utf-8")
        paths.append(str(p))
    entries = [f"test/test_gen_{i}.py" for i in range(len(sources))] if allowlisted else []
    (adapters / "test_linter_allowlist.json").write_text(json.dumps(entries, indent=2) + "\n")
    return paths


def _run_upstream(linter: str, root, sources: list[str]) -> dict[int, list]:
    paths = _mirror(linter, root, sources)
    script = root / "tools" / "linter" / "adapters" / "test_linter.py"
    found: dict[int, list] = {i: [] for i in range(len(sources))}
    for start in range(0, len(paths), 400):
        proc = subprocess.run([sys.executable, str(script), *paths[start:start + 400]],
                              capture_output=True, text=True, timeout=1800, cwd=root)
        assert proc.returncode == 0, proc.stderr[-2000:]
        for line in proc.stdout.splitlines():
            msg = json.loads(line)
            if msg["severity"] != "error":
                continue
            i = int(os.path.basename(msg["path"])[len("test_gen_"):-3])
            found[i].append((msg["name"], msg["line"] or 0))
    return {i: sorted(v) for i, v in found.items()}


def _upstream_generation() -> str:
    with open(UPSTREAM, encoding="utf-8") as f:
        found = identify(f.read())
    assert found.exact, f"{UPSTREAM} is no generation the tool knows exactly: {found.differences}"
    return found.generation


@pytest.mark.skipif(not UPSTREAM, reason="set DECOUPLE_UPSTREAM_LINTER=/path/to/test_linter.py")
@pytest.mark.parametrize("seed", SEEDS)
def test_real_upstream_linter(seed, tmp_path):
    gen = _upstream_generation()
    files = corpus(seed)
    sources = [src for src, _ in files]
    outputs = [HwLabel(rules=gen).run(src, ast.parse(src)).text for src in sources]
    before = _run_upstream(UPSTREAM, tmp_path / "in", sources)
    after = _run_upstream(UPSTREAM, tmp_path / "out", outputs)
    stats: Counter = Counter()
    mismatches, rejected, labels = [], [], 0
    for i, (src, truth) in enumerate(files):
        if before[i] != model_messages(src, gen):
            mismatches.append((i, "input", before[i], model_messages(src, gen)))
        if after[i] != model_messages(outputs[i], gen):
            mismatches.append((i, "output", after[i], model_messages(outputs[i], gen)))
        labelled = {f.cls for f in HwLabel(rules=gen).run(src, ast.parse(src)).findings if f.rule == "hw/label"}
        labels += len(labelled)
        classes, calls, _ = collect(outputs[i])
        for name in labelled:
            cls = classes[name]
            lines = set(range(cls.lineno, cls.end_lineno + 1))
            if name in calls:
                lines.add(calls[name].lineno)
            rejected += [(i, name, m) for m in after[i] if m[1] in lines and not m[0].startswith("[duplicate")]
        compare(src, truth, gen, stats)
    summary = {"seed": seed, "generation": gen, "files": len(files), "labels written": labels,
               "labels the upstream linter rejects": len(rejected),
               "upstream == model (inputs and outputs)": not mismatches, **stats}
    print(json.dumps(summary, sort_keys=True))
    assert not mismatches, mismatches[:3]
    assert not rejected, rejected[:3]


@pytest.mark.skipif(not UPSTREAM, reason="set DECOUPLE_UPSTREAM_LINTER=/path/to/test_linter.py")
def test_graduation_is_the_linters_own_regenerate_outcome(tmp_path):
    """Where the linter has --regenerate, the outputs it drops from a full allowlist are exactly
    the judged files the gate graduates (clean: no error message)."""
    from codemod.engine import linter_gate

    gen = _upstream_generation()
    if not GENERATIONS[gen].regenerates:
        pytest.skip(f"the {gen} linter has no --regenerate")
    sources = [src for src, _ in corpus(5, 300)] + ["def (:\n", "class TestA(TestCase):\n    def test_a(self): pass\n"]
    outputs = [HwLabel(rules=gen).run(s, ast.parse(s)).text if not s.startswith("def (") else s for s in sources]
    root = tmp_path / "regen"
    paths = _mirror(UPSTREAM, root, outputs, allowlisted=True)
    script = root / "tools" / "linter" / "adapters" / "test_linter.py"
    proc = subprocess.run([sys.executable, str(script), "--regenerate"], capture_output=True, text=True, cwd=root,
                          timeout=1800)
    assert proc.returncode == 0, proc.stderr[-2000:]
    kept = set(json.loads((script.parent / "test_linter_allowlist.json").read_text()))
    verdicts = linter_gate.run_linter(str(script), sys.executable, {p: open(p, "rb").read() for p in paths},
                                      GENERATIONS[gen])
    for i, p in enumerate(paths):
        rel = f"test/test_gen_{i}.py"
        parses = not outputs[i].startswith("def (")
        graduated = verdicts[p].clean and parses  # the engine fails an unparseable file first
        assert graduated == (rel not in kept) or not parses, (rel, verdicts[p])
        if not parses:
            assert rel not in kept and not verdicts[p].judged  # regenerate drops it; the gate never graduates it
