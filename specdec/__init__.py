"""specdec: exact speculative decoding you can watch, measure and trust."""
from .engine.compare import compare, summarize
from .engine.config import Sampling, Speculation
from .engine.decoding import speculative_decode, standard_decode
from .engine.drafters import DRAFTERS, Draft, ModelDrafter, PromptLookupDrafter, make_drafter
from .engine.events import ACCEPTED, BONUS, CORRECTED, PLAIN, RoundEvent, TokenEvent
from .engine.kvcache import CachedModel, UnsupportedModel
from .engine.loaded import Loaded, TokenizerMismatch, check_tokenizers
from .engine.pair import Pair, Request
from .models.loading import load_model

__all__ = [
    "ACCEPTED", "BONUS", "CORRECTED", "DRAFTERS", "PLAIN", "CachedModel", "Draft", "Loaded", "ModelDrafter", "Pair",
    "PromptLookupDrafter", "Request", "RoundEvent", "Sampling", "Speculation", "TokenEvent", "TokenizerMismatch",
    "UnsupportedModel", "check_tokenizers", "compare", "load_model", "make_drafter", "speculative_decode",
    "standard_decode", "summarize",
]
