"""The figure functions on awkward input: labels that look like TeX stay text, missing values
are listed as n/a, and the SVG is an inline element."""

from __future__ import annotations

from seerbench.report import _figures as F


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
