#!/usr/bin/env python3
"""Check the episode pages a tbb report links to, in headless Chromium.

    python3 scripts/check_show.py outputs/smoke/report.html [--screenshots N]

What is checked (each failure is printed, naming the page; exit status 1):

1. Every ``<a class="episode-link" href="...">`` of report.html resolves to a file
   beside the report (the episode pages under ``episodes/``, and the index of every
   episode, ``episodes.html``), and there is at least one episode page.
2. Each page, as Chromium parsed it (``--dump-dom``): a ``<main class="episode">``
   whose ``data-observations`` equals its number of ``<details class="observation">``;
   one ``<tr id="first-unmet">`` with the class ``first-unmet`` (the pages are of
   failing episodes); no ``<script>`` and nothing loaded from elsewhere; every link
   (back to the report and the index, to the matched episodes' pages) resolves to a
   file of the study's outputs.
3. For the first N pages (default 1) with observations: a screenshot shows the
   highlighted first unmet obligation (pixels of its background, #fde2e1), and the
   collapsible observations work: the page with every ``<details>`` opened paints
   more than the page as published (all closed) — closed, an observation shows only
   its summary.

Exit status 2 means the check could not run (no Chromium, no such file). Uses the
Chromium helpers of ``check_report.py`` beside this script.
"""

from __future__ import annotations

import argparse
import html.parser
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_report as cr  # noqa: E402

# The first unmet obligation's row background (crates/engine/src/show/html.rs).
HIGHLIGHT = (0xFD, 0xE2, 0xE1)
HIGHLIGHT_TOLERANCE = (4, 6, 6)
MIN_HIGHLIGHT_PIXELS = 200
WINDOW = "1000,4000"


class Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "a" and "episode-link" in (a.get("class") or "").split():
            self.hrefs.append(a.get("href") or "")


class Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.main = False
        self.declared: int | None = None
        self.details = 0
        self.first_unmet: list[str] = []
        self.scripts = 0
        self.external: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "main" and "episode" in classes:
            self.main = True
            self.declared = int(a.get("data-observations", "-1"))
        if tag == "details" and "observation" in classes:
            self.details += 1
        if tag == "tr" and a.get("id") == "first-unmet":
            self.first_unmet.append(" ".join(classes))
        if tag == "script":
            self.scripts += 1
        if tag == "link" and a.get("href"):
            self.external.append(a["href"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        elif tag in ("img", "image", "iframe", "object", "embed") and (a.get("src") or a.get("href")):
            self.external.append(a.get("src") or a.get("href") or "")


def check_page_links(page: Path, links: list[str]) -> list[str]:
    """A page's links stay inside the study's outputs and resolve to files there."""
    problems = []
    for href in links:
        if ":" in href or href.startswith("/"):
            problems.append(f"the page links outside the study: {href}")
        elif not (page.parent / href).is_file():
            problems.append(f"the link {href} resolves to no file")
    return problems


def check_page_dom(dom: str) -> tuple[list[str], int]:
    p = Page()
    p.feed(dom)
    problems = []
    if not p.main:
        problems.append('no <main class="episode">: is this a tbb episode page?')
    elif p.declared != p.details:
        problems.append(f"the page declares {p.declared} observations, the DOM has {p.details} "
                        '<details class="observation">')
    if len(p.first_unmet) != 1:
        problems.append(f'{len(p.first_unmet)} rows with id="first-unmet"; a failing episode has one')
    elif "first-unmet" not in p.first_unmet[0].split():
        problems.append(f'the first unmet row lacks the class first-unmet: "{p.first_unmet[0]}"')
    if p.scripts:
        problems.append(f"{p.scripts} <script> element(s); the page needs none")
    for e in p.external:
        problems.append(f"the page loads {e}")
    return problems, p.details


def page_links(dom: str) -> list[str]:
    p = Page()
    p.feed(dom)
    return p.links


def pixels(chromium: str, page: Path, profile_root: Path, name: str):
    shot = profile_root / f"{name}.png"
    profile = Path(tempfile.mkdtemp(dir=profile_root))
    cr.run_chromium(chromium, [f"--window-size={WINDOW}", f"--screenshot={shot}", page.as_uri()], profile)
    _, _, px = cr.decode_png(shot.read_bytes())
    return px


def near(p, colour, tol) -> bool:
    return all(abs(a - b) <= t for a, b, t in zip(p, colour, tol))


def ink(px) -> int:
    return sum(1 for p in px if min(p) < 235)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--screenshots", type=int, default=1)
    args = parser.parse_args()
    if not args.report.is_file():
        print(f"no such file: {args.report}", file=sys.stderr)
        return 2
    try:
        chromium = cr.find_chromium()
    except cr.Setup as e:
        print(e, file=sys.stderr)
        return 2

    links = Links()
    links.feed(args.report.read_text(encoding="utf-8"))
    problems: list[str] = []
    if not links.hrefs:
        problems.append(f"{args.report}: links to no episode page")
    base = args.report.resolve().parent
    pages = []
    for href in links.hrefs:
        target = base / href
        if not target.is_file():
            problems.append(f"{args.report}: the link {href} resolves to no file")
        elif href.startswith("episodes/"):
            pages.append(target)
    if not pages:
        problems.append(f"{args.report}: links to no episode page")

    shot = 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for page in pages:
            try:
                profile = Path(tempfile.mkdtemp(dir=root))
                dom = cr.run_chromium(chromium, ["--dump-dom", page.as_uri()], profile).stdout
                found, observations = check_page_dom(dom)
                found += check_page_links(page, page_links(dom))
                problems.extend(f"{page.name}: {p}" for p in found)
                if found or shot >= args.screenshots or observations == 0:
                    continue
                shot += 1
                closed = pixels(chromium, page, root, f"closed-{shot}")
                highlighted = sum(1 for p in closed if near(p, HIGHLIGHT, HIGHLIGHT_TOLERANCE))
                if highlighted < MIN_HIGHLIGHT_PIXELS:
                    problems.append(f"{page.name}: the first unmet obligation is not highlighted "
                                    f"({highlighted} pixels of #fde2e1)")
                opened_page = root / f"opened-{shot}.html"
                opened_page.write_text(
                    page.read_text(encoding="utf-8").replace(
                        '<details class="observation', '<details open class="observation'),
                    encoding="utf-8")
                opened = pixels(chromium, opened_page, root, f"opened-{shot}")
                if ink(opened) <= ink(closed):
                    problems.append(f"{page.name}: opening the observations paints nothing more "
                                    f"({ink(opened)} vs {ink(closed)} inked pixels): <details> "
                                    "does not collapse them")
            except cr.Problem as e:
                problems.append(f"{page.name}: {e}")

    for p in problems:
        print(f"FAIL {p}")
    if problems:
        return 1
    print(f"OK: {len(pages)} episode pages linked from {args.report.name} render; "
          f"{shot} checked on screen (highlight, collapsible observations)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
