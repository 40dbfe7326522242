"""Suggested PRs: the ready files, then the restructure files, in groups of up to K, the way
reviewers ask for them.

A batch holds files of one plan (labels alone, or `--restructure auto`: a PR that moves tests
is reviewed and A/B-run on its own) and never mixes owners (each PR goes to one set of
reviewers). Within an owner, files of one folder go together first; what is left of each folder
(fewer than K) is then combined with the rest of that owner's folders, in path order, so nearby
folders share a PR. The label batches come first; within a plan the largest batches come
first, and among equal sizes the ones with the fewest classes to review.
"""

from __future__ import annotations

import posixpath

from codemod.survey.analysis import NEW_LABEL
from codemod.survey.model import Batch, BatchPlan, FileSurvey, SurveyStatus
from transforms.restructure import REGISTRY as RESTRUCTURE_REGISTRY


def wants_a_pr(f: FileSurvey) -> bool:
    """A PR changes something: a restructuring, labels to write, or an allowlist entry to remove."""
    if f.status == SurveyStatus.RESTRUCTURE:
        return True
    if f.status != SurveyStatus.READY:
        return False
    return f.allowlisted is True or any(c.decision in NEW_LABEL for c in f.classes)


PLANS = {SurveyStatus.READY: BatchPlan.LABELS, SurveyStatus.RESTRUCTURE: BatchPlan.RESTRUCTURE}


def _chunks(files: list[FileSurvey], size: int) -> list[list[FileSurvey]]:
    return [files[i : i + size] for i in range(0, len(files), size)]


def _groups_of_owner(files: list[FileSurvey], size: int) -> list[list[FileSurvey]]:
    by_folder: dict[str, list[FileSurvey]] = {}
    for f in sorted(files, key=lambda f: f.path):
        by_folder.setdefault(f.directory, []).append(f)
    groups: list[list[FileSurvey]] = []
    rest: list[FileSurvey] = []
    for folder in sorted(by_folder):
        members = by_folder[folder]
        whole = len(members) - len(members) % size
        groups += _chunks(members[:whole], size)
        rest += members[whole:]
    return groups + _chunks(rest, size)


def _common_folder(files: list[FileSurvey]) -> str:
    folders = [f.directory for f in files]
    common = posixpath.commonpath(folders) if all(d != "." for d in folders) else ""
    return common or "."


def _groups(files: list[FileSurvey], size: int) -> list[list[FileSurvey]]:
    """One plan's files in groups: by owner, then folder; the largest first."""
    by_owner: dict[tuple[str, ...], list[FileSurvey]] = {}
    for f in files:
        by_owner.setdefault(f.owners, []).append(f)
    groups = [g for owners in sorted(by_owner) for g in _groups_of_owner(by_owner[owners], size)]
    return sorted(groups, key=lambda g: (-len(g), sum(len(f.classes) for f in g), g[0].path))


def plan_batches(files: list[FileSurvey], size: int) -> list[Batch]:
    if size < 1:
        raise ValueError("a batch holds at least one file")
    wanted = [f for f in files if wants_a_pr(f)]
    planned = [
        (plan, g) for status, plan in PLANS.items() for g in _groups([f for f in wanted if f.status == status], size)
    ]
    return [
        Batch(
            number=n,
            files=tuple(f.path for f in g),
            owners=g[0].owners,
            directory=_common_folder(g),
            classes=sum(len(f.classes) for f in g),
            plan=plan,
            restructure=tuple(step for step in RESTRUCTURE_REGISTRY if any(step in f.transforms for f in g)),
        )
        for n, (plan, g) in enumerate(planned, 1)
    ]
