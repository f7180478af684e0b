"""Test doubles shipped with seerbench, for its own tests and benchmarks and for users testing
code built on it: :class:`FakeOpenAIServer`, a real HTTP server on 127.0.0.1 that speaks the
OpenAI chat-completions wire format (logprobs included) and can be told to fail."""

from seerbench.testing.fake_openai import CONTEXT_EXCEEDED, Failure, FakeOpenAIServer

__all__ = ["CONTEXT_EXCEEDED", "Failure", "FakeOpenAIServer"]
