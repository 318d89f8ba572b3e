"""specdec: exact speculative decoding you can watch, measure and trust.

What a user needs is here (`__all__`); the rest of the engine (drafters, caches, the decoding loops,
the accept rule, the statistics) is importable from specdec.engine. The older top-level names below
`__all__` stay importable for code written against them."""
from .comparison import compare
from .engine.config import Sampling, Speculation, TreeShape
from .engine.events import RoundEvent, TokenEvent, TreeRound
from .engine.pair import Pair, Request
from .models.loading import load_model

__all__ = ["Pair", "Request", "RoundEvent", "Sampling", "Speculation", "TokenEvent", "TreeRound", "TreeShape",
           "compare", "load_model"]

# Kept for code written before __all__ was narrowed; new code imports these from specdec.engine.
from .engine import (  # noqa: E402,F401
    ACCEPTED, BONUS, CORRECTED, DRAFTERS, PLAIN, CachedModel, Draft, Loaded, ModelDrafter, PromptLookupDrafter,
    TokenizerMismatch, UnsupportedModel, check_tokenizers, make_drafter, speculative_decode, standard_decode,
    summarize)
