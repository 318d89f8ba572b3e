"""A greedy draft the stop rule ends taking the tokens its last staged pass already read past the stop,
where they pay (drafters.ModelDrafter.READ_AHEAD_ROWS, confidence.StopRule.read_ahead: no draft
time, known confidences), against stopping there, for auto on the Qwen pair (Qwen2.5-Coder-1.5B +
int8 0.5B), 128 tokens, over ab_session.py's session (21 turns, each lane its own learned costs and
recycling table; cold, then warm). Unlike read_ahead_ab.py's READ_AHEAD (reverted), which priced the
next token's draft step at nothing but still expected it at its position's average, this reads the
rows themselves. Why: round0_trace.txt, 10 of 46 stop-rule rounds of the draft model stopped with
such rows read, most at confidence 1.0.

Not kept (read_ahead_rows_ab.txt): 1.041 / 1.007 cold / warm, per turn 1.018 +- 0.023; RAG 024 1.13x,
but translation 016 0.79x and QA 020 0.92x, short answers where auto already trails transformers.
The flag exists only at 85ffdf2, the commit that added this script; the next reverted the code, so at
HEAD the script says so and exits (ab_session.flag_ab).

    PYTHONPATH=. .venv/bin/python docs/bench-auto/read_ahead_rows_ab.py > docs/bench-auto/read_ahead_rows_ab.txt
"""
from ab_session import flag_ab
from specdec.engine.drafters.model import ModelDrafter

flag_ab(ModelDrafter, "READ_AHEAD_ROWS", {"read rows": True, "stop": False})
