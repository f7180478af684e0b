"""The one number/interval formatter (seerbench._format) of the command line, `show` and the report."""

from __future__ import annotations

import math

from seerbench._format import bounds, ci, count, num
from seerbench.stats import Interval, summarize


def test_estimate_with_interval_from_every_shape() -> None:
    iv = Interval(0.62, 0.55, 0.69)
    assert ci(iv) == "0.620 [0.550, 0.690]"
    assert ci(iv, 2) == "0.62 [0.55, 0.69]"
    assert ci({"mean": 0.62, "ci_low": 0.55, "ci_high": 0.69, "n": 12}, 2) == "0.62 [0.55, 0.69]"
    assert ci({"estimate": 1234.4, "ci_low": -35.2, "ci_high": 1300.0}, 0) == "1234 [-35, 1300]"
    s = summarize([0.0, 1.0, 1.0, 1.0], n_boot=200)
    assert ci(s, 2) == f"0.75 [{s.ci_low:.2f}, {s.ci_high:.2f}]"
    assert bounds(iv, 4) == "[0.5500, 0.6900]"


def test_missing_values_print_as_n_a() -> None:
    assert ci(None) == "n/a" and ci({}) == "n/a" and ci(Interval(math.nan, math.nan, math.nan)) == "n/a"
    assert ci({"mean": 0.5, "ci_low": 0.1, "ci_high": 0.9, "n": 0}) == "n/a"  # nothing measured
    # an estimate without an interval: the number alone, or with n/a bounds when asked
    assert ci({"mean": 0.5}) == "0.500"
    assert ci({"mean": 0.5, "ci_low": math.nan, "ci_high": math.nan}, 2, bare=False) == "0.50 [n/a, n/a]"
    assert bounds({"ci_low": None, "ci_high": None}) == "n/a"
    assert num(None) == "n/a" and num(math.nan) == "n/a"


def test_numbers() -> None:
    assert num(0.12345) == "0.123" and num(0.12345, 4) == "0.1235" and num(2.0, 0) == "2"
    assert num(-0.0001) == "0.000"  # no sign on a value that rounds to zero
    assert num(-0.0004) == "0.000" and num(-0.0) == "0.000" and num(-0.0006) == "-0.001"
    assert num(-0.004, 2) == "0.00" and num(-0.00004, 4) == "0.0000"
    assert ci({"mean": -0.0004, "ci_low": -0.0009, "ci_high": 0.0002}) == "0.000 [-0.001, 0.000]"
    assert num(-0.4, 0) == "0" and num(-0.6, 0) == "-1"
    assert num(7) == "7" and num(True) == "True" and num("a") == "a"
    assert num(math.inf, 2) == "inf"


def test_counts() -> None:
    assert count(264000) == "264,000" and count(999) == "999" and count(1234567) == "1,234,567"
    assert count(77999.6) == "78,000"  # an expected number of calls, rounded
    assert count(None) == "n/a" and count(math.nan) == "n/a" and count(math.inf) == "inf"
    assert count("12") == "12" and count(True) == "True"
