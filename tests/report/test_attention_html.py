"""The interactive attention page (report/views/attention_html.py): it parses, asks nothing of the
network, holds a grid per head with a cell per (query, key) the PNG colours — its weight in the
cell, equal to the pattern to the printed precision, its colour the PNG's —, the PNG's titles, the
tokens as the command line prints them, and the hover script; the report's two mechanism figures
register it, and their captions cite the papers, not internal labels."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from html import unescape
from html.parser import HTMLParser

import numpy as np
import pytest
from matplotlib.colors import to_hex

from headcount.induction.construction import two_layer_induction
from headcount.report.claims import INDUCTION_PAPER, KHOP_PAPER, PASS, ClaimResult
from headcount.report.figures import FIGURES
from headcount.report.induction import khop_mechanism as km
from headcount.report.induction import mechanism as mech
from headcount.report.views.attention import CMAP, model_patterns, panel_title
from headcount.report.views.attention_html import WEIGHT_DIGITS, colour_index, patterns_html
from tests.report.test_attention import random_model
from tests.report.test_attention_layout import SAMPLES, khop_series


@dataclass
class Grid:
    attrs: dict[str, str]
    caption: str
    columns: list[str] = field(default_factory=list)  # the key tokens heading the columns
    rows: list[str] = field(default_factory=list)  # the query tokens heading the rows
    cells: list[list[dict[str, str]]] = field(default_factory=list)


class Page(HTMLParser):
    """The parts of the page the tests read: grids, their captions, scripts, styles, every
    attribute."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.grids: list[Grid] = []
        self.attributes: list[tuple[str, str, str | None]] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self.caption, self.text, self.where, self.stack = "", "", None, []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.attributes += [(tag, k, v) for k, v in attrs]
        a = dict(attrs)
        self.stack.append(tag)
        self.text = ""
        if tag == "table" and a.get("class") == "grid":
            self.grids.append(Grid(a, self.caption))
        elif tag in ("thead", "tbody"):
            self.where = tag
        elif tag == "tr" and self.where == "tbody":
            self.grids[-1].cells.append([])
        elif tag == "td":
            self.grids[-1].cells[-1].append(a)
        elif tag == "br":
            self.text = self.caption + "\n"

    def handle_endtag(self, tag):
        self.stack.pop()
        if tag == "figcaption":
            self.caption = self.text
        elif tag == "th" and self.where == "thead" and self.text:
            self.grids[-1].columns.append(self.text)
        elif tag == "th" and self.where == "tbody":
            self.grids[-1].rows.append(self.text)
        elif tag == "table":
            self.where = None

    def handle_data(self, data):
        self.text += data
        if self.stack and self.stack[-1] == "figcaption":
            self.caption = self.text
        if self.stack and self.stack[-1] == "script":
            self.scripts.append(data)
        if self.stack and self.stack[-1] == "style":
            self.styles.append(data)


@pytest.fixture(scope="module")
def two_models():
    n, S = 12, 4
    args = ("induction", "plain", n, S, 0, 1, SAMPLES)
    built = model_patterns(two_layer_induction(n, S), "construction", *args)
    other = model_patterns(random_model(2, 2, S, n, S), "trained", *args)
    return built, other


def check_grids(page: Page, models) -> None:
    """A grid per head of each model, in order, with the PNG's title, the tokens, a cell per
    (query, key ≤ query) whose weight is the pattern's and colour the PNG's."""
    heads = [(m, i) for m in models for i in range(len(m.patterns))]
    assert len(page.grids) == len(heads)
    rules = dict(re.findall(r"\.(c\d+)\{background:(#[0-9a-f]{6})\}", "".join(page.styles)))
    for grid, (model, index) in zip(page.grids, heads):
        A, tokens = model.patterns[index], list(model.tokens)
        assert grid.caption == panel_title(model.scores[index])
        assert grid.columns == tokens and grid.rows == tokens
        assert grid.attrs["data-tokens"].split(" ") == tokens
        assert len(grid.attrs["data-answers"].split(" ")) == len(tokens)
        assert [len(row) for row in grid.cells] == [q + 1 for q in range(len(tokens))]
        for q, row in enumerate(grid.cells):
            assert [c["data-w"] for c in row] == [f"{w:.{WEIGHT_DIGITS}f}" for w in A[q, : q + 1]]
            for cell, w in zip(row, A[q, : q + 1]):
                assert cell["class"] == f"c{colour_index(w)}"
                assert rules[cell["class"]] == to_hex(CMAP(float(w)))  # the PNG's colour


def check_self_contained(text: str, page: Page) -> None:
    for needle in ("http://", "https://", "<link", "src=", "@import", "url(", "//cdn"):
        assert needle not in text
    assert not [a for a in page.attributes if a[1] in ("src", "href", "action")]


def test_the_page_holds_every_grid_with_its_weights_and_colours(two_models):
    text = patterns_html(two_models, "Two models", "A caption.")
    page = Page(text)
    check_grids(page, two_models)
    check_self_contained(text, page)
    assert "<h1>Two models</h1>" in text and "A caption." in text
    assert [g.attrs["data-head"] for g in page.grids[:3]] == [
        "construction · layer 0 head 0",
        "construction · layer 0 head 1",
        "construction · layer 1 head 0",
    ]
    (script,) = page.scripts
    # the hover: on a cell, the head, both positions and tokens, the answer and the weight
    for needle in ('addEventListener("mouseover"', "dataset.w", "sectionRowIndex", "cellIndex"):
        assert needle in script
    assert "query position" in script and "key position" in script and "answer" in script


def test_answers_print_bottom_as_the_cli_does(two_models):
    built = two_models[0]
    grid = Page(patterns_html([built], "t")).grids[0]
    assert grid.attrs["data-answers"].split(" ") == list(built.answers)
    assert built.answers[0] == "⊥" and set(built.answers) <= {"⊥", "0", "1", "2", "3"}


def test_the_hop_token_and_a_model_without_a_causal_mask():
    model = random_model(1, 1, 4 + 2, 5, 4)
    panels = model_patterns(model, "", "khop", "hop-prefix", 4, 4, 0, 2, SAMPLES)
    grid = Page(patterns_html([panels], "t")).grids[0]
    assert grid.columns[0] == "k=2" and grid.attrs["data-answers"].split(" ")[0] == "-"
    full = replace(panels, causal=False)
    grid = Page(patterns_html([full], "t")).grids[0]
    assert [len(row) for row in grid.cells] == [5] * 5  # every key: nothing blank
    weights = np.array([[float(c["data-w"]) for c in row] for row in grid.cells])
    assert np.allclose(weights, panels.patterns[0], atol=0.5 * 10**-WEIGHT_DIGITS)


def test_the_mechanism_figures_register_their_pages_and_cite_the_papers(two_models):
    built, other = two_models
    run = mech.TrainedModel("run-1", {"heads": 2, "dim": 6, "seed": 4}, 0.99, None)
    series = mech.Mechanism(built, other, run, 12, 4, SAMPLES, True)
    result = ClaimResult({}, PASS, "", series)
    spec = FIGURES["induction_heads_mechanism"]
    assert spec.html is mech.mechanism_page
    text = spec.html(result)
    check_grids(Page(text), [built, other])
    caption = mech.mechanism_caption(series)
    assert INDUCTION_PAPER.cite in caption and caption in unescape(text)

    khop = khop_series(8, 3, 2, 3, 1)
    spec = FIGURES[km.FIGURE]
    assert spec.html is km.khop_page
    text = spec.html(ClaimResult({}, PASS, "", khop))
    check_grids(Page(text), [khop.construction, khop.trained])
    assert len(text) < 100_000
    captions = [caption, km.khop_caption(khop)]
    assert KHOP_PAPER.cite in captions[1]
    alone = km.KhopMechanism(khop.construction, None, None, khop.drawn_built, 8, 3, 2, 8, True)
    captions.append(km.khop_caption(alone))
    for caption in captions:
        assert not re.search(r"seed ?0\d\d|issue \d", caption), caption
