"""Acceptance by confidence *and* by whether the drafted token copies the context, replayed without
timing noise on stop_rules_sim.py's eight turns (intercept_sim.py's: six of the session plus the RAG
answer specdec-024 and the summary specdec-018) and, held out, the six other short RAG answers of
docs/spec-bench/rag-short. Tried for the RAG answer that auto loses to transformers' defaults, and
not kept: the output beside this file.

A drafted token copies when prompt lookup would have proposed it: the last n >= 2 tokens before it
occurred earlier in the context (prompt, answer so far, draft so far) and were followed by it. The
lead: on text that copies the draft is often unsure of such tokens and the target keeps them, so the
text-blind a(c) prices a copied span as a run of coin flips and stops it (specdec-024 was drafted 4,
7, 4 and 8 tokens a round, every one kept, where transformers' fixed 0.4 stop drafts 20 in a pass).
"copy": a second calibration, of copied tokens only, each bin shrunk towards the first's a(c) (so
with no copied evidence the rule is the online one), and a copied token priced by it; "weight 8"
shrinks harder; "below 0.9" uses it only for tokens under 0.9.

What the data says: copied tokens at 0.3-0.8 are kept more often than others (0.79-0.97 against
0.51-0.90), and copied tokens at 0.9-0.98 less often (0.89-0.90 against 0.98-1.00: the draft copies on
past where the target's copy ends). Priced apart, the first lengthens drafts and the second shortens
them, and the replay reads level or lower: 2.441x / 2.488x on the eight turns against 2.448x / 2.496x,
3.494x on the six held-out RAG answers against 3.579x; "below 0.9" (chosen after seeing the table)
is level on both (2.455x / 2.496x, 3.568x).

Collect (about two minutes a turn on a 2-core host; both sets cached, DATA and HELD_OUT; delete to
collect again): the target's greedy answer, and at each position the draft's greedy 20-token
continuation with its confidences, which of its tokens copy, and how far it agrees with the answer.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/copy_calibration_sim.py > docs/bench-auto/copy_calibration_sim.txt
"""
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import stop_rules_sim as sim  # noqa: E402
from ab_session import BASE, qwen_pair, session_turns  # noqa: E402
from stop_rule_variants import Variant  # noqa: E402

from specdec.bench import spec_bench  # noqa: E402
from specdec.engine.confidence import Calibration, StopRule  # noqa: E402
from specdec.engine.drafters.lookup import latest_match  # noqa: E402
from specdec.engine.kvcache import CachedModel  # noqa: E402
from specdec.engine.policy import CostPolicy, interpolate  # noqa: E402
from specdec.models.offline import cache_dir  # noqa: E402

TURNS = sim.TURNS + ("specdec-024-t0", "specdec-018-t0")
DATA = cache_dir() / "copy_calibration_sim.json"
HELD_OUT = cache_dir() / "copy_calibration_sim_rag.json"  # the six other short RAG answers


def copies(context: list[int], token: int) -> bool:
    """Would prompt lookup (its last n >= 2 tokens seen before) propose token after context?"""
    found = latest_match(context, 3, 2)
    return found is not None and context[found[0]] == token


def held_out_turns(pair) -> list:
    """(name, request) for docs/spec-bench/rag-short's answers other than specdec-024 (in TURNS)."""
    path = Path(__file__).parents[1] / "spec-bench" / "rag-short" / "questions.jsonl"
    return [(f"{q.id}-t0", replace(BASE, prompt=q.turns[0])) for q in spec_bench.read_questions(path)
            if f"{q.id}-t0" not in TURNS]


def collect(held_out: bool = False) -> dict:
    pair = qwen_pair()
    turns = dict(held_out_turns(pair) if held_out else session_turns(pair))
    names = list(turns) if held_out else TURNS
    pair.warm_up(pair.auto(turns[names[0]]))
    draft = CachedModel(pair.draft.model, pair.vocab_size)
    out = {"verify": dict(zip(pair.verify_costs.widths, pair.verify_costs.seconds)), "turns": {}}
    draft_seconds, steps = 0.0, 0
    for name in names:
        prompt = pair.prompt_ids(turns[name])
        answer = [event.token for event in pair.standard(turns[name])]
        rows = []
        for i in range(len(answer)):
            tokens, confidences, copied = [], [], []
            for _ in range(sim.DEPTH):
                context = prompt + answer[:i] + tokens
                start = time.perf_counter()
                probs = torch.softmax(draft.logits(context, 1)[0].float(), -1)
                draft_seconds, steps = draft_seconds + time.perf_counter() - start, steps + 1
                tokens.append(int(probs.argmax()))
                confidences.append(float(probs[tokens[-1]]))
                copied.append(copies(context, tokens[-1]))
            agree = 0
            while agree < sim.DEPTH and i + agree < len(answer) and tokens[agree] == answer[i + agree]:
                agree += 1
            rows.append({"agree": agree, "confidences": confidences, "copied": copied})
            draft.crop(len(prompt) + i)
        out["turns"][name] = {"tokens": len(answer), "rows": rows}
        print(f"collected {name}: {len(answer)} tokens", file=sys.stderr, flush=True)
    out["draft_seconds"] = draft_seconds / steps
    return out


class CopyVariant(Variant):
    """The online rule (with the after-last-confidence look-ahead, as the policy runs), and with
    copy=True a second calibration for copied tokens."""

    def __init__(self, copy: bool, weight: float = 2.0, below: float = 1.01):
        super().__init__(after_last=True)
        self.copying = Calibration() if copy else None
        self.weight, self.below = weight, below

    def new_turn(self):
        super().new_turn()
        if self.copying is not None:
            self.copying.cap(self.carried)

    def learn_copies(self, confidences, copied, accepted):
        super().learn(confidences, accepted)
        if self.copying is not None:
            for i, confidence in enumerate(confidences[: accepted + 1]):
                if copied[i]:
                    self.copying.observe([confidence], 1 if i < accepted else 0)

    def copy_rule(self, d, v):
        alphas = self.alphas()
        if self.calibration.evidence < CostPolicy.MIN_CALIBRATION:
            return lambda confidences, copied: len(confidences) < CostPolicy.MIN_REACH

        def accept(c, copy):
            a = self.calibration.acceptance(c, alphas[0])
            if copy and self.copying is not None and c < self.below:
                b = self.copying.bin(c)
                a = (self.copying.kept[b] + a * self.weight) / (self.copying.tested[b] + self.weight)
            return a

        def keep_drafting(confidences, copied):
            j, ahead = len(confidences), list(alphas) + [alphas[-1]] * (sim.DEPTH + 1 - len(alphas))
            if j:
                ahead[j] = self.after.acceptance(confidences[-1], ahead[j])
            flags = iter(copied)
            rule = StopRule(lambda c: accept(c, next(flags)), tuple(ahead), d, v, sim.OVERHEAD, sim.DEPTH)
            return rule.keep_drafting(confidences)
        return keep_drafting


class FixedStop(CopyVariant):
    """transformers' rule, for scale: draft on while the last token's confidence is at least `below`
    (its default 0.4), up to DEPTH (its default 20 tokens)."""

    def __init__(self, below: float):
        super().__init__(copy=False)
        self.below = below

    def copy_rule(self, d, v):
        return lambda confidences, copied: confidences[-1] >= self.below


def simulate(turn: dict, evidence: CopyVariant, d, v, cost) -> tuple[float, float]:
    """(seconds, rounds) of one answer, the rule rebuilt from the evidence at each round's start."""
    rows, n = turn["rows"], turn["tokens"]
    i = seconds = rounds = 0
    while i < n:
        row, rule = rows[i], evidence.copy_rule(d, v)
        drafted = 1
        while drafted < sim.DEPTH and rule(row["confidences"][:drafted], row["copied"][:drafted]):
            drafted += 1
        accepted = min(drafted, row["agree"])
        evidence.learn_copies(row["confidences"][:drafted], row["copied"][:drafted], accepted)
        i, rounds, seconds = i + accepted + 1, rounds + 1, seconds + cost(drafted)
    return seconds, rounds


VARIANTS = {"online": {"copy": False}, "copy": {"copy": True}, "copy, weight 8": {"copy": True, "weight": 8.0},
            "copy below 0.9": {"copy": True, "below": 0.9}, "stop below 0.4 (transformers)": {"fixed": 0.4}}


def variant(options: dict) -> CopyVariant:
    return FixedStop(options["fixed"]) if "fixed" in options else CopyVariant(**options)


def acceptance_table(turns: dict) -> str:
    """Tested positions kept, by confidence and whether the token copied, pooled over the turns."""
    edges, counts = (0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99), {}
    for turn in turns.values():
        for row in turn["rows"]:
            for j, (c, copied) in enumerate(zip(row["confidences"][: row["agree"] + 1], row["copied"])):
                cell = counts.setdefault((max(e for e in edges if e <= c), copied), [0, 0])
                cell[0], cell[1] = cell[0] + 1, cell[1] + (j < row["agree"])
    lines = []
    for copied in (False, True):
        cells = [f"{e}: {k}/{n} = {k / n:.2f}" for (e, c), (n, k) in sorted(counts.items()) if c == copied]
        lines.append(f"  {'copied' if copied else 'not copied'}: " + "; ".join(cells))
    return "\n".join(lines)


def main() -> None:
    data = json.loads(DATA.read_text()) if DATA.exists() else collect()
    DATA.write_text(json.dumps(data))
    held = json.loads(HELD_OUT.read_text()) if HELD_OUT.exists() else collect(held_out=True)
    HELD_OUT.write_text(json.dumps(held))
    known = sorted((int(n), s) for n, s in data["verify"].items())
    v, d = (lambda n: interpolate(known, n)), data["draft_seconds"]
    cost = lambda drafted: drafted * d + v(drafted + 1) + sim.OVERHEAD  # noqa: E731
    turns, rag = data["turns"], held["turns"]
    share = [sum(r["copied"][0] for r in t["rows"]) / len(t["rows"]) for t in turns.values()]
    print(f"verify v(1..33): {', '.join(f'{n}: {s * 1e3:.0f} ms' for n, s in known)}; draft {d * 1e3:.1f} ms a token")
    print("first drafted token copies at:", ", ".join(f"{name[8:]} {s:.0%}" for name, s in zip(turns, share)))
    print("tested positions kept, by confidence (bins from), all fourteen answers:")
    print(acceptance_table({**turns, **rag}))
    print(f"\n{'the eight turns':30s}" + "".join(f"{name[8:]:>15s}" for name in turns) + "    all eight")
    for name, options in VARIANTS.items():
        for order in (list(turns), list(turns)[::-1]):
            evidence, results = variant(options), {}
            for t in order:
                evidence.new_turn()
                results[t] = simulate(turns[t], evidence, d, v, cost)
            label = f"{name}{' (reversed)' if order[0] != next(iter(turns)) else ''}"
            sim.print_row(label.ljust(30), {t: results[t] for t in turns}, turns, v(1) + sim.OVERHEAD)
    # Held out: the six other short RAG answers, each after the eight turns (in order), as a process
    # that has served them would meet it.
    print(f"\n{'six other RAG answers':30s}" + "".join(f"{name[-9:-3]:>15s}" for name in rag) + "      all six")
    for name, options in VARIANTS.items():
        results = {}
        for t in rag:
            evidence = variant(options)
            for seen in turns:
                evidence.new_turn()
                simulate(turns[seen], evidence, d, v, cost)
            evidence.new_turn()
            results[t] = simulate(rag[t], evidence, d, v, cost)
        sim.print_row(name.ljust(30), results, rag, v(1) + sim.OVERHEAD)


if __name__ == "__main__":
    main()
