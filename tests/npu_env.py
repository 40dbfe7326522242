"""A throwaway environment with the simulated out-of-tree backend (tests/fixtures/npu_backend).

`npu_python(torch_python, where)` makes a venv in `where` that sees the torch venv's packages
(a ``.pth`` naming its site-packages: a venv made from a venv's python with
``--system-site-packages`` would see the base interpreter's instead) and installs the
backend package into it with pip (no index, no build isolation: nothing is downloaded; the
package is copied first, so its build files are not written into the fixture).  The
project's own environments are never touched.  Used by the tests and by
``scripts/bench_ab.py --backend``.
"""

from __future__ import annotations

import shutil
import subprocess
import venv
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent / "fixtures" / "npu_backend"


def _site_packages(python: str) -> str:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return subprocess.run([python, "-c", code], check=True, capture_output=True, text=True).stdout.strip()


def npu_python(torch_python: str, where: Path) -> str:
    """The interpreter of a new venv in `where` that has torch (from `torch_python`'s venv)
    and the simulated `npu` backend, which torch loads on import."""
    env = where / "npu-venv"
    venv.EnvBuilder(with_pip=False, symlinks=True, clear=True).create(env)
    python = str(env / "bin" / "python")
    Path(_site_packages(python), "decouple-torch-venv.pth").write_text(_site_packages(torch_python) + "\n")
    source = where / "npu-backend-src"
    shutil.copytree(PACKAGE, source, dirs_exist_ok=True)
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation", str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    return python
