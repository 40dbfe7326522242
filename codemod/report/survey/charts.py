"""The survey dashboard's charts as inline SVG (no script, no network): the status of every
folder as stacked horizontal bars, and the allowlist's burndown as a line over time.

Stable hooks for tests and users' tooling: svg#sv-folders with g.sv-folder[data-folder] rows
of rect.sv-seg[data-status][data-count]; svg#sv-burndown with circle.sv-point[data-entries].
"""

from __future__ import annotations

import html
from datetime import datetime

from codemod.survey.model import STATUSES, HistoryPoint, SurveyStatus

COLOURS = {
    SurveyStatus.READY: "#2da44e",
    SurveyStatus.RESTRUCTURE: "#0969da",
    SurveyStatus.MANUAL: "#d4a72c",
    SurveyStatus.ERROR: "#cf222e",
}
ROW = 20  # px per folder
LABEL = 300  # px for the folder names
BARS = 520  # px for the longest bar
COUNT = 60  # px for the total after the bar


def _e(s: object) -> str:
    return html.escape(str(s), quote=True)


def folder_bars(by_directory: dict[str, dict[str, int]]) -> str:
    """One row per folder, most files first; each status a segment as wide as its share."""
    folders = sorted(by_directory.items(), key=lambda kv: (-kv[1]["files"], kv[0]))
    most = max((c["files"] for _, c in folders), default=0) or 1
    height = ROW * len(folders) + 4
    width = LABEL + BARS + COUNT
    out = [
        f'<svg id="sv-folders" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="status per folder">'
    ]
    for i, (folder, counts) in enumerate(folders):
        y = 2 + i * ROW
        out.append(f'<g class="sv-folder" data-folder="{_e(folder)}" data-files="{counts["files"]}">')
        label = folder if len(folder) <= 44 else "…" + folder[-43:]
        out.append(
            f'<text x="{LABEL - 6}" y="{y + 14}" text-anchor="end" class="sv-label">{_e(label)}'
            f"<title>{_e(folder)}</title></text>"
        )
        x = float(LABEL)
        for status in STATUSES:
            n = counts[status]
            if not n:
                continue
            w = BARS * n / most
            out.append(
                f'<rect class="sv-seg" data-status="{status}" data-count="{n}" x="{x:.2f}" y="{y + 2}" '
                f'width="{w:.2f}" height="{ROW - 4}" fill="{COLOURS[status]}">'
                f"<title>{_e(folder)}: {n} {status}</title></rect>"
            )
            x += w
        out.append(f'<text x="{x + 6:.2f}" y="{y + 14}" class="sv-total">{counts["files"]}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def legend() -> str:
    items = "".join(f'<li><span class="sv-swatch" style="background:{COLOURS[s]}"></span>{s}</li>' for s in STATUSES)
    return f'<ul class="sv-legend">{items}</ul>'


def _time(point: HistoryPoint) -> float:
    try:
        return datetime.fromisoformat(point.date.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def burndown(history: list[HistoryPoint]) -> str:
    """The allowlist's size at each commit that changed it, against the commit dates."""
    points = [(h, _time(h)) for h in history if h.entries is not None]
    width, height, pad = 760, 260, 48
    out = [
        f'<svg id="sv-burndown" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="allowlist entries over time">'
    ]
    if not points:
        out.append(f'<text x="{pad}" y="{height / 2}">no readable allowlist in the history</text></svg>')
        return "".join(out)
    t0, t1 = min(t for _, t in points), max(t for _, t in points)
    top = max(int(h.entries or 0) for h, _ in points)
    span_t, span_y = (t1 - t0) or 1.0, top or 1

    def x(t: float) -> float:
        return pad + (width - 2 * pad) * ((t - t0) / span_t if t1 > t0 else 0.5)

    def y(n: int) -> float:
        return height - pad - (height - 2 * pad) * n / span_y

    axis = f"M{pad},{pad / 2} V{height - pad} H{width - pad / 2}"
    out.append(f'<path class="sv-axis" d="{axis}" fill="none" stroke="#59636e"/>')
    out.append(f'<text x="{pad - 6}" y="{y(top) + 4:.1f}" text-anchor="end" class="sv-tick">{top}</text>')
    out.append(f'<text x="{pad - 6}" y="{y(0) + 4:.1f}" text-anchor="end" class="sv-tick">0</text>')
    first, last = points[0][0], points[-1][0]
    out.append(f'<text x="{pad}" y="{height - pad + 18}" class="sv-tick">{_e(first.date[:10])}</text>')
    out.append(
        f'<text x="{width - pad}" y="{height - pad + 18}" text-anchor="end" class="sv-tick">{_e(last.date[:10])}</text>'
    )
    line = " ".join(f"{x(t):.1f},{y(int(h.entries or 0)):.1f}" for h, t in points)
    out.append(f'<polyline class="sv-line" points="{line}" fill="none" stroke="#0969da" stroke-width="2"/>')
    for h, t in points:
        out.append(
            f'<circle class="sv-point" data-entries="{h.entries}" data-commit="{_e(h.commit)}" cx="{x(t):.1f}" '
            f'cy="{y(int(h.entries or 0)):.1f}" r="4" fill="#0969da"><title>{_e(h.date[:10])} {_e(h.commit[:12])}: '
            f"{h.entries} entries (+{h.added} -{h.removed})</title></circle>"
        )
    out.append("</svg>")
    return "".join(out)
