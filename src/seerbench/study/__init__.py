"""Human judging studies: a web app for rater experiments whose judgments feed the same metrics as
model judges (human verdicts are :class:`~seerbench.types.Verdict` objects with ``method='human'``).

Typical use::

    from seerbench.study import create_study, create_app, export_rows, study_stats
    store = create_study("study.yaml", "study.sqlite")
    app = create_app(store)                 # serve with uvicorn
    stats = study_stats(export_rows(store))  # accuracy, ASD, reliance via seerbench.metrics

Task types follow the seeds: two-option judging with timers (004), factuality rating with
assistance (000), expert yes/no routing (001), and critique writing with model critiques as
assistance and the validation of critiques (002). See ``docs/study.md``.
"""

from __future__ import annotations

from pathlib import Path

from seerbench.study._critique_results import merge_validations
from seerbench.study._items import StudyItem, build_catch_trials, load_items
from seerbench.study._manifest import Condition, StudyManifest, load_manifest
from seerbench.study._results import (
    EXPORT_FIELDS,
    export_rows,
    judgment_question,
    judgment_verdict,
    load_human_rows,
    read_export,
    store_stats,
    study_stats,
    write_export,
)
from seerbench.study._server import app_from_env, create_app, invite_link
from seerbench.study._storage import Assignment, StudyStore, database_url

__all__ = [
    "EXPORT_FIELDS",
    "Assignment",
    "Condition",
    "StudyItem",
    "StudyManifest",
    "StudyStore",
    "app_from_env",
    "build_catch_trials",
    "create_app",
    "create_study",
    "database_url",
    "export_rows",
    "invite_link",
    "judgment_question",
    "judgment_verdict",
    "load_human_rows",
    "load_items",
    "load_manifest",
    "merge_validations",
    "read_export",
    "store_stats",
    "study_stats",
    "write_export",
]


def create_study(
    manifest: str | Path | StudyManifest, db: str | Path, *, base_dir: str | Path | None = None
) -> StudyStore:
    """Validate a manifest, load its items (paths relative to the manifest's folder) and create the
    study in the empty database ``db`` (a SQLite path or a database URL)."""
    if isinstance(manifest, StudyManifest):
        m = manifest
        base = Path(base_dir or ".")
    else:
        m = load_manifest(manifest)
        base = Path(base_dir) if base_dir is not None else Path(manifest).parent
    return StudyStore.create(m, load_items(m, base), db)
