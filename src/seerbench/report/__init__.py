"""``seerbench report``: one self-contained HTML file per run (or several runs side by side, or a
human study) with figures drawn by matplotlib as inline SVG and a transcript browser; past
:data:`ONE_FILE_LIMIT` bytes of transcripts, a folder of ``index.html`` and the transcript files it
loads on demand. matplotlib is
one of seerbench's dependencies (it was the ``report`` extra, which is kept, empty).

The numbers are those of ``seerbench stats --json`` (:func:`seerbench.analysis.run.summarize_run`) and
``seerbench study stats --json`` (:func:`seerbench.study.study_stats`); the report only draws them.
"""

from seerbench.report._blocks import script_json
from seerbench.report._browser import CHUNK_DIR, ONE_FILE_LIMIT
from seerbench.report._figures import INSTALL_HINT
from seerbench.report._html import build_report, build_study_report

__all__ = ["CHUNK_DIR", "INSTALL_HINT", "ONE_FILE_LIMIT", "build_report", "build_study_report", "script_json"]
