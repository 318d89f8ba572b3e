"""specdec: exact speculative decoding you can watch, measure and trust."""
from .compare import Pair, Request, compare, summarize
from .config import Sampling, Speculation
from .decoding import speculative_decode, standard_decode
from .drafters import DRAFTERS, Draft, ModelDrafter, PromptLookupDrafter, make_drafter
from .events import ACCEPTED, BONUS, CORRECTED, PLAIN, RoundEvent, TokenEvent
from .kvcache import CachedModel, UnsupportedModel
from .loading import Loaded, TokenizerMismatch, check_tokenizers, load_model

__all__ = [
    "ACCEPTED", "BONUS", "CORRECTED", "DRAFTERS", "PLAIN", "CachedModel", "Draft", "Loaded", "ModelDrafter", "Pair",
    "PromptLookupDrafter", "Request", "RoundEvent", "Sampling", "Speculation", "TokenEvent", "TokenizerMismatch", "UnsupportedModel",
    "check_tokenizers", "compare", "load_model", "make_drafter", "speculative_decode", "standard_decode", "summarize",
]
