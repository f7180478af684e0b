"""Issue 22: every result traceable to the code, model and data that made it, and no stale answer
under a fresh claim. Each hazard of the issue is reproduced first: an edited plugin backend, an
edited helper module imported by a judge, two model files with one name, the seed in the identity;
then the cache scope, the file-hash memo and the run's recorded environment."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import version as importlib_version
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from seerbench import plugins
from seerbench.cli import app
from seerbench.errors import ConfigError
from seerbench.experiment import Experiment, ExperimentConfig
from seerbench.models import ChatMessage, GenerateConfig, Model, ScriptedBackend, get_model
from seerbench.models import _registry as model_registry
from seerbench.models._cache import cache_key
from seerbench.provenance import code_files, environment, environment_lines, file_digest, provenance_key

runner = CliRunner()

BACKEND = '''
from seerbench.models import Backend, ScriptedBackend, register_backend

NOTE = "first"


class KeywordBackend(Backend):
    """The scripted coin under another name: a user's model backend."""

    name = "keyword"

    def __init__(self, rest):
        self._m = rest or "v1"
        self._inner = ScriptedBackend("coin")

    @property
    def model_id(self):
        return self._m

    @property
    def supports_logprobs(self):
        return False

    async def complete(self, messages, config, seed):
        return await self._inner.complete(messages, config, seed)


@register_backend("keyword", replace=True)
def _keyword(rest, *, base_url=None, api_key=None):
    return KeywordBackend(rest)
'''

JUDGE = '''
from seerbench import Verdict
from rubrics_{tag} import RUBRIC


class RubricJudge:
    """P(first option) = RUBRIC: a judge whose rule lives in a helper module."""

    name = "rubric"

    async def judge(self, question, visible, *, with_source=False, argued=None):
        a, b = question.shorts[:2]
        return Verdict(probabilities={{a: RUBRIC, b: 1 - RUBRIC}}, method="verbalized", raw="")
'''


def _forget(folder: Path) -> None:
    """Make this process import the user modules of ``folder`` afresh (as a new ``seerbench``
    process would after an edit) and build its models again."""
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if f and Path(f).resolve().is_relative_to(folder.resolve()):
            del sys.modules[name]
    for k in [k for k in plugins._loaded_paths if Path(k).is_relative_to(folder.resolve())]:
        del plugins._loaded_paths[k]
    model_registry._models.clear()


def _config(folder: Path, **cfg: Any) -> Path:
    raw = {
        "name": "prov",
        "dataset": {"name": "arithmetic", "n": 6, "seed": 0},
        "judge_models": ["scripted:coin"],
        "protocols": ["NaiveJudge"],
        "elicitation": {"order": ["vote"], "vote_samples": 1},  # the coin answers a letter: one vote
        "n_boot": 100,
        "out": str(folder / "out"),
        **cfg,
    }
    p = folder / "xp.yaml"
    p.write_text(yaml.safe_dump(raw))
    return p


def _usage(out: Path) -> dict[str, Any]:
    return json.loads((out / "usage.json").read_text())["total"]


def test_an_edited_plugin_backend_is_refused_by_name_and_new_makes_new_calls(tmp_path: Path) -> None:
    (tmp_path / "kwback.py").write_text(BACKEND)
    cfg = _config(tmp_path, plugins=["kwback.py"], judge_models=["keyword/v1"], limit=3)
    _forget(tmp_path)
    Experiment(ExperimentConfig.from_yaml(cfg)).run()
    first = _usage(tmp_path / "out")
    assert (first["calls"], first["cache_hits"]) == (3, 0)  # NaiveJudge: one judge call a question
    ident = json.loads((tmp_path / "out" / "NaiveJudge" / "J_keyword-v1" / "cell.json").read_text())[
        "identity"
    ]
    sha = hashlib.sha256((tmp_path / "kwback.py").read_bytes()).hexdigest()[:16]
    assert ident["models"]["keyword/v1"] == {"backend": "keyword", "model": "v1", "code": {"kwback.py": sha}}

    (tmp_path / "kwback.py").write_text(BACKEND.replace('NOTE = "first"', 'NOTE = "second"'))
    _forget(tmp_path)
    with pytest.raises(ConfigError, match=r"model keyword/v1: backend keyword/v1's code \(kwback\.py\)"):
        Experiment(ExperimentConfig.from_yaml(cfg)).run()
    _forget(tmp_path)
    exp = Experiment(ExperimentConfig.from_yaml(cfg))
    exp.run(new=True)
    assert exp.out == tmp_path / "out_2"
    fresh = _usage(tmp_path / "out_2")
    assert (fresh["calls"], fresh["cache_hits"]) == (3, 0)  # no answer of the old backend's code


def test_an_edited_helper_module_of_a_judge_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tag = tmp_path.name.replace("-", "_")
    (tmp_path / f"judges_{tag}.py").write_text(textwrap.dedent(JUDGE.format(tag=tag)))
    (tmp_path / f"rubrics_{tag}.py").write_text("RUBRIC = 0.75\n")
    cfg = _config(
        tmp_path, plugins=[f"judges_{tag}"], judge_models=[{"class": f"judges_{tag}:RubricJudge"}], limit=3
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    _forget(tmp_path)
    Experiment(ExperimentConfig.from_yaml(cfg)).run()
    cell = tmp_path / "out" / "NaiveJudge" / "J_RubricJudge"
    code = json.loads((cell / "cell.json").read_text())["identity"]["code"]
    assert set(code[f"judges_{tag}:RubricJudge"]) == {f"judges_{tag}.py", f"rubrics_{tag}.py"}

    (tmp_path / f"rubrics_{tag}.py").write_text("RUBRIC = 0.25\n")  # same size, new rule
    _forget(tmp_path)
    more = ExperimentConfig.from_yaml(cfg).with_updates(limit=6)
    with pytest.raises(
        ConfigError, match=rf"differs in: rubrics_{tag}\.py \(code of judges_{tag}:RubricJudge\)\)"
    ) as refused:
        Experiment(more).run()
    assert str(refused.value).count("(") == str(refused.value).count(")")  # one ")" per "("
    assert len((cell / "results.jsonl").read_text().splitlines()) == 3  # nothing mixed in
    _forget(tmp_path)
    exp = Experiment(ExperimentConfig.from_yaml(cfg).with_updates(limit=6))
    exp.run(new=True)
    lines = [json.loads(x) for x in (exp.out / "NaiveJudge" / "J_RubricJudge" / "results.jsonl").open()]
    assert len(lines) == 6
    assert {ln["answer_cases"][0]["case_probs"]["probabilities"][ln["question"]["answer_cases"][0]["short"]]
            for ln in lines} == {0.25}  # fmt: skip
    # show cannot rebuild the old run's prompts with the new rubric: it says what changed
    r = runner.invoke(app, ["show", str(tmp_path / "out"), "arithmetic-0-0"])
    assert isinstance(r.exception, ConfigError), r.output
    assert f"differs in: rubrics_{tag}.py (code of judges_{tag}:RubricJudge)" in str(r.exception)
    r = runner.invoke(app, ["show", str(exp.out), "arithmetic-0-0"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["show", str(tmp_path / "out"), "arithmetic-0-0", "--no-prompts"])
    assert r.exit_code == 0, r.output


def test_two_model_files_with_one_name_get_different_cache_keys(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    a, b = tmp_path / "a" / "model.gguf", tmp_path / "b" / "model.gguf"
    for p, body in ((a, b"weights of checkpoint A"), (b, b"weights of checkpoint B")):
        p.parent.mkdir()
        p.write_bytes(body)
    ma, mb = get_model(f"local:{a}"), get_model(f"local:{b}")
    assert ma.backend.model_id == mb.backend.model_id  # the file name: the old key's only model part
    assert ma.provenance["content"] == "sha256:" + hashlib.sha256(b"weights of checkpoint A").hexdigest()
    assert mb.provenance["content"] == "sha256:" + hashlib.sha256(b"weights of checkpoint B").hexdigest()
    msgs = [ChatMessage(role="user", content="2+2?")]
    assert ma._key(msgs, GenerateConfig(), 0) != mb._key(msgs, GenerateConfig(), 0)
    # the same bytes under another name and folder are the same model (a moved venv keeps its cache)
    c = tmp_path / "c" / "model.gguf"
    c.parent.mkdir()
    c.write_bytes(b"weights of checkpoint A")
    assert get_model(f"local:{c}")._key(msgs, GenerateConfig(), 0) == ma._key(msgs, GenerateConfig(), 0)


def test_a_model_key_holds_its_provenance_and_none_for_builtin_scripted() -> None:
    msgs = [ChatMessage(role="user", content="x")]
    m = Model("scripted:coin", ScriptedBackend("coin"))
    # seerbench's own responder: no version, content or code: the key of earlier versions
    assert m.provenance == {"backend": "scripted", "model": "coin"} and m.provenance_key == ""
    assert m._key(msgs, GenerateConfig(), 0) == cache_key("scripted", "coin", msgs, GenerateConfig(), 0)

    def mine(messages: Any, config: Any, seed: int | None) -> str:
        return "A"

    u = Model("scripted", ScriptedBackend(mine))
    assert u.provenance["content"].startswith("code:")  # this test file's code answers
    assert u._key(msgs, GenerateConfig(), 0) != cache_key("scripted", "mine", msgs, GenerateConfig(), 0)
    extra = {"content": u.provenance["content"]}
    assert u.provenance_key == hashlib.sha256(json.dumps(extra).encode()).hexdigest()[:32]
    assert provenance_key({"backend": "x", "model": "y"}) == ""


def test_the_seed_is_in_the_cell_identity(tmp_path: Path) -> None:
    cfg = _config(tmp_path, limit=2)
    Experiment(ExperimentConfig.from_yaml(cfg)).run()
    other = ExperimentConfig.from_yaml(cfg).with_updates(seed=1)
    with pytest.raises(ConfigError, match=r"NaiveJudge/J_scripted-coin \(differs in: seed\)"):
        Experiment(other).run()


def test_a_cache_scope_makes_fresh_calls_and_is_a_changed_cell(tmp_path: Path) -> None:
    cfg = _config(tmp_path, limit=3)
    r = runner.invoke(app, ["run", str(cfg), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["usage"]["calls"] == 3
    r = runner.invoke(app, ["run", str(cfg), "--json", "--out", str(tmp_path / "again")])
    assert json.loads(r.stdout)["usage"]["calls"] == 0  # every answer from the cache
    # a scope in the same folder would mix fresh and cached answers: refused, naming it
    r = runner.invoke(app, ["run", str(cfg), "--cache-scope", "retry-1"])
    assert isinstance(r.exception, ConfigError) and "(differs in: cache_scope)" in str(r.exception)
    r = runner.invoke(app, ["run", str(cfg), "--json", "--cache-scope", "retry-1", "--new"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["run_dir"] == str(tmp_path / "out_2") and out["usage"]["calls"] == 3
    assert out["usage"]["cache_hits"] == 0
    # the scope is the config's key too, and the scope's entries are reused by the next run in it
    cfg2 = _config(tmp_path, limit=3, cache_scope="retry-1", out=str(tmp_path / "scoped"))
    r = runner.invoke(app, ["run", str(cfg2), "--json"])
    assert json.loads(r.stdout)["usage"] == {**json.loads(r.stdout)["usage"], "calls": 0, "cache_hits": 3}
    # show --prompts rebuilds the scoped run's prompts from its own cache entries
    r = runner.invoke(app, ["show", str(tmp_path / "scoped"), "arithmetic-0-0"])
    assert r.exit_code == 0 and "request 1: judge scripted:coin" in r.output, r.output


def test_a_large_file_is_hashed_once_and_again_when_it_changes(tmp_path: Path) -> None:
    big = tmp_path / "model.gguf"
    big.write_bytes(b"x" * (1 << 20))
    truth = hashlib.sha256(b"x" * (1 << 20)).hexdigest()
    assert file_digest(big) == truth
    memo_path = Path(os.environ["SEERBENCH_CACHE_DIR"]) / "file_hashes.json"
    memo = json.loads(memo_path.read_text())
    st = big.stat()
    assert memo[str(big.resolve())] == [st.st_size, st.st_mtime_ns, truth]
    # the memo answers while path, size and mtime stay: a planted value shows it was read
    memo[str(big.resolve())][2] = "planted"
    memo_path.write_text(json.dumps(memo))
    assert file_digest(big) == "planted"
    # a rewritten file (new mtime) is hashed again
    big.write_bytes(b"y" * (1 << 20))
    os.utime(big, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert file_digest(big) == hashlib.sha256(b"y" * (1 << 20)).hexdigest()
    memo_path.write_text("not json")  # a damaged memo is only a memo
    assert file_digest(big) == hashlib.sha256(b"y" * (1 << 20)).hexdigest()


def test_the_import_closure_stays_in_the_users_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tag = tmp_path.name.replace("-", "_")
    pkg = tmp_path / f"pkg_{tag}"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "helper.py").write_text("K = 1\n")
    (pkg / "unused.py").write_text("U = 1\n")
    (pkg / "lazy.py").write_text("L = 1\n")
    (pkg / "judge.py").write_text(
        "import json\nimport yaml\nfrom seerbench import Verdict\nfrom .sub.helper import K\n\n"
        "class J:\n    def go(self):\n        from . import lazy\n        return lazy.L\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    _forget(tmp_path)
    import importlib

    mod = importlib.import_module(f"pkg_{tag}.judge")
    files = code_files(mod.J)
    # its module, the helper it imports, the one it imports lazily and the packages' __init__.py
    # that importing them runs; not unused.py, json, yaml or seerbench
    assert set(files) == {
        f"pkg_{tag}/{f}" for f in ("judge.py", "sub/helper.py", "lazy.py", "__init__.py", "sub/__init__.py")
    }
    assert files[f"pkg_{tag}/sub/helper.py"] == hashlib.sha256(b"K = 1\n").hexdigest()[:16]
    assert code_files(Experiment) == {}  # seerbench's own code is recorded by its version


def test_a_run_records_python_packages_and_the_git_revision(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], capture_output=True, text=True, check=True
        ).stdout.strip()

    git("init", "-q")
    cfg = _config(tmp_path, limit=1)
    git("add", "xp.yaml")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    Experiment(ExperimentConfig.from_yaml(cfg)).run()
    env = json.loads((tmp_path / "out" / "experiment.json").read_text())["environment"]
    import seerbench

    assert env["packages"]["seerbench"] == seerbench.__version__
    assert env["python"].endswith(".".join(map(str, sys.version_info[:3])))
    assert env["git"] == [{"repo": str(tmp_path.resolve()), "rev": git("rev-parse", "HEAD"), "dirty": False}]
    here = Path(seerbench.__file__).resolve().parent  # seerbench's own checkout (editable here)
    head = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True)
    if "site-packages" not in here.parts and head.returncode == 0:
        assert env["seerbench_git"]["rev"] == head.stdout.strip()
    else:
        assert "seerbench_git" not in env
    lines = environment_lines(env)
    r = runner.invoke(app, ["show", str(tmp_path / "out"), "arithmetic-0-0", "--no-prompts"])
    assert r.exit_code == 0 and lines[0] in r.output and f"@ {git('rev-parse', 'HEAD')[:12]}" in r.output
    cfg.write_text(cfg.read_text() + "# edited\n")  # a tracked file changed: dirty
    Experiment(ExperimentConfig.from_yaml(cfg)).run()
    env = json.loads((tmp_path / "out" / "experiment.json").read_text())["environment"]
    assert env["git"][0]["dirty"] is True
    r = runner.invoke(app, ["report", str(tmp_path / "out"), "--out", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output
    assert "(dirty)" in (tmp_path / "r.html").read_text()
    # the installed package holding the user's code is recorded with its version (yaml: PyYAML)
    assert environment(code_modules=["yaml"])["packages"]["PyYAML"] == importlib_version("PyYAML")


def test_a_run_records_the_model_a_server_reported(tmp_path: Path) -> None:
    from seerbench.testing.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer(reply="A", api_key=None) as srv:
        spec = f"openai/fake-model@{srv.base_url}"
        cfg = _config(tmp_path, limit=2, judge_models=[spec])
        Experiment(ExperimentConfig.from_yaml(cfg)).run()
        assert srv.request_count == 2
    env = json.loads((tmp_path / "out" / "experiment.json").read_text())["environment"]
    assert env["served_models"] == {spec: ["fake-model"]}  # what the fake server puts in "model"
    assert env["packages"]["aiohttp"] == importlib_version("aiohttp")
    assert f"served {spec}: fake-model" in environment_lines(env)


def test_a_ray_worker_uses_the_drivers_cache_scope(tmp_path: Path) -> None:
    """run_shard is the body of a Ray task; run here in-process, it builds the experiment from the
    config as a worker does, so the scope must come from that config."""
    from seerbench.experiment._executor import LineFormat
    from seerbench.experiment._ray import _Setup, run_shard

    def shard(scope: str | None, token: str) -> dict[str, int]:
        cfg = ExperimentConfig.from_yaml(_config(tmp_path, limit=2, cache_scope=scope))
        exp = Experiment(cfg)
        spec = exp.check()[0]
        setup = _Setup(token, cfg.model_dump(mode="json"), str(tmp_path), None)
        fmt = LineFormat({"cell": spec.key}, {}, cfg.eps, cfg.parse_failures)
        res = run_shard(setup, spec, list(exp.questions()[:2]), fmt)
        assert len(res.lines) == 2 and not res.errors
        return res.usage["scripted:coin"]

    assert (shard(None, "a")["calls"], shard(None, "b")["cache_hits"]) == (2, 2)
    scoped = shard("w", "c")
    assert (scoped["calls"], scoped["cache_hits"]) == (2, 0)  # the worker's keys hold the scope
    assert shard("w", "d")["cache_hits"] == 2


def test_a_folder_written_without_provenance_is_refused_saying_so(tmp_path: Path) -> None:
    """A cell.json of seerbench before provenance holds no `models`: which model file or backend
    code made its answers is unknown, so adding to it is refused rather than assumed the same."""
    cfg = _config(tmp_path, limit=1)
    Experiment(ExperimentConfig.from_yaml(cfg)).run()
    cj = tmp_path / "out" / "NaiveJudge" / "J_scripted-coin" / "cell.json"
    rec = json.loads(cj.read_text())
    del rec["identity"]["models"]
    rec["fingerprint"] = "written-by-0.1"
    cj.write_text(json.dumps(rec))
    with pytest.raises(ConfigError, match=r"differs in: model scripted:coin \(no provenance recorded\)"):
        Experiment(ExperimentConfig.from_yaml(cfg).with_updates(limit=2)).run()
