"""Golden files: the en and zh Markdown of every A/B result in tests/fixtures/ab_results/.

Two of the results were recorded by running the project's own fixture suites
(`mixed.json`: tests/fixtures/ab/mixed through `--base HEAD`; `weights_diagnose.json`:
tests/fixtures/ab_diagnose/weights through `--base HEAD --diagnose` under torch 2.14.1);
the others are hand-built. After a deliberate change to the reports, regenerate with
`DECOUPLE_REGEN_FIXTURES=1 bash scripts/test.sh -k golden` and read the diff
(regenerated goldens are reviewed, never trusted).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from codemod.ab.result.model import ABResult
from codemod.report.ab import markdown as ab_markdown

RESULTS = Path(__file__).resolve().parent / "fixtures" / "ab_results"
NAMES = sorted(p.stem for p in RESULTS.glob("*.json"))


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", NAMES)
def test_markdown_golden(name, lang, regen):
    result = ABResult.from_json(json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8")))
    md = ab_markdown.render(result, lang)
    golden = RESULTS / f"{name}.{lang}.md"
    if regen:
        golden.write_text(md, encoding="utf-8")
    assert golden.exists(), f"no golden file {golden.name}: run with DECOUPLE_REGEN_FIXTURES=1 and review it"
    assert md == golden.read_text(encoding="utf-8")


def test_goldens_are_paste_ready():
    """What a reviewer pastes: no temporary roots, no inline env chains, short signature cells."""
    for golden in RESULTS.glob("*.md"):
        text = golden.read_text(encoding="utf-8")
        assert "decouple-ab-" not in text, golden.name
        assert "env -u" not in text, golden.name
        assert len(text) < 30_000, golden.name
        # raw Markdown reads as the text does: no HTML entity outside the raw-HTML summaries
        prose = "\n".join(line for line in text.splitlines() if not line.startswith("<details>"))
        assert not re.search(r"&(?:gt|lt|amp|quot|#\d+);", prose), golden.name
        for line in text.splitlines():
            if line.startswith("| ") and "`" in line:
                cells = [c for c in line.split(" | ")]
                assert all(len(c) <= 700 for c in cells), (golden.name, line[:200])
