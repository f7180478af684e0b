"""The only place that talks to LLMs: one async interface, several backends, a disk cache, a
concurrency limit, retries, usage accounting, and probability elicitation for judges.

>>> model = get_model("local")                 # embedded SmolLM2-135M-Instruct
>>> out = await model.generate("Hello", max_tokens=16)
"""

from seerbench.models._backend import Backend, RetryableError
from seerbench.models._cache import (
    CACHE_FILE,
    Cache,
    cache_key,
    cache_scope,
    default_cache,
    remove_cache_files,
)
from seerbench.models._model import MessagesLike, Model, to_messages
from seerbench.models._registry import (
    BACKENDS,
    DEFAULT_MODEL,
    SPEC_FORMS,
    BackendInfo,
    check_model_spec,
    get_model,
    list_backends,
    make_backend,
    register_backend,
    spec_forms,
)
from seerbench.models._retry import RetryPolicy
from seerbench.models._scripted import RESPONDERS, ScriptedBackend, register_scripted
from seerbench.models._types import (
    ChatMessage,
    GenerateConfig,
    ModelOutput,
    Sample,
    TokenLogprob,
    TopLogprob,
    Usage,
)
from seerbench.models._usage import (
    USAGE_LOG,
    ModelUsage,
    PriceTable,
    UsageLog,
    UsageTracker,
    default_tracker,
    read_usage,
    unused_prices,
    usage_cell,
    use_prices,
)

__all__ = [
    "BACKENDS",
    "CACHE_FILE",
    "DEFAULT_MODEL",
    "RESPONDERS",
    "SPEC_FORMS",
    "USAGE_LOG",
    "Backend",
    "BackendInfo",
    "Cache",
    "ChatMessage",
    "GenerateConfig",
    "MessagesLike",
    "Model",
    "ModelOutput",
    "ModelUsage",
    "PriceTable",
    "RetryPolicy",
    "RetryableError",
    "Sample",
    "ScriptedBackend",
    "TokenLogprob",
    "TopLogprob",
    "Usage",
    "UsageLog",
    "UsageTracker",
    "cache_key",
    "cache_scope",
    "check_model_spec",
    "default_cache",
    "default_tracker",
    "get_model",
    "list_backends",
    "make_backend",
    "read_usage",
    "register_backend",
    "register_scripted",
    "remove_cache_files",
    "spec_forms",
    "to_messages",
    "unused_prices",
    "usage_cell",
    "use_prices",
]

from seerbench.models._elicit import (
    METHODS,
    ElicitationSpec,
    ElicitConfig,
    Method,
    elicit,
    letter_instruction,
    parse_letter,
    parse_verbalized,
    renormalise,
)

__all__ += [
    "METHODS",
    "ElicitConfig",
    "ElicitationSpec",
    "Method",
    "elicit",
    "letter_instruction",
    "parse_letter",
    "parse_verbalized",
    "renormalise",
]
