"""Oversight protocols, one small module each. A protocol produces transcripts and asks the judge;
it never scores (that is :mod:`seerbench.metrics`)."""

from __future__ import annotations

from seerbench.errors import ConfigError
from seerbench.protocols._base import CaseRun, Protocol, QuestionRun, stable_coin, swap_options
from seerbench.protocols._consultancy import Consultancy, OpenConsultancy, RandomConsultancy
from seerbench.protocols._debate import CONDITIONS, EvidenceDebate, SequentialDebate, SimultaneousDebate
from seerbench.protocols._simple import BlindTrust, NaiveJudge

PROTOCOLS: dict[str, type[Protocol]] = {
    p.name: p
    for p in (
        NaiveJudge,
        BlindTrust,
        Consultancy,
        RandomConsultancy,
        OpenConsultancy,
        SimultaneousDebate,
        SequentialDebate,
        EvidenceDebate,
    )
}


def get_protocol(name: str) -> type[Protocol]:
    """The protocol class registered under ``name``; the error lists the known ones."""
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ConfigError(f"unknown protocol {name!r}; known protocols: {', '.join(PROTOCOLS)}") from None


__all__ = [
    "CONDITIONS",
    "PROTOCOLS",
    "BlindTrust",
    "CaseRun",
    "Consultancy",
    "EvidenceDebate",
    "NaiveJudge",
    "OpenConsultancy",
    "Protocol",
    "QuestionRun",
    "RandomConsultancy",
    "SequentialDebate",
    "SimultaneousDebate",
    "get_protocol",
    "stable_coin",
    "swap_options",
]
