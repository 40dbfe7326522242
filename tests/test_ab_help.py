"""`decouple ab -h` (issue 39): it says where the run's options are and how the files run, as they do."""

from __future__ import annotations

from click.testing import CliRunner

from codemod.ab.arms.options import PACK_FROM
from codemod.cli.main import main


def test_ab_help_points_to_the_run_options_and_says_how_files_run():
    out = CliRunner().invoke(main, ["ab", "-h"]).output
    assert "`decouple ab run -h`" in out and "Run options: decouple ab run -h" in out
    assert "own pytest process under the chosen interpreter" not in out  # packing is the default from PACK_FROM files
    assert f"from {PACK_FROM} files on" in " ".join(out.split())
    assert "Exit: SAFE 0, REGRESSION 1, INCONCLUSIVE 3" in " ".join(out.split())
