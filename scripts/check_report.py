#!/usr/bin/env python3
"""Check that a tbb report.html renders in headless Chromium, figures included.

    python3 scripts/check_report.py outputs/capacity/report.html [--keep DIR]

What is checked (each failure is printed, naming the figure; exit status 1):

1. The DOM, as Chromium parsed it (``--dump-dom``): the page states its figure
   count in ``<main data-figures="N">``; there are N ``<figure class="report-figure">``
   elements; each holds an ``<svg>`` with text and drawn marks (``<circle>`` or
   ``<polyline>``). No ``<script>`` and no external ``<link>``: the page must be
   self-contained.
2. A screenshot of the top of the page is not blank (enough non-white pixels).
3. Each figure, cut out of the parsed DOM into a page of its own with the report's
   style sheet, screenshots with visible data: enough pixels in the report's
   primary series colour (#0072B2, the dots and whiskers of the first series) and
   enough non-white pixels. (Headless Chromium paints a blank screenshot when a page
   is opened at a ``#fragment`` further down, so figures are shot one by one.)
4. Every table fits a window 1,280 pixels wide: laid out by Chromium at that width,
   no table is wider than the box that holds it (a table that did not fit would
   hide its right-hand columns, the intervals and bounds, behind a sideways scroll).
   The page has no script of its own, so a copy of it gets one that measures each
   table and writes the numbers into the DOM that ``--dump-dom`` prints.
5. ``episodes.html`` beside the report (the index of every episode) filters with CSS
   alone: a copy with one configuration and one verdict checked shows exactly the
   rows whose classes carry both (counted in Python from the page), and its load
   time at that size is printed.

Exit status 2 means the check could not run (no Chromium, no such file).
Chromium is Debian's ``chromium`` package (``apt-get install -y chromium``), or
the binary named by ``$CHROMIUM``. PNGs are decoded with Pillow when it is
installed, otherwise by the small decoder below (8-bit RGB/RGBA, enough for
Chromium's screenshots), so the script needs nothing beyond Python 3.9+.
"""

from __future__ import annotations

import argparse
import html.parser
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

# Flags that work headless as root in a container: no sandbox, no GPU, and nothing
# that reaches the network (the page loads nothing, and neither should the browser).
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
TIMEOUT_SECONDS = 120

# The first series colour of crates/report/src/figures.rs (#0072B2), and how far an
# anti-aliased or translucent (opacity 0.85 over white) pixel may be from it.
PRIMARY = (0x00, 0x72, 0xB2)
PRIMARY_TOLERANCE = (45, 30, 20)
# A figure shows data when at least this many pixels below its header are in the
# primary colour (one dot of radius 5 is about 78 pixels). The rows above
# HEADER_PIXELS hold the title and the legend row, whose swatch has the primary
# colour too (the legend is centred on row 50, LEGEND_Y in figures.rs, 10 px high).
MIN_PRIMARY_PIXELS = 30
HEADER_PIXELS = 60
# Share of non-white pixels below which a screenshot counts as blank.
MIN_INK_SHARE = 0.005


class Problem(Exception):
    """A check that failed."""


class Setup(Exception):
    """The check cannot run."""


def find_chromium() -> str:
    candidates = [os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"]
    for name in candidates:
        if name and shutil.which(name):
            return shutil.which(name) or name
    raise Setup("no Chromium found: install Debian's package (apt-get install -y chromium) "
                "or set CHROMIUM to the browser binary")


def run_chromium(chromium: str, args: list[str], profile: Path) -> subprocess.CompletedProcess:
    command = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired as e:
        raise Problem(f"Chromium did not finish within {TIMEOUT_SECONDS} s: {' '.join(command)}") from e
    if done.returncode != 0:
        raise Problem(f"Chromium failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return done


# --- the DOM ---------------------------------------------------------------------


class DomSurvey(html.parser.HTMLParser):
    """Counts, per report figure, the SVG elements inside it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.declared_figures: int | None = None
        self.figures: list[dict] = []
        self.scripts = 0
        self.external_links: list[str] = []
        self._depth_in_figure = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "main" and "data-figures" in a:
            self.declared_figures = int(a["data-figures"])
        if tag == "script":
            self.scripts += 1
        if tag == "link" and a.get("href"):
            self.external_links.append(a["href"])
        if tag in ("img", "image", "iframe", "object", "embed") and (a.get("src") or a.get("href")):
            self.external_links.append(a.get("src") or a.get("href") or "")
        if tag == "figure" and "report-figure" in (a.get("class") or "").split():
            self.figures.append({"id": a.get("id", "?"), "file": a.get("data-file", "?"), "tags": {}})
            self._depth_in_figure = 1
            return
        if self._depth_in_figure:
            if tag == "figure":
                self._depth_in_figure += 1
            tags = self.figures[-1]["tags"]
            tags[tag] = tags.get(tag, 0) + 1

    def handle_endtag(self, tag: str) -> None:
        if self._depth_in_figure and tag == "figure":
            self._depth_in_figure -= 1


def check_dom(dom: str) -> list[str]:
    survey = DomSurvey()
    survey.feed(dom)
    problems = []
    if survey.declared_figures is None:
        problems.append('no <main data-figures="N">: is this a tbb report?')
    elif survey.declared_figures != len(survey.figures):
        problems.append(f"the page declares {survey.declared_figures} figures, "
                        f"the DOM has {len(survey.figures)}")
    if survey.scripts:
        problems.append(f"the page has {survey.scripts} <script> element(s); it should need none")
    for link in survey.external_links:
        problems.append(f"the page loads an external resource: {link}")
    for f in survey.figures:
        tags, name = f["tags"], f"{f['id']} ({f['file']})"
        if not tags.get("svg"):
            problems.append(f"{name}: no <svg>")
            continue
        marks = tags.get("circle", 0) + tags.get("polyline", 0)
        if not marks:
            problems.append(f"{name}: the <svg> draws no marks (no <circle> or <polyline>)")
        if not tags.get("text"):
            problems.append(f"{name}: the <svg> has no text (axes, labels)")
    return problems


# --- screenshots -----------------------------------------------------------------


def decode_png(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """(width, height, RGB pixels) of a PNG: Pillow if present, else a small decoder."""
    try:
        from PIL import Image  # type: ignore
        import io

        image = Image.open(io.BytesIO(data)).convert("RGB")
        return image.width, image.height, list(image.getdata())
    except ImportError:
        return decode_png_plain(data)


def decode_png_plain(data: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise Problem("the screenshot is not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    if header is None:
        raise Problem("the screenshot PNG has no header")
    width, height, depth, colour, _, _, interlace = header
    channels = {2: 3, 6: 4}.get(colour)
    if depth != 8 or channels is None or interlace:
        raise Problem(f"cannot decode this PNG without Pillow (depth {depth}, colour type "
                      f"{colour}, interlace {interlace}): pip install Pillow")
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    pixels: list[tuple[int, int, int]] = []
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 0xFF
        elif kind == 2:
            for i in range(stride):
                line[i] = (line[i] + previous[i]) & 0xFF
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = previous[i]
                c = previous[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                predictor = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + predictor) & 0xFF
        pixels.extend(tuple(line[i:i + 3]) for i in range(0, stride, channels))
        previous = line
    return width, height, pixels


def ink(pixels: list[tuple[int, int, int]], width: int = 1, skip_rows: int = 0) -> tuple[float, int]:
    """(share of non-white pixels, pixels in the primary series colour below the
    first `skip_rows` rows)."""
    non_white = sum(1 for p in pixels if min(p) < 235)
    primary = sum(
        1 for p in pixels[skip_rows * width:]
        if all(abs(c - t) <= tol for c, t, tol in zip(p, PRIMARY, PRIMARY_TOLERANCE))
    )
    return non_white / max(len(pixels), 1), primary


def screenshot(chromium: str, url: str, size: tuple[int, int], png: Path, profile: Path):
    run_chromium(chromium, [f"--window-size={size[0]},{size[1]}", f"--screenshot={png}", url], profile)
    if not png.exists():
        raise Problem(f"Chromium wrote no screenshot of {url}")
    return decode_png(png.read_bytes())


FIGURE_RE = re.compile(r'<figure class="report-figure"(?P<attrs>[^>]*)>(?P<body>.*?)</figure>', re.S)
STYLE_RE = re.compile(r"<style>(.*?)</style>", re.S)
SVG_SIZE_RE = re.compile(r'<svg[^>]*\bwidth="(\d+)"[^>]*\bheight="(\d+)"')


def check_figures(chromium: str, dom: str, work: Path, profile: Path) -> list[str]:
    problems = []
    style = "".join(STYLE_RE.findall(dom))
    for n, match in enumerate(FIGURE_RE.finditer(dom), start=1):
        attrs, body = match.group("attrs"), match.group("body")
        name = re.search(r'data-file="([^"]*)"', attrs)
        label = f"figure-{n} ({name.group(1) if name else '?'})"
        size = SVG_SIZE_RE.search(body)
        width, height = (int(size.group(1)), int(size.group(2))) if size else (900, 700)
        page = work / f"figure-{n}.html"
        page.write_text(
            f'<!DOCTYPE html><html><head><meta charset="utf-8"><style>{style}\n'
            f"body{{margin:0}} figure{{margin:0}}</style></head><body>"
            f'<figure class="report-figure">{body}</figure></body></html>',
            encoding="utf-8",
        )
        png = work / f"figure-{n}.png"
        try:
            shot_width, _, pixels = screenshot(chromium, page.as_uri(), (width, height), png, profile)
        except Problem as e:
            problems.append(f"{label}: {e}")
            continue
        share, primary = ink(pixels, shot_width, HEADER_PIXELS)
        if share < MIN_INK_SHARE:
            problems.append(f"{label}: the screenshot is blank ({share:.2%} non-white pixels)")
        elif primary < MIN_PRIMARY_PIXELS:
            problems.append(f"{label}: no data drawn ({primary} pixels in the primary colour "
                            f"#0072B2, expected at least {MIN_PRIMARY_PIXELS})")
        else:
            print(f"ok  {label}: {share:.1%} non-white, {primary} primary-colour pixels")
    return problems


# The window width every table must fit, and the script that measures them (run in a
# copy of the page only).
TABLE_WINDOW = (1280, 1000)
MEASURE_TABLES = """<script>
window.addEventListener('load', () => {
  const lines = [];
  document.querySelectorAll('figure.report-table').forEach(f => {
    const box = f.querySelector('.table-wrap');
    lines.push(f.id + ' ' + box.clientWidth + ' ' + box.scrollWidth);
  });
  const pre = document.createElement('pre');
  pre.id = 'tbb-table-widths';
  pre.textContent = lines.join('\\n');
  document.body.appendChild(pre);
});
</script>"""
WIDTHS_RE = re.compile(r'<pre id="tbb-table-widths">(.*?)</pre>', re.S)


def check_tables_fit(chromium: str, report: Path, work: Path, profile: Path) -> list[str]:
    page = report.read_text(encoding="utf-8")
    if "</body>" not in page:
        return ["the page has no </body>"]
    measured = work / "table-widths.html"
    measured.write_text(page.replace("</body>", MEASURE_TABLES + "</body>"), encoding="utf-8")
    width, height = TABLE_WINDOW
    dom = run_chromium(chromium, [f"--window-size={width},{height}", "--virtual-time-budget=5000",
                                  "--dump-dom", measured.as_uri()], profile).stdout
    found = WIDTHS_RE.search(dom)
    if not found:
        return ["the table-measuring script wrote nothing: did the page load?"]
    problems, tables = [], 0
    for line in found.group(1).split("\n"):
        if not line.strip():
            continue
        table, box, content = line.split()
        tables += 1
        if int(content) > int(box):
            problems.append(f"{table} is {content} px wide in a {box} px column at a "
                            f"{width} px window: its right-hand columns are hidden")
    if not problems:
        print(f"ok  tables: all {tables} fit a {width} px window")
    return problems


INDEX_ROW_RE = re.compile(r'<tr class="([^"]*)">')
COUNT_SHOWN = """<script>
window.addEventListener('load', () => {
  const rows = document.querySelectorAll('tbody tr');
  let shown = 0;
  rows.forEach(r => { if (getComputedStyle(r).display !== 'none') shown++; });
  const t = performance.getEntriesByType('navigation')[0];
  const pre = document.createElement('pre');
  pre.id = 'tbb-index-count';
  pre.textContent = shown + ' ' + rows.length + ' ' + Math.round(t ? t.loadEventStart : -1);
  document.body.appendChild(pre);
});
</script>"""
COUNT_RE = re.compile(r'<pre id="tbb-index-count">(\d+) (\d+) (-?\d+)</pre>')


def check_index(chromium: str, index: Path, work: Path, profile: Path) -> list[str]:
    if not index.is_file():
        return [f"no {index.name} beside the report"]
    page = index.read_text(encoding="utf-8")
    rows = [set(m.group(1).split()) for m in INDEX_ROW_RE.finditer(page)]
    if not rows:
        return [f"{index.name} lists no episode"]
    # The configuration of the first row, and the verdict its rows have least of.
    config = next(c for c in sorted(rows[0]) if c.startswith("c"))
    verdict = min(("v0", "v1"), key=lambda v: sum(1 for r in rows if config in r and v in r))
    expected = sum(1 for r in rows if config in r and verdict in r)
    checked = page
    for value in (config, verdict):
        checked = checked.replace(f'id="{value}">', f'id="{value}" checked>', 1)
    filtered = work / "index-filtered.html"
    filtered.write_text(checked.replace("</body>", COUNT_SHOWN + "</body>"), encoding="utf-8")
    dom = run_chromium(chromium, ["--virtual-time-budget=20000", "--dump-dom",
                                  filtered.as_uri()], profile).stdout
    found = COUNT_RE.search(dom)
    if not found:
        return [f"{index.name}: the counting script wrote nothing: did the page load?"]
    shown, total, load_ms = (int(g) for g in found.groups())
    problems = []
    if total != len(rows):
        problems.append(f"{index.name}: Chromium parsed {total} rows, the page has {len(rows)}")
    if shown != expected:
        problems.append(f"{index.name}: with {config} and {verdict} checked, {shown} rows show; "
                        f"{expected} carry both classes")
    if not problems:
        print(f"ok  {index.name}: {len(rows)} episodes, {index.stat().st_size:,} bytes, loaded in "
              f"{load_ms} ms; {config} and {verdict} checked show {shown} rows, as expected")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="path to report.html")
    parser.add_argument("--keep", type=Path, help="keep the screenshots and cut-out pages in this directory")
    args = parser.parse_args()

    report = args.report.resolve()
    try:
        if not report.is_file():
            raise Setup(f"{args.report}: no such file")
        chromium = find_chromium()
    except Setup as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="tbb-check-report-") as tmp:
        work = args.keep.resolve() if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        profile = Path(tmp) / "profile"
        problems: list[str] = []
        try:
            dom = run_chromium(chromium, ["--dump-dom", report.as_uri()], profile).stdout
            problems += check_dom(dom)
            print(f"ok  DOM dumped: {len(FIGURE_RE.findall(dom))} figures")
            _, _, pixels = screenshot(chromium, report.as_uri(), (1280, 1000), work / "page.png", profile)
            share, _ = ink(pixels)
            if share < MIN_INK_SHARE:
                problems.append(f"the page screenshot is blank ({share:.2%} non-white pixels)")
            else:
                print(f"ok  page: {share:.1%} non-white pixels at the top")
            problems += check_figures(chromium, dom, work, profile)
            problems += check_tables_fit(chromium, report, work, profile)
            problems += check_index(chromium, report.parent / "episodes.html", work, profile)
        except Problem as e:
            problems.append(str(e))

    if problems:
        for p in problems:
            print(f"FAIL {p}", file=sys.stderr)
        print(f"{report}: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"{report}: the report and its figures render")
    return 0


if __name__ == "__main__":
    sys.exit(main())
