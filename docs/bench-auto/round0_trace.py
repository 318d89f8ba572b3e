"""Round 0 of auto, the round that reads the prompt: on chosen questions of the Spec-Bench-format sample,
auto on the Qwen pair (int8 draft, greedy, 128 tokens) from no saved costs, after a warm-up on
specdec-009, each round as turn_stops.py prints it (the choice, then each staged pass's confidences;
S where the draft stopped).

    SPECDEC_COSTS=$(mktemp -d) PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/round0_trace.py \\
        specdec-018,specdec-020,specdec-022,specdec-016,specdec-025,specdec-008,specdec-024,specdec-021 \\
        > docs/bench-auto/round0_trace.txt

first_tokens.py beside it prints the first token each model would give each question.
"""
import sys
from dataclasses import replace

from ab_session import BASE, qwen_pair
from specdec.bench import spec_bench
from specdec.engine import policy
from specdec.engine.drafters import model
from turn_stops import logged_choice, logged_take, trace_turn


def main() -> None:
    model.ModelDrafter._take, policy.CostPolicy.draft_choice = logged_take, logged_choice
    pair = qwen_pair()
    questions = {q.id: q for q in spec_bench.read_questions(spec_bench.SAMPLE)}
    pair.warm_up(pair.auto(replace(BASE, prompt=questions["specdec-009"].turns[0])))
    for question_id in sys.argv[1].split(","):
        trace_turn(pair, question_id, replace(BASE, prompt=questions[question_id].turns[0]))


if __name__ == "__main__":
    main()
