"""Oversight protocols, one small module each. A protocol produces transcripts and asks the judge;
it never scores (that is :mod:`seerbench.metrics`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from seerbench.plugins import Registry
from seerbench.protocols._base import (
    CaseRun,
    OversightProtocol,
    Protocol,
    QuestionRun,
    stable_coin,
    swap_options,
)
from seerbench.protocols._consultancy import Consultancy, OpenConsultancy, RandomConsultancy
from seerbench.protocols._critique import CritiqueJudge
from seerbench.protocols._debate import CONDITIONS, EvidenceDebate, SequentialDebate, SimultaneousDebate
from seerbench.protocols._simple import BlindTrust, NaiveJudge

P = TypeVar("P", bound=OversightProtocol)

PROTOCOLS: Registry[type[OversightProtocol]] = Registry(
    "protocol",
    {
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
            CritiqueJudge,
        )
    },
)


def register_protocol(name: str | None = None, *, replace: bool = False) -> Callable[[type[P]], type[P]]:
    """Class decorator: make an :class:`OversightProtocol` subclass usable by name in configs
    (``protocols: [MyProtocol]``). ``name`` defaults to the class's ``name`` attribute, else its
    class name, and becomes its ``name``."""

    def deco(cls: type[P]) -> type[P]:
        if not (isinstance(cls, type) and issubclass(cls, OversightProtocol)):
            raise TypeError(f"register_protocol: {cls!r} is not a subclass of OversightProtocol")
        key = name or cls.__dict__.get("name") or cls.__name__
        PROTOCOLS.add(key, cls, replace=replace)  # first: a refused class keeps its name
        cls.name = key
        return cls

    return deco


def get_protocol(name: str) -> type[OversightProtocol]:
    """The protocol class registered under ``name``; the error lists the known ones."""
    return PROTOCOLS.lookup(name)


__all__ = [
    "CONDITIONS",
    "PROTOCOLS",
    "BlindTrust",
    "CaseRun",
    "Consultancy",
    "CritiqueJudge",
    "EvidenceDebate",
    "NaiveJudge",
    "OpenConsultancy",
    "OversightProtocol",
    "Protocol",
    "QuestionRun",
    "RandomConsultancy",
    "SequentialDebate",
    "SimultaneousDebate",
    "get_protocol",
    "register_protocol",
    "stable_coin",
    "swap_options",
]
