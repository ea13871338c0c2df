"""The report reads like a paper's appendix: summary table first (each row linking to its claim's
section), one section per paper with each claim's statement, check, result, measured tables,
figures and cost, then references; no internal labels; summary.json keeps its fields and adds."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from headcount.report.claims import CITED, PAPERS, ClaimResult, claim, unregister
from headcount.report.figures import FIGURES, FigureSpec
from headcount.report.headlines import HEADLINES, headline
from headcount.report.outline import claim_sentence
from headcount.report.reproduce import load_claims, run_reproduce
from headcount.report.tables import MAX_ROWS, cell, measured_tables

INTERNAL = re.compile(r"\bissue\b|seed ?00[04]|spec/|frontiers\.md", re.I)
OLD_FIELDS = {"id", "paper", "source", "statement", "measured", "status", "detail", "seconds"}


class Anchors(HTMLParser):
    """ids, summary-table links, and which section (claim id) each figure lies in."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.links: list[str] = []
        self.figure_in: dict[str, str] = {}
        self.section = ""
        self.in_summary = False
        self.order: list[str] = []  # h2 ids and section ids in document order

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.append(a["id"])
            if tag in ("h2", "section"):
                self.order.append(a["id"])
        if tag == "table" and a.get("class") == "summary":
            self.in_summary = True
        if tag == "a" and self.in_summary:
            self.links.append(a["href"])
        if tag == "section" and a.get("id", "").startswith("claim-"):
            self.section = a["id"]
        if tag == "figure":
            self.figure_in[a["id"]] = self.section

    def handle_endtag(self, tag):
        if tag == "table":
            self.in_summary = False


def test_every_claim_is_described_without_internal_labels():
    papers = {p.key for p in PAPERS}
    for c in load_claims().values():
        assert c.reference in papers and c.check.startswith("PASS only if"), c.id
        for text in (c.source, c.statement, c.check):
            assert not INTERNAL.search(text), (c.id, text)
    for p in (*PAPERS, *CITED):
        assert p.authors and p.title and p.venue and p.cite


def test_claim_sentence_stops_outside_parentheses():
    assert claim_sentence("A holds (here: always). B follows.") == "A holds (here: always)."
    assert claim_sentence("No stop at all") == "No stop at all."


def test_tables_by_shape():
    measured = {
        "n": 12,
        "ok": True,
        "points": [{"n": 8, "p": 3}, {"n": 16, "p": 4, "extra": None}],
        "layers": [2, 3],
        "hops": [1, 2, 3],
        "error": [[0.1, 0.2, 0.3], [0.0, 0.01, 0.02]],
        "many": [{"i": i} for i in range(MAX_ROWS + 5)],
    }
    values, points, error, many = measured_tables(measured)
    assert values.rows == (("n", "12"), ("ok", "yes"), ("layers", "[2, 3]"), ("hops", "[1, 2, 3]"))
    assert points.header == ("n", "p", "extra") and points.rows[1] == ("16", "4", "—")
    assert error.header[0] == "layers \\ hops" and error.rows[0] == ("2", "0.1", "0.2", "0.3")
    assert len(many.rows) == MAX_ROWS and many.rows_left_out == 5
    assert cell(0.123456789) == "0.1235" and cell(123456) == "123,456"


def test_headline_falls_back_to_the_detail():
    assert headline("no.such.claim", "PASS", {}, "short detail") == "short detail"
    # a FAIL says what went wrong, even where a headline exists
    some = next(iter(HEADLINES))
    assert headline(some, "FAIL", {}, "it broke") == "it broke"
    # a changed measured shape does not crash the report
    assert headline(some, "PASS", {"unexpected": 1}, "detail instead") == "detail instead"


@pytest.fixture
def two_papers(tmp_path):
    """Two synthetic claims (two papers, one failing, one with a figure) run into tmp_path."""
    from headcount.report.induction import construction_sizes

    load_claims()

    def good(ctx):
        series = {"n": [64, 256, 1024], "precision_bits": [10, 13, 16], "S": [64]}
        series |= {"c": 1.5, "c_prime": 1.0}
        measured = {"c": 1.5, "points": [{"n": 64, "p": 10}, {"n": 1024, "p": 16}]}
        return ClaimResult(measured, "PASS", "synthetic result", series)

    def bad(ctx):
        return ClaimResult({"x": 1}, "FAIL", "the measurement disagreed")

    ids = ("test.outline.good", "test.outline.bad")
    for cid, fn, paper in zip(ids, (good, bad), (PAPERS[0], PAPERS[2])):
        claim(cid, paper=paper, source="§9", statement="It holds: here.", check="PASS only if.")(fn)
    FIGURES["test_outline_fig"] = FigureSpec(
        "test_outline_fig", ids[0], construction_sizes.draw_precision
    )
    HEADLINES[ids[0]] = lambda m: f"c = {m['c']} headline"
    try:
        summary = run_reproduce(
            "quick", only="test.outline.*", out_dir=tmp_path, progress=lambda line: None
        )
    finally:
        FIGURES.pop("test_outline_fig")
        HEADLINES.pop(ids[0])
        for cid in ids:
            unregister(cid)
    return summary, tmp_path


def test_html_report_outline(two_papers):
    summary, out = two_papers
    page = (out / "report.html").read_text()
    parsed = Anchors()
    parsed.feed(page)
    # the summary comes first, then a section per paper (paper order), then references
    assert parsed.order[0] == "summary"
    papers = [i for i in parsed.order if i.startswith("paper-")]
    assert papers == [f"paper-{PAPERS[0].key}", f"paper-{PAPERS[2].key}"]
    assert parsed.order.index("references") > parsed.order.index(papers[-1])
    # every summary link lands on a claim section, one per claim, in section order
    assert parsed.links == ["#claim-test.outline.good", "#claim-test.outline.bad"]
    assert all(link[1:] in parsed.ids for link in parsed.links)
    # the figure sits inside its claim's section
    assert parsed.figure_in == {"test_outline_fig": "claim-test.outline.good"}
    # statement, check, result, a measured table, cost; the failing claim's detail in the summary
    for text in (
        "It holds: here.",
        "PASS only if.",
        "synthetic result",
        "Cost:",
        "<caption>points",
    ):
        assert text in page
    assert "the measurement disagreed" in page and 'class="FAIL"' in page
    for p in (*PAPERS, *CITED):
        assert f'id="ref-{p.key}"' in page and p.title in page
    assert not INTERNAL.search(re.sub(r"data:image/png;base64,[^\"]+", "", page))


def test_markdown_report_outline(two_papers):
    summary, out = two_papers
    md = (out / "report.md").read_text()
    assert md.index("## Summary") < md.index("## 1 ") < md.index("## 2 ") < md.index("## Refer")
    assert "[1.1 `test.outline.good`](#claim-test.outline.good)" in md
    assert '<a id="claim-test.outline.good"></a>' in md
    good = md[md.index('<a id="claim-test.outline.good">') : md.index("## 2 ")]
    assert "![test_outline_fig](test_outline_fig.png)" in good and "*points*" in good
    assert "| n | p |" in good
    assert "**Result**: c = 1.5 headline" in good and "synthetic result" in good
    assert not INTERNAL.search(md)


def test_summary_json_adds_fields(two_papers):
    summary, out = two_papers
    on_disk = json.loads((out / "summary.json").read_text())
    for row in on_disk["claims"]:
        assert OLD_FIELDS <= set(row)
        assert row["check"] == "PASS only if." and row["reference"] in {p.key for p in PAPERS}
        assert row["headline"]
    assert on_disk["claims"][0]["headline"] == "c = 1.5 headline"
    (figure,) = on_disk["figures"]
    assert {"id", "claim", "png", "svg", "caption"} <= set(figure)
