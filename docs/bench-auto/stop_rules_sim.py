"""Stop rules for a model draft, compared without timing noise: transformers' fixed confidence stop
(0.4 by default), fixed k, and the cost policy's stop rule (confidence.StopRule), on what the int8
Qwen2.5-Coder-0.5B draft would have drafted at every position of Qwen2.5-Coder-1.5B's greedy answers.

Collect (about a minute a turn): for six turns of ab_session.py's session (four of prose, a reasoning
and a coding answer), the target's greedy answer, and at each of its positions the draft's greedy
20-token continuation with its confidences and how far it agrees with the answer; the verify-cost
table and the draft's seconds per token as this machine measures them now. Simulate (instant): each
rule drafts from the start of the answer, a round keeps the agreeing prefix of what it drafted plus
one target token and costs J d + v(J + 1) + o (J drafted, o the policy's overhead), as specdec's
rounds do; speedups are over plain decoding at v(1) + o a token. "lookahead (oracle)" is StopRule
with its calibration and position alphas fitted on all six turns; "lookahead (online)" learns them
round by round from nothing, turn after turn, as the policy does (capped at 32 / 8 observations at
each new turn, shrunk as the code shrinks them), a lower bound on what a cold policy's draft model does.
"online or c >= 0.99" (0.95) drafts on wherever the online look-ahead would, and also past any token
drafted at that confidence or more (added on 2026-11-27, after stop_rules_sim.txt was written).
"survival" is the optimal-stopping rule that was tried and not kept (survival_rule_ab.py), with the
oracle's calibration, against the rate the oracle look-ahead reached and 0.8 of it. Sources other than
the draft model, and the policy's choice of k, are left out: this is the stop rule alone. The
collected data is cached (DATA); delete it to collect again.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/stop_rules_sim.py > docs/bench-auto/stop_rules_sim.txt

With --suite FILE, the first turn of every question of a Spec-Bench-format file instead, in its order
(cached apart, by the file's folder name; a cache collected from other questions is collected again):

    PYTHONPATH=. .venv/bin/python docs/bench-auto/stop_rules_sim.py --suite docs/spec-bench/translation/questions.jsonl \
        > docs/bench-auto/stop_rules_sim.translation.txt
    PYTHONPATH=. .venv/bin/python docs/bench-auto/stop_rules_sim.py --suite docs/spec-bench/rag-short/questions.jsonl \
        > docs/bench-auto/stop_rules_sim.rag-short.txt

With --verify "1:0.282,2:0.286,..." and --draft SECONDS, the simulation prices rounds with that verify
table and draft cost instead of the ones measured while collecting (a table read on a slow minute
skews every rule's rounds; these let a run's own warm-up table be replayed).
"""
import hashlib
import json
import sys
from dataclasses import replace
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from ab_session import BASE, qwen_pair, session_turns  # noqa: E402
from survival_rule_ab import SurvivalRule  # noqa: E402

from specdec.bench import spec_bench  # noqa: E402
from specdec.engine.confidence import Calibration, StopRule  # noqa: E402
from specdec.engine.kvcache import CachedModel  # noqa: E402
from specdec.engine.policy import CARRIED_CALIBRATION, CARRIED_EVIDENCE, CostPolicy, interpolate  # noqa: E402
from specdec.models.offline import cache_dir  # noqa: E402

TURNS = ("specdec-000-t0", "specdec-002-t0", "specdec-004-t0", "specdec-012-t0", "specdec-014-t0", "specdec-008-t0")
DEPTH = 20  # tokens drafted at each position, transformers' default num_assistant_tokens
OVERHEAD = 0.001  # seconds of choosing a round (the policy's, measured at ~0.7 ms a round)


def option(name: str) -> str | None:
    """The command line's value after name, None without it."""
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


SUITE = Path(option("--suite")) if option("--suite") else None
DATA = cache_dir() / (f"stop_rules_sim.{SUITE.parent.name}.json" if SUITE else "stop_rules_sim.json")


def suite_turns(pair) -> dict:
    """name -> request: TURNS of the session, or the first turn of each question of --suite."""
    if SUITE is None:
        turns = dict(session_turns(pair))
        return {name: turns[name] for name in TURNS}
    return {f"{q.id}-t0": replace(BASE, prompt=q.turns[0]) for q in spec_bench.read_questions(SUITE)}


def questions_sha() -> str | None:
    """What the cache was collected from: the --suite file's contents (the session's turns: None)."""
    return hashlib.sha256(SUITE.read_bytes()).hexdigest()[:16] if SUITE else None


def cached() -> dict | None:
    """The collected data, unless there is none or it was collected from other questions (a cache
    from before the key was kept is taken, with a warning)."""
    if not DATA.exists():
        return None
    data = json.loads(DATA.read_text())
    if SUITE is None:  # (the session's turns: named in TURNS)
        return data
    if "questions_sha" not in data:
        print(f"warning: {DATA} does not say which questions it holds; delete it to collect again", file=sys.stderr)
    elif data["questions_sha"] != questions_sha():
        return None
    return data


def collect() -> dict:
    pair = qwen_pair()
    turns = suite_turns(pair)
    pair.warm_up(pair.auto(next(iter(turns.values()))))
    draft = CachedModel(pair.draft.model, pair.vocab_size)
    out = {"verify": dict(zip(pair.verify_costs.widths, pair.verify_costs.seconds)), "turns": {},
           "questions_sha": questions_sha()}
    draft_seconds, steps = 0.0, 0
    for name in turns:
        prompt = pair.prompt_ids(turns[name])
        answer = [event.token for event in pair.standard(turns[name])]
        rows = []
        for i in range(len(answer)):
            tokens, confidences = [], []
            for _ in range(DEPTH):
                start = time.perf_counter()
                probs = torch.softmax(draft.logits(prompt + answer[:i] + tokens, 1)[0].float(), -1)
                draft_seconds, steps = draft_seconds + time.perf_counter() - start, steps + 1
                tokens.append(int(probs.argmax()))
                confidences.append(float(probs[tokens[-1]]))
            agree = 0
            while agree < DEPTH and i + agree < len(answer) and tokens[agree] == answer[i + agree]:
                agree += 1
            rows.append({"agree": agree, "confidences": confidences})
            draft.crop(len(prompt) + i)
        out["turns"][name] = {"tokens": len(answer), "rows": rows}
    out["draft_seconds"] = draft_seconds / steps
    return out


def simulate(turn: dict, keep_drafting, cost, learn=lambda confidences, accepted: None) -> tuple[float, float]:
    """(seconds, rounds) of one answer drafted by a rule: keep_drafting(confidences) after each token."""
    rows, n = turn["rows"], turn["tokens"]
    i = seconds = rounds = 0
    while i < n:
        confidences = rows[i]["confidences"]
        drafted = 1
        while drafted < DEPTH and keep_drafting(confidences[:drafted]):
            drafted += 1
        accepted = min(drafted, rows[i]["agree"])
        learn(confidences[:drafted], accepted)
        i, rounds, seconds = i + accepted + 1, rounds + 1, seconds + cost(drafted)
    return seconds, rounds


class Evidence:
    """A calibration and position alphas as the cost model keeps them (decayed, shrunk chain-wise)."""

    def __init__(self, decay: float = 0.9):
        self.decay = decay
        self.calibration = Calibration(decay=0.97 if decay < 1 else 1.0)
        self.kept = [[0.0, 0.0] for _ in range(DEPTH + 1)]  # per position: decayed (tested, kept)

    def learn(self, confidences, accepted):
        self.calibration.observe(confidences, accepted)
        for j in range(1, min(len(confidences), accepted + 1) + 1):
            tested, kept = self.kept[j]
            self.kept[j] = [tested * self.decay + 1, kept * self.decay + (j <= accepted)]

    def new_turn(self):
        self.calibration.cap(CARRIED_CALIBRATION)
        for counts in self.kept:
            if counts[0] > CARRIED_EVIDENCE:
                counts[:] = [CARRIED_EVIDENCE, counts[1] * CARRIED_EVIDENCE / counts[0]]

    def rule(self, d, v):
        alphas, prior = [], 0.5
        for tested, kept in self.kept[1:]:
            prior = (kept + prior * 2) / (tested + 2) if tested else prior
            alphas.append(prior)
        if self.calibration.evidence < CostPolicy.MIN_CALIBRATION:
            return lambda confidences: len(confidences) < CostPolicy.MIN_REACH
        rule = StopRule(lambda c: self.calibration.acceptance(c, alphas[0]), tuple(alphas), d, v, OVERHEAD, DEPTH)
        return rule.keep_drafting


def main() -> None:
    data = cached()
    if data is None:
        data = collect()
        DATA.write_text(json.dumps(data))
    if option("--verify"):
        data["verify"] = {n: float(s) for n, s in (pair.split(":") for pair in option("--verify").split(","))}
    if option("--draft"):
        data["draft_seconds"] = float(option("--draft"))
    known = sorted((int(n), s) for n, s in data["verify"].items())
    v, d = (lambda n: interpolate(known, n)), data["draft_seconds"]
    cost = lambda drafted: drafted * d + v(drafted + 1) + OVERHEAD  # noqa: E731
    plain = v(1) + OVERHEAD
    turns = data["turns"]
    print(f"verify v(1..33): {', '.join(f'{n}: {s * 1e3:.0f} ms' for n, s in known)}; draft {d * 1e3:.1f} ms a token")
    oracle = Evidence(decay=1.0)  # every position of every turn, undecayed
    for turn in turns.values():
        for row in turn["rows"]:
            oracle.learn(row["confidences"][: min(row["agree"] + 1, DEPTH)], min(row["agree"], DEPTH))
    rules = {f"k = {k}": (lambda k: lambda c: len(c) < k)(k) for k in (2, 3, 4, 6, 8)}
    rules |= {f"stop below {t}": (lambda t: lambda c: c[-1] >= t)(t) for t in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)}
    rules["lookahead (oracle)"] = oracle.rule(d, v)  # (last: its results give the survival rule's lam)
    print(f"{'rule':20s}" + "".join(f"{name.replace('specdec-', '').replace('translation', 'tr'):>15s}" for name in turns) + ("    all six   " if SUITE is None else "    all       ") + "(speedup / tokens a round)")
    for name, rule in rules.items():
        results = {t: simulate(turns[t], rule, cost) for t in turns}
        print_row(name, results, turns, plain)
    # The optimal-stopping rule that was tried and not kept (survival_rule_ab.py), against the rate the
    # oracle look-ahead reached (Dinkelbach's lam: the best rate there is, or near it).
    rate = sum(turns[t]["tokens"] for t in turns) / sum(s for s, _ in results.values())
    prior = oracle.kept[1][1] / oracle.kept[1][0]
    for lam in (0.8 * rate, rate):
        survival = SurvivalRule.solve(oracle.calibration, prior, d, v, DEPTH, lam)
        print_row(f"survival (lam {lam:.1f})", {t: simulate(turns[t], survival.keep_drafting, cost) for t in turns},
                  turns, plain)
    for sure in (None, 0.99, 0.95):  # the look-ahead alone, then also on through any token this sure
        online, results = Evidence(), {}
        for t in turns:
            online.new_turn()
            rule = lambda c, sure=sure: online.rule(d, v)(c) or (sure is not None and c[-1] >= sure)  # noqa: E731
            results[t] = simulate(turns[t], rule, cost, online.learn)  # (rebuilt each token, as the
            # evidence stands at the round's start: it learns only once the round is verified)
        print_row("lookahead (online)" if sure is None else f"online or c >= {sure}", results, turns, plain)


def print_row(name, results, turns, plain) -> None:
    cells = "".join(f"{turns[t]['tokens'] * plain / s:9.2f}x/{turns[t]['tokens'] / r:4.1f}" for t, (s, r) in results.items())
    total = sum(turns[t]["tokens"] for t in turns) * plain / sum(s for s, _ in results.values())
    print(f"{name:20s}{cells}    {total:.3f}x", flush=True)


if __name__ == "__main__":
    main()
