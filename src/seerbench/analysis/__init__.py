"""Statistics over per-question values: means, standard errors, seeded bootstrap CIs, paired
differences. Pure functions; no I/O."""

from seerbench.analysis._summary import Summary, paired_difference, summarize, summarize_many

__all__ = ["Summary", "paired_difference", "summarize", "summarize_many"]
