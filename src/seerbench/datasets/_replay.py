"""Replay agent: returns the human-written argument for the assigned option, so protocols and
judges can run on real human persuasion (seed 004's single_turn_debate data)."""

from __future__ import annotations

from collections.abc import Sequence

from seerbench.errors import DataError
from seerbench.types import Question, Quote, Turn


def verify_quote(quote: str, source_text: str | None) -> bool | None:
    """True if ``quote`` occurs verbatim in ``source_text``; None when there is no source.

    Whitespace runs are compared as single spaces, because HTML stripping and line wrapping
    change spacing but not the words a writer selected."""
    if source_text is None:
        return None
    if quote in source_text:
        return True
    return " ".join(quote.split()) in " ".join(source_text.split())


class ReplayAgent:
    """An agent that argues by replaying the human-written argument stored on the question.

    ``await agent(question, answer_case, visible, context)`` returns one :class:`Turn` whose
    content is the option's ``argument`` verbatim, followed (when ``show_snippets``) by its quoted
    snippets numbered ``#1..`` as the writers cited them; the snippets also come as
    :class:`Quote` objects checked against ``source_text``. There is one human argument per
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
            quotes=[Quote(text=s, verified=verify_quote(s, question.source_text)) for s in case.quotes],
            metadata={"replay": True, "argument": case.argument, "repeat": repeat},
        )
