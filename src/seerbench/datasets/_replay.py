"""Replay agent: returns the human-written argument for the assigned option, so protocols and
judges can run on real human persuasion (seed 004's single_turn_debate data)."""

from __future__ import annotations

from collections.abc import Sequence

from seerbench.errors import DataError
from seerbench.quotes import check_quotes, verify_quote
from seerbench.types import Question, Turn

__all__ = ["ReplayAgent", "verify_quote"]  # verify_quote lives in seerbench.quotes


class ReplayAgent:
    """An agent that argues by replaying the human-written argument stored on the question.

    ``await agent(question, answer_case, visible, context)`` returns one :class:`Turn` whose
    content is the option's ``argument`` verbatim, followed (when ``show_snippets``) by its quoted
    snippets numbered ``#1..`` as the writers cited them; the snippets also come as
    :class:`~seerbench.types.Quote` objects checked against ``source_text``
    (:func:`seerbench.quotes.check_quotes`). There is one human argument per
    option, so later turns in a multi-turn protocol repeat it (``metadata['repeat']`` is True).
    """

    name = "replay"

    def __init__(self, *, speaker: str = "replay", show_snippets: bool = True):
        self.speaker = speaker
        self.show_snippets = show_snippets

    async def __call__(
        self, question: Question, answer_case: str, visible: Sequence[Turn], context: object | None = None
    ) -> Turn:
        try:
            case = question.case(answer_case)
        except KeyError as e:
            raise DataError(str(e.args[0])) from e
        if not case.argument:
            raise DataError(
                f"question {question.id!r} has no human-written argument for option {answer_case!r}; "
                "the replay agent needs a dataset with arguments (e.g. single_turn_debate)"
            )
        content = case.argument
        if self.show_snippets and case.quotes:
            cited = "\n".join(f'#{i}: "{s}"' for i, s in enumerate(case.quotes, start=1))
            content = f"{content}\n\nSnippets:\n{cited}"
        # inside a protocol the turns are stamped with the protocol's speaker name (context.speaker)
        speaker = getattr(context, "speaker", None) or self.speaker
        repeat = any(t.speaker in (speaker, self.speaker) and t.answer_case == answer_case for t in visible)
        return Turn(
            role="agent",
            speaker=self.speaker,
            content=content,
            answer_case=answer_case,
            quotes=check_quotes(case.quotes, question.source_text),
            metadata={"replay": True, "argument": case.argument, "repeat": repeat},
        )
