"""The stop rule's undrafted tokens expected towards this text's own mean acceptance
(policy.CostPolicy.TEXT_MEAN, confidence.TextShift.blend) against the pair's position averages
alone, for auto on the Qwen pair (Qwen2.5-Coder-1.5B + int8 0.5B), 128 tokens, over ab_session.py's
session (21 turns, each lane its own learned costs and recycling table; cold, then warm). Why: in
run.sh qwen-two-per-task a retrieval answer (specdec-025) drafted 5 tokens and kept all 5 in each of
seven rounds, stopping where the pass would widen past 6 rows, while transformers drafted 14 a pass.

Two means were tried, neither kept (the flag exists only at the commit that added this script; the
next commit reverted the code):
- text_mean_ab.all_positions.txt: the mean over every tested position of the text: 1.070 / 1.003
  (cold / warm), per turn 1.026 +- 0.020; where it lost, warm turns drafted shorter (014-t1 3.8
  tokens a pass against 7.5, 020 2.6 against 6.0): a text's first positions, unconditioned, pulled
  down the deep positions' averages, which only surviving drafts reach;
- text_mean_ab.txt: the mean over tested positions past a round's first (this commit's code):
  0.993 / 0.974, per turn 0.975 +- 0.018.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/text_mean_ab.py > docs/bench-auto/text_mean_ab.txt
"""
from ab_session import flag_ab
from specdec.engine.policy import CostPolicy

flag_ab(CostPolicy, "TEXT_MEAN", {"text mean": True, "positions": False})
