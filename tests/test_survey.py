"""`decouple survey` on a generated PyTorch-shaped checkout (tests/survey_tree.py): two files of
every shape, owners' headers, a stand-in linter, an allowlist that shrank over four commits.

The stand-in linter is an unknown linter to the tool: `--rules auto` applies the nearest
generation, gen2, so the checks below are gen2's unless a test names `--rules gen1`. The
survey's status of every file is checked against what `apply --check --strict` (labels alone,
then `--restructure auto`) and `refactor --dry-run` report for it under the same generation,
run separately.
"""

from __future__ import annotations

import json
import re
import os
import pty
import select
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from codemod.cli.main import main
from codemod.engine import cache as store
from codemod.engine.pipeline import PROGRESS_MIN_FILES
from codemod.survey.batches import plan_batches, wants_a_pr
from codemod.survey.model import (
    SCHEMA_VERSION,
    STATUSES,
    ClassDecision,
    FileSurvey,
    Survey,
    SurveyFormatError,
    SurveyStatus,
    read_batch_plans,
)
from codemod.survey.run import owners_of
from test_cache import rewrite_rows, store_rows
from survey_tree import ALLOWLIST, FOLDERS, KINDS, LINTER, REJECT_MARK, make_tree

COUNTS = dict.fromkeys(KINDS, 2)
HELPER_SRC = "import torch\n\n\ndef make_inputs(n):\n    return [torch.ones(i) for i in range(n)]\n"


def cli(*args, cwd):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return make_tree(str(tmp_path_factory.mktemp("survey") / "pytorch"), COUNTS)


@pytest.fixture(scope="module")
def surveyed(tree, tmp_path_factory):
    """The survey's JSON of the tree's allowlist, with its history."""
    out = tmp_path_factory.mktemp("survey-out") / "survey.json"
    r = cli("survey", "--git-history", "-j", "2", "--json", str(out), cwd=tree.root)
    assert r.exit_code == 0, r.output
    return json.loads(out.read_text()), r.output


@pytest.fixture(scope="module")
def survey_as(tree, tmp_path_factory):
    """The survey's JSON under `--rules NAME` (made once per name, not cached)."""
    made = {}

    def survey(rules):
        if rules not in made:
            out = tmp_path_factory.mktemp(f"survey-{rules}") / "survey.json"
            r = cli("survey", "--rules", rules, "--no-cache", "-j", "2", "--json", str(out), cwd=tree.root)
            assert r.exit_code == 0, r.output
            made[rules] = json.loads(out.read_text())
        return made[rules]

    return survey


def _by_path(data):
    return {f["path"]: f for f in data["files"]}


def _apply_json(root, files, *extra):
    proc = subprocess.run(
        [sys.executable, "-m", "codemod", "apply", "--check", "--strict", "--format", "json", "-j", "2", *extra, *files],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.returncode in (1, 2), proc.stderr  # changes to make, manual work, a syntax error
    return {f["path"]: f for f in json.loads(proc.stdout)["files"]}


def _doable(f):
    """FileResult.doable, from its JSON."""
    return f["status"] not in ("failed", "needs-manual") and f["fully_classified"] and not f["manual"]


def test_every_shape_gets_its_status(tree, surveyed):
    data, _ = surveyed
    files = _by_path(data)
    assert {p: f["status"] for p, f in files.items()} == tree.expected()
    assert data["stale"] == tree.stale
    assert [e["path"] for e in data["excluded"]] == tree.vendored
    assert {e["pattern"] for e in data["excluded"]} == {"test/cpython/*"}


@pytest.mark.parametrize("rules", ["gen1", "gen2"])
def test_the_status_is_what_apply_check_strict_reports(tree, survey_as, rules):
    data = survey_as(rules)
    assert data["generation"]["name"] == rules
    paths = sorted(_by_path(data))
    labels = _apply_json(tree.root, paths, "--rules", rules)
    restructured = _apply_json(tree.root, paths, "--rules", rules, "--restructure", "auto")
    for path, f in _by_path(data).items():
        if labels[path]["status"] == "failed":
            expected = "error"
        elif _doable(labels[path]):
            expected = "ready"
        elif restructured[path]["status"] == "failed":
            expected = "error"
        else:
            expected = "restructure" if _doable(restructured[path]) else "manual"
        assert f["status"] == expected, (path, f["reason"])
        if expected == "ready":  # ... with apply's values, which the generation decides (a CUDA-guarded class)
            values = [x["data"]["value"] for x in labels[path]["findings"] if x["rule"] == "hw/label"]
            assert f["values"] == {v: values.count(v) for v in values} or not values, (path, f["values"])


def test_auto_is_gen2_for_the_stand_in_and_says_so(tree, surveyed, survey_as):
    data, output = surveyed
    generation = data["generation"]
    assert (generation["name"], generation["setting"], generation["linters"]) == ("gen2", "auto", [LINTER])
    assert generation["exact"] is False and generation["differences"]  # an unknown linter: how it differs
    assert f"rules: gen2 (the nearest to {LINTER}, an unknown linter); differs: " in output
    proc = subprocess.run(
        [sys.executable, "-m", "codemod", "apply", "--check", "--format", "json", "test/test_generic_0.py"],
        cwd=tree.root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    applied = json.loads(proc.stdout)["generation"]  # apply names the same choice, for the same reasons
    assert {k: v for k, v in applied.items() if k != "linters"} == {k: v for k, v in generation.items() if k != "linters"}
    assert {p: f["status"] for p, f in _by_path(survey_as("gen1")).items()} == tree.expected()
    assert survey_as("gen1")["generation"] | {"differences": []} == {
        "name": "gen1", "setting": "gen1", "linters": [LINTER], "differences": [], "exact": False}


def _refactor_picks(root, *extra):
    r = cli("refactor", "--from-allowlist", ALLOWLIST, "--dry-run", "--no-ab", "--group-size", "100", *extra, cwd=root)
    # The tree's unparseable files: the real run exits 2 for them, and so does the dry run.
    assert r.exit_code == 2 and "test_syntax_0.py: syntax error: line " in r.output, r.output
    skipped = {line.split(":", 1)[0].removeprefix("skip ") for line in r.output.splitlines() if line.startswith("skip ")}
    listed = json.loads(open(os.path.join(root, ALLOWLIST)).read())
    return {p for p in listed if os.path.exists(os.path.join(root, p)) and not p.startswith("test/cpython/")} - skipped


@pytest.mark.parametrize("rules", ["auto", "gen1"])
def test_refactor_picks_the_ready_files_and_with_restructure_the_restructure_ones(tree, surveyed, survey_as, rules):
    data = surveyed[0] if rules == "auto" else survey_as(rules)
    status = {f["path"]: f["status"] for f in data["files"]}
    ready = {p for p, s in status.items() if s == "ready"}
    assert _refactor_picks(tree.root, "--rules", rules) == ready
    assert _refactor_picks(tree.root, "--rules", rules, "--restructure", "auto") == ready | {
        p for p, s in status.items() if s == "restructure"
    }


@pytest.mark.parametrize("rules", ["auto", "gen1"])
def test_reasons_classes_owners_and_torch_load(tree, surveyed, survey_as, rules):
    data = surveyed[0] if rules == "auto" else survey_as(rules)
    files = _by_path(data)
    kind = {p: k for p, k in tree.kinds.items()}
    for path, f in files.items():
        assert f["reason"], path
        assert f["directory"] == os.path.dirname(path)
        if f["status"] == "manual":
            assert f["manual"], path  # always says what and why
        k = kind[path]
        if k == "generic":
            assert f["values"] == {"GENERIC": f["classes"]} and f["classes"] >= 1
        if k == "accelerator":
            assert f["values"] == {"ACCELERATOR": f["classes"]}
        if k == "cpu_only":
            assert f["values"] == {"CPU": f["classes"]}
        if k == "gpu_guarded":  # not instantiated, its tests need CUDA: gen2 says so; gen1 demands GENERIC
            assert f["values"] == {"GENERIC" if rules == "gen1" else "CUDA": f["classes"]}
        if k == "labelled":
            assert f["reason"].startswith("graduate only: every test class is labelled already")
        assert f["graduate_only"] is (k in ("labelled", "no_tests", "pytest_only")), path
        if k == "split":
            assert f["transforms"] == ["split-class"] and f["values"] == {"ACCELERATOR": 1, "GENERIC": 1}
        if k == "whitelist":  # auto widens nothing: the widening is said, not counted as the plan
            assert not f["transforms"] and "could be widened: drop-only-for" in f["manual"][0]["reason"]
            (widening,) = f["could_widen"]
            assert widening["step"] == "drop-only-for" and widening["class"].startswith("TestWhitelist")
            assert widening["adds"] and widening["tests"]
        else:
            assert f["could_widen"] == [], path
        if k == "self_super":
            # The class no value fits (its split refused), and the file the linter rejects, left unlabelled.
            (item,) = [m for m in f["manual"] if m["class"] != "(file)"]
            assert "--restructure auto tried split-class: not split: the class refers to" in item["fits"]
            assert [m["class"] for m in f["manual"]].count("(file)") == 1
        if k == "meta":
            assert "meta" in f["manual"][0]["reason"]
        if k in ("no_tests", "pytest_only"):
            assert f["reason"] == "graduate only: no test class, nothing for the linter to check"
            assert f["classes"] == 0 and not f["manual"]
        if k == "rejected":
            assert "rejects the would-be output: [stand_in]" in f["manual"][0]["reason"]
        if k == "syntax":
            assert f["reason"].startswith("syntax error: line ")
        if k == "torch_load":
            assert f["torch_load_calls"] == 1 and f["needs_discovery"] is True
            assert f["torch_load"] == {"calls": 1, "edits": 1, "left_alone": 0, "undiscovered": 1, "manual": 0}
        else:
            assert f["torch_load_calls"] == 0 and f["needs_discovery"] is False
        assert f["owners"] == ([FOLDERS[f["directory"]]] if FOLDERS[f["directory"]] else [])
    assert files["test/dynamo/test_late.py"]["allowlisted"] is True


def test_totals_and_groups_add_up(surveyed):
    data, _ = surveyed
    assert data["schema_version"] == SCHEMA_VERSION
    totals = data["totals"]
    assert totals["files"] == len(data["files"]) == sum(totals[s] for s in STATUSES)
    for s in STATUSES:
        assert totals[s] == sum(1 for f in data["files"] if f["status"] == s)
        assert sum(c[s] for c in data["by_directory"].values()) == totals[s]
    assert totals["excluded"] == 2 and totals["stale"] == 1
    assert totals["torch_load_files"] == 2 and totals["needs_discovery"] == 2
    assert data["by_directory"]["test/jit"]["files"] == sum(1 for f in data["files"] if f["directory"] == "test/jit")
    # A file of several owners counts for each; files without a header under their own key.
    assert sum(c["files"] for c in data["by_owner"].values()) == sum(max(1, len(f["owners"])) for f in data["files"])
    assert "(no owner header)" in data["by_owner"]


def test_batches_group_the_ready_files_then_the_restructure_ones(surveyed):
    data, _ = surveyed
    files = _by_path(data)
    size = data["group_size"]
    batched = [p for b in data["batches"] for p in b["files"]]
    assert len(batched) == len(set(batched))
    assert set(batched) == {p for p, f in files.items() if wants_a_pr(FileSurvey.from_json(f))}
    assert {p for p, f in files.items() if f["status"] == "restructure"} <= set(batched)
    assert [b["number"] for b in data["batches"]] == list(range(1, len(data["batches"]) + 1))
    plans = [b["plan"] for b in data["batches"]]
    assert plans == sorted(plans) and set(plans) == {"labels", "restructure"}  # the label batches first
    for plan, status in (("labels", "ready"), ("restructure", "restructure")):
        batches = [b for b in data["batches"] if b["plan"] == plan]
        sizes = [len(b["files"]) for b in batches]
        assert sizes == sorted(sizes, reverse=True) and max(sizes) <= size
        for b in batches:
            assert {tuple(files[p]["owners"]) for p in b["files"]} == {tuple(b["owners"])}
            assert all(files[p]["status"] == status for p in b["files"])
            assert all(os.path.dirname(p).startswith(b["directory"]) or b["directory"] == "." for p in b["files"])
            steps = {t for p in b["files"] for t in files[p]["transforms"]}
            assert set(b["restructure"]) == steps and bool(steps) == (plan == "restructure")
    # What `refactor --batches` reads: every batch with its plan.
    assert [(b.files, b.plan) for b in read_batch_plans(data)] == [(tuple(b["files"]), b["plan"]) for b in data["batches"]]
    # A survey of schema 1 had label batches only, without a plan: still read, as labels.
    old = {**data, "schema_version": 1, "batches": [{"files": b["files"]} for b in data["batches"][:2]]}
    assert [b.plan for b in read_batch_plans(old)] == ["labels", "labels"]
    with pytest.raises(SurveyFormatError, match="a batch's plan"):
        read_batch_plans({**data, "batches": [{"files": [], "plan": "rewrite"}]})


def _fs(path, owners, classes=1, status=SurveyStatus.READY, decision="label"):
    return FileSurvey(
        path=path,
        directory=os.path.dirname(path),
        owners=owners,
        status=status,
        reason="r",
        classes=tuple(ClassDecision(name=f"T{i}", line=i, decision=decision, value="GENERIC") for i in range(classes)),
        allowlisted=True,
    )


def test_batching_one_folder_first_then_the_owner_s_folders_together():
    nn = ("module: nn",)
    files = [_fs(f"test/a/test_{i}.py", nn) for i in range(5)]  # 5: a full batch of 3 and 2 left
    files += [_fs(f"test/b/test_{i}.py", nn) for i in range(2)]  # 2 left
    files += [_fs("test/a/test_other.py", ("oncall: jit",), classes=3)]
    files += [_fs("test/a/test_manual.py", nn, status=SurveyStatus.MANUAL)]
    files += [_fs("test/c/test_done.py", nn, decision="already")]  # labelled, on the allowlist: its entry goes
    batches = plan_batches(files, 3)
    assert [b.files for b in batches] == [
        ("test/a/test_0.py", "test/a/test_1.py", "test/a/test_2.py"),
        ("test/a/test_3.py", "test/a/test_4.py", "test/b/test_0.py"),
        ("test/b/test_1.py", "test/c/test_done.py"),
        ("test/a/test_other.py",),
    ]
    assert [b.directory for b in batches] == ["test/a", "test", "test", "test/a"]
    assert batches[3].owners == ("oncall: jit",) and batches[3].classes == 3
    not_listed = FileSurvey(**{**_fs("test/d/test_x.py", nn, decision="already").__dict__, "allowlisted": False})
    assert not wants_a_pr(not_listed)  # labelled and not on the allowlist: nothing to do


def test_history_is_the_allowlist_at_every_commit(tree, surveyed):
    data, _ = surveyed
    history = data["history"]
    assert [h["entries"] for h in history] == tree.history
    assert [h["date"][:10] for h in history] == ["2026-01-05", "2026-02-02", "2026-03-02", "2026-03-30"]
    assert [(h["added"], h["removed"]) for h in history] == [(tree.history[0], 0), (0, 1), (1, 1), (0, 1)]
    log = subprocess.run(["git", "-C", tree.root, "log", "--reverse", "--format=%H"], capture_output=True, text=True)
    assert [h["commit"] for h in history] == log.stdout.split()
    assert data["commit"] == log.stdout.split()[-1]


def test_the_summary_names_totals_batches_and_history(surveyed):
    _, output = surveyed
    assert "survey of the allowlist tools/linter/adapters/test_linter_allowlist.json at " in output
    assert "  ready" in output and "  restructure" in output and "  manual" in output
    assert "2 excluded by a pattern" in output
    restructure = sum(1 for k in KINDS.values() if k == "restructure") * COUNTS["split"]  # one owner each
    assert f"suggested batches of up to 5 files ({restructure} with --restructure auto); the first 5:" in output
    assert "graduate only: the linter accepts them as they are" in output
    assert "files could be widened by a step --restructure auto never runs (drop-only-for)" in output
    assert "allowlist history: " in output and "(4 commits)" in output
    # one line per pass of the gate, named: labels alone, then the files restructured
    assert re.search(r"^linter gate \(labels\): \d+ files? checked", output, re.M), output
    assert re.search(r"^linter gate \(--restructure auto\): \d+ files? checked", output, re.M), output
    assert "rejected by the linter" in output


def test_a_dirty_tree_is_surveyed_as_the_work_tree_and_says_so(tree, surveyed, tmp_path):
    data, _ = surveyed
    assert (data["surveyed"], data["uncommitted"]) == ("commit", [])  # the tree as committed
    root = _copy(tree, tmp_path)
    edited = next(p for p, k in tree.kinds.items() if k == "generic")
    (root / edited).write_text((root / edited).read_text() + "\n# an edit\n")
    (root / "test" / "test_new.py").write_text(HELPER_SRC)  # untracked
    (root / "docs").mkdir()
    (root / "docs" / "notes.py").write_text("x = 1\n")  # untracked, but not read by the survey
    out = tmp_path / "s.json"
    r = cli("survey", "test", "--from-allowlist", ALLOWLIST, "-j", "2", "--json", str(out), cwd=root)
    assert r.exit_code == 0, r.output
    dirty = json.loads(out.read_text())
    assert dirty["surveyed"] == "work-tree" and dirty["uncommitted"] == sorted([edited, "test/test_new.py"])
    assert dirty["commit"] == data["commit"]
    assert f"in the work tree ({data['commit'][:12]} with uncommitted changes in 2 files)" in r.output.splitlines()[0]
    (warning,) = [w for w in dirty["warnings"] if "uncommitted" in w]
    assert warning.startswith("surveyed the work tree: uncommitted changes in 2 of the files read")
    assert "`decouple refactor --batches` plans from the commit" in warning


def test_nothing_in_the_checkout_is_written(tree, surveyed, tmp_path):
    status = subprocess.run(["git", "-C", tree.root, "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""


def _copy(tree, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(tree.root, root, symlinks=True)
    return root


def _store_entries(result_cache):
    """The keys of the engine's store in conftest's per-test cache folder."""
    return sorted(store_rows(result_cache / "results"))


def test_a_second_run_comes_from_the_cache_and_says_the_same(tree, tmp_path, result_cache):
    root = _copy(tree, tmp_path)
    first, second = tmp_path / "1.json", tmp_path / "2.json"
    r1 = cli("survey", "-j", "2", "--json", str(first), cwd=root)
    assert "cache:" not in r1.output
    total = json.loads(first.read_text())["totals"]["files"]
    assert len(_store_entries(result_cache)) == total  # in the engine's store, one entry per file
    r2 = cli("survey", "-j", "2", "--json", str(second), cwd=root)
    assert f"cache: {total} of {total} files unchanged since an earlier survey" in r2.output
    assert first.read_bytes() == second.read_bytes()
    # One file changes: only it is analysed again, and its new status shows.
    generic = next(p for p, k in tree.kinds.items() if k == "generic")
    path = root / generic
    path.write_text(path.read_text() + f"\n{REJECT_MARK}\n")
    r3 = cli("survey", "-j", "2", "--json", str(second), cwd=root)
    assert f"cache: {total - 1} of {total} files" in r3.output
    assert _by_path(json.loads(second.read_text()))[generic]["status"] == "manual"
    # A damaged entry, another key's, or a whole entry of the store that is not a survey: a miss.
    not_a_survey = json.dumps({"path": "someone else's"}).encode()
    secret = (result_cache / "results" / "v2" / store.SECRET_NAME).read_bytes()

    def damage(n, key, digest, payload):
        if n % 3 == 0:
            return digest, b"{not an entry"
        # a whole entry of the store, under another key or holding no survey
        return store._digest(secret, "0" * 64 if n % 3 == 1 else key, not_a_survey), not_a_survey

    rewrite_rows(result_cache / "results", damage)
    r4 = cli("survey", "-j", "2", "--json", str(first), cwd=root)
    assert "cache:" not in r4.output
    assert first.read_bytes() == second.read_bytes()
    # An option that changes the results is part of the key; --no-cache neither reads nor writes.
    r5 = cli("survey", "-j", "2", "--linter", "off", "--json", str(first), cwd=root)
    assert "cache:" not in r5.output
    assert _by_path(json.loads(first.read_text()))[generic]["status"] == "ready"  # no linter: no rejection
    before = store_rows(result_cache / "results")
    r6 = cli("survey", "-j", "2", "--no-cache", "--json", str(first), cwd=root)
    assert "cache:" not in r6.output
    assert store_rows(result_cache / "results") == before


def test_the_survey_and_the_codemod_keep_apart_in_one_store(tree, tmp_path, result_cache):
    root = _copy(tree, tmp_path)
    classified = cli("classify", "test", "--linter", "off", cwd=root)
    codemod_entries = set(_store_entries(result_cache))
    assert codemod_entries
    out = tmp_path / "s.json"
    r = cli("survey", "test", "-j", "2", "--linter", "off", "--json", str(out), cwd=root)
    assert "cache:" not in r.output  # the codemod's entries answered none of the survey's keys
    surveyed = set(_store_entries(result_cache)) - codemod_entries
    assert len(surveyed) == json.loads(out.read_text())["totals"]["files"]
    assert cli("classify", "test", "--linter", "off", cwd=root).output == classified.output


def test_the_cache_keeps_the_generations_apart(tree, tmp_path):
    root = _copy(tree, tmp_path)
    guarded = sorted(p for p, k in tree.kinds.items() if k == "gpu_guarded")

    def survey(*args):
        out = tmp_path / "s.json"
        r = cli("survey", "-j", "2", *args, "--json", str(out), cwd=root)
        assert r.exit_code == 0, r.output
        data = json.loads(out.read_text())
        return r.output, data, {p: _by_path(data)[p]["values"] for p in guarded}

    output, gen1, values = survey("--rules", "gen1")
    assert "cache:" not in output and "rules: gen1 (as asked (--rules gen1))" in output
    assert all(set(v) == {"GENERIC"} for v in values.values())
    # gen1's results are never served for gen2: every file is analysed again, and says CUDA.
    output, gen2, values = survey("--rules", "gen2")
    assert "cache:" not in output and all(set(v) == {"CUDA"} for v in values.values())
    assert gen2["generation"]["name"] == "gen2"
    # auto comes to gen2 here: served from gen2's entries, the same files; the JSON names the setting.
    total = gen2["totals"]["files"]
    output, auto, _ = survey()
    assert f"cache: {total} of {total} files" in output
    assert auto["files"] == gen2["files"] and auto["generation"]["setting"] == "auto"
    # [tool.decouple] rules is honoured (and served from gen1's entries); --rules overrides it.
    (root / "pyproject.toml").write_text('[tool.decouple]\nrules = "gen1"\n')
    output, configured, values = survey()
    assert f"cache: {total} of {total} files" in output and configured["files"] == gen1["files"]
    assert configured["generation"]["setting"] == "gen1" and all(set(v) == {"GENERIC"} for v in values.values())
    output, _, values = survey("--rules", "gen2")
    assert all(set(v) == {"CUDA"} for v in values.values())
    # With the gate off the linter's source is no part of the key: the generation still is.
    output, _, values = survey("--linter", "off", "--rules", "gen1")
    assert "cache:" not in output and all(set(v) == {"GENERIC"} for v in values.values())
    output, _, values = survey("--linter", "off", "--rules", "gen2")
    assert "cache:" not in output and all(set(v) == {"CUDA"} for v in values.values())


def test_paths_instead_of_the_allowlist(tree, tmp_path):
    out = tmp_path / "s.json"
    r = cli("survey", "test/jit", "--json", str(out), "-q", cwd=tree.root)
    assert r.exit_code == 0, r.output
    assert r.output == ""  # -q: only the outputs asked for
    data = json.loads(out.read_text())
    assert data["allowlist"] is None and data["stale"] == []
    assert {f["path"] for f in data["files"]} == {p for p in tree.kinds if p.startswith("test/jit/")}
    assert all(f["allowlisted"] is None for f in data["files"])


def test_outputs_to_standard_output(tree):
    r = cli("survey", "test/jit", "--json", "-", cwd=tree.root)
    assert r.exit_code == 0
    data = json.loads(r.stdout)
    assert data["totals"]["files"] == len(data["files"])


def _stderr_on_a_terminal(args, cwd, env):
    """Run `decouple ARGS` with stderr on a pseudo-terminal; return its exit code and what it printed there."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "codemod", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=follower,
    )
    os.close(follower)
    chunks = []
    while select.select([leader], [], [], 300)[0]:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    code = proc.wait(timeout=300)
    os.close(leader)
    return code, b"".join(chunks).decode(errors="replace")


def test_a_progress_bar_on_a_terminal_only(tmp_path):
    # More files than the engine's PROGRESS_MIN_FILES (below it a run is quick: no bar).
    many = PROGRESS_MIN_FILES + 5
    big = make_tree(str(tmp_path / "pytorch"), {"generic": many})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}  # conftest's cache folder
    args = ["survey", "test", "--no-cache", "--linter", "off", "--json", str(tmp_path / "s.json")]
    code, shown = _stderr_on_a_terminal(args, big.root, env)
    assert code == 0, shown
    surveyed = json.loads((tmp_path / "s.json").read_text())["totals"]["files"]
    assert surveyed > PROGRESS_MIN_FILES
    assert "survey: labels" in shown and "  0%" in shown and "100%" in shown  # the bar, run to its end
    code, quiet = _stderr_on_a_terminal([*args, "-q"], big.root, env)
    assert code == 0 and "survey: labels" not in quiet
    # Not a terminal: no bar.
    r = subprocess.run([sys.executable, "-m", "codemod", *args], cwd=big.root, env=env, capture_output=True, text=True)
    assert r.returncode == 0 and "survey: labels" not in r.stderr


def test_round_trip_of_the_json(surveyed):
    data, _ = surveyed
    assert Survey.from_json(data).to_json() == data


@pytest.mark.parametrize(
    "args, message",
    [
        (("test/nowhere",), "no such file or folder: test/nowhere"),
        (("--from-allowlist", "missing.json"), "cannot read allowlist missing.json"),
        (("--linter", "nowhere.py"), "--linter nowhere.py: no such file"),
        (("--rules", "gen9"), "Invalid value for '--rules': 'gen9' is not one of 'auto', 'gen1', 'gen2'"),
    ],
)
def test_bad_input_is_exit_2_with_a_message(tree, args, message):
    r = cli("survey", *args, cwd=tree.root)
    assert r.exit_code == 2
    assert message in r.output


def test_history_needs_a_git_repository(tmp_path):
    (tmp_path / "tools" / "linter" / "adapters").mkdir(parents=True)
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "test_a.py").write_text("class TestA:\n    def test_a(self):\n        pass\n")
    (tmp_path / ALLOWLIST).write_text('["test/test_a.py"]\n')
    r = cli("survey", "--from-allowlist", ALLOWLIST, "--git-history", cwd=tmp_path)
    assert r.exit_code == 2
    assert "git log failed" in r.output
    r = cli("survey", "--from-allowlist", ALLOWLIST, "--json", "-", cwd=tmp_path)
    assert r.exit_code == 0 and json.loads(r.stdout)["commit"] is None


def test_no_allowlist_and_no_path_is_a_usage_error(tmp_path):
    r = cli("survey", cwd=tmp_path)
    assert r.exit_code == 2
    assert "name files or folders, or --from-allowlist PATH" in r.output


@pytest.mark.parametrize(
    "header, owners",
    [
        (b'# Owner(s): ["module: nn"]\n', ("module: nn",)),
        (b"#!/usr/bin/env python3\n# Owner(s): ['oncall: distributed', 'module: c10d']\n", ("oncall: distributed", "module: c10d")),
        (b"# Owner(s): module: unknown\n", ("module: unknown",)),
        (b"import torch\n", ()),
        (b'"""doc"""\n' * 30 + b'# Owner(s): ["too late"]\n', ()),
    ],
)
def test_owners_header(header, owners):
    assert owners_of(header + b"import torch\n") == owners


def test_refactor_takes_the_survey_s_batches(tree, surveyed, tmp_path):
    data, _ = surveyed
    root = _copy(tree, tmp_path)
    survey_json = tmp_path / "survey.json"
    survey_json.write_text(json.dumps(data))
    r = cli("refactor", "--batches", str(survey_json), "--limit", "2", "--no-ab", "--out", str(tmp_path / "out"), cwd=root)
    assert r.exit_code == 0, r.output
    made = [line.split(":")[0] for line in r.output.splitlines() if line.startswith("hw-classification/")]
    assert len(made) == 2
    files_of = _by_path(data)
    for branch, batch in zip(made, data["batches"][:2], strict=True):
        files = subprocess.run(
            ["git", "-C", str(root), "show", "--name-only", "--format=", branch], capture_output=True, text=True
        ).stdout.split()
        # A graduate-only file's branch is its allowlist line, nothing else.
        edited = [p for p in batch["files"] if not files_of[p]["graduate_only"]]
        assert sorted(files) == sorted([*edited, ALLOWLIST])
        listed = subprocess.run(["git", "-C", str(root), "show", f"{branch}:{ALLOWLIST}"], capture_output=True, text=True)
        assert not set(batch["files"]) & set(json.loads(listed.stdout))
    assert any(files_of[p]["graduate_only"] for b in data["batches"][:2] for p in b["files"])
    # The groups are the survey's: --group-size would contradict them; paths too.
    r = cli("refactor", "--batches", str(survey_json), "--group-size", "2", "--dry-run", cwd=root)
    assert r.exit_code == 2 and "--batches and --group-size exclude each other" in r.output
    r = cli("refactor", "--batches", str(tmp_path / "out" / "batch.json"), "--dry-run", cwd=root)
    assert r.exit_code == 2 and "not a decouple survey" in r.output


def test_refactor_takes_the_restructure_batches_only_with_restructure(tree, surveyed, tmp_path):
    data, _ = surveyed
    restructure = [b for b in data["batches"] if b["plan"] == "restructure"]
    assert restructure, "the survey tree has a file that passes after --restructure auto"
    root = _copy(tree, tmp_path)
    survey_json = tmp_path / "survey.json"
    survey_json.write_text(json.dumps(data))
    without = cli("refactor", "--batches", str(survey_json), "--dry-run", cwd=root)
    with_steps = cli("refactor", "--batches", str(survey_json), "--dry-run", "--restructure", "auto", cwd=root)
    for b in restructure:
        for path in b["files"]:
            # without --restructure: named among the skipped files, with the command that takes it
            assert f"skip {path}: in the survey's batch {b['number']}, which needs --restructure auto" in without.output
            assert f"decouple refactor --batches {survey_json} --restructure auto" in without.output
            # with it: planned in a branch of its own batch
            assert f"skip {path}:" not in with_steps.output
            assert path in with_steps.output.split("would create branch", 1)[1]


def test_refactor_batches_skip_what_is_no_longer_doable_at_the_base(tree, surveyed, tmp_path):
    data, _ = surveyed
    root = _copy(tree, tmp_path)
    first = data["batches"][0]["files"]
    broken = root / first[0]
    broken.write_text(broken.read_text() + f"\n{REJECT_MARK}\n")
    subprocess.run(["git", "-C", str(root), "commit", "-qam", "reject one"], check=True, env={
        **os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x"})
    survey_json = tmp_path / "survey.json"
    survey_json.write_text(json.dumps(data))
    r = cli("refactor", "--batches", str(survey_json), "--limit", "1", "--dry-run", cwd=root)
    assert r.exit_code == 0, r.output
    assert f"skip {first[0]}: needs manual work" in r.output
    assert r.output.count("would create branch") == 1
    assert all(f"\n    {p}\n" in r.output for p in first[1:]) and f"\n    {first[0]}\n" not in r.output


@pytest.mark.torch
@pytest.mark.parametrize("mode", ["auto", "weights-only-false"])
def test_with_torch_load_the_planner_decides_as_apply_does(tree, tmp_path, mode):
    python = os.environ.get("DECOUPLE_TORCH_PYTHON")
    if not python:
        pytest.skip("DECOUPLE_TORCH_PYTHON not set")
    out = tmp_path / "s.json"
    r = cli("survey", "--torch-load", mode, "--python", python, "-j", "2", "--json", str(out), cwd=tree.root)
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["settings"]["torch_load"] == mode
    files = _by_path(data)
    loads = [p for p, k in tree.kinds.items() if k == "torch_load"]
    for p in loads:  # the planner's own facts: one call made explicit; auto would need discovery
        assert files[p]["torch_load"] == {
            "calls": 1, "edits": 1, "left_alone": 0, "undiscovered": int(mode == "auto"), "manual": 0}
    labels = _apply_json(tree.root, sorted(files), "--torch-load", mode, "--python", python)
    for p, f in files.items():
        if f["status"] == "ready":
            assert _doable(labels[p]), p
        elif f["status"] != "error":
            assert not _doable(labels[p]), p


def _result(status, findings=(), manual=0, fully=False, reason=""):
    from codemod.engine.result import FileResult, FileStatus

    return FileResult(path="x.py", status=FileStatus(status), findings=list(findings), manual=manual,
                      fully_classified=fully, reason=reason)


def test_what_stays_manual_is_always_said():
    from codemod.survey.analysis import file_survey
    from codemod.survey.model import TorchLoadFacts
    from transforms.core.base import Finding, Severity

    label = Finding(rule="hw/label", message="TestA: GENERIC", line=3, cls="TestA", data={"value": "GENERIC"})
    unresolved = Finding(rule="torch-load/unresolved", message="`f = torch.load`: make it explicit by hand", line=9,
                         severity=Severity.WARNING)
    duplicate = Finding(rule="hw/duplicate_class", message="test class TestA is defined 2 times", line=7,
                        severity=Severity.ERROR, cls="TestA")

    def survey(labels, restructured=None):
        return file_survey(path="test/x.py", directory="test", owners=(), labels=labels, restructured=restructured,
                           torch_load=TorchLoadFacts())

    s = survey(_result("changed", [label, unresolved], manual=1, fully=True))  # with --torch-load
    assert s.status == SurveyStatus.MANUAL
    assert [(m.cls, m.reason) for m in s.manual] == [("torch.load", "`f = torch.load`: make it explicit by hand")]
    s = survey(_result("changed", [label, duplicate]))
    assert s.status == SurveyStatus.MANUAL and s.manual[0].reason == "test class TestA is defined 2 times"
    s = survey(_result("needs-manual", [label]), _result("failed", reason="internal error: boom"))
    assert s.status == SurveyStatus.ERROR and s.reason == "with --restructure auto: internal error: boom"
    assert survey(_result("changed", [label], fully=True)).status == SurveyStatus.READY
    s = survey(_result("failed", reason="syntax error: line 2: invalid syntax"))
    assert (s.status, s.reason) == (SurveyStatus.ERROR, "syntax error: line 2: invalid syntax")


def test_bad_files_are_errors_with_their_reason_and_nothing_is_written(tmp_path):
    test = tmp_path / "test"
    test.mkdir()
    good = "class TestA(TestCase):\n    def test_a(self):\n        pass\n"
    (test / "test_good.py").write_text(good)
    (test / "test_binary.py").write_bytes(b"class TestB:\0\n")
    (test / "test_latin.py").write_bytes(b"# -*- coding: ascii -*-\nx = '\xe9'\n")
    (test / "test_big.py").write_bytes(b"#" * (1024 * 1024 + 10) + b"\n")
    (test / "test_link.py").symlink_to("test_good.py")
    (test / "test_<odd> name.py").write_text(good)
    before = {p: p.read_bytes() for p in test.iterdir() if not p.is_symlink()}
    r = cli("survey", "test", "--linter", "off", "--json", "-", "-q", cwd=tmp_path)
    assert r.exit_code == 0, r.output
    files = _by_path(json.loads(r.stdout))
    assert files["test/test_binary.py"]["reason"] == "binary file (contains NUL bytes)"
    assert files["test/test_latin.py"]["reason"].startswith("cannot decode")
    assert files["test/test_big.py"]["reason"].startswith("too large")
    # The link and its target are one file, surveyed once under one of its names (as apply takes it).
    (one,) = {"test/test_good.py", "test/test_link.py"} & set(files)
    assert {p: f["status"] for p, f in files.items()} == {
        "test/test_binary.py": "error", "test/test_latin.py": "error", "test/test_big.py": "error",
        one: "ready", "test/test_<odd> name.py": "ready"}
    assert {p: p.read_bytes() for p in test.iterdir() if not p.is_symlink()} == before
    assert (test / "test_link.py").is_symlink()
    r = cli("survey", "test", "--linter", "off", "--json", str(tmp_path / "no" / "such" / "dir.json"), cwd=tmp_path)
    assert r.exit_code == 2 and "cannot write" in r.output
