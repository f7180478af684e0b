"""The figure functions on awkward input: labels that look like TeX stay text, missing values
are listed as n/a, and the SVG is an inline element. The report's numbers (tables, figures, the
transcript browser's script) follow the one formatter: no ``-0.000``, ``n/a`` when missing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from seerbench._format import num
from seerbench.report import _figures as F
from seerbench.report._assets import JS
from seerbench.report._blocks import num as cell


def test_dollar_labels_are_text_and_missing_values_na() -> None:
    s = {"n": 3, "mean": 0.5, "ci_low": 0.2, "ci_high": 0.8}
    svg = F.interval_plot(
        [("cost $5 $\\frac{", s), ("empty", None), ("nan", {"n": 0, "mean": None})],
        title="t",
        xlabel="x",
        name="fig-a",
    )
    assert svg.startswith("<svg ") and "<?xml" not in svg
    assert "cost $5 $\\frac{" in svg and svg.count("n/a") == 2
    heat = F.heatmap([[s, None]], ["judge $a$"], ["agent 1", "agent 2"], title="h", name="fig-b")
    assert "judge $a$" in heat and "0.50" in heat and "[0.20, 0.80]" in heat and "n/a" in heat


def test_figures_on_one_page_share_no_ids() -> None:
    import re

    s = {"n": 3, "mean": 0.5, "ci_low": 0.2, "ci_high": 0.8}
    a = F.interval_plot([("x", s)], title="t", xlabel="x", name="one")
    b = F.interval_plot([("x", s)], title="t", xlabel="x", name="two")
    ids_a = set(re.findall(r'\bid="([^"]+)"', a))
    ids_b = set(re.findall(r'\bid="([^"]+)"', b))
    assert ids_a and not ids_a & ids_b
    for svg, ids in ((a, ids_a), (b, ids_b)):  # every reference points into its own figure
        refs = set(re.findall(r'(?:url\(#|href="#)([^")]+)', svg))
        assert refs and refs <= ids


def _texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_a_value_that_rounds_to_zero_has_no_sign_in_tables_and_figures() -> None:
    # -0.0004 is 0.000 at three decimals (the exact value stays in data-v); -0.0006 is -0.001
    assert cell(-0.0004, "mean") == '<td class="n" data-k="mean" data-v="-0.0004">0.000</td>'
    assert cell(-0.0006, "mean").endswith(">-0.001</td>") and cell(-0.0, "m").endswith(">0.000</td>")
    assert cell(None, "ci_low") == '<td class="n" data-k="ci_low" data-v="null">n/a</td>'
    assert cell(float("nan"), "x").endswith('data-v="null">n/a</td>') and cell(7, "n").endswith('"7">7</td>')
    # the heat map, at two decimals: -0.004 is 0.00, its interval [-0.02, 0.00]
    heat = F.heatmap(
        [[{"n": 9, "mean": -0.004, "ci_low": -0.02, "ci_high": 0.001}]], ["j"], ["a"], title="h", name="z"
    )
    assert "0.00" in _texts(heat) and "[-0.02, 0.00]" in _texts(heat) and "-0.00" not in _texts(heat)


def test_a_mean_without_an_interval_is_drawn_alone() -> None:
    # equal values give a mean with null bounds (no zero-width interval): the heat map shows the
    # mean alone (its f-string raised TypeError on None)
    alone = {"n": 1, "mean": 0.5, "ci_low": None, "ci_high": None}
    heat = F.heatmap([[alone]], ["j"], ["a"], title="h", name="y")
    assert "0.50" in _texts(heat) and not any(t.startswith("[") for t in _texts(heat))


@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
def test_the_browsers_formatter_agrees_with_the_one_formatter() -> None:
    """The transcript browser formats in JavaScript (fmt in the page's script): run it under node
    on the values where formatters differ, and compare with seerbench._format.num."""
    m = re.search(r"  function fmt\(x\) \{.*?\n  \}\n", JS, re.S)
    assert m, "fmt not found in the report's script"
    values = [-0.0004, -0.0006, -0.0, 0.0, 0.1234, -1.5, 0.9999, None]
    out = subprocess.run(
        ["node", "-e", m.group(0) + f"console.log(JSON.stringify({json.dumps(values)}.map(fmt)))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(out.stdout) == [num(v) for v in values]
