"""Packaging hygiene: what a wheel of the tool carries and says about itself."""

import glob
import os
import re
import tomllib

from conftest import REPO


def _pyproject():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_license_file_matches_the_declared_license():
    project = _pyproject()["project"]
    assert project["license"] == {"text": "BSD-3-Clause"}
    assert "License :: OSI Approved :: BSD License" in project["classifiers"]
    text = open(os.path.join(REPO, "LICENSE"), encoding="utf-8").read()
    assert text.startswith("BSD 3-Clause License")
    assert "the test-decouple authors" in text
    assert "Neither the name of the copyright holder" in text  # the third clause


def test_every_package_data_pattern_matches_a_file_and_py_typed_ships():
    data = _pyproject()["tool"]["setuptools"]["package-data"]
    assert set(data) == {"codemod", "transforms"}
    for package, patterns in data.items():
        assert "py.typed" in patterns
        for pattern in patterns:
            assert glob.glob(os.path.join(REPO, package, pattern)), f"{package}: {pattern} matches nothing"


def test_classifiers_and_urls_are_well_formed():
    project = _pyproject()["project"]
    assert "Typing :: Typed" in project["classifiers"]
    versions = {c.rsplit(":: ", 1)[1] for c in project["classifiers"] if c.startswith("Programming Language :: Python :: 3.")}
    low = re.match(r">=(\d+\.\d+)", project["requires-python"]).group(1)
    assert min(versions, key=lambda v: tuple(map(int, v.split(".")))) == low
    assert project["urls"] and all(u.startswith("https://") for u in project["urls"].values())


def test_changelog_and_contributing_name_commands_that_exist():
    changelog = open(os.path.join(REPO, "CHANGELOG.md"), encoding="utf-8").read()
    assert "## [Unreleased]" in changelog
    contributing = open(os.path.join(REPO, "CONTRIBUTING.md"), encoding="utf-8").read()
    for script in re.findall(r"scripts/[\w.]+\.(?:sh|py)", contributing):
        assert os.path.exists(os.path.join(REPO, script)), script
    # the regeneration switch CONTRIBUTING names is the one the tests read
    assert "DECOUPLE_REGEN_FIXTURES=1" in contributing
    assert "DECOUPLE_REGEN_FIXTURES" in open(os.path.join(REPO, "tests", "conftest.py")).read()
