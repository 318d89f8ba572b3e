"""Did the code make auto fall on the full Spec-Bench sample, or the machine? Auto against the draft
model at k = 4 (Qwen2.5-Coder-1.5B + int8 0.5B, greedy, 128 tokens), interleaved turn by turn in one
process, on 21 turns of the Spec-Bench-format sample (the first question of each category, second
turns after our standard lane's answer to the first, as the bench asks them), two passes: the
first from no saved costs, the second from what the first taught. Auto ÷ the draft model in one
process cancels the machine's drift (our standard lane ran 7.4-10 tok/s across runs of one day).
Run it on two code trees, one process each, and compare the two ratios:

    git worktree add /tmp/old 04c8d82
    PYTHONPATH=/tmp/old .venv/bin/python docs/bench-auto/fall_ab.py > docs/bench-auto/fall_ab/stop31-04c8d82.txt
    PYTHONPATH=. .venv/bin/python docs/bench-auto/fall_ab.py > docs/bench-auto/fall_ab/head-9c888ad.txt

Results and reading: docs/spec-bench/notes.md.
"""
from dataclasses import replace

from ab_session import qwen_pair, session_turns, timed
import specdec

print("code:", specdec.__file__, flush=True)
pair = qwen_pair()  # no remember_costs: both code trees start from nothing
turns = session_turns(pair)
print([name for name, _ in turns], flush=True)
pair.warm_up(pair.auto(turns[0][1]))
for p in range(2):
    total = {"dm": [0, 0.0], "auto": [0, 0.0]}
    for name, request in turns:
        lanes = [("dm", replace(request, drafter="draft-model")), ("auto", pair.auto(request))]
        row = []
        for lane, r in lanes if p == 0 else lanes[::-1]:  # each pass in the other order
            tokens, seconds, rounds = timed(pair, r)
            total[lane][0] += tokens
            total[lane][1] += seconds
            row.append(f"{lane} {tokens / seconds:5.1f} ({tokens / rounds:.1f}/pass)")
        print(f"pass{p} {name:16s}", " | ".join(row), flush=True)
    dm, auto = (total[lane][0] / total[lane][1] for lane in ("dm", "auto"))
    print(f"PASS {p}: dm {dm:.2f} tok/s, auto {auto:.2f} tok/s, auto/dm {auto / dm:.3f}", flush=True)
