"""The stop rule with this text's odds correction ("intercept", stop_rule_variants.py), replayed on
stop_rules_sim.py's six turns plus the two that copy (the RAG answer specdec-024 and the summary
specdec-018), whose drafts the text-blind calibration stops short (notes.md). Collected on this
machine into its own cache file (about 2 minutes a turn on a 2-core host with a 45 ms draft step);
each variant runs the eight turns in order and in reverse.

    PYTHONPATH=.:docs/bench-auto .venv/bin/python docs/bench-auto/intercept_sim.py > docs/bench-auto/intercept_sim.txt
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import stop_rules_sim as sim  # noqa: E402
from stop_rule_variants import replay  # noqa: E402

from specdec.engine.policy import interpolate  # noqa: E402
from specdec.models.offline import cache_dir  # noqa: E402

sim.TURNS = sim.TURNS + ("specdec-024-t0", "specdec-018-t0")
sim.DATA = cache_dir() / "stop_rules_sim_copying.json"


def main() -> None:
    data = sim.cached()
    if data is None:
        data = sim.collect()
        sim.DATA.write_text(json.dumps(data))
    known = sorted((int(n), s) for n, s in data["verify"].items())
    v, d = (lambda n: interpolate(known, n)), data["draft_seconds"]
    cost = lambda drafted: drafted * d + v(drafted + 1) + sim.OVERHEAD  # noqa: E731
    turns = data["turns"]
    print(f"verify v(1..33): {', '.join(f'{n}: {s * 1e3:.0f} ms' for n, s in known)}; draft {d * 1e3:.1f} ms a token")
    print(f"{'variant':34s}" + "".join(f"{name[8:]:>15s}" for name in turns) + "    all eight")
    replay({"online": {}, **{f"intercept tau {t}": {"tau": t} for t in (2.0, 4.0, 8.0, 16.0)}}, turns, d, v, cost, 34)


if __name__ == "__main__":
    main()
