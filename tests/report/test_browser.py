"""The HTML report in a real browser (Debian's headless Chromium): every summary link lands on its
claim's section, every image loads and is legible at laptop width, every interactive view it links
opens, and a full-page screenshot is kept beside the report (report-screenshot.png) for a look by
eye — a CI artifact when the report is written to a kept folder.

Needs /usr/bin/chromium (`apt-get install chromium`; .ci/run installs it); skipped without it. The
report is a cheap reproduce subset (one figure per paper's section at least), written to
HEADCOUNT_REPORT_OUT when set (.ci/run keeps it under .ci/artifacts/report), else to a temporary
folder. To check an existing report instead (e.g. the README's main job's output), name it:

    HEADCOUNT_REPORT_DIR=headcount-report python -m pytest tests/report/test_browser.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from headcount.report.figures import DPI, FONT
from headcount.report.reproduce import run_reproduce

LAPTOP = (1366, 768)  # CSS pixels: a common laptop viewport
# cheap claims whose figures fall in two papers' sections
SUBSET = "induction.two_layer.precision_log_n,induction.separation,boolean.xor.DH_iff"
SCREENSHOT = "report-screenshot.png"
PROBE_PAGE = ".browser-probe.html"  # beside the report, so relative links resolve; removed after

# Added to a copy of the report (the report itself has no scripts): follows every summary link and
# measures what the browser laid out.
PROBE = """<script>
window.addEventListener("load", function () {
  var links = Array.from(document.querySelectorAll("table.summary a")).map(function (a) {
    var id = decodeURIComponent(a.getAttribute("href").slice(1));
    a.click();
    var target = document.getElementById(id);
    var maxScroll = document.documentElement.scrollHeight - window.innerHeight;
    return {href: a.getAttribute("href"), found: !!target,
            top: target ? target.getBoundingClientRect().top : null,
            atBottom: window.scrollY >= maxScroll - 1,
            claimSection: !!target && target.tagName === "SECTION"};
  });
  window.scrollTo(0, 0);
  var images = Array.from(document.images).map(function (im) {
    var r = im.getBoundingClientRect();
    return {alt: im.alt, complete: im.complete, natural: im.naturalWidth, shown: r.width,
            left: r.left, right: r.right, top: r.top + window.scrollY, height: r.height,
            section: im.closest("section.claim") ? im.closest("section.claim").id : null};
  });
  var views = Array.from(document.querySelectorAll("figcaption a")).map(function (a) {
    return a.getAttribute("href");
  });
  var first = document.querySelector("h2");
  var out = {links: links, images: images, views: views, innerWidth: window.innerWidth,
             scrollWidth: document.documentElement.scrollWidth,
             height: document.documentElement.scrollHeight,
             firstHeading: first ? first.id : null,
             summaryTop: document.querySelector("table.summary").getBoundingClientRect().top};
  var pre = document.createElement("pre"); pre.id = "headcount-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    return path


def headless(browser: str, profile: Path, *args: str, height: int = LAPTOP[1]) -> str:
    # the flags a closed network needs: no background connections, a fresh profile
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--window-size={LAPTOP[0]},{height}",
            "--virtual-time-budget=10000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    return done.stdout + done.stderr[-2000:]


def probe(browser: str, profile: Path, page: Path) -> dict:
    dom = headless(browser, profile, "--dump-dom", page.as_uri())
    found = re.search(r'<pre id="headcount-probe">(.*?)</pre>', dom, re.S)
    assert found, "the probe did not run: " + dom[:500]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    existing = os.environ.get("HEADCOUNT_REPORT_DIR")
    if existing:
        return Path(existing)
    chromium()  # skip before minutes of work when there is no browser
    kept = os.environ.get("HEADCOUNT_REPORT_OUT")
    out = Path(kept) if kept else tmp_path_factory.mktemp("report")
    run_reproduce("quick", only=SUBSET, out_dir=out, progress=lambda line: None)
    return out


def test_report_in_chromium(report, tmp_path):
    browser = chromium()
    summary = json.loads((report / "summary.json").read_text())
    html = (report / "report.html").read_text()
    assert "<script" not in html and "http://" not in html and "https://" not in html

    copy = report / PROBE_PAGE
    copy.write_text(html.replace("</body>", PROBE + "</body>"))
    try:
        laid = probe(browser, tmp_path / "profile", copy)
    finally:
        copy.unlink()

    # the first screen is the summary table, one link per claim, each landing on its section
    assert laid["firstHeading"] == "summary" and laid["summaryTop"] < LAPTOP[1] / 2
    assert [link["href"] for link in laid["links"]] == [
        f"#claim-{c['id']}" for c in _section_order(summary)
    ]
    for link in laid["links"]:
        assert link["found"] and link["claimSection"], link
        assert abs(link["top"]) <= 2 or link["atBottom"], link  # scrolled to, or page end
    assert laid["scrollWidth"] <= laid["innerWidth"]  # nothing overflows at laptop width

    # every figure decoded, in its claim's section, inside the viewport, its 10 pt text ≥ 9 px
    figures = {f["id"]: f for f in summary["figures"]}
    assert figures and sorted(im["alt"] for im in laid["images"]) == sorted(figures)
    for im in laid["images"]:
        assert im["complete"] and im["natural"] > 0, im
        assert im["section"] == f"claim-{figures[im['alt']]['claim']}", im
        assert 0 <= im["left"] and im["right"] <= laid["innerWidth"], im
        smallest_text_px = (FONT - 1) * DPI / 72 * im["shown"] / im["natural"]
        assert smallest_text_px >= 9, (im["alt"], smallest_text_px)

    # every interactive view the report links exists beside it and renders its grids
    assert sorted(laid["views"]) == sorted(f["html"] for f in figures.values() if "html" in f)
    for view in laid["views"]:
        dom = headless(browser, tmp_path / "profile", "--dump-dom", (report / view).as_uri())
        assert "<table" in dom or "<svg" in dom, view

    # the full page as one screenshot, kept beside the report; not blank where the figures are
    shot = report / SCREENSHOT
    headless(
        browser,
        tmp_path / "profile",
        f"--screenshot={shot}",
        (report / "report.html").as_uri(),
        height=laid["height"],
    )
    assert shot.exists()
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (laid["height"], LAPTOP[0])
    ink = pixels.min(axis=2) < 0.8  # not white / light grey
    for im in laid["images"]:
        top, bottom = int(im["top"]), int(im["top"] + im["height"])
        assert ink[top:bottom, int(im["left"]) : int(im["right"])].mean() > 0.02, im["alt"]
    assert np.std(pixels) > 0.05


def _section_order(summary: dict) -> list[dict]:
    """Claims as the report's summary lists them: by paper section, run order within each."""
    from headcount.report.claims import PAPERS

    rank = {p.cite: i for i, p in enumerate(PAPERS)}
    return sorted(summary["claims"], key=lambda c: rank.get(c["paper"], len(rank)))
