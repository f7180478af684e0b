"""`seerbench models`, `ask`, `cache info|clear` through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seerbench.cli import app
from seerbench.models import register_scripted

runner = CliRunner()


@pytest.fixture(autouse=True, scope="module")
def _responder() -> None:
    # answers 0.8 to everything: no logprobs, so `ask` elicits by the verbalised method
    register_scripted("cli-test", lambda msgs, cfg, seed: "0.8", replace=True)
    register_scripted("cli-mute", lambda msgs, cfg, seed: "...", replace=True)


def _json(args: list[str]) -> object:
    r = runner.invoke(app, args)
    assert r.exit_code == 0, (r.output, r.exception)
    return json.loads(r.stdout)


def test_models_json() -> None:
    data = _json(["models", "--json"])
    assert isinstance(data, list)
    forms = {d["form"]: d for d in data}
    assert {"local", "openai/<model>", "litellm/<provider>/<model>", "scripted[:<name>]"} <= set(forms)
    assert all(set(d) == {"form", "description", "usable", "note"} for d in data)
    assert forms["scripted[:<name>]"]["usable"] is True


def test_models_table() -> None:
    r = runner.invoke(app, ["models"])
    assert r.exit_code == 0 and "local" in r.stdout and "scripted" in r.stdout


def test_ask_json_then_cached(isolated_cache_dir: Path) -> None:
    args = ["ask", "--model", "scripted:cli-test", "Which? A) x B) y", "--options", "A,B", "--json"]
    first = _json(args)
    assert isinstance(first, dict)
    assert {"text", "probabilities", "method", "usage", "cached"} <= set(first)
    assert first["text"] == "0.8"
    assert first["probabilities"] == pytest.approx({"A": 0.8, "B": 0.2})
    assert first["method"] == "verbalized"
    assert first["cached"] is False
    # every fresh call (the free-text answer and the elicitation's) answers one token ("0.8"): the
    # tokens of every call are reported, not those of the free-text one only
    calls = first["usage"]["model_calls"]
    assert calls >= 2 and first["usage"]["completion_tokens"] == calls
    second = _json(args)
    assert isinstance(second, dict)
    assert second["cached"] is True and second["probabilities"] == first["probabilities"]
    assert second["usage"] == {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "model_calls": 0,
        "cache_hits": calls,
    }

    info = _json(["cache", "info", "--json"])
    assert isinstance(info, dict)
    assert Path(info["path"]).parent == isolated_cache_dir
    assert info["entries"] >= 2 and info["by_model"]["scripted:cli-test"] == info["entries"]

    cleared = _json(["cache", "clear", "--yes", "--json"])
    assert isinstance(cleared, dict) and cleared["deleted"] == info["entries"]
    after = _json(["cache", "info", "--json"])
    assert isinstance(after, dict) and after["entries"] == 0
    third = _json(args)
    assert isinstance(third, dict) and third["cached"] is False


def test_ask_text_output() -> None:
    r = runner.invoke(app, ["ask", "--model", "scripted:cli-test", "Which? A) x B) y"])
    assert r.exit_code == 0, r.output
    assert "P(A) = 0.800" in r.stdout and "verbalized" in r.stdout


def test_ask_parse_failure_is_reported_not_invented() -> None:
    data = _json(["ask", "--model", "scripted:cli-mute", "Which? A) x B) y", "--json"])
    assert isinstance(data, dict)
    assert data["probabilities"] is None and data["method"] is None and data["parse_status"] == "failed"
    assert data["error"]


def test_cache_clear_without_yes_asks(isolated_cache_dir: Path) -> None:
    r = runner.invoke(app, ["cache", "clear"], input="n\n")
    assert r.exit_code != 0  # aborted
    r = runner.invoke(app, ["cache", "clear"], input="y\n")
    assert r.exit_code == 0 and "deleted 0 entries" in r.stdout


def test_cache_dir_option_moves_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "cli-cache"
    info = _json(["--cache-dir", str(target), "cache", "info", "--json"])
    assert isinstance(info, dict) and Path(info["path"]) == target / "cache.sqlite"


def test_bad_inputs_fail() -> None:
    r = runner.invoke(app, ["ask", "--model", "nonsense-model", "q"])
    assert r.exit_code != 0 and "Valid forms" in str(r.exception)
    r = runner.invoke(app, ["ask", "--model", "scripted:cli-test", "q", "--methods", "logprobs,psychic"])
    assert r.exit_code != 0 and "psychic" in str(r.exception)
