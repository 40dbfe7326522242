"""torch.load transform: fixture pairs plus unit tests (no torch needed).

Fixtures: tests/fixtures/torch_load/<case>.in.py -> <case>.out.py, with the findings
in <case>.findings (one "line rule severity" per line) and an optional <case>.json:

    {"mode": "weights-only-false" | "safe-globals" | "auto",
     "explain": bool, "version": [major, minor], "path": "path/passed/to/run.py",
     "discovered": {...full discover-globals JSON...}
        or "calls": [[line, code, [globals], status?, unfixable?], ...]   (shorthand)
     "resolved": {...}}                                                  (with "calls")

DECOUPLE_REGEN_FIXTURES=1 rewrites .out.py and .findings from the current code.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import libcst
import pytest

from codemod.discover.records import parse_globals, unfixable_reason
from transforms.core.base import Finding, TransformResult
from transforms.torch_load import Discovery, TorchLoad, check_mode_supported
from transforms.torch_load.analysis.discovery import runs_function, same_file
from transforms.torch_load.analysis.unsafe_globals import Level, normalise, tier

FIXTURES = Path(__file__).parent / "fixtures" / "torch_load"
CASES = sorted(p.name[: -len(".in.py")] for p in FIXTURES.glob("*.in.py"))
REGEN = os.environ.get("DECOUPLE_REGEN_FIXTURES") == "1"


def _config(case: str) -> dict:
    p = FIXTURES / f"{case}.json"
    return json.loads(p.read_text()) if p.exists() else {}


def _discovered(cfg: dict, path: str):
    if "discovered" in cfg:
        return cfg["discovered"]
    if "calls" not in cfg:
        return None
    calls = []
    for row in cfg["calls"]:
        line, code, names = row[0], row[1], row[2]
        status = row[3] if len(row) > 3 else "ok"
        calls.append({"file": path, "line": line, "code": code, "globals": names,
                      "scan": None, "status": status,
                      "unfixable": row[4] if len(row) > 4 else None})
    return {
        "schema_version": 1, "torch_version": "2.14.1",
        "resolved": cfg.get("resolved", {}),
        "tests": {f"{path}::test_x": {"outcome": "passed", "globals": [], "unfixable": None,
                                     "calls": calls}},
    }


def _transform(case: str) -> tuple[TorchLoad, str]:
    cfg = _config(case)
    path = cfg.get("path", f"{case}.py")
    t = TorchLoad(
        cfg.get("mode", "weights-only-false"),
        discovered=_discovered(cfg, path),
        torch_version=tuple(cfg["version"]) if cfg.get("version") else None,
        explain=cfg.get("explain", False),
    )
    return t, path


def _findings_text(findings: list[Finding]) -> str:
    rows = sorted((f.line, f.rule, f.severity) for f in findings)
    return "".join(f"{line} {rule} {sev}\n" for line, rule, sev in rows)


def _run(t: TorchLoad, text: str, path: str) -> TransformResult:
    return t.run(text, ast.parse(text), path=path)


@pytest.mark.parametrize("case", CASES)
def test_fixture(case):
    src = (FIXTURES / f"{case}.in.py").read_text()
    t, path = _transform(case)
    res = _run(t, src, path)
    out_p = FIXTURES / f"{case}.out.py"
    fin_p = FIXTURES / f"{case}.findings"
    if REGEN:
        out_p.write_text(res.text)
        fin_p.write_text(_findings_text(res.findings))
    assert res.text == out_p.read_text(), f"{case}: output differs (DECOUPLE_REGEN_FIXTURES=1 to accept)"
    assert _findings_text(res.findings) == fin_p.read_text()
    # valid Python for both parsers
    out_tree = ast.parse(res.text)
    libcst.parse_module(res.text)
    # the engine's verification: only what the transform may add differs
    assert ast.dump(t.strip(out_tree)) == ast.dump(t.strip(ast.parse(src)))
    # idempotent: a second run changes nothing
    again = _run(t, res.text, path)
    assert again.text == res.text, f"{case}: second run changed the file"
    assert all(f.rule.startswith("torch-load/") for f in res.findings)


def test_every_case_has_expected_output():
    assert len(CASES) >= 15
    for case in CASES:
        assert (FIXTURES / f"{case}.out.py").exists(), case


def test_untouched_file_skips_libcst(monkeypatch):
    t = TorchLoad("weights-only-false")
    assert not t.triage("import os\n")
    src = "import torch\nx = torch.ones(2)\n# load nothing\n"
    assert t.triage(src)

    def boom(*a, **k):  # LibCST must not run when ast finds no candidate
        raise AssertionError("LibCST used")

    monkeypatch.setattr(libcst, "parse_module", boom)
    res = t.run(src, ast.parse(src))
    assert res.text == src and res.findings == []


def test_bad_mode():
    with pytest.raises(ValueError):
        TorchLoad("sometimes")


def test_check_mode_supported():
    assert check_mode_supported("auto", (2, 14)) is None
    assert check_mode_supported("safe-globals", (2, 5)) is None
    assert check_mode_supported("weights-only-false", (1, 13)) is None
    assert "no importable torch" in check_mode_supported("auto", None)
    assert "1.13" in check_mode_supported("weights-only-false", (1, 12))
    assert "2.5" in check_mode_supported("safe-globals", (2, 4))
    assert check_mode_supported("auto", (2, 4)) is None
    assert "unknown" in check_mode_supported("yes", (2, 14))
    assert TorchLoad.check_mode_supported("auto", (2, 6)) is None


def test_tiers():
    assert tier("torch.ScriptObject").level == Level.DANGEROUS
    assert tier("getattr").level == Level.DANGEROUS            # bare builtin
    assert tier("builtins.eval").level == Level.DANGEROUS
    assert tier("os.system").level == Level.DANGEROUS
    assert tier("os.path.join").level == Level.DANGEROUS       # submodule of os
    assert tier("posix.system").level == Level.DANGEROUS
    assert tier("functools.partial").level == Level.DANGEROUS
    assert tier("subprocess.Popen").reason.startswith("subprocess.Popen: member of subprocess")
    for name in ("torch.nn.modules.linear.Linear", "builtins.slice", "collections.OrderedDict",
                 "osmium.Thing", "torch.ao.nn.quantized.modules.linear.LinearPackedParams"):
        assert tier(name).level == Level.SAFE, name
    assert normalise("slice") == "builtins.slice"


def test_parse_globals_messages():
    new = ("WeightsUnpickler error: Unsupported global: GLOBAL __main__.M was not an allowed "
           "global by default. Please use `torch.serialization.add_safe_globals([M])`")
    assert parse_globals(new) == ["__main__.M"]
    assert parse_globals("GLOBAL slice was not an allowed global by default") == ["builtins.slice"]
    old = "WeightsUnpickler error: Unsupported class mypkg.models.Net"
    assert parse_globals(old) == ["mypkg.models.Net"]
    # torch's own source line in a long traceback must not yield a bogus name
    tb = ('    raise UnpicklingError(f"GLOBAL (\\S+) was not an allowed global")\n'
          "E   _pickle.UnpicklingError: ... GLOBAL torch.nn.modules.linear.Linear was not an "
          "allowed global by default.")
    assert parse_globals(tb) == ["torch.nn.modules.linear.Linear"]
    assert parse_globals("nothing here") == []


def test_unfixable_reasons():
    assert "TorchScript" in unfixable_reason(
        "Cannot use ``weights_only=True`` with TorchScript archives passed to ``torch.load``")
    assert "149" in unfixable_reason("WeightsUnpickler error: \n\nUnsupported operand 149\n")
    assert "posix" in unfixable_reason(
        "Trying to load unsupported GLOBAL posix.system whose module posix is blocked.")
    assert "defaultdict" in unfixable_reason(
        "Can only SETITEM for dict, collections.OrderedDict, collections.Counter, but got "
        "<class 'collections.defaultdict'>")
    assert unfixable_reason("GLOBAL a.B was not an allowed global") is None


def test_path_and_test_matching():
    assert same_file("test/test_nn.py", "/repo/test/test_nn.py")
    assert same_file("./test/test_nn.py", "test/test_nn.py")
    assert not same_file("test/test_nn.py", "test/test_nnx.py")
    assert runs_function("t.py::TestFooCPU::test_bar_cpu", "test_bar", "TestFoo")
    assert runs_function("t.py::test_bar[1-2]", "test_bar", None)
    assert not runs_function("t.py::TestFoo::test_barn", "test_bar", "TestFoo")


def test_discovery_merges_tests_and_scan():
    d = Discovery({"schema_version": 1, "tests": {
        "a.py::t1": {"calls": [{"file": "a.py", "line": 3, "code": "x = torch.load(f)",
                                "globals": ["m.A"], "scan": ["m.A", "m.B"], "status": "ok"}]},
        "a.py::t2": {"calls": [{"file": "a.py", "line": 3, "code": "x = torch.load(f)",
                                "globals": ["m.C"], "status": "ok"}]},
    }})
    (rec,) = d.calls_for("/abs/a.py")
    assert rec.globals == ["m.A", "m.B", "m.C"]
    assert d.calls_for("b.py") == []


def test_call_sites_match_after_lines_moved():
    """Discovery lines refer to the original file; matching by source line survives edits
    above the call (imports or comments added by another transform)."""
    src = "import torch\n\n\ndef test_x(b):\n    m = torch.load(b)\n"
    data = {"schema_version": 1, "tests": {"t.py::test_x": {"calls": [
        {"file": "t.py", "line": 5, "code": "m = torch.load(b)", "globals": ["pkg.A"],
         "status": "ok"}]}}}
    t = TorchLoad("safe-globals", discovered=data)
    moved = "# header\n# more\n" + src
    res = t.run(moved, ast.parse(moved), path="t.py")
    assert "safe_globals([A])" in res.text
    assert "from pkg import A" in res.text


def test_finding_data_is_json_serialisable():
    t, path = _transform("auto_branches")
    src = (FIXTURES / "auto_branches.in.py").read_text()
    res = _run(t, src, path)
    json.dumps([f.to_json() for f in res.findings])
    assert res.manual == 0
    refused = _run(TorchLoad("safe-globals"), "import torch\ntorch.load(f)\n", "x.py")
    assert refused.manual == 1 and refused.findings[0].rule == "torch-load/no-discovery"


def test_crlf_file_keeps_newlines():
    src = "import torch\r\n\r\ndef test_x(b):\r\n    m = torch.load(\r\n        b,\r\n    )\r\n"
    data = {"schema_version": 1, "tests": {"t.py::test_x": {"calls": [
        {"file": "t.py", "line": 4, "code": "m = torch.load(", "globals": ["pkg.A"], "status": "ok"}]}}}
    res = TorchLoad("safe-globals", discovered=data).run(src, ast.parse(src), path="t.py")
    assert "\n" not in res.text.replace("\r\n", "")
    assert "        with torch" not in res.text
    assert "    with torch.serialization.safe_globals([A]):\r\n        m = torch.load(\r\n" in res.text


# --------------------------------------------------------------------------- review fixes


def test_last_argument_in_parentheses_gets_keyword_outside():
    """pos(last.value) stops inside the argument's own parentheses: the keyword must go
    after the closing one, never into the argument."""
    t = TorchLoad("weights-only-false")
    for src, want in [
        ("m = torch.load(f, map_location=(lambda s, loc: s))",
         "m = torch.load(f, map_location=(lambda s, loc: s), weights_only=False)"),
        ("m = torch.load((f))", "m = torch.load((f), weights_only=False)"),
        ("m = torch.load(f, map_location=(\n 'cpu'))",
         "m = torch.load(f, map_location=(\n 'cpu'), weights_only=False)"),
        ("m = torch.load(\n    (f)\n)", "m = torch.load(\n    (f),\n    weights_only=False\n)"),
        ("m = (torch.load)(f)", "m = (torch.load)(f, weights_only=False)"),
    ]:
        text = "import torch\n" + src + "\n"
        res = t.run(text, ast.parse(text), path="x.py")
        assert res.text == "import torch\n" + want + "\n", src
        ast.parse(res.text)


def test_skip_to_only_skips_blanks_and_comments():
    from transforms.torch_load.analysis.text import skip_to

    assert skip_to("  # a ) b\n  )", 0, ")") == 12
    assert skip_to(" \\\n ,", 0, ",") == 4
    with pytest.raises(ValueError):
        skip_to(" x)", 0, ")")


def test_comment_of_last_argument_stays_on_it():
    src = "import torch\nm = torch.load(\n    f,\n    map_location='cpu'  # on cpu\n)\n"
    res = TorchLoad("weights-only-false").run(src, ast.parse(src), path="x.py")
    assert "    map_location='cpu',  # on cpu\n    weights_only=False\n)" in res.text


def test_shadowed_load_is_unresolved_and_manual():
    src = "from torch import load\n\n\ndef load(f):\n    return f\n\n\ndef test_x(f):\n    m = load(f)\n"
    res = TorchLoad("weights-only-false").run(src, ast.parse(src), path="x.py")
    assert res.text == src
    assert [(f.line, f.rule) for f in res.findings] == [(9, "torch-load/unresolved")]
    assert res.manual == 1


def test_star_import_load_is_unresolved():
    src = "from torch import *\nm = load(f)\n"
    res = TorchLoad("weights-only-false").run(src, ast.parse(src), path="x.py")
    assert res.text == src and res.manual == 1
    assert res.findings[0].rule == "torch-load/unresolved" and "import *" in res.findings[0].message


def test_same_code_in_two_tests_is_idempotent_after_lines_move():
    """Discovery: line 5 (test_a) needs pa.A, line 9 (test_b) needs pb.B.  After the first
    run the lines moved; the second run must still pair each call with its own record."""
    cfg = json.loads((FIXTURES / "sg_same_line_tests.json").read_text())
    t = TorchLoad("safe-globals", discovered=cfg["discovered"])
    src = (FIXTURES / "sg_same_line_tests.in.py").read_text()
    out = t.run(src, ast.parse(src), path="test_same.py").text
    assert "safe_globals([A]):\n        m = torch.load(buf)\n\n\ndef test_b" in out
    again = t.run(out, ast.parse(out), path="test_same.py")
    assert again.text == out
    assert {f.rule for f in again.findings} == {"torch-load/skip-covered"}


def _fake_discover(monkeypatch, rounds):
    """Run discover() with a fake target interpreter: round i writes rounds[i]."""
    import codemod.discover.rounds as dg
    from codemod.engine.torch_probe import TargetInfo

    monkeypatch.setattr(dg, "probe", lambda python=None: TargetInfo(
        python="py", executable="py", torch_version_str="2.14.1", torch_version=(2, 14)))
    seen = []

    def fake_run(python, args, cwd, env, timeout):
        data = rounds[min(len(seen), len(rounds) - 1)]
        seen.append(json.loads(env["DECOUPLE_SAFE_GLOBALS"]))
        Path(env["DECOUPLE_DISCOVER_OUT"]).write_text(json.dumps(data))
        return 1, "", "", False

    monkeypatch.setattr(dg, "_run_pytest", fake_run)
    return seen


def _round(status, message, outcome):
    return {"torch_version": "2.14.1", "rootdir": "/r", "resolved": {}, "errors": [],
            "tests": {"t.py::test_dd": {"outcome": outcome, "loads": [
                {"file": "/r/t.py", "line": 5, "code": "m = torch.load(buf)", "status": status,
                 "message": message, "scan": None}], "saves": []}}}


def test_discovery_unfixable_is_incomplete_and_not_in_allowlist(monkeypatch):
    from codemod.discover.rounds import discover

    glob_msg = ("_pickle.UnpicklingError: Weights only load failed. WeightsUnpickler error: "
                "Unsupported global: GLOBAL collections.defaultdict was not an allowed global "
                "by default.")
    dd_msg = ("_pickle.UnpicklingError: Weights only load failed. WeightsUnpickler error: "
              "Can only SETITEM for dict, collections.OrderedDict, collections.Counter, but got "
              "<class 'collections.defaultdict'>")
    seen = _fake_discover(monkeypatch, [_round("failed", glob_msg, "failed"),
                                        _round("failed", dd_msg, "failed")])
    result, status = discover(["t.py"], python="py", cwd="/r", max_iterations=5)
    assert len(seen) == 2 and seen[1]["sites"] == {"/r/t.py:5": ["collections.defaultdict"]}
    call = result["tests"]["t.py::test_dd"]["calls"][0]
    assert call["unfixable"] and call["globals"] == ["collections.defaultdict"]
    assert result["allowlist"] == {}          # the name found is not enough for this call
    assert status == 1 and result["complete"] is False
    assert any("no allowlist fixes" in e for e in result["errors"])


def test_discovery_complete_exits_zero(monkeypatch):
    from codemod.discover.rounds import discover

    _fake_discover(monkeypatch, [_round("ok", None, "passed")])
    result, status = discover(["t.py"], python="py", cwd="/r", max_iterations=5)
    assert status == 0 and result["complete"] is True and result["errors"] == []


def _one_call_discovery(path: str, line: int, code: str, names: list[str], unfixable=None) -> dict:
    return {"schema_version": 1, "resolved": {}, "tests": {f"{path}::test_x": {
        "outcome": "failed" if unfixable else "passed", "globals": names, "unfixable": unfixable,
        "calls": [{"file": path, "line": line, "code": code, "globals": names, "scan": None,
                   "status": "failed" if unfixable else "ok", "unfixable": unfixable}]}}}


def test_explain_comments_stay_within_120_columns():
    deep = " " * 72
    src = ("import torch\n\n\ndef test_x(buf):\n"
           + "".join(" " * (4 * i) + "if buf:\n" for i in range(1, 18))
           + deep + "m = torch.load(buf)\n"
           + deep + "n = torch.load(buf)\n")
    blocked = ("mypackage.with_a_rather_long_name.deeply.nested.VeryLongClassNameForTesting comes "
               "from module posix, which weights_only blocks")
    disc = _one_call_discovery("t.py", 21, "m = torch.load(buf)", [], unfixable=blocked)
    disc["tests"]["t.py::test_x"]["calls"].append(
        {"file": "t.py", "line": 22, "code": "n = torch.load(buf)", "status": "ok", "unfixable": None,
         "globals": ["mypackage.with_a_rather_long_name.deeply.nested.VeryLongClassNameForTesting",
                     "mypackage.with_a_rather_long_name.deeply.nested.AnotherQuiteLongClassName"]})
    res = _run(TorchLoad("auto", discovered=disc, torch_version=(2, 14), explain=True), src, "t.py")
    lines = res.text.splitlines()
    assert max(len(x) for x in lines) <= 120, [x for x in lines if len(x) > 120]
    comments = [x.strip() for x in lines if x.strip().startswith("#")]
    words = " ".join(c[1:].strip() for c in comments)
    assert "VeryLongClassNameForTesting comes from module posix, which weights_only blocks" in words
    assert "allowlisted for weights_only" in words and len(comments) >= 3
    assert all(x.startswith(deep + "#") for x in lines if x.strip().startswith("#"))


def test_auto_says_which_call_the_globals_file_does_not_cover():
    src = ("import torch\n\n\ndef test_x(buf):\n    a = torch.load(buf)\n"
           "    unseen = torch.load(buf, map_location='cpu')\n")
    disc = _one_call_discovery("t.py", 5, "a = torch.load(buf)", ["pkg.A"])
    res = _run(TorchLoad("auto", discovered=disc, torch_version=(2, 14)), src, "t.py")
    (f,) = [f for f in res.findings if f.rule == "torch-load/not-discovered"]
    assert f.line == 6 and f.severity == "warning"
    assert "`unseen = torch.load(buf, map_location='cpu')`" in f.message
    assert "no record of this call" in f.message
    assert "unseen = torch.load(buf, map_location='cpu', weights_only=False)" in res.text
    # without any --globals file, nothing claims a missing record
    res = _run(TorchLoad("auto", torch_version=(2, 14)), src, "t.py")
    assert not [f for f in res.findings if f.rule == "torch-load/not-discovered"]
