"""The HTML report opens in headless Chromium (Debian's `chromium`): claims table and figures
render, every figure is legible at laptop width — the side-by-side attention figure of
induction.heads.mechanism included — and a screenshot is not blank.

Needs /usr/bin/chromium (`apt-get install chromium`); skipped without it. Slow: it runs a reproduce
subset first — or checks an existing report instead: HEADCOUNT_REPORT_DIR=headcount-report (e.g. the
README's main job's output). Set HEADCOUNT_SCREENSHOT_DIR to keep the screenshot for a look by eye:

    HEADCOUNT_REPORT_DIR=headcount-report HEADCOUNT_SCREENSHOT_DIR=. \
        python -m pytest -m slow tests/report/test_browser.py
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
MECHANISM = (
    "induction.heads.mechanism"  # its figure: the construction and a trained model side by side
)

# Added to a copy of the report (the report itself has no scripts): measures what the browser laid
# out.
PROBE = """<script>
window.addEventListener("load", function () {
  var images = Array.from(document.images).map(function (im) {
    var r = im.getBoundingClientRect();
    return {alt: im.alt, complete: im.complete, natural: im.naturalWidth, shown: r.width,
            left: r.left,
            right: r.right, top: r.top + window.scrollY, height: r.height};
  });
  var table = document.querySelector("table"), t = table.getBoundingClientRect();
  var out = {images: images, innerWidth: window.innerWidth,
             scrollWidth: document.documentElement.scrollWidth,
             table: {left: t.left, right: t.right, top: t.top, height: t.height,
                     rows: table.rows.length},
             statuses: Array.from(table.querySelectorAll("td"))
                         .map(function (c) { return c.textContent.trim(); })
                         .filter(function (s) { return s === "PASS" || s === "FAIL"; })};
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


def headless(browser: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={LAPTOP[0]},{LAPTOP[1]}",
            "--virtual-time-budget=10000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_report_renders_in_headless_chromium(tmp_path):
    browser = chromium()
    existing = os.environ.get("HEADCOUNT_REPORT_DIR")
    out = Path(existing) if existing else tmp_path / "report"
    if not existing:
        # the mechanism claim trains the induction-depth experiment (a few runs) for its
        # side-by-side figure
        subset = f"boolean.*,minmax.*,{MECHANISM}"
        run_reproduce("quick", only=subset, out_dir=out, progress=lambda line: None)
    summary = json.loads((out / "summary.json").read_text())
    html = (out / "report.html").read_text()
    assert (
        "<script" not in html and "http://" not in html and "https://" not in html
    )  # self-contained

    probe_page = tmp_path / "probe.html"  # beside nothing: the report inlines its figures

    probe_page.write_text(html.replace("</body>", PROBE + "</body>"))
    dom = headless(browser, "--dump-dom", probe_page.as_uri()).stdout
    found = re.search(r'<pre id="headcount-probe">(.*?)</pre>', dom, re.S)
    assert found, "the probe did not run: " + dom[:300]
    laid = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))

    # the claims table: one row per claim, statuses as run, no horizontal overflow at laptop width
    assert laid["table"]["rows"] == 1 + len(summary["claims"])
    assert laid["statuses"] == [c["status"] for c in summary["claims"]]
    assert laid["scrollWidth"] <= laid["innerWidth"]
    assert 0 <= laid["table"]["left"] and laid["table"]["right"] <= laid["innerWidth"]
    # every figure decoded, inside the viewport, and its smallest text (10 pt at DPI) ≥ 9 CSS px as
    # shown
    figures = sorted(p.stem for p in out.glob("*.png"))
    assert figures and sorted(im["alt"] for im in laid["images"]) == figures
    if any(
        c["id"] == MECHANISM for c in summary["claims"]
    ):  # the side-by-side attention figure is there
        assert "induction_heads_mechanism" in figures
    for im in laid["images"]:
        assert im["complete"] and im["natural"] > 0, im
        assert 0 <= im["left"] and im["right"] <= laid["innerWidth"], im
        smallest_text_px = (FONT - 1) * DPI / 72 * im["shown"] / im["natural"]
        assert smallest_text_px >= 9, (im["alt"], smallest_text_px)

    # the screenshot of the whole page shows the table and every figure (not blank where they are)
    height = int(max(im["top"] + im["height"] for im in laid["images"]) + 40)
    shot = Path(os.environ.get("HEADCOUNT_SCREENSHOT_DIR", tmp_path)) / "report-screenshot.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={LAPTOP[0]},{height}",
            f"--screenshot={shot}",
            (out / "report.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.exists(), done.stderr[-500:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (height, LAPTOP[0])
    ink = pixels.min(axis=2) < 0.8  # not white / light grey

    def region_has_ink(top: float, bottom: float, left: float, right: float) -> float:
        return float(ink[int(top) : int(bottom), int(left) : int(right)].mean())

    t = laid["table"]
    assert region_has_ink(t["top"], t["top"] + t["height"], t["left"], t["right"]) > 0.01
    for im in laid["images"]:
        assert (
            region_has_ink(im["top"], im["top"] + im["height"], im["left"], im["right"]) > 0.02
        ), im["alt"]
    assert np.std(pixels) > 0.05
