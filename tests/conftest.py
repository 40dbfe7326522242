import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: needs headless chromium + chromedriver")


@pytest.fixture(autouse=True, scope="session")
def decouple_cache(tmp_path_factory):
    """The tool's cache folder lives here, not in the user's ~/.cache."""
    path = tmp_path_factory.mktemp("decouple-cache")
    old = os.environ.get("DECOUPLE_CACHE_DIR")
    os.environ["DECOUPLE_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("DECOUPLE_CACHE_DIR", None)
    else:
        os.environ["DECOUPLE_CACHE_DIR"] = old


@pytest.fixture(autouse=True)
def result_cache(decouple_cache, tmp_path_factory, monkeypatch):
    """Each test its own cache of per-file results (a test may patch a transform: its results
    must not reach another test)."""
    path = tmp_path_factory.mktemp("decouple-results")
    monkeypatch.setenv("DECOUPLE_CACHE_DIR", str(path))
    return path


@pytest.fixture
def regen() -> bool:
    """DECOUPLE_REGEN_FIXTURES=1 rewrites expected outputs instead of comparing."""
    return os.environ.get("DECOUPLE_REGEN_FIXTURES") == "1"


@pytest.fixture
def decouple_cmd():
    """The CLI as a subprocess argv prefix (the installed console script's interpreter)."""
    return [sys.executable, "-m", "codemod"]
