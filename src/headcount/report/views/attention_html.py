"""The attention heat maps as one self-contained interactive HTML page: the panels
report/views/attention.py draws (`patterns_html(models, title, caption)`), for the report's figures
(written as <figure id>.html beside the PNG) and `headcount analyze patterns` (attention.html).

Inline CSS and JavaScript only — no network, no external fonts — so the page opens from a folder or
an archive as it was written. A block per model, side by side as in the PNG; in it a row per layer
and a grid per head: a <table> whose rows are the query positions and columns the key positions,
both headed by the input's tokens as the command line prints them (0..S−1, "k=K" for the hop
token), each cell coloured by its weight on the PNG's scale (the same 256 colours of CMAP, 0..1),
the keys after a causal query left out (blank, as in the PNG). The weight is in the cell's data-w
(WEIGHT_DIGITS decimals); hovering a cell shows the head, the query and key positions (from 0, as
in the JSON's tokens), their tokens, the task's answer at the query (⊥ where none) and the weight,
in a tooltip and in the info line at the top. Without JavaScript the grids, their titles and token
headers are all there; only the hover text is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import numpy as np
from matplotlib.colors import to_hex

from headcount.report.views.attention import CMAP, ModelPatterns, panel_title

COLOURS = CMAP.N  # matplotlib draws a weight w in colour min(⌊w·N⌋, N − 1) of the colour map
WEIGHT_DIGITS = 4  # decimals of a weight in the page: ±0.00005 of the float64 pattern
NO_ANSWER = "-"  # a position without an answer (the hop token) in a grid's data-answers

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;color:#222;margin:1.2em 1.6em}
h1{font-size:1.3em;margin:0 0 .4em}h2{font-size:1.1em;margin:.2em 0 .6em}
.caption{max-width:60em}
.info{position:sticky;top:0;background:#fff;border-bottom:1px solid #ccc;padding:.4em 0;
margin:.6em 0 1em;min-height:1.4em;z-index:1}
.legend .bar{display:inline-block;width:12em;height:.9em;vertical-align:middle;margin:0 .4em;
background:linear-gradient(to right,GRADIENT)}
.models{display:flex;flex-wrap:wrap;gap:2.5em;align-items:flex-start}
.layer{display:flex;flex-wrap:wrap;gap:1.5em;margin-bottom:1.2em;align-items:flex-end}
figure{margin:0}figcaption{font-size:13px;text-align:center;margin-bottom:.3em}
table.grid{border-collapse:collapse;table-layout:fixed;margin:auto}
.grid td{width:12px;height:12px;padding:0;border:0}
.grid td:hover{outline:2px solid #e8336d;outline-offset:-2px}
.grid th{font:10px/1 monospace;font-weight:normal;color:#444;padding:0 3px 0 0;text-align:right}
.grid thead th{padding:0 0 3px;text-align:center;vertical-align:bottom}
.grid thead th.v{writing-mode:vertical-rl;transform:rotate(180deg)}
.tip{position:absolute;background:#222;color:#fff;font-size:12px;padding:.3em .5em;
border-radius:3px;pointer-events:none;max-width:28em;z-index:2}
"""

# The hover: the cell's table carries the head's name, tokens and answers; the cell its weight;
# its row and column give the positions (the row's first cell is the query's token header).
SCRIPT = """
(function () {
  var info = document.getElementById("info"), tip = document.getElementById("tip");
  function describe(cell) {
    var row = cell.parentNode, table = row.parentNode.parentNode, d = table.dataset;
    var tokens = d.tokens.split(" "), answers = d.answers.split(" ");
    var q = row.sectionRowIndex, k = cell.cellIndex - 1;
    var answer = answers[q] && answers[q] !== "NO_ANSWER" ? ", answer " + answers[q] : "";
    return d.head + ": query position " + q + " (token " + tokens[q] + answer +
      ") \\u2192 key position " + k + " (token " + tokens[k] + "): weight " + cell.dataset.w;
  }
  document.addEventListener("mouseover", function (event) {
    var cell = event.target;
    if (cell.tagName !== "TD" || !cell.dataset.w) { tip.hidden = true; return; }
    info.textContent = tip.textContent = describe(cell);
    var box = cell.getBoundingClientRect();
    tip.style.left = box.right + window.scrollX + 8 + "px";
    tip.style.top = box.top + window.scrollY - 4 + "px";
    tip.hidden = false;
  });
})();
""".replace("NO_ANSWER", NO_ANSWER)


def colour_index(weight: float) -> int:
    """The colour of CMAP that matplotlib paints `weight` in, on the 0..1 scale of the PNG."""
    return min(max(int(weight * COLOURS), 0), COLOURS - 1)


def colour_rules(used: set[int]) -> str:
    """A CSS class per colour used: .c<i> painted as matplotlib paints colour i."""
    return "".join(f".c{i}{{background:{to_hex(CMAP(i))}}}" for i in sorted(used))


def gradient() -> str:
    """CMAP from 0 to 1, as CSS gradient stops (the legend)."""
    return ",".join(to_hex(CMAP(x)) for x in np.linspace(0.0, 1.0, 11))


def grid_table(model: ModelPatterns, index: int, head: str, used: set[int]) -> str:
    """Head `index` of `model` as a <table> (module docstring); records the colours it uses."""
    A = np.asarray(model.patterns[index], dtype=float)
    tokens = [escape(t) for t in model.tokens]
    answers = " ".join(escape(a) or NO_ANSWER for a in model.answers)
    header = "".join(f"<th{' class=v' if len(t) > 1 else ''}>{t}</th>" for t in tokens)
    rows = []
    for q, token in enumerate(tokens):
        keys = q + 1 if model.causal else len(tokens)  # later keys: blank, as in the PNG
        cells = []
        for k in range(keys):
            if not np.isfinite(
                A[q, k]
            ):  # an overflowed model's NaN: blank, as matplotlib paints it
                cells.append(f"<td data-w={A[q, k]}></td>")
                continue
            c = colour_index(A[q, k])
            used.add(c)
            cells.append(f"<td class=c{c} data-w={A[q, k]:.{WEIGHT_DIGITS}f}></td>")
        rows.append(f"<tr><th>{token}</th>{''.join(cells)}</tr>")
    return (
        f'<table class="grid" data-head="{escape(head)}" data-tokens="{" ".join(tokens)}" '
        f'data-answers="{answers}"><thead><tr><th></th>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def model_block(model: ModelPatterns, used: set[int]) -> str:
    """One model's grids: its label, a row per layer, a grid per head with the PNG's title."""
    parts = [f'<section class="model" data-model="{escape(model.label)}">']
    if model.label:
        parts.append(f"<h2>{escape(model.label)}</h2>")
    index = 0
    for layer, count in enumerate(model.heads_per_layer):
        parts.append('<div class="layer">')
        for head in range(count):
            score = model.scores[index]
            title = "<br>".join(escape(line) for line in panel_title(score).split("\n"))
            name = f"{model.label + ' · ' if model.label else ''}layer {layer} head {head}"
            parts.append(
                f'<figure class="head" data-layer="{layer}" data-head="{head}">'
                f"<figcaption>{title}</figcaption>{grid_table(model, index, name, used)}</figure>"
            )
            index += 1
        parts.append("</div>")
    parts.append("</section>")
    return "\n".join(parts)


def patterns_html(models: Sequence[ModelPatterns], title: str, caption: str = "") -> str:
    """The models' attention as one self-contained interactive page (module docstring), headed by
    the PNG's `title` and `caption`."""
    used: set[int] = set()
    blocks = "\n".join(model_block(m, used) for m in models)
    style = STYLE.replace("GRADIENT", gradient()) + colour_rules(used)
    legend = (
        '<p class="legend">Attention weight: 0<span class="bar"></span>1 (one scale for every '
        "grid, the PNG's colours). Rows: query positions; columns: key positions (attended to); "
        "both headed by the input's tokens. Blank: keys after the query.</p>"
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{style}</style>
</head>
<body>
<h1>{escape(title)}</h1>
<p class="caption">{escape(caption)}</p>
{legend}
<p class="info" id="info">Hover a cell: its head, query and key positions (from 0) and tokens, the
answer at the query, and its weight.</p>
<noscript><p>JavaScript is off: the grids are static (no hover text).</p></noscript>
<div class="models">
{blocks}
</div>
<div class="tip" id="tip" hidden></div>
<script>{SCRIPT}</script>
</body>
</html>
"""
