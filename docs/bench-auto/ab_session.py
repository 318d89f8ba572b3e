"""What the interleaved A/B scripts beside it share: the pair, the session of turns they answer, and
lanes that each keep their own learned costs and token recycling table from turn to turn.

The session: the first question of each category of the Spec-Bench-format sample (13 questions, 21
turns; not the seeded sample the bench draws), each second turn asked after our standard lane's
(greedy, deterministic) answer to the first, as the bench asks it. Lanes run one at a time,
interleaved turn by turn, in two passes: the first from the warm-up's state (a cold start: no saved
costs, empty tables), the second from the costs the first taught, in the other order, each turn's
recycling table as it stood before that turn in the first pass. Ratios between
lanes of one pass cancel the machine's drift; across processes the machine drifts by up to 20%.
"""
import shutil
import sys
import tempfile
import time
from pathlib import Path
from dataclasses import replace
from typing import Callable

from specdec.bench import spec_bench
from specdec.engine.config import Sampling, Speculation
from specdec.engine.pair import Pair, Request
from specdec.models.loading import load_model

BASE = Request("", 128, Sampling(), Speculation(k=4))
SAMPLED = Sampling(temperature=0.7, top_p=0.9)  # run.sh's sampled setups


def qwen_pair() -> Pair:
    """Qwen2.5-Coder-1.5B with its int8 0.5B draft (auto's CPU setup), no saved costs; with
    --fp32-draft on the command line, the draft unquantized (run.sh qwen-fp32-tasks' setup)."""
    target = load_model("qwen-coder-1.5b", None, None, False, log=lambda m: None)
    quantize = None if "--fp32-draft" in sys.argv else "int8"
    draft = load_model("qwen-coder-0.5b", target.device, target.dtype, False, log=lambda m: None, quantize=quantize)
    return Pair(target, draft)


def saved_costs_from_argv(pair: Pair) -> None:
    """With --costs PATH on the command line, the pair starts from the costs saved at PATH, through a
    copy (what the pair learns is written to the copy: PATH is left as it was)."""
    if "--costs" in sys.argv:
        copy = Path(tempfile.mkdtemp()) / "costs.json"
        shutil.copyfile(sys.argv[sys.argv.index("--costs") + 1], copy)
        pair.remember_costs(copy)


def smollm2_pair() -> Pair:
    return Pair(load_model("embedded", None, None, False, log=lambda m: None))


def session_turns(pair: Pair) -> list[tuple[str, Request]]:
    """(name, request) for the session's 21 turns, in order; with --turns NAME,... on the command line
    (turn names such as specdec-024-t0), those turns alone."""
    only = set(sys.argv[sys.argv.index("--turns") + 1].split(",")) if "--turns" in sys.argv else None
    first_of_each = {}
    for question in spec_bench.read_questions(spec_bench.SAMPLE):
        first_of_each.setdefault(question.category, question)
    turns = []
    for question in first_of_each.values():
        for i, text in enumerate(question.turns):
            if only is not None and f"{question.id}-t{i}" not in only:
                continue
            history = ()
            if i:
                answer = [e.token for e in pair.standard(replace(BASE, prompt=question.turns[0]))]
                history = ((question.turns[0], pair.tokenizer.decode(answer, skip_special_tokens=True)),)
            turns.append((f"{question.id}-t{i}", replace(BASE, prompt=text, history=history)))
    return turns


def timed(pair: Pair, request: Request) -> tuple[int, float, int]:
    """New tokens, seconds and rounds of one speculative run."""
    start = time.perf_counter()
    rounds = list(pair.speculative(request))
    seconds = time.perf_counter() - start
    return sum(len(r.tokens) for r in rounds), seconds, len(rounds)


def run_lanes(pair: Pair, lanes: dict[str, Callable[[Request], Request]],
              before: Callable[[str], None] = lambda lane: None) -> list[dict[str, float]]:
    """Each lane (name -> the request it runs for a turn) over the session, two passes, each lane
    with its own learned costs and recycling table; `before(lane)` switches a variant in. Prints a
    row a turn and each pass's tok/s per lane; returns those."""
    turns = session_turns(pair)
    pair.warm_up(pair.auto(turns[0][1]))
    print("saved costs:", pair.costs_status, flush=True)
    states = dict.fromkeys(lanes, pair.learned())
    # A lane after another on the same turn would otherwise draft from a table holding this answer;
    # and the warm pass drafts each turn from the table as it stood before that turn in the cold one
    # (a table that had read the answer once would draft it back).
    tables = {lane: pair.new_recycling_table() for lane in lanes}
    before_turn: dict[tuple[str, str], object] = {}
    passes = []
    for p in range(2):
        total = {lane: [0, 0.0] for lane in lanes}
        for name, request in turns:
            row = []
            for lane in list(lanes) if p == 0 else list(lanes)[::-1]:
                before(lane)
                pair.restore_learned(states[lane])
                if p == 0:
                    before_turn[lane, name] = tables[lane].copy()
                table = tables[lane] if p == 0 else before_turn[lane, name].copy()
                with pair.recycling_from(table):
                    tokens, seconds, rounds = timed(pair, lanes[lane](request))
                states[lane] = pair.learned()
                total[lane][0] += tokens
                total[lane][1] += seconds
                row.append(f"{lane} {tokens / seconds:5.1f} ({tokens / rounds:.1f}/pass)")
            print(f"pass{p} {name:16s}", " | ".join(row), flush=True)
        passes.append({lane: t / s for lane, (t, s) in total.items()})
        print(f"PASS {p}: " + ", ".join(f"{lane} {rate:.2f} tok/s" for lane, rate in passes[-1].items()), flush=True)
    return passes


def print_ratios(passes: list[dict[str, float]], pairs: list[tuple[str, str]]) -> None:
    """Lane a's tok/s over lane b's, per pass (cold, warm)."""
    for a, b in pairs:
        print(f"{a}/{b}: " + " / ".join(f"{rates[a] / rates[b]:.3f}" for rates in passes) + " (cold / warm)")


def with_drafter(drafter: str, policy: str) -> Callable[[Request], Request]:
    return lambda request: replace(request, drafter=drafter, spec=replace(request.spec, policy=policy))


def flag_ab(owner: type, attribute: str, lanes: dict[str, object]) -> None:
    """Auto on the Qwen pair (SmolLM2 alone where the command line says --smollm2; its draft in fp32
    with --fp32-draft) over the session,
    one lane per value of owner.attribute (a class flag such as CostPolicy.OPTIMISTIC), set before
    each lane's turn; prints the first lane's ratio over each other's. --sampled: every turn sampled
    as SAMPLED (seed 0; the lanes' texts part where their drafts consume the sampler differently);
    --costs PATH: every lane starts from the costs saved at PATH (a copy is written to: PATH is
    left as it was), as a bench run on a machine with saved costs does."""
    if not hasattr(owner, attribute):  # a flag of a change since reverted: every lane would run the same code
        raise SystemExit(f"{owner.__name__}.{attribute} does not exist at this commit (see the script's docstring)")
    pair = smollm2_pair() if "--smollm2" in sys.argv else qwen_pair()
    saved_costs_from_argv(pair)
    auto = pair.auto
    if "--sampled" in sys.argv:
        auto = lambda request: pair.auto(replace(request, sampling=SAMPLED))  # noqa: E731
    passes = run_lanes(pair, dict.fromkeys(lanes, auto), before=lambda lane: setattr(owner, attribute, lanes[lane]))
    first, *others = lanes
    print_ratios(passes, [(first, other) for other in others])


def patch_carried_evidence() -> None:
    """Patch CostModel.start_request with two settings an A/B may set as flags: CostModel.CARRIED (the
    observations every source carries into a new request; policy.CARRIED_EVIDENCE unless set) and
    CostModel.CARRIED_FREE_FIRST (a free source's first position; CARRIED's unless set). Unset, the
    patched method is the engine's own. Each is the value carried, not a cap under the engine's, so
    an A/B recorded at 8 reruns at 8 whatever the engine's constant is now."""
    from specdec.engine.policy import CARRIED_CALIBRATION, CARRIED_EVIDENCE, CARRIED_FREE_DEPTH, CostModel

    CostModel.CARRIED, CostModel.CARRIED_FREE_FIRST = CARRIED_EVIDENCE, None

    def start_request(self, evidence: float | None = None, calibration: float = CARRIED_CALIBRATION) -> None:
        for name, costs in self.sources.items():
            free = self.is_free(name)
            carried = self.CARRIED_FREE_FIRST if free and self.CARRIED_FREE_FIRST is not None else self.CARRIED
            costs.start_request(carried if evidence is None else evidence, calibration,
                                CARRIED_FREE_DEPTH if free else None)

    CostModel.start_request = start_request
