"""How much manual work `--restructure` resolves on the bundled manual-work fixtures.

For every test class of tests/fixtures/restructure/*.in.py that no label fits today
(hw/needs-manual), run `apply --restructure auto` (restructure, then label, verified as
the engine does) and count it resolved when every class it became carries a label whose
rules pass, under the generation of the rules the fixture's spec names (default gen1); then
the same with every step named (`auto` never runs the steps that add devices: drop-only-for,
cuda-to-accelerator). Prints both shares (goal: >= 70% with every step; `auto` resolves what
keeps every test's devices) and what stays manual under `auto`, with the reason.

    python scripts/bench_restructure.py [FIXTURE_DIR]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from codemod.engine.process import process_file  # noqa: E402
from transforms.label import HwLabel  # noqa: E402
from transforms.restructure import REGISTRY, Restructure, moves_from_findings, parse_selection  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fixtures", "restructure")


def _resolved(work: str, rules: str, selection: str, needing: set) -> tuple[int, list[tuple[str, str]]]:
    """(how many of `needing` the selection resolves, (class, why) for the others)."""
    after = process_file(work, [Restructure(parse_selection(selection), rules=rules), HwLabel(rules=rules)], "check")
    moves = moves_from_findings(after.findings)
    resolved, left_over = 0, []
    for cls in sorted(needing):
        became = {m.new_class for m in moves if m.old_class == cls} or {cls}
        left = [f for f in after.findings if f.cls in became and f.rule in ("hw/needs-manual", "hw/refused")]
        refusals = [
            f.message
            for f in after.findings
            if f.cls == cls and f.rule.startswith("restructure/") and f.data.get("refused")
        ]
        if after.status == "failed" or left:
            why = refusals or [f.message.split("; manual: ", 1)[-1] for f in left] or [after.reason]
            left_over.append((cls, why[0]))
        else:
            resolved += 1
    return resolved, left_over


def main(folder: str = HERE) -> int:
    manual_before = by_auto = by_all = 0
    remaining = []
    started = time.perf_counter()
    every_step = ",".join(REGISTRY)
    with tempfile.TemporaryDirectory() as tmp:
        for src in sorted(glob.glob(os.path.join(folder, "*.in.py"))):
            work = os.path.join(tmp, "test_" + os.path.basename(src)[: -len(".in.py")] + ".py")
            shutil.copyfile(src, work)
            with open(src[: -len(".in.py")] + ".json") as f:
                rules = json.load(f).get("rules", "gen1")
            before = process_file(work, [HwLabel(rules=rules)], "classify")
            needing = {f.cls for f in before.findings if f.rule == "hw/needs-manual"}
            if not needing:
                continue
            manual_before += len(needing)
            resolved, left = _resolved(work, rules, "auto", needing)
            by_auto += resolved
            remaining += [(os.path.basename(src), cls, why) for cls, why in left]
            by_all += _resolved(work, rules, every_step, needing)[0]
    elapsed = time.perf_counter() - started
    share = by_all / manual_before if manual_before else 0.0
    print(f"classes needing manual work before: {manual_before}")
    auto_share = by_auto / max(manual_before, 1)
    print(f"resolved by --restructure auto:    {by_auto} ({auto_share:.0%}; keeps every test's devices)")
    print(f"resolved with every step named:    {by_all} ({share:.0%}; goal >= 70%)")
    print("still manual after --restructure auto:")
    for name, cls, why in remaining:
        print(f"  {name} {cls}: {why}")
    print(f"({elapsed:.2f}s)")
    return 0 if share >= 0.7 else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fixture_dir", nargs="?", default=HERE, help="the *.in.py fixtures (default: %(default)s)")
    sys.exit(main(ap.parse_args().fixture_dir))
