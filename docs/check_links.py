"""Check the documentation: relative links resolve, and the paths it names exist.

    python docs/check_links.py        # exit 1 when a check fails; tests/test_docs.py runs it

- Every relative link of README.md, CONTRIBUTING.md and docs/*.md points to an existing file, and
  its `#anchor` (if any) to a heading of that file (GitHub's slugs).
- Every repository path the pages name in backticks (`codemod/...`, `transforms/...`, `scripts/...`,
  `tests/...`, `examples/...`) exists. A placeholder (`tests/fixtures/hw/<case>.in.py`, a `*`) must
  match at least one file.
- No page carries a TODO mark: a page says what the code does, not what it may do one day.
- docs/architecture.md names every module of both packages (`__init__.py` files aside) by its path.
- The README stays at most 250 lines.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PACKAGES = ("codemod", "transforms")
README_MAX_LINES = 250
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
NAMED_PATH = re.compile(r"`((?:codemod|transforms|scripts|tests|examples)/[\w./<>*-]*)`")
TODO = re.compile(r"\bTODO\b")


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


def path_exists(named: str) -> bool:
    """A named path exists; `<placeholder>` and `*` stand for any part of one name."""
    if "<" not in named and "*" not in named:
        return (ROOT / named.rstrip("/")).exists()
    pattern = re.sub(r"<[^>/]*>", "*", named.rstrip("/"))
    return any(ROOT.glob(pattern))


def named_paths(text: str) -> set[str]:
    """The repository paths a page names in backticks, outside code blocks."""
    return {named for _, line in prose_lines(text) for named in NAMED_PATH.findall(line)}


def shown(path: Path) -> str:
    """A path as the messages name it: relative to the repository when inside it."""
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def check_page(page: Path) -> list[str]:
    errors = []
    text = page.read_text(encoding="utf-8")
    where = shown(page)
    for number, line in enumerate(text.splitlines(), 1):
        if TODO.search(line):
            errors.append(f"{where}:{number}: a TODO mark: say what the code does, or leave it out")
    for number, line in prose_lines(text):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            if not dest.exists():
                errors.append(f"{where}:{number}: link to a missing file: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                errors.append(f"{where}:{number}: no heading for #{anchor} in {shown(dest)}")
        for named in NAMED_PATH.findall(line):
            if not path_exists(named):
                errors.append(f"{where}:{number}: no such path: {named}")
    return errors


def unnamed_modules() -> list[str]:
    """The modules of both packages docs/architecture.md does not name by their path."""
    named = named_paths(ARCHITECTURE.read_text(encoding="utf-8"))
    modules = sorted(
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if path.name != "__init__.py"
    )
    return [module for module in modules if module not in named]


def check() -> list[str]:
    errors = [message for page in PAGES for message in check_page(page)]
    for module in unnamed_modules():
        errors.append(f"{shown(ARCHITECTURE)}: names no `{module}`: say in its folder's table what it holds")
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    if lines > README_MAX_LINES:
        errors.append(f"README.md: {lines} lines (at most {README_MAX_LINES})")
    return errors


def main() -> int:
    errors = check()
    for message in errors:
        print(f"error: {message}")
    print(f"{len(PAGES)} pages: {len(errors)} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
