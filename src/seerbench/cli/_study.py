"""``seerbench study``: create, serve, export and score human judging studies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.table import Table

from seerbench._format import bounds, num
from seerbench.cli._app import app
from seerbench.cli._common import console, plural, print_json
from seerbench.errors import ConfigError

study_app = typer.Typer(
    help="Human judging studies: a web app for rater experiments (seeds 000, 001, 002, 004).",
    no_args_is_help=True,
)
app.add_typer(study_app, name="study")

_DB_HELP = "Study database: a SQLite file path or a database URL (postgresql://...)."


@study_app.command("create")
def create(
    manifest: Path = typer.Argument(..., help="Study manifest (YAML); see docs/study.md."),
    db: str = typer.Option(..., "--db", help=_DB_HELP),
) -> None:
    """Validate MANIFEST, load its items and create the study in a new database."""
    from seerbench.study import create_study

    store = create_study(manifest, db)
    try:
        prog = store.progress()
        m = store.manifest
        console.print(f"created study [bold]{m.name}[/] ({m.task}) in {db}")
        for name, c in prog["conditions"].items():
            console.print(f"  condition {name}: {c['total']} ratings to collect")
        for note in store.notes():
            console.print(f"note: {note}", markup=False, soft_wrap=True)
        console.print(f"next: seerbench study serve --db {db}")
    finally:
        store.close()


@study_app.command("serve")
def serve(
    db: str = typer.Option(..., "--db", help=_DB_HELP),
    host: str = typer.Option("127.0.0.1", help="Interface to listen on (0.0.0.0 for all)."),
    port: int = typer.Option(8000, help="Port to listen on."),
    public_url: str | None = typer.Option(
        None, help="The address raters use, if not http://HOST:PORT (e.g. behind a proxy)."
    ),
    invites: int = typer.Option(0, help="Also print this many signed invitation links."),
) -> None:
    """Serve the study; prints the rater link (Prolific-style) and the admin link with its token."""
    import uvicorn

    from seerbench.study import StudyStore, create_app, invite_link

    store = StudyStore(db)
    _check_port(host, port)
    base = (public_url or f"http://{host}:{port}").rstrip("/")
    application = create_app(store, base_url=base)
    console.print(f"study [bold]{store.manifest.name}[/] on {base}")
    console.print(
        "rater link (Prolific): "
        f"{base}/start?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}&SESSION_ID={{{{%SESSION_ID%}}}}",
        markup=False,
        soft_wrap=True,
    )
    if store.manifest.allow_anonymous:
        console.print(f"open link: {base}/start", markup=False, soft_wrap=True)
    for i in range(invites):
        console.print(
            f"invitation {i + 1}: {invite_link(store, f'rater-{i + 1}', base)}", markup=False, soft_wrap=True
        )
    # the token is not put in a URL: URLs land in access logs, browser history and referrers
    console.print(f"admin: {base}/admin  (token: {store.admin_token})", markup=False, soft_wrap=True)
    uvicorn.run(application, host=host, port=port, log_level="warning")


def _check_port(host: str, port: int) -> None:
    """Refuse a port that is taken before printing any link (uvicorn would fail after them)."""
    import errno
    import socket

    if not 1 <= port <= 65535:
        raise ConfigError(f"--port {port} is not a port; give one from 1 to 65535 (e.g. 8000)")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise ConfigError(
            f"cannot listen on {host}: {e}; give an address such as 127.0.0.1 or 0.0.0.0"
        ) from None
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as e:
            hint = (
                "another program uses the port: stop it or choose another with --port"
                if e.errno == errno.EADDRINUSE
                else "choose another --port (below 1024 needs root) or --host"
            )
            raise ConfigError(f"cannot listen on {host}:{port} ({e.strerror or e}); {hint}") from None


@study_app.command("invite")
def invite(
    labels: list[str] | None = typer.Argument(
        None, metavar="LABELS", help="One label per rater (e.g. a participant number)."
    ),
    db: str = typer.Option(..., "--db", help=_DB_HELP),
    public_url: str = typer.Option(
        "http://127.0.0.1:8000",
        "--public-url",
        "--base-url",
        help="The address raters use: serve's --public-url, or http://HOST:PORT.",
    ),
) -> None:
    """Print a signed invitation link for each LABEL (one line each: label, tab, link)."""
    from seerbench.study import StudyStore, invite_link

    if not labels:
        raise ConfigError("give one LABEL per rater to invite, e.g. `seerbench study invite r01 r02 --db DB`")
    store = StudyStore(db)
    for label in labels:
        print(f"{label}\t{invite_link(store, label, public_url.rstrip('/'))}")


_VALIDATION_HELP = (
    "Critique studies: the validation study of this one (its database, or its export .jsonl/.csv); "
    "fills the critiques' valid / covers_intended."
)


def _rows(store: Any, validation: str | None) -> list[dict[str, Any]]:
    """The study's export rows, with a validation study's marks merged in (critique studies)."""
    from seerbench.study import StudyStore, export_rows, merge_validations, read_export

    rows = export_rows(store)
    if validation is None:
        return rows
    if store.manifest.task != "critique":
        raise ConfigError(f"--validation is for critique studies; this study's task is {store.manifest.task}")
    if Path(validation).suffix in (".jsonl", ".csv"):
        marks = read_export(validation)
    else:
        vstore = StudyStore(validation)
        if vstore.manifest.task != "validation":
            raise ConfigError(
                f"--validation {validation}: not a validation study (task {vstore.manifest.task})"
            )
        marks = export_rows(vstore)
    return merge_validations(rows, marks)


@study_app.command("export")
def export(
    out: Path = typer.Argument(..., help="Output file: .csv or .jsonl."),
    db: str = typer.Option(..., "--db", help=_DB_HELP),
    validation: str | None = typer.Option(None, "--validation", help=_VALIDATION_HELP),
) -> None:
    """Write one row per judgment (catch trials flagged) with timestamps, answer and timing;
    critique studies: one row per critique."""
    from seerbench.study import StudyStore, write_export

    store = StudyStore(db)
    rows = _rows(store, validation)
    write_export(rows, out)
    unit = "rows (one per critique)" if store.manifest.task in ("critique", "validation") else None
    console.print(
        f"wrote {plural(len(rows), 'judgment') if unit is None else f'{len(rows)} {unit}'} to {out}"
    )


@study_app.command("stats")
def stats(
    db: str = typer.Option(..., "--db", help=_DB_HELP),
    timeout_policy: str = typer.Option("wrong", help="A timed-out judgment counts as: wrong, half, exclude."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    validation: str | None = typer.Option(None, "--validation", help=_VALIDATION_HELP),
) -> None:
    """Accuracy (bootstrap CI), vote accuracy, ASD and reliance per condition, via seerbench.metrics;
    critique studies: seed 002's measures per condition and assist-minus-no-assist differences."""
    from seerbench.study import StudyStore, store_stats

    store = StudyStore(db)
    result = store_stats(store, _rows(store, validation), timeout_policy=timeout_policy)  # type: ignore[arg-type]
    result["progress"] = store.progress()
    if as_json:
        print_json(json.loads(json.dumps(result, default=str)))  # dates and the like as text
        return
    if not result["progress"]["judgments"]:  # no task of any kind submitted
        todo = sum(c["total"] for c in result["progress"]["conditions"].values())
        console.print(
            f"study {store.manifest.name}: nothing submitted yet ({plural(todo, 'rating')} to collect); "
            f"serve it with `seerbench study serve --db {db}`",
            markup=False,
            soft_wrap=True,
        )
        return
    if store.manifest.task == "critique":
        _print_critique_stats(store.manifest.name, result)
        return
    # fits 80 columns: no vertical rules, one space between columns, the CI on one line
    t = Table(
        title=f"study {store.manifest.name}: judgments (catch trials excluded)",
        box=box.SIMPLE_HEAD,
        padding=(0, 1, 0, 0),
        show_edge=False,
    )
    for col in ("condition", "n", "accuracy", "95% CI", "majority", "timeouts", "median s", "ASD log"):
        t.add_column(col, no_wrap=True)
    for name, c in result["conditions"].items():
        acc = c["accuracy"]
        asd = c.get("asd", {}).get("log", {}).get("mean")
        t.add_row(
            name,
            str(c["judgments"]),
            num(acc.get("mean")),
            bounds(acc),
            num(c["vote"]["majority"]),
            str(c["timed_out"]),
            num(c["median_seconds"]),
            num(asd),
        )
    console.print(t)
    catch = result["catch"]
    console.print(f"catch trials: {catch['judgments']} (accuracy {num(catch['accuracy'].get('mean'))})")


_CRITIQUE_COLUMNS = (
    ("critiques_per_answer", "critiques/answer"),
    ("any_critique", ">=1 critique"),
    ("likert", "Likert"),
    ("used_edited", "used edited"),
    ("seconds", "seconds"),
    ("intended_flaw_found", "flaw found"),
    ("valid_share", "valid share"),
    ("valid_per_answer", "valid/answer"),
    ("valid_novel_per_answer", "novel valid/answer"),
)


def _critique_measures(result: dict[str, Any], c: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, value) of one condition's (or difference's) measures, critiques per answer by
    severity and by category among them."""
    out = []
    for k, h in _CRITIQUE_COLUMNS:
        if result["validated"] or k not in _VALIDATED:
            out.append((h, c.get(k) or {}))
        if k == "critiques_per_answer":
            for sub in ("by_severity", "by_category"):
                out.extend((f"  {level}", x) for level, x in (c.get(sub) or {}).items())
    return out


def _print_critique_stats(name: str, result: dict[str, Any]) -> None:
    """Long tables: one row per (condition, measure) and per (answer kind, measure)."""
    t = Table(title=f"critique study {name}: per condition (95% cluster-bootstrap CIs)")
    for col in ("condition", "tasks", "measure", "mean", "95% CI"):
        t.add_column(col)
    for cond, c in result["conditions"].items():
        for n, (h, x) in enumerate(_critique_measures(result, c)):
            t.add_row(
                cond if n == 0 else "", str(c["tasks"]) if n == 0 else "", h, num(x.get("mean")), bounds(x)
            )
    console.print(t)
    d = Table(title="assist minus no assist (paired by answer and rater through the cluster bootstrap)")
    for col in ("answers", "measure", "difference", "95% CI"):
        d.add_column(col)
    for label, x in result["differences"].items():
        for n, (h, v) in enumerate(_critique_measures(result, x)):
            d.add_row(
                f"{label} ({x['assist']} - {x['no_assist']})" if n == 0 else "",
                h,
                num(v.get("mean")),
                bounds(v),
            )
    console.print(d)
    if not result["validated"]:
        console.print("no validations merged: pass --validation for the flaw-found and validity measures")


_VALIDATED = {"intended_flaw_found", "valid_share", "valid_per_answer", "valid_novel_per_answer"}
