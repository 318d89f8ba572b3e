"""Staged drafting: the draft model checks cheap guesses of its own next tokens in the pass that
drafts the next one (Spector and Re 2023, staged speculative decoding; Chen et al. 2023, Cascade
Speculative Drafting, whose lowest stage is a statistical model of the text, as token recycling's
table is here).

Why. A draft model decodes one token per pass, and on a CPU a pass is a read of its weights, so a
pass over 1 + m tokens costs little more than one over 1 (the int8 Qwen2.5-Coder-0.5B on 2 EPYC
cores: 18.6 ms for 1 token, 24.9 for 4, 30.0 for 8;
docs/bench-auto/draft_pass_widths.py). Each pass therefore reads the draft's next
position and m guesses g_1..g_m of the tokens after it: where the draft's own token at position i
is g_i, the row at position i + 1 was read on the draft's own path and gives its next token too. A
pass yields 1 + j tokens, j the number of leading guesses the draft agreed with, for the price of
one wider pass.

Exactness. The drafted tokens are the draft's own: row i is the draft's distribution given the
prefix it fed, and it is used only while that prefix is the one the draft chose (each guess before
it equal to the draft's token there). Greedy, the token is that row's argmax; sampled, a draw from
that row's q with one uniform per token, the same stream as one-token passes. The draft, its q and
its confidences are those of unstaged drafting, up to the float rounding of a wider pass (and an
int8 draft's activation scale, which follows the batch), and the target verifies them by the same
rule whatever they are.

The guesses (Guesser). What followed the last n-gram where it occurred before (prompt lookup,
n >= 2); else the chain of the recycling table's top candidates, the target's next tokens as last
seen after each token (drafters/recycling.py: the draft agrees with the target most of the time, so
the target's habits are good guesses of the draft's); else what followed the last token's latest
occurrence.

How many (GuessBudget). With beta_j the share of guesses at position j the draft took, given it took
those before, a pass with m guesses yields E(m) = 1 + sum_{i<=m} prod_{j<=i} beta_j tokens in t(1 + m)
seconds; m maximises E(m) / t(1 + m). Both are measured as the draft drafts (decayed), beta shrunk
towards BETA_PRIOR and started afresh each request (the agreement is the text's; the pass times, the
device's, carry over where one drafter serves several requests: Pair makes a drafter per request, so
there the first two passes of each time a one-token and a widest pass), so a text whose guesses miss
stops paying for them within a few passes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..policy import Decayed, interpolate
from .lookup import PromptLookupDrafter

if TYPE_CHECKING:
    from .recycling import AdjacencyTable

MAX_GUESSES = 6  # the most guesses a pass reads: past ~6 the pass's cost grows faster than what they yield
BETA_PRIOR = (0.5, 2.0)  # (mean, observations) each position's agreement is shrunk towards


class Guesser:
    """Up to m tokens that may follow ids, from the context, else the recycling table (module docstring)."""

    def __init__(self, matcher: PromptLookupDrafter | None = None, table: "AdjacencyTable | None" = None):
        self.matcher = matcher or PromptLookupDrafter()
        self.table = table

    def guess(self, ids: list[int], m: int) -> list[int]:
        if m <= 0:
            return []
        found = self.matcher.latest(ids)  # (where its continuation starts, n)
        context = [] if found is None else ids[found[0]: found[0] + m]
        if found is not None and (found[1] >= 2 or self.table is None):
            return context
        return self._table_chain(ids, m) or context

    def _table_chain(self, ids: list[int], m: int) -> list[int]:
        """The table's top candidate after the last token (read after the one before it), then
        after that candidate, and so on."""
        chain: list[int] = []
        if self.table is None:
            return chain
        previous, token = (ids[-2] if len(ids) > 1 else -1), ids[-1]
        while len(chain) < m:
            children = self.table.children(token, 1, previous)
            if not children:
                break
            previous, token = token, children[0]
            chain.append(token)
        return chain


class GuessBudget:
    """How many guesses a draft pass reads: the m with the most tokens per second of draft passes,
    from this request's measured agreement by position and pass seconds by width (module docstring)."""

    def __init__(self, max_guesses: int = MAX_GUESSES, decay: float = 0.9):
        self.max_guesses = max_guesses
        self.kept = [Decayed(decay) for _ in range(max_guesses)]  # per position: share of tested guesses taken
        self.seconds: dict[int, Decayed] = {}  # width of the pass -> seconds
        self.decay = decay

    def start_request(self) -> None:
        """A new text: agreement starts again from the prior; pass times are the device's and stay."""
        self.kept = [Decayed(self.decay) for _ in range(self.max_guesses)]

    def beta(self, position: int) -> float:
        kept = self.kept[position - 1]
        mean, weight = BETA_PRIOR
        return (kept.total + mean * weight) / (kept.weight + weight)

    def choose(self, room: int, pending: int = 1) -> int:
        """m for the next pass, at most room (the draft's tokens left to k, less the pass's own), for a
        pass that reads `pending` tokens anyway (the last drafted one; a round's first pass, the
        committed tokens the draft has not read)."""
        room = min(room, self.max_guesses)
        known = sorted((w, d.mean) for w, d in self.seconds.items() if d.mean is not None)
        # Time the narrowest pass, then the widest, before judging: between them the cost is read
        # off the line joining the widths timed (interpolate).
        if not any(w <= pending for w, _ in known):
            return 0
        if not any(w > pending for w, _ in known):
            return room
        best_m, best_rate, expected, reach = 0, 0.0, 1.0, 1.0
        for m in range(room + 1):
            if m:
                reach *= self.beta(m)
                expected += reach
            rate = expected / interpolate(known, pending + m)
            if rate > best_rate:
                best_m, best_rate = m, rate
        return best_m

    def observe(self, fed: int, guesses: list[int], tokens: list[int], seconds: float) -> None:
        """A pass read `fed` tokens, the last len(guesses) of them guesses, and the draft kept `tokens`
        of its rows (its own token at each position it read on its path, until a miss or a stop)."""
        if fed <= self.max_guesses + 2:  # not a pass that read a prompt or a long stretch it sat out
            self.seconds.setdefault(fed, Decayed(self.decay)).add(seconds)
        # Guess j was tested when the draft's tokens 1..j - 1 were guesses 1..j - 1 and it drafted a
        # j-th token (a stop before it tested nothing).
        for j, guess in enumerate(guesses[: len(tokens)]):
            self.kept[j].add(1.0 if tokens[j] == guess else 0.0)
            if tokens[j] != guess:
                break
