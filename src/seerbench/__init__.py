"""seerbench: measure scalable-oversight protocols (debate, consultancy, judges) by agent score
difference and judge accuracy, with human studies and complementary-label estimators."""

from seerbench.types import AnswerCase, Question, Quote, Transcript, Turn, Verdict

__version__ = "0.1.0"

__all__ = ["AnswerCase", "Question", "Quote", "Transcript", "Turn", "Verdict", "__version__"]
