"""The documentation stays true to the code.

- docs/check_links.py passes: links and anchors resolve, every path a page names exists, no page
  carries a to-do marker, docs/architecture.md names every module, the README is at most 250 lines.
- Every folder's docstring starts with one line (at most 100 characters), and docs/architecture.md
  repeats that line under the folder's heading.
- docs/architecture.md's picture of the floors and its table of what each folder imports agree with
  the folders' import graph that tests/test_architecture.py computes, and its copy of the A/B outcome
  matrix is `codemod.ab.comparison.compare.MATRIX`.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

from test_architecture import IMPORTS, MODULES, PACKAGES, folder_of

from codemod.ab.comparison.compare import MATRIX, OutcomeKind

PROJECT = Path(__file__).resolve().parent.parent
ARCHITECTURE = PROJECT / "docs" / "architecture.md"
FOLDER = re.compile(r"\b((?:codemod|transforms)(?:/\w+)*/)")

_spec = importlib.util.spec_from_file_location("check_links", PROJECT / "docs" / "check_links.py")
assert _spec is not None and _spec.loader is not None
check_links = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_links)


def doc_name(folder: str) -> str:
    """A folder of the import graph (`codemod.ab`) as the page spells it (`codemod/ab/`)."""
    return folder.replace(".", "/") + "/"


def folder_graph() -> dict[str, set[str]]:
    """Folder -> the folders it imports at module level, as the page spells them. An edge into a
    package root (its `__init__.py` runs when a subpackage is imported) is no floor and is left out."""
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        if module in PACKAGES:
            continue  # the package roots' __init__.py (empty)
        a = folder_of(module)
        edges = {doc_name(folder_of(t)) for t in IMPORTS[module] if folder_of(t) not in (a, *PACKAGES)}
        if edges or MODULES[module].name != "__init__.py":  # a folder of subfolders only is no box
            graph.setdefault(doc_name(a), set()).update(edges)
    return graph


def section(text: str, heading: str) -> str:
    """The text under `## heading`, up to the next heading of that level."""
    m = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"no section {heading!r}"
    return m.group(1)


def picture_errors(text: str, graph: dict[str, set[str]]) -> list[str]:
    """Each box imports only boxes lower in the picture (a box's row: the line where its folder is
    first named; boxes side by side share it, so they may not import each other)."""
    block = re.search(r"```text\n(.*?)```", section(text, "The floors"), re.S)
    if block is None:
        return ["no ```text picture under 'The floors'"]
    row: dict[str, int] = {}
    for number, line in enumerate(block.group(1).splitlines()):
        for folder in FOLDER.findall(line):
            row.setdefault(folder, number)
    errors = [f"the picture names {f}, which holds no module" for f in row if f not in graph]
    errors += [f"the picture has no box for {f}" for f in graph if f not in row]
    for a, targets in graph.items():
        for b in targets:
            if a in row and b in row and row[a] >= row[b]:
                errors.append(f"{a} imports {b}, which the picture does not put below it")
    return errors


def table_errors(text: str, graph: dict[str, set[str]]) -> list[str]:
    """The table `| folder | imports |` lists exactly the graph's edges."""
    documented: dict[str, set[str]] = {}
    lines = section(text, "The floors").splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"\|\s*folder\s*\|\s*imports\s*\|", line)), None)
    if start is None:
        return ["no '| folder | imports |' table under 'The floors'"]
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = line.strip("|").split("|")
        folders = FOLDER.findall(cells[0])
        if len(cells) != 2 or len(folders) != 1:
            return [f"a row of the imports table is not '| `folder/` | `folder/`, ... |': {line}"]
        documented[folders[0]] = set(FOLDER.findall(cells[1]))
    errors = []
    for folder in sorted(set(graph) | set(documented)):
        if folder not in documented:
            errors.append(f"the imports table has no row for {folder}")
        elif folder not in graph:
            errors.append(f"the imports table has a row for {folder}, which holds no module")
        elif documented[folder] != graph[folder]:
            missing, extra = sorted(graph[folder] - documented[folder]), sorted(documented[folder] - graph[folder])
            if missing:
                errors.append(f"{folder} imports {', '.join(missing)}: the imports table does not say so")
            if extra:
                errors.append(f"{folder} does not import {', '.join(extra)}: the imports table says it does")
    return errors


# The matrix cells that are functions of the two outcomes, as the page names them.
DECIDED_CELLS = {"_failures": "*by signature*", "_crashes": "*by signal*"}


def matrix_errors(text: str) -> list[str]:
    """The page's outcome matrix (`| A \\ B | kinds of B ... |`, one row per kind of A) is MATRIX."""
    lines = [line for line in section(text, "The typed models").splitlines() if line.startswith("|")]
    start = next((i for i, line in enumerate(lines) if line.startswith("| A \\ B |")), None)
    if start is None:
        return ["no '| A \\ B |' outcome matrix under 'The typed models'"]

    def cells(line: str) -> list[str]:
        return [c.strip().strip("`") for c in line.strip().strip("|").split("|")]

    columns = cells(lines[start])[1:]
    errors = []
    rows = {}
    for line in lines[start + 2 :]:
        row = cells(line)
        if row[0] not in {k.value for k in OutcomeKind}:
            break
        rows[row[0]] = dict(zip(columns, row[1:], strict=False))
    for a in OutcomeKind:
        for b in OutcomeKind:
            cell = MATRIX[a, b]
            want = DECIDED_CELLS[cell.__name__] if callable(cell) else cell[0].value
            got = rows.get(a.value, {}).get(b.value)
            if got != want:
                errors.append(f"outcome matrix ({a}, {b}): the page says {got}, MATRIX {want}")
    return errors


def test_check_links_passes():
    result = subprocess.run(
        [sys.executable, str(PROJECT / "docs" / "check_links.py")], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 error(s)" in result.stdout


def test_the_picture_of_the_floors_matches_the_imports():
    assert picture_errors(ARCHITECTURE.read_text(encoding="utf-8"), folder_graph()) == []


def test_the_imports_table_matches_the_imports():
    assert table_errors(ARCHITECTURE.read_text(encoding="utf-8"), folder_graph()) == []


def test_the_outcome_matrix_is_the_code_s():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert matrix_errors(text) == []
    # and the comparison compares: one cell changed on the page is seen
    broken = text.replace("| `pass` | same-pass | new-failure |", "| `pass` | same-pass | fixed |")
    assert matrix_errors(broken) == ["outcome matrix (pass, fail): the page says fixed, MATRIX new-failure"]


def test_the_graph_is_the_real_one():
    # a few edges the code has (and one it must not have), so the comparison above compares something
    graph = folder_graph()
    assert "codemod/ab/result/" in graph["codemod/report/ab/"]
    assert "codemod/cli/" in graph["codemod/"]
    assert graph["transforms/core/"] == set()
    assert graph["codemod/target/"] == set()
    assert "codemod/target/" in graph["codemod/ab/execution/"]
    assert not any(folder.startswith("codemod/report/") for folder in graph["codemod/ab/execution/"])
    assert "codemod/ab/" not in graph and "codemod/report/" not in graph  # folders of folders are no boxes


def folder_summaries() -> dict[str, str]:
    """Each folder (`codemod/ab/`) with the first line of its package docstring."""
    found = {}
    for package in PACKAGES:
        for init in sorted((PROJECT / package).rglob("__init__.py")):
            doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
            if init.parent.name not in PACKAGES:
                found[str(init.parent.relative_to(PROJECT)) + "/"] = (doc or "").split("\n")[0]
    return found


def summary_errors(text: str, summaries: dict[str, str]) -> list[str]:
    """Each folder's one-line docstring is the first paragraph under its heading on the page."""
    errors = []
    for folder, summary in summaries.items():
        if not summary or len(summary) > 100:
            errors.append(f"{folder}: its docstring does not start with one line of at most 100 characters")
            continue
        heading = re.search(rf"^#{{3,4}} (?:`codemod/` and )?`{re.escape(folder)}`.*\n\n(.*)$", text, re.M)
        if heading is None:
            errors.append(f"{folder}: the page has no heading for it")
        elif heading.group(1) != summary:
            errors.append(f"{folder}: the page says {heading.group(1)!r} under its heading, the docstring {summary!r}")
    return errors


def test_every_folder_says_in_one_line_what_it_holds_and_the_page_repeats_it():
    summaries = folder_summaries()
    assert "codemod/target/" in summaries and "codemod/ab/execution/" in summaries
    assert summary_errors(ARCHITECTURE.read_text(encoding="utf-8"), summaries) == []
    # and the check checks: a page whose line differs from the docstring is seen
    page = "### `codemod/x/`: a folder\n\nSomething else.\n"
    assert summary_errors(page, {"codemod/x/": "What x holds."}) == [
        "codemod/x/: the page says 'Something else.' under its heading, the docstring 'What x holds.'"
    ]


def test_the_page_checks_can_fail(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n"
        "[gone](missing.md), [anchor](#no-such-heading), [fine](#title), [web](https://example.org)\n"
        "`codemod/no_such_module.py` and `tests/fixtures/hw/<case>.nothing` but `codemod/engine/`\n"
        "<!-- TODO confirm -->\n"
        "```text\n`codemod/inside_a_code_block.py`\n```\n",
        encoding="utf-8",
    )
    errors = check_links.check_page(page)
    assert [e.split(": ", 1)[1] for e in errors] == [
        "a TODO mark: say what the code does, or leave it out",
        "link to a missing file: missing.md",
        "no heading for #no-such-heading in " + str(page),
        "no such path: codemod/no_such_module.py",
        "no such path: tests/fixtures/hw/<case>.nothing",
    ]
    assert check_links.path_exists("tests/fixtures/hw/<case>.in.py")


def test_the_picture_and_table_checks_can_fail():
    graph = {"codemod/cli/": {"codemod/util/"}, "codemod/util/": set(), "codemod/ab/": {"codemod/util/"}}
    text = (
        "## The floors\n\n```text\n"
        "| codemod/util/ |\n| codemod/cli/  | codemod/ab/ |\n"
        "```\n\n| folder | imports |\n|---|---|\n"
        "| `codemod/cli/` | `codemod/util/`, `codemod/ab/` |\n| `codemod/util/` | nothing |\n\n## Next\n"
    )
    assert picture_errors(text, graph) == [
        "codemod/cli/ imports codemod/util/, which the picture does not put below it",
        "codemod/ab/ imports codemod/util/, which the picture does not put below it",
    ]
    assert table_errors(text, graph) == [
        "the imports table has no row for codemod/ab/",
        "codemod/cli/ does not import codemod/ab/: the imports table says it does",
    ]
