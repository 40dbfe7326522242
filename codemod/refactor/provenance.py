"""Whether an A/B result is the result of a refactor branch (`decouple pr-body --ab`).

A result may come from another machine (the split-machine path: `refactor --no-ab` here,
`ab --json` there): before its verdict goes into a PR body it must be the branch's own, by
what the result records of its arms: the files it ran are the commit's, arm A is the base
the commit names (`Decouple-Base`), arm B is the branch's tree (the work tree there was the
branch checked out, with no change among the files the run used).
"""

from __future__ import annotations

from codemod.ab.result.model import ABResult, file_of
from codemod.refactor.plan import CommitFacts


def foreign(result: ABResult, facts: CommitFacts, tree: str) -> list[str]:
    """What says `result` is not the A/B run of the commit `facts` describes, whose tree is
    `tree` (empty: it is)."""
    problems = []
    ran = sorted({file_of(p) for p in result.paths})
    changed = sorted(p.path for p in facts.files if not p.no_test_class)  # a file with no test class is not run
    if ran != changed:
        problems.append(f"it ran {', '.join(ran) or 'no file'}, the branch changes {', '.join(changed)}")
    a, b = result.arm("A"), result.arm("B")
    if a is None or a.commit != facts.base:
        shown = a.commit[:12] if a is not None and a.commit else "not a commit"
        problems.append(f"its arm A is {shown}, the branch's base is {facts.base[:12]}")
    if b is None or b.tree != tree:
        shown = f"the tree {b.tree[:12]}" if b is not None and b.tree else "not a commit (changes in the work tree)"
        problems.append(f"its arm B is {shown}, the branch's tree is {tree[:12]}")
    return problems
