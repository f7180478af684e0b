"""``seerbench report``: one self-contained HTML file per run (or several runs side by side, or a
human study) with figures drawn by matplotlib as inline SVG and a transcript browser. Needs the
``report`` extra (``pip install 'seerbench[report]'``).

The numbers are those of ``seerbench stats --json`` (:func:`seerbench.analysis.run.summarize_run`) and
``seerbench study stats --json`` (:func:`seerbench.study.study_stats`); the report only draws them.
"""

from seerbench.report._blocks import script_json
from seerbench.report._figures import INSTALL_HINT
from seerbench.report._html import build_report, build_study_report

__all__ = ["INSTALL_HINT", "build_report", "build_study_report", "script_json"]
