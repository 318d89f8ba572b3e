"""The first token of each answer of the Spec-Bench-format sample: the target's (Qwen2.5-Coder-1.5B) top 3
and the 0.5B draft's, int8 (D8) and fp32 (D32), with their probabilities at temperature 1, one forward
pass over each first turn's chat prompt. Where the draft's first choice is not the target's, the round
that reads the prompt (round 0) keeps nothing of a draft however confident its later tokens.

    PYTHONPATH=. .venv/bin/python docs/bench-auto/first_tokens.py > docs/bench-auto/first_tokens.txt
"""
import json, torch
from specdec.models.loading import load_model
from specdec.engine.text import encode_prompt
target = load_model("qwen-coder-1.5b", None, None, False, log=lambda m: None)
draft_int8 = load_model("qwen-coder-0.5b", target.device, target.dtype, False, log=lambda m: None, quantize="int8")
draft_fp32 = load_model("qwen-coder-0.5b", target.device, target.dtype, False, log=lambda m: None)
tok = target.tokenizer
qs = [json.loads(l) for l in open("specdec/bench/prompts/spec_bench_sample.jsonl")]
for q in qs:
    ids = encode_prompt(tok, q["turns"][0])
    x = torch.tensor([ids])
    with torch.no_grad():
        out = []
        for m in (target.model, draft_int8.model, draft_fp32.model):
            p = torch.softmax(m(x).logits[0, -1].float(), -1)
            v, i = p.topk(3)
            out.append(" ".join(f"{tok.decode([int(a)])!r}:{float(b):.2f}" for a, b in zip(i, v)))
    print(q["question_id"], q["category"], "| T", out[0], "| D8", out[1], "| D32", out[2], flush=True)
