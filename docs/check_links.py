"""Check the documentation: relative links resolve, and the paths it names exist.

    python docs/check_links.py        # exit 1 when a link or a named path is broken

- Every relative link of README.md, CONTRIBUTING.md and docs/*.md points to an existing file, and
  its `#anchor` (if any) to a heading of that file (GitHub's slugs).
- Every repository path the pages name in backticks (`codemod/...`, `transforms/...`, `scripts/...`,
  `tests/...`, `examples/...`) exists; a missing one on a line marked `TODO confirm` (or in a table
  whose preceding line is) is listed as a reminder, not an error (the layout may still be moving).
- The README stays at most 250 lines.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 250
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
NAMED_PATH = re.compile(r"`((?:codemod|transforms|scripts|tests|examples)/[\w./-]*)`")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append((number, line))
    return out


def slug(heading: str) -> str:
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        m = re.match(r"#{1,6} (.*)", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return found


def check() -> tuple[list[str], list[str]]:
    errors, reminders = [], []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        where = page.relative_to(ROOT)
        table_marked = False  # a table preceded by a `TODO confirm` line: its rows are marked too
        previous = ""
        for number, line in prose_lines(text):
            if line.startswith("|"):
                marked = table_marked or "TODO confirm" in line
            else:
                marked = "TODO confirm" in line
                if line.strip():
                    previous = line
                table_marked = "TODO confirm" in previous
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):
                    continue  # https:, mailto:
                file_part, _, anchor = target.partition("#")
                dest = (page.parent / file_part).resolve() if file_part else page
                if not dest.exists():
                    errors.append(f"{where}:{number}: link to a missing file: {target}")
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    errors.append(f"{where}:{number}: no heading for #{anchor} in {dest.relative_to(ROOT)}")
            for named in NAMED_PATH.findall(line):
                candidate = ROOT / named.rstrip("/")
                if not (candidate.exists() or any(ROOT.glob(named.replace("<", "*").split("*")[0] + "*"))):
                    (reminders if marked else errors).append(f"{where}:{number}: no such path: {named}")
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    if lines > README_MAX_LINES:
        errors.append(f"README.md: {lines} lines (at most {README_MAX_LINES})")
    return errors, reminders


def main() -> int:
    errors, reminders = check()
    for message in reminders:
        print(f"reminder: {message}")
    for message in errors:
        print(f"error: {message}")
    print(f"{len(PAGES)} pages: {len(errors)} error(s), {len(reminders)} reminder(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
