"""The algorithm: sampling, the accept rule, KV caches, drafters, the decoding loops and their
statistics. It imports torch and transformers, never gradio, plotly, the playground or the bench."""
from .config import Sampling, Speculation, TreeShape  # noqa: E402
from .decoding import speculative_decode, standard_decode  # noqa: E402
from .drafters import DRAFTERS, Draft, ModelDrafter, PromptLookupDrafter, make_drafter  # noqa: E402
from .events import ACCEPTED, BONUS, CORRECTED, PLAIN, RoundEvent, TokenEvent, TreeRound  # noqa: E402
from .kvcache import CachedModel, UnsupportedModel  # noqa: E402
from .loaded import Loaded, TokenizerMismatch, check_tokenizers  # noqa: E402
from .pair import Pair, Request  # noqa: E402
from .run_stats import RunStats, Verdict, summarize  # noqa: E402
from .verdicts import Divergence  # noqa: E402

__all__ = ["ACCEPTED", "BONUS", "CORRECTED", "DRAFTERS", "PLAIN", "CachedModel", "Divergence", "Draft", "Loaded",
           "ModelDrafter", "Pair", "PromptLookupDrafter", "Request", "RoundEvent", "RunStats", "Sampling",
           "Speculation", "TokenEvent", "TokenizerMismatch", "TreeRound", "TreeShape", "UnsupportedModel", "Verdict",
           "check_tokenizers", "make_drafter", "speculative_decode", "standard_decode", "summarize"]
