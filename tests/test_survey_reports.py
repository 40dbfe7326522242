"""The survey's views over a hand-built survey: Markdown, the self-contained HTML dashboard,
and the dashboard in headless Chromium (sorting, filtering, the charts on a screenshot)."""

from __future__ import annotations

import dataclasses
import html
import html.parser
import os
import shutil
import struct
import zlib

import pytest

from codemod.engine.result import RulesChoice
from codemod.report.survey import html as survey_html
from codemod.report.survey import markdown as survey_markdown
from codemod.report.survey import text as survey_text
from codemod.report.survey.charts import COLOURS
from codemod.survey.batches import plan_batches
from codemod.survey.model import (
    ClassDecision,
    Excluded,
    FileSurvey,
    HistoryPoint,
    ManualItem,
    Survey,
    SurveyStatus,
    TorchLoadFacts,
    Widening,
)

READY, RESTRUCTURE, MANUAL, ERROR = SurveyStatus
LINTER = "tools/linter/adapters/test_linter.py"
RULES = f"gen1 (the generation of {LINTER})"  # how apply's summary names it
# folder -> (owner, {status: files}); the totals: 30 ready, 6 restructure, 10 manual, 2 error
LAYOUT = {
    "test/inductor": ("module: inductor", {READY: 14, RESTRUCTURE: 2, MANUAL: 4}),
    "test/distributed/fsdp": ("oncall: distributed", {READY: 10, RESTRUCTURE: 4, MANUAL: 2, ERROR: 2}),
    "test": ("", {READY: 6, MANUAL: 4}),
}


def _file(folder, owner, status, n):
    path = f"{folder}/test_{status}_{n}.py"
    owners = (owner,) if owner else ()
    classes = tuple(
        ClassDecision(name=f"Test{status.capitalize()}{n}x{c}", line=10 * c + 5, decision="label", value=value)
        for c, value in enumerate(["GENERIC", "ACCELERATOR"][: 1 + n % 2])
    )
    extra: dict = {}
    if status == RESTRUCTURE:
        extra = {"transforms": ("split-class",), "reason": "--restructure auto (split-class), then labels: 1 GENERIC"}
    elif status == MANUAL:
        item = ManualItem(cls=classes[0].name, line=5, reason="only_for lists meta <b>", fits="inject-device")
        extra = {"manual": (item,), "reason": f"{classes[0].name}: only_for lists meta <b>"}
    elif status == ERROR:
        extra = {"reason": "syntax error: line 3: invalid syntax", "classes": ()}
    else:
        extra = {"reason": f"labels: {len(classes)} GENERIC"}
    torch = TorchLoadFacts(calls=n, edits=n, undiscovered=n) if status == READY and n < 3 else TorchLoadFacts()
    return FileSurvey(
        **{
            "path": path,
            "directory": folder,
            "owners": owners,
            "status": status,
            "classes": classes,
            "torch_load": torch,
            "allowlisted": True,
            **extra,
        }
    )


def build_survey() -> Survey:
    files = [
        _file(folder, owner, status, n)
        for folder, (owner, counts) in LAYOUT.items()
        for status, k in counts.items()
        for n in range(k)
    ]
    files.sort(key=lambda f: f.path)
    history = [
        HistoryPoint(commit=str(i + 1) * 40, date=f"2026-0{i + 1}-01T00:00:00+00:00", entries=n, added=a, removed=r)
        for i, (n, a, r) in enumerate([(60, 60, 0), (55, 0, 5), (52, 1, 4), (48, 0, 4)])
    ]
    return Survey(
        root="/nowhere",
        allowlist="tools/linter/adapters/test_linter_allowlist.json",
        commit="ab" * 20,
        uncommitted=[],
        group_size=4,
        settings={"torch_load": "not asked (calls counted)", "restructure": "auto", "linter": "auto"},
        generation=RulesChoice(name="gen1", setting="auto", linters=(LINTER,)),
        files=files,
        excluded=[Excluded(path="test/cpython/test_x.py", pattern="test/cpython/*")],
        stale=["test/test_gone.py"],
        batches=plan_batches(files, 4),
        history=history,
        warnings=["torch 2.13.0 has no HardwareClassification"],
    )


def test_markdown_tables_and_escaping():
    md = survey_markdown.render(build_survey())
    assert md.startswith("# decouple survey\n")
    assert "| **ready** | 30 | 62% |" in md and "| **manual** | 10 | 21% |" in md and "| **error** | 2 | 4% |" in md
    assert "| `test/distributed/fsdp` | 18 | 10 | 4 | 2 | 2 |" in md
    assert "| `(no owner header)` | 10 | 6 | 0 | 4 | 0 |" in md
    assert "`decouple refactor --from-allowlist tools/linter/adapters/test_linter_allowlist.json --batches " in md
    assert "| 2026-04-01 | `444444444444` | 48 | +0 -4 |" in md
    assert "### manual (10)" in md and "only_for lists meta <b>; fits: inject-device" in md
    assert "## Excluded by a pattern (1)" in md and "`test/test_gone.py`" in md
    assert "- torch 2.13.0 has no HardwareClassification" in md
    assert f"\nRules: {RULES}.\n" in md


def test_terminal_summary():
    text = survey_text.summary(build_survey(), cached=40)
    assert text.splitlines()[0] == f"survey of the allowlist tools/linter/adapters/test_linter_allowlist.json at {'ab' * 6}: 48 files"
    assert "  ready           30   62%" in text
    assert "11 suggested batches of up to 4 files (2 with --restructure auto); the first 5:\n  1. " in text
    assert "\n  5. " in text
    assert "\n  6. " not in text
    few = dataclasses.replace(build_survey(), history=build_survey().history[:1])
    few.batches = few.batches[:1]
    text_few = survey_text.summary(few)
    assert "1 suggested batch of up to 4 files:\n  1. " in text_few and "(1 commit)" in text_few
    assert "  test/distributed/fsdp: 18 (10 ready, 4 restructure, 2 manual, 2 error)" in text
    assert "allowlist history: 60 entries on 2026-01-01, 48 on 2026-04-01 (4 commits)" in text
    assert "cache: 40 of 48 files unchanged since an earlier survey" in text
    assert f"\nrules: {RULES}\n" in text


def test_every_view_shows_the_restructure_batches_and_the_widenings_apart():
    survey = build_survey()
    manual = next(f for f in survey.files if f.status == MANUAL)
    widening = Widening(cls="TestCudaOnly", step="cuda-to-accelerator", tests=("test_a",), adds=("other-accelerators",))
    survey.files[survey.files.index(manual)] = dataclasses.replace(manual, could_widen=(widening,))
    note = "could be widened, apart from its plan (name the step to run it): TestCudaOnly by cuda-to-accelerator (adds other-accelerators)"
    text, md, page = survey_text.summary(survey), survey_markdown.render(survey), survey_html.render(survey)
    assert "1 file could be widened by a step --restructure auto never runs (cuda-to-accelerator)" in text
    assert note in md and html.escape(note) in page
    assert survey.totals()["could_widen"] == 1 and survey.totals()["restructure"] == 6  # not counted as the plan
    restructure = [b for b in survey.batches if b.plan == "restructure"]
    assert [len(b.files) for b in restructure] == [4, 2] and [b.number for b in restructure] == [10, 11]
    assert f"| 10 | with --restructure auto | `{restructure[0].files[0]}`<br>" in md
    assert '<tr data-batch="10" data-plan="restructure"><td class="num">10</td><td>with --restructure auto</td>' in page
    assert "\n  10. " not in text  # the first five only


def test_every_view_says_what_was_surveyed():
    """The commit when the files read are HEAD's; else the work tree, and why."""
    clean = build_survey()
    dirty = dataclasses.replace(clean, uncommitted=["test/test_ready_0.py", "tools/linter/adapters/test_linter.py"])
    unknown = dataclasses.replace(clean, uncommitted=None)
    no_git = dataclasses.replace(clean, commit=None, uncommitted=None)
    listed = "the allowlist tools/linter/adapters/test_linter_allowlist.json"
    said = {
        "commit": (clean, f"{listed} at {'ab' * 6}"),
        "dirty": (dirty, f"{listed} in the work tree ({'ab' * 6} with uncommitted changes in 2 files)"),
        "unknown": (unknown, f"{listed} in the work tree at {'ab' * 6} (git could not tell its uncommitted changes)"),
        "no git": (no_git, f"{listed} in the work tree (no git commit to compare it with)"),
    }
    for survey, words in said.values():
        assert survey_text.summary(survey).startswith(f"survey of {words}: 48 files\n")
        assert f"Surveyed {words}: **48** files." in survey_markdown.render(survey)
        assert f"Surveyed {html.escape(words)}: <strong>48</strong> files." in survey_html.render(survey)
    assert [s.to_json()["surveyed"] for s, _ in said.values()] == ["commit", "work-tree", "work-tree", "work-tree"]
    assert dirty.to_json()["uncommitted"] == dirty.uncommitted and Survey.from_json(dirty.to_json(), root="/nowhere") == dirty


def test_the_generation_in_every_view_and_none_without_one():
    survey = build_survey()
    assert f'<p class="muted" id="sv-rules">Rules: {RULES}.</p>' in survey_html.render(survey)
    asked = dataclasses.replace(survey, generation=RulesChoice(name="gen2", setting="gen2", linters=(LINTER,)))
    assert "\nrules: gen2 (as asked (--rules gen2))\n" in survey_text.summary(asked)
    assert Survey.from_json(survey.to_json()).generation == survey.generation
    # A survey that names none (written before the generations): no line, in no view.
    bare = dataclasses.replace(survey, generation=None)
    assert "rules: " not in survey_text.summary(bare)
    assert "Rules: " not in survey_markdown.render(bare) and 'id="sv-rules"' not in survey_html.render(bare)
    data = survey.to_json()
    del data["generation"]
    assert Survey.from_json(data).generation is None


class _Parsed(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.tags, self.attrs = [], {}, []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        a = dict(attrs)
        self.attrs += [(tag, k, v or "") for k, v in attrs]
        if tag == "tr" and "sv-file" in a.get("class", ""):
            self.rows.append(a)


def test_html_is_self_contained_and_complete_without_script():
    survey = build_survey()
    doc = survey_html.render(survey)
    p = _Parsed()
    p.feed(doc)
    assert doc.startswith("<!DOCTYPE html>")
    assert "http://" not in doc and "https://" not in doc and "url(" not in doc and "@import" not in doc
    assert not [a for a in p.attrs if a[1] == "src" or (a[1] == "href" and not a[2].startswith("#")) or a[0] == "link"]
    assert "default-src 'none'" in doc
    assert p.tags["script"] == 1 and p.tags["style"] == 1 and p.tags["svg"] == 2
    assert [r["data-path"] for r in p.rows] == [f.path for f in survey.files]
    assert {r["data-status"] for r in p.rows} == {"ready", "restructure", "manual", "error"}
    assert "only_for lists meta &lt;b&gt;" in doc and "<b>" not in doc
    assert p.tags["rect"] == sum(1 for _, c in LAYOUT.values() for n in c.values() if n)
    assert p.tags["circle"] == 4
    assert '<div id="sv-controls" class="sv-controls" hidden>' in doc


# ---------------------------------------------------------------------------------------------
# in headless Chromium (Debian's chromium + chromedriver, driven by selenium)

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.exists(path) or shutil.which(path)):
            pytest.skip(f"{path} is missing (Debian: apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--window-size=1400,1000", "--force-device-scale-factor=1",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        opts.add_argument(flag)
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    yield drv
    drv.quit()


@pytest.fixture
def page(browser, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait

    path = tmp_path / "survey.html"
    path.write_text(survey_html.render(build_survey()), encoding="utf-8")
    browser.get(path.as_uri())
    WebDriverWait(browser, 10).until(lambda d: d.execute_script("return document.documentElement.dataset.svReady"))
    return browser


def _visible(drv):
    return drv.execute_script(
        "return Array.from(document.querySelectorAll('#sv-files tbody tr.sv-file'))"
        ".filter(r => !r.hidden).map(r => r.dataset.path);")


def _column(drv, index):
    return drv.execute_script(
        "return Array.from(document.querySelectorAll('#sv-files tbody tr.sv-file'))"
        f".map(r => r.cells[{index}].textContent.trim());")


@pytest.mark.browser
def test_browser_sort_and_filter(page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    drv = page
    assert drv.find_element(By.ID, "sv-controls").is_displayed()
    assert drv.find_element(By.ID, "sv-shown").text == "48 of 48 files shown"
    # numeric sort on the classes, both ways; the status column sorts in the statuses' order
    header = drv.find_element(By.CSS_SELECTOR, '#sv-files th[data-col="classes"]')
    header.click()
    classes = [int(v) for v in _column(drv, 3)]
    assert classes == sorted(classes) and header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert [int(v) for v in _column(drv, 3)] == sorted(classes, reverse=True)
    drv.find_element(By.CSS_SELECTOR, '#sv-files th[data-col="status"]').click()
    order = ["ready", "restructure", "manual", "error"]
    statuses = _column(drv, 1)
    assert statuses == sorted(statuses, key=order.index)
    # numeric-aware text sort of the paths: test_ready_2 before test_ready_10
    drv.find_element(By.CSS_SELECTOR, '#sv-files th[data-col="path"]').click()
    paths = _column(drv, 0)
    assert paths.index("test/inductor/test_ready_2.py") < paths.index("test/inductor/test_ready_10.py")
    # the text filter, the status and owner selects, and their combination
    box = drv.find_element(By.ID, "sv-filter")
    box.send_keys("fsdp")
    assert len(_visible(drv)) == 18 and drv.find_element(By.ID, "sv-shown").text == "18 of 48 files shown"
    Select(drv.find_element(By.ID, "sv-status")).select_by_value("restructure")
    assert len(_visible(drv)) == 4
    box.clear()
    box.send_keys(" ")
    assert len(_visible(drv)) == 6
    Select(drv.find_element(By.ID, "sv-owner")).select_by_value("module: inductor")
    assert sorted(_visible(drv)) == ["test/inductor/test_restructure_0.py", "test/inductor/test_restructure_1.py"]
    Select(drv.find_element(By.ID, "sv-owner")).select_by_value("(no owner header)")
    assert _visible(drv) == []
    Select(drv.find_element(By.ID, "sv-owner")).select_by_value("")
    Select(drv.find_element(By.ID, "sv-status")).select_by_value("")
    box.clear()
    box.send_keys("meta")  # the reason is searched
    assert len(_visible(drv)) == 10
    box.clear()
    box.send_keys(" ")
    # a status chip selects its status; a click on a folder's segment filters to that folder and status
    drv.find_element(By.CSS_SELECTOR, '.sv-chip[data-status="error"]').click()
    assert sorted(_visible(drv)) == [f"test/distributed/fsdp/test_error_{n}.py" for n in range(2)]
    drv.find_element(By.CSS_SELECTOR, '#sv-folders g[data-folder="test"] rect[data-status="manual"]').click()
    assert drv.find_element(By.ID, "sv-filter").get_attribute("value") == "test/"
    assert Select(drv.find_element(By.ID, "sv-status")).first_selected_option.get_attribute("value") == "manual"
    assert len(_visible(drv)) == 10  # every manual file is under test/


def _png_pixels(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """The RGB pixels of an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos : pos + 4]), data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
            channels = 4 if colour == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        line = raw[y * (stride + 1) : (y + 1) * (stride + 1)]
        kind, cur = line[0], bytearray(line[1:])
        for i in range(stride):
            a = cur[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if kind == 1:
                cur[i] = (cur[i] + a) & 255
            elif kind == 2:
                cur[i] = (cur[i] + b) & 255
            elif kind == 3:
                cur[i] = (cur[i] + (a + b) // 2) & 255
            elif kind == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(cur)
        prev = cur
    pixels = [tuple(r[i : i + 3]) for r in rows for i in range(0, stride, channels)]
    return width, height, pixels  # type: ignore[return-value]


@pytest.mark.browser
def test_browser_screenshot_of_the_charts(page, tmp_path):
    from selenium.webdriver.common.by import By

    drv = page
    chart = drv.find_element(By.ID, "sv-folders")
    shot = chart.screenshot_as_png
    (tmp_path / "folders.png").write_bytes(shot)
    width, height, pixels = _png_pixels(shot)
    assert width >= 800 and height >= 3 * 16
    rgb = {s: tuple(int(COLOURS[s][i : i + 2], 16) for i in (1, 3, 5)) for s in COLOURS}
    painted = {s: sum(1 for p in pixels if p == colour) for s, colour in rgb.items()}
    totals = {s: sum(c.get(s, 0) for _, c in LAYOUT.values()) for s in COLOURS}
    # Every bar is drawn to one scale: each status's area is its share of the files.
    for status in COLOURS:
        assert painted[status] > 0, status
        share, expected = painted[status] / sum(painted.values()), totals[status] / sum(totals.values())
        assert abs(share - expected) < 0.03, (status, share, expected)
    # The longest bar is the folder with the most files, drawn first.
    rows = drv.execute_script(
        "return Array.from(document.querySelectorAll('#sv-folders .sv-folder')).map(g => "
        "[g.dataset.folder, g.getBoundingClientRect().top, "
        "Array.from(g.querySelectorAll('rect')).reduce((w, r) => w + r.getBoundingClientRect().width, 0)]);")
    assert [r[0] for r in rows] == ["test/inductor", "test/distributed/fsdp", "test"]
    assert rows[0][1] < rows[1][1] < rows[2][1]
    assert abs(rows[2][2] / rows[0][2] - 10 / 20) < 0.02
    # The burndown goes down as the allowlist shrinks: each point lower than the one before.
    burndown = drv.find_element(By.ID, "sv-burndown")
    (tmp_path / "burndown.png").write_bytes(burndown.screenshot_as_png)
    tops = drv.execute_script(
        "return Array.from(document.querySelectorAll('#sv-burndown circle.sv-point'))"
        ".map(c => [+c.dataset.entries, c.getBoundingClientRect().top, c.getBoundingClientRect().left]);")
    assert [t[0] for t in tops] == [60, 55, 52, 48]
    assert all(a[1] < b[1] and a[2] < b[2] for a, b in zip(tops, tops[1:]))
    _, _, line = _png_pixels(burndown.screenshot_as_png)
    blue = tuple(int(COLOURS[SurveyStatus.RESTRUCTURE][i : i + 2], 16) for i in (1, 3, 5))
    assert sum(1 for p in line if p == blue) > 100  # the line and its points are drawn


@pytest.mark.browser
def test_browser_no_cell_taller_than_the_viewport_nor_a_sideways_page(page):
    drv = page
    tall = drv.execute_script("""
        document.querySelectorAll('details').forEach(function (d) { d.open = true; });
        var limit = window.innerHeight, out = [];
        document.querySelectorAll('td, th').forEach(function (cell) {
          if (cell.getBoundingClientRect().height > limit) { out.push(cell.textContent.slice(0, 80)); }
        });
        return out;""")
    assert tall == []
    assert drv.execute_script("return document.documentElement.scrollWidth - window.innerWidth;") <= 0
