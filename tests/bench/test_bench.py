"""The benchmark end to end on tiny random models saved as folders, and its pure aggregation and
report functions on hand-made records. No timing assertions: only structure and consistency."""
import json

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from helpers import perturbed, tiny_model
from specdec.bench import command as bench
from specdec.bench.grid import Cell, Plan, Prompt, Setup, expand, load_suite, select_prompts
from specdec.bench.lanes import Job, lane_record, rotated
from specdec.bench.report import report
from specdec.bench.medians import differences, goals, spread, summarize_cell, table_rows
from specdec.engine.drafters import DRAFTERS, needs_draft_model
from specdec.engine.stats import tau

WORDS = ["<s>", "</s>", "<pad>", "<unk>"] + [f"w{i}" for i in range(4, 96)]
PROMPTS = [
    {"id": "c-1", "category": "code", "prompt": "w5 w6 w7 w8 w5 w6 w7 w8 w5 w6"},
    {"id": "e-1", "category": "explain", "prompt": "w40 w41 w42 w43 w44 w45"},
]


def tokenizer():
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    target = tiny_model("llama", seed=0)
    for name, model in (("target", target), ("draft", perturbed(target, 0.3))):
        model.save_pretrained(root / name)
        tokenizer().save_pretrained(root / name)
    suite = root / "suite.jsonl"
    suite.write_text("\n".join(json.dumps(p) for p in PROMPTS) + "\n")
    return root


def run_bench(folders, out, *extra):
    # One thread: tiny ops on two threads crawl when other processes share the cores; no redone repeats.
    threads = torch.get_num_threads()
    try:
        bench.main(["--threads", "1", "--retries", "0", "--target", str(folders / "target"),
                    "--draft", str(folders / "draft"), "--name", "tiny", "--suite", str(folders / "suite.jsonl"),
                    "--out", str(out), "--no-png", "--k", "2", "--max-new-tokens", "10", "--repeats", "2",
                    "--policies", "fixed,heuristic", "--per-category", "1", *extra])
    finally:
        torch.set_num_threads(threads)
    return json.loads((out / "results.json").read_text())


@pytest.fixture(scope="module")
def first_run(folders, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    return out, run_bench(folders, out)


def test_every_drafter_schedule_and_prompt_is_measured(first_run):
    out, results = first_run
    keys = {(c["prompt"], c["drafter"], c["k"], c["policy"]) for c in results["cells"]}
    assert keys == {(p["id"], d, 2, s) for p in PROMPTS for d in DRAFTERS for s in ("fixed", "heuristic")}
    for cell in results["cells"]:
        assert len(cell["repeats"]) == 2
        for rep in cell["repeats"]:
            lanes = rep["lanes"]
            assert {"generate", "standard", "speculative"} <= set(lanes)
            # Greedy: our speculative decoding is token-identical to our standard decoding, every repeat.
            assert rep["stats"]["identical"] is True and lanes["speculative"]["matches_standard"] is True
            assert lanes["speculative"]["tokens"] == lanes["standard"]["tokens"] == lanes["generate"]["tokens"]
            assert all(isinstance(lane["matches_standard"], bool) for lane in lanes.values())
            assert sum(m for m, _ in rep["rounds"]) >= sum(a for _, a in rep["rounds"])
            # Forward-pass counters: one target pass per token for plain decoding, one per round for ours.
            assert lanes["standard"]["target_forwards"] == lanes["standard"]["tokens"]
            assert lanes["generate"]["target_forwards"] == lanes["generate"]["tokens"]
            assert lanes["speculative"]["target_forwards"] == len(rep["rounds"])
            if cell["drafter"] == "draft-model":
                assert lanes["speculative"]["draft_forwards"] == sum(m for m, _ in rep["rounds"])
    peers = {(c["drafter"], c["policy"]): set(c["repeats"][0]["lanes"]) - {"generate", "standard", "speculative"}
             for c in results["cells"]}
    assert peers[("draft-model", "fixed")] == {"hf-assisted", "hf-assisted-fixed-k"}
    assert peers[("draft-model", "heuristic")] == {"hf-assisted"}
    assert peers[("prompt-lookup", "fixed")] == {"hf-prompt-lookup"}
    assert peers[("prompt-lookup", "heuristic")] == set()  # transformers has no adaptive prompt lookup


def test_an_auto_cell_runs_pair_auto_against_transformers_defaults(folders, tmp_path):
    """The bench's auto is Pair.auto's setup, as the CLI's --auto and the app's Auto run it: every
    source the pair has (the mixed drafter), timed against transformers' assisted defaults."""
    from specdec.engine.sources import Source

    results = run_bench(folders, tmp_path, "--drafters", "auto", "--policies", "cost", "--repeats", "1")
    (cell, *rest) = results["cells"]
    assert {c["drafter"] for c in results["cells"]} == {"auto"} and len(rest) == len(PROMPTS) - 1
    lanes = cell["repeats"][0]["lanes"]
    assert {"hf-assisted-defaults", "hf-assisted"} <= set(lanes)
    assert lanes["speculative"]["matches_standard"] is True and cell["repeats"][0]["stats"]["identical"] is True
    # mixed's, by name: a model source among them (which one is the policy's choice on these tiny models)
    sources = {Source(source).drafter for source in cell["repeats"][0]["stats"]["sources"]}
    assert sources & {"draft-model", "draft-tree"} and sources <= {"prompt-lookup", "lookup-tree", "recycling", "draft-model",
                                                    "draft-tree"}


def test_an_auto_cell_without_a_draft_model_runs_transformers_prompt_lookup_beside_it(folders, tmp_path):
    """Issue #22's SmolLM2 setup: no draft model, so no assisted generation; transformers' answer
    without one, prompt lookup, is the peer instead (a setup with a draft model does not run it)."""
    threads = torch.get_num_threads()
    try:
        bench.main(["--threads", "1", "--retries", "0", "--auto", "--target", str(folders / "target"), "--name",
                    "alone", "--suite", str(folders / "suite.jsonl"), "--out", str(tmp_path), "--no-png",
                    "--max-new-tokens", "10", "--repeats", "1", "--prompts", PROMPTS[0]["id"]])
    finally:
        torch.set_num_threads(threads)
    (cell,) = json.loads((tmp_path / "results.json").read_text())["cells"]
    lanes = cell["repeats"][0]["lanes"]
    assert cell["drafter"] == "auto" and "hf-prompt-lookup" in lanes and not {"hf-assisted", "hf-assisted-defaults"} & set(lanes)
    assert lanes["speculative"]["matches_standard"] is True and lanes["hf-prompt-lookup"]["matches_standard"] is True
    from specdec.bench.lanes import peers_for

    assert "hf-prompt-lookup" not in {p.name for p in peers_for("auto", "cost", has_draft=True)}


def test_no_repeat_drafts_from_a_table_that_read_its_own_answer(folders, tmp_path):
    """Token recycling's table (and the cost policy's evidence) carries from prompt to prompt, as over
    a session, but each speculative lane starts a prompt from what the pair knew before it: the second
    repeat drafts exactly as the first did, not from a table that already read this very answer."""
    results = run_bench(folders, tmp_path, "--drafters", "recycling", "--policies", "fixed", "--k", "3",
                        "--max-new-tokens", "24", "--per-category", "2")
    for cell in results["cells"]:
        first, second = (repeat["rounds"] for repeat in cell["repeats"])
        assert first == second, cell["key"]
    # ...while the table does carry between prompts: a later prompt's rounds accept something.
    assert any(accepted for cell in results["cells"][1:] for _, accepted in cell["repeats"][0]["rounds"])


def test_outputs_exist_and_agree(first_run):
    out, results = first_run
    text = (out / "report.md").read_text()
    for needle in ("## Goals", "## `tiny`", "### Standard decoding vs `model.generate`", "## Output identity",
                   "python -m specdec bench --threads 1 --retries 0 --target", "figures/theory.html"):
        assert needle in text
    for name in ("theory", "speeds", "acceptance"):
        assert (out / "figures" / f"{name}.html").stat().st_size > 0
    assert results["meta"]["setups"][0]["name"] == "tiny" and results["meta"]["machine"]["cores"] >= 1
    json.dumps(results, allow_nan=False)


def test_resume_skips_finished_cells_and_runs_only_new_ones(folders, first_run, tmp_path, monkeypatch):
    out = tmp_path / "resume"
    out.mkdir()
    (out / "results.json").write_text((first_run[0] / "results.json").read_text())
    ran = []
    real = bench.run_repeat
    monkeypatch.setattr(bench, "run_repeat", lambda models, group, cells, r, tick, session: (
        ran.append([c.key for c in cells]), real(models, group, cells, r, tick))[1])
    before = json.loads((out / "results.json").read_text())["cells"]
    after = run_bench(folders, out)
    assert ran == [] and after["cells"] == before
    # The older flag and name still work: --schedules constant is --policies fixed.
    after = run_bench(folders, out, "--k", "2,3", "--drafters", "prompt-lookup", "--schedules", "constant")
    assert {k for keys in ran for k in keys} == {f"tiny|{p['id']}|T=0|n=10|prompt-lookup|k=3|fixed"
                                                 for p in PROMPTS}
    assert len(after["cells"]) == len(before) + 2
    assert len(after["meta"]["commands"]) == 3


def test_results_written_before_the_policy_rename_load_with_policy_names(tmp_path):
    """A results.json cell with "schedule": "constant" reads as policy "fixed", its key too, so a
    resumed run skips it instead of measuring it again."""
    from specdec.bench.command import load_results

    record = cell_record()
    old = {**record, "schedule": "constant", "key": record["key"].replace("|fixed", "|constant")}
    del old["policy"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"meta": {"commands": [], "setups": []}, "cells": [old]}))
    (cell,) = load_results(path, fresh=False)["cells"]
    assert cell["policy"] == "fixed" and "schedule" not in cell and cell["key"] == record["key"]


def test_report_only_rebuilds_from_json(first_run, tmp_path):
    out, _ = first_run
    report_path = tmp_path / "BENCHMARKS.md"
    bench.main(["--out", str(out), "--report-only", "--no-png", "--report", str(report_path)])
    assert "## Goals" in report_path.read_text()


# ---------------------------------------------------------------- pure pieces

def test_spread_and_lane_record():
    assert spread([3.0, None, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
    assert spread([None]) is None
    rec = lane_record([1, 2, 3], 0.5, [1, 2, 4])
    assert rec["tokens_per_s"] == 6.0 and rec["matches_standard"] is False and rec["first_difference"] == 2
    assert lane_record([1, 2], 0.5, [1, 2, 3])["first_difference"] == 2
    assert lane_record([1], 0.5, None)["matches_standard"] is None


def test_suite_validation(tmp_path):
    """Duplicate ids (1 and "1" are one: cells are keyed by the string), missing fields and blank
    prompts are refused on reading, by file and line."""
    path = tmp_path / "s.jsonl"
    for text, message in [
        ('{"id": "a", "category": "x", "prompt": "p"}\n\n{"id": "a", "category": "y", "prompt": "q"}\n',
         "s.jsonl:3: duplicate prompt id 'a'"),
        ('{"id": "a", "prompt": "p"}\n', "s.jsonl:1: missing field"),
        ('{"id": 1, "category": "x", "prompt": "p"}\n{"id": "1", "category": "x", "prompt": "q"}\n',
         "s.jsonl:2: duplicate prompt id '1'"),
        ('{"id": "a", "category": "x", "prompt": "p"}\n{"id": "b", "category": "x", "prompt": "  "}\n',
         "s.jsonl:2: prompt 'b' must be non-blank text")]:
        path.write_text(text)
        with pytest.raises(ValueError, match=message):
            load_suite(path)


def test_jsonl_lines_end_at_newlines_only(tmp_path):
    """JSON strings may hold U+2028, U+0085 or a form feed raw (json.dumps(ensure_ascii=False) writes
    them so), which str.splitlines() would split a line at; a byte-order mark and CRLF endings are
    read too; a folder is refused by name."""
    rows = [{"id": "a", "category": "x", "prompt": "one\u2028two\u0085three\x0cfour"},
            {"id": "b", "category": "x", "prompt": "zwei"}]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows).encode())
    assert [p.text for p in load_suite(path)] == [rows[0]["prompt"], "zwei"]
    with pytest.raises(ValueError, match="a folder, not a JSONL file"):
        load_suite(tmp_path)


def test_grid_expansion_merges_groups_and_skips_drafters_without_a_model():
    suite = [Prompt("a1", "a", "x"), Prompt("a2", "a", "y"), Prompt("b1", "b", "z")]
    alone = Setup("t", "target")
    assert needs_draft_model("draft-model") and not needs_draft_model("prompt-lookup")
    groups = expand([Plan(alone, per_category=1, ks=(2, 4)), Plan(alone, prompts=("a1",), ks=(6,), repeats=5)], suite)
    assert [(g.prompt.id, g.repeats) for g in groups] == [("a1", 5), ("b1", 3)]
    assert {c.drafter for g in groups for c in g.cells} == {d for d in DRAFTERS if not needs_draft_model(d)}
    assert {"draft-model", "hybrid", "cross-tokenizer"} <= {d for d in DRAFTERS if needs_draft_model(d)}
    assert {"prompt-lookup", "self"} <= {d for d in DRAFTERS if not needs_draft_model(d)}
    assert sorted(c.k for c in groups[0].cells if c.drafter == "prompt-lookup") == [2, 4, 6]
    assert [p.id for p in select_prompts(Plan(alone, prompts=("b1", "a2")), suite)] == ["b1", "a2"]
    with pytest.raises(ValueError, match="unknown policy"):
        Plan(alone, policies=("sometimes",))
    assert Plan(alone, policies=("constant", "adaptive", "cost")).policies == ("fixed", "heuristic", "cost")


def test_lane_order_rotates_per_repeat():
    jobs = [Job(None, name) for name in "abcd"]
    assert [j.lane for j in rotated(jobs, 0)] == list("abcd")
    assert [j.lane for j in rotated(jobs, 5)] == list("bcda")


def lane(tps, matches=True, engine=None):
    return {"tokens": 10, "seconds": 10 / tps, "tokens_per_s": tps, "engine_seconds": engine,
            "matches_standard": matches, "first_difference": None if matches else 3}


def cell_record(category="code", spec=(12.0, 14.0), peer=(10.0, 10.0), policy="fixed", peer_match=True):
    cell = Cell("s", f"{category}-1", category, 0.0, 10, "draft-model", 4, policy)
    stats = {"alpha": 0.8, "alpha_analytic": 0.7, "tau": 3.36, "tokens_per_round": 3.0, "c": 0.2,
             "verify_cost": 1.5, "predicted_speedup": 1.867, "predicted_speedup_with_verify_cost": 1.462}
    repeats = [{"repeat": r, "loadavg": [1.0, 1.0], "rounds": [[4, 4], [4, 1], [4, 0]], "stats": stats,
                "lanes": {"generate": lane(9.0), "standard": lane(10.0, engine=0.95), "speculative": lane(spec[r]),
                          "hf-assisted": lane(peer[r], peer_match)}} for r in range(2)]
    return {**cell.__dict__, "key": cell.key, "repeats": repeats}


def test_cell_summary_by_hand():
    s = summarize_cell(cell_record())
    assert s["speedup"] == pytest.approx({"median": 1.3, "min": 1.2, "max": 1.4, "n": 2})
    assert s["vs_peer"]["hf-assisted"]["median"] == pytest.approx(1.3)
    assert s["standard_vs_generate"]["median"] == pytest.approx(10 / 9)
    # Recomputed from the rounds [[4, 4], [4, 1], [4, 0]] with alpha 0.8, c 0.2: 3 tau(0.8, 4) / 3 (4c + 1).
    predicted = tau(0.8, 4) / (4 * 0.2 + 1)
    assert s["predicted_speedup"] == pytest.approx(predicted)
    assert s["predicted_speedup_with_verify_cost"] == pytest.approx(tau(0.8, 4) / (4 * 0.2 + 1.5))
    assert s["efficiency"] == pytest.approx(1.3 / predicted)
    assert s["position_acceptance"] == pytest.approx([4 / 6, 2 / 4, 2 / 2, 2 / 2])
    assert s["identical"] == {"generate": True, "speculative": True, "hf-assisted": True}
    assert s["overhead"]["standard"] == pytest.approx(0.05) and s["noise"]["standard"] == 0.0
    adaptive = summarize_cell(cell_record(policy="heuristic"))
    assert adaptive["predicted_speedup"] == pytest.approx(predicted)  # rounds' own lengths, adaptive too
    unmeasured = cell_record()
    for rep in unmeasured["repeats"]:
        rep["stats"] = {**rep["stats"], "c": None}
    assert summarize_cell(unmeasured)["predicted_speedup"] is None  # not a free draft's c = 0


def test_goals_and_differences():
    results = {"cells": [cell_record("code", peer=(13.5, 13.5)), cell_record("explain", peer_match=False)]}
    summaries = [summarize_cell(c) for c in results["cells"]]
    verdicts = {g["goal"]: g["met"] for g in goals(summaries)}
    assert verdicts["standard >= 1.0x model.generate (s)"] is True
    assert verdicts["speculative >= hf-assisted on every cell (s)"] is False  # median 12/13.5, 14/13.5 < 1
    assert verdicts["speculative >= 1.2x hf-assisted on code prompts (s)"] is False
    assert verdicts["efficiency >= 0.9 where predicted > 1 (s)"] is False
    diffs = differences(results)
    assert [(d["lane"], d["first_difference"]) for d in diffs] == [("hf-assisted", 3)] * 2
    rows = table_rows(summaries, ("category",))
    assert [r["category"] for r in rows] == ["code", "explain"] and rows[0]["prompts"] == 1


def test_report_states_misses_with_numbers(tmp_path):
    results = {"meta": {"commands": ["python -m specdec bench"], "started": "now", "finished": "later",
                        "results_path": str(tmp_path / "results.json"), "setups": [{"name": "s", "target": "t"}],
                        "machine": {"cpu": "cpu", "cores": 2, "memory_gib": 1, "threads": 2, "torch": "x",
                                    "transformers": "y", "python": "3", "platform": "p"}},
               "cells": [cell_record("code", peer=(13.0, 13.0))]}
    summaries = [summarize_cell(c) for c in results["cells"]]
    text = report(results, summaries, {}, tmp_path / "report.md", notes="Hand-written analysis.")
    assert "**missed**" in text and "Why the missed goals were missed" in text
    assert "measured it costs 1.50 steps" in text and "## Analysis" in text


def test_auto_goals_judge_the_worst_category_and_transformers_defaults():
    """Issue #22: auto never below 1.0x standard in any category; against transformers' assisted
    defaults, >= 1.2x overall (the median of the categories) and >= 1.0x in every category."""
    def with_defaults(record):
        for repeat in record["repeats"]:
            repeat["lanes"]["hf-assisted-defaults"] = repeat["lanes"].pop("hf-assisted")
        return record

    cells = [with_defaults(cell_record("code", spec=(15.0, 15.0), peer=(10.0, 10.0), policy="cost")),  # 1.5x, 1.5x
             with_defaults(cell_record("explain", spec=(9.5, 9.7), peer=(10.0, 10.0), policy="cost")),  # 0.96x
             cell_record("code", spec=(20.0, 20.0), peer=(10.0, 10.0))]  # not auto: ignored
    summaries = [summarize_cell(c) for c in cells]
    found = {g["goal"]: g for g in goals(summaries)}
    floor = found["auto >= 1.0x standard on every category (s)"]
    assert floor["met"] is False and floor["value"] == pytest.approx(0.96)
    assert floor["detail"]["by_category"] == {"code": 1.5, "explain": 0.96}
    overall = found["auto >= 1.2x hf-assisted-defaults overall (s)"]
    assert overall["met"] is True and overall["value"] == pytest.approx((1.5 + 0.96) / 2)
    every = found["auto >= 1.0x hf-assisted-defaults on every category (s)"]
    assert every["met"] is False and every["value"] == pytest.approx(0.96)
    plain = [summarize_cell(cell_record("code", policy="cost"))]  # no defaults peer: no peer goals
    assert [g["goal"] for g in goals(plain) if "defaults" in g["goal"]] == []


def test_forward_passes_are_counted_whoever_runs_the_model():
    """A draft with a short head runs its body and its own head, not the model's forward: each of its
    passes still counts once, as a full forward (the target's, transformers') does."""
    from specdec.bench.meters import Forwards
    from specdec.engine.kvcache import CachedModel

    target, draft = tiny_model("llama", seed=0, vocab=256), tiny_model("llama", seed=1, vocab=256)
    whole, short = CachedModel(target), CachedModel(draft, head_rows=64)
    assert short.head is not None
    counter = Forwards(target, draft)
    whole.logits([3, 5, 7], 1)
    for ids in ([3, 5, 7], [3, 5, 7, 9], [3, 5, 7, 9, 11]):
        short.logits(ids, 1)
    with torch.no_grad():
        target(torch.tensor([[3, 5]]))
    assert counter.close() == {"target_forwards": 2, "draft_forwards": 3}


def test_the_machine_names_its_vector_extension(monkeypatch):
    """Two hosts both called "AMD EPYC" ran these models 2-3x apart (AVX-512 or not): a report says which,
    and whether the CPU has AMX's matrix units."""
    from specdec.bench import meters

    def cpuinfo(flags: str):
        return lambda path: f"model name\t: AMD EPYC\nflags\t\t: fpu sse2 {flags}\n" if path == "/proc/cpuinfo" else ""

    monkeypatch.setattr(meters, "_read", cpuinfo("avx avx2 avx512f avx512bw"))
    assert meters.machine()["cpu"] == "AMD EPYC (AVX-512)"
    monkeypatch.setattr(meters, "_read", cpuinfo("avx avx2"))
    assert meters.machine()["cpu"] == "AMD EPYC (AVX2)"
    monkeypatch.setattr(meters, "_read", cpuinfo("avx avx2 avx512f amx_bf16 amx_tile amx_int8"))
    assert meters.machine()["cpu"] == "AMD EPYC (AVX-512, AMX)"
    monkeypatch.setattr(meters, "_read", cpuinfo("neon"))
    assert meters.machine()["cpu"] == "AMD EPYC"


def test_a_grid_is_checked_before_any_model_loads(folders, tmp_path):
    """A k or temperature out of range, auto under a policy other than its own, a grid with no cell
    to run, or a --notes file that is not there: each refused by name before loading, not after the
    grid has run (or, for auto, run under a label it did not run under)."""
    base = ["--target", str(folders / "no-such-model"), "--suite", str(folders / "suite.jsonl"),
            "--out", str(tmp_path / "out"), "--no-png", "--max-new-tokens", "4", "--repeats", "1"]
    for extra, message in [(["--k", "0"], r"k must be an integer in \[1, 16\], got 0"),
                           (["--temperatures", "-1"], "temperature must be"),
                           (["--drafters", "auto", "--policies", "fixed"], "auto runs the cost policy"),
                           (["--drafters", "draft-model"], r"no cells to run: draft-model need\(s\) a draft model \(--draft\)"),
                           (["--drafters", "prompt-lookup", "--notes", str(tmp_path / "none.md")],
                            "--notes .*none.md: no such file")]:
        with pytest.raises(SystemExit, match=message):
            bench.main(base + extra)
    assert not (tmp_path / "out").exists()


def test_a_rerun_on_other_models_does_not_take_the_cells_it_finds(first_run, folders):
    """Cells are keyed by setup name: a rerun into the same folder with an int8 draft (or on other
    kernels, or other layers) would have counted the fp32 draft's cells as its own. It is refused,
    naming what differs."""
    out, _ = first_run
    with pytest.raises(SystemExit, match="tiny measured with draft_quantize None and this run has draft_quantize 'int8'"):
        run_bench(folders, out, "--draft-quantize", "int8")


def test_a_rerun_that_names_other_kernels_is_refused_before_loading(first_run, folders):
    """Every cell finished, a rerun loads nothing: asking for the eager engine where the results
    were measured on another is refused from the options alone."""
    out, results = first_run
    engine = results["meta"]["setups"][0]["engine"]
    other = "fast" if engine == "eager" else "eager"
    with pytest.raises(SystemExit, match=f"engine '{engine}' and this run has engine '{other}'"):
        run_bench(folders, out, "--engine", other)
