"""Spec-Bench in the bench: its format and tasks, the leaderboard's arithmetic on answers whose result
is known, and a two-turn conversation answered identically by every greedy lane."""
import json
from pathlib import Path
from types import SimpleNamespace

from dataclasses import replace

import pytest

from helpers import loaded, perturbed, tiny_model, word_tokenizer
from specdec.bench import command, spec_bench, spec_bench_run
from specdec.engine.config import Sampling, Speculation
from specdec.engine.pair import Pair, Request

pytestmark = pytest.mark.usefixtures("one_thread")


def test_the_sample_is_in_spec_benchs_format_with_every_task():
    assert spec_bench.is_spec_bench(spec_bench.SAMPLE)
    questions = spec_bench.read_questions(spec_bench.SAMPLE)
    assert {q.task for q in questions} == set(spec_bench.TASKS)
    assert all(len(q.turns) == 2 for q in questions if q.task == "Multi-turn Conversation")
    assert {q.category for q in questions if q.task == "Multi-turn Conversation"} == set(spec_bench.MT_BENCH)


def test_the_long_sample_asks_a_summary_and_a_rag_answer_at_spec_benchs_prompt_lengths():
    """Spec-Bench's summaries and RAG questions read whole articles and retrieved passages (hundreds of
    words); the short sample's read two or three sentences, which hides what a long prompt costs."""
    questions = spec_bench.read_questions(spec_bench.LONG_SAMPLE)
    assert sorted(q.task for q in questions) == ["Retrieval-augmented Generation", "Summarization"]
    assert all(len(q.turns[0].split()) > 500 for q in questions)
    assert all(len(q.turns[0].split()) < 120 for q in spec_bench.read_questions(spec_bench.SAMPLE)
               if q.task in ("Summarization", "Retrieval-augmented Generation"))


def test_categories_map_onto_the_six_tasks_as_spec_bench_does():
    assert spec_bench.task_of("roleplay") == spec_bench.task_of("coding") == "Multi-turn Conversation"
    assert spec_bench.task_of("qa") == "Question Answering" and spec_bench.task_of("rag") == "Retrieval-augmented Generation"
    assert spec_bench.task_of("math_reasoning") == "Mathematical Reasoning" and spec_bench.task_of("math") != "Mathematical Reasoning"


def test_the_projects_own_format_is_not_taken_for_spec_benchs(tmp_path):
    own = tmp_path / "own.jsonl"
    own.write_text(json.dumps({"id": "a", "category": "code", "prompt": "x"}) + "\n")
    assert not spec_bench.is_spec_bench(own)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question_id": 1, "category": "qa", "turns": []}) + "\n")
    with pytest.raises(ValueError, match="bad.jsonl:1: .*non-empty list of non-empty turns"):
        spec_bench.read_questions(bad)


def test_a_sample_is_drawn_per_category_with_a_seed_not_the_first_n():
    questions = [spec_bench.Question(f"{c}-{i}", c, ("t",)) for c in ("qa", "rag") for i in range(20)]
    first = spec_bench.sample(questions, 3, seed=1)
    assert first == spec_bench.sample(questions, 3, seed=1) != spec_bench.sample(questions, 3, seed=2)
    assert [q.category for q in first] == ["qa"] * 3 + ["rag"] * 3
    assert [q.id for q in first[:3]] != ["qa-0", "qa-1", "qa-2"]
    assert spec_bench.sample(questions, None) == questions


def answer(qid, category, method, tokens, seconds, passes=None):
    return {"question_id": qid, "category": category, "method": method,
            "turns": [{"new_tokens": tokens, "seconds": seconds, "accept_lengths": passes}]}


def test_the_leaderboard_arithmetic_is_speed_py_s():
    """Baseline 10 tok/s on q1 and 20 on q2 (both qa), 5 on q3 (writing). Method: 20, 20, 10 tok/s.
    QA: mean(20, 20) / mean(10, 20) = 20 / 15; conversation 10 / 5 = 2; overall mean(20, 20, 10) /
    mean(10, 20, 5) = (50/3) / (35/3) = 50/35; mean accepted tokens over every pass: (1+3+2+2)/4."""
    answers = [answer("q1", "qa", "standard", 10, 1.0), answer("q2", "qa", "standard", 40, 2.0),
               answer("q3", "writing", "standard", 5, 1.0),
               answer("q1", "qa", "m", 20, 1.0, [1, 3]), answer("q2", "qa", "m", 40, 2.0, [2]),
               answer("q3", "writing", "m", 10, 1.0, [2])]
    base, method = spec_bench.leaderboard(answers)
    assert base.method == "standard" and base.speedups["Overall"] == pytest.approx(1.0) and base.mean_accepted == 1.0
    assert method.speedups["Question Answering"] == pytest.approx(20 / 15)
    assert method.speedups["Multi-turn Conversation"] == pytest.approx(2.0)
    assert method.speedups["Overall"] == pytest.approx(50 / 35) and method.speedups["Translation"] is None
    assert method.mean_accepted == pytest.approx(2.0) and method.ratios == pytest.approx((2.0, 1.0, 2.0))
    text = spec_bench.table([base, method], "caption")
    assert "| m | 2.00x | – | – | 1.33x | – | – | 2.00 | **1.43x** | 2.00x (1.00–2.00) |" in text


def test_two_turn_conversations_are_answered_identically_by_every_greedy_lane():
    tokenizer = word_tokenizer(96)
    target = tiny_model("llama", seed=7)
    pair = Pair(loaded(target, tokenizer), loaded(perturbed(target, 0.03), tokenizer, "draft"))
    question = spec_bench.Question("c1", "coding", ("w5 w9 w14 w5 w9", "w22 w31 w5"))
    base = Request("", 24, Sampling(), Speculation(k=4), raw=True)
    lanes = [m for m in spec_bench_run.methods(True, 4) if not m.peer]
    tables = {}
    answers = spec_bench_run.answer_question(pair, question, lanes, base, tables)
    assert {a["method"] for a in answers} == {"standard", *(m.label for m in lanes)}
    # Each lane drafted recycling from its own table, never from one an earlier lane filled this turn.
    assert set(tables) == {m.label for m in lanes if not m.cold} and tables["token recycling (k=4)"].filled > 0
    assert pair.recycling_table().filled == 0 and any(m.cold for m in lanes)
    assert all(a["identical"] and len(a["turns"]) == 2 for a in answers)
    second = Request("w22 w31 w5", 24, raw=True, history=(("w5 w9 w14 w5 w9", "earlier answer"),))
    assert pair.prompt_ids(second)[: len(pair.prompt_ids(Request("w5 w9 w14 w5 w9", 24, raw=True)))] == \
        pair.prompt_ids(Request("w5 w9 w14 w5 w9", 24, raw=True))  # the history comes first


def test_repeats_are_interleaved_and_each_starts_from_what_the_lanes_knew_before_the_turn():
    """Two repeats a turn: the turn's seconds are one of its repeats' (the lower middle), every repeat
    is kept, and the second repeat drafts token recycling from the table as it was before the turn:
    a greedy lane at a fixed k then drafts and is accepted exactly as in the first. Drafting from the
    table the first repeat filled with this very answer, it would be accepted more."""
    tokenizer = word_tokenizer(96)
    target = tiny_model("llama", seed=7)
    pair = Pair(loaded(target, tokenizer), loaded(perturbed(target, 0.03), tokenizer, "draft"))
    question = spec_bench.Question("c1", "coding", ("w5 w9 w14 w5 w9 w22", "w22 w31 w5"))
    base = Request("", 24, Sampling(), Speculation(k=4), raw=True)
    lanes = [m for m in spec_bench_run.methods(True, 4) if m.label in ("token recycling (k=4)", "auto")]
    answers = spec_bench_run.answer_question(pair, question, lanes, base, {}, repeats=2)
    for answer in answers:
        assert answer["identical"] and len(answer["turns"]) == 2
        for turn in answer["turns"]:
            repeats = turn["repeats"]
            assert len(repeats) == 2 and turn["seconds"] == min(r["seconds"] for r in repeats)
    recycling = next(a for a in answers if a["method"] == "token recycling (k=4)")
    for turn in recycling["turns"]:
        first, second = (r["accept_lengths"] for r in turn["repeats"])
        assert first == second
        # Each round's drafter and draft size, one a round, as the tokens per pass are.
        for repeat in turn["repeats"]:
            assert len(repeat["drafts"]) == len(repeat["accept_lengths"])
            assert all(d == "plain" or d.startswith("recycling") for d in repeat["drafts"])
    # Without the restore the second repeat reads the first's answer from the table.
    table = pair.new_recycling_table()
    request = replace(base, prompt=question.turns[0])
    first = spec_bench_run.timed_turn(pair, lanes[0], request, table)[0]["accept_lengths"]
    again = spec_bench_run.timed_turn(pair, lanes[0], request, table)[0]["accept_lengths"]
    assert len(again) < len(first)


def test_the_report_states_its_setup(tmp_path):
    results = {"meta": {"target": "t", "draft": None, "draft_quantize": None, "device": "cpu", "dtype": "float32",
                        "engine": "fast", "machine": {"cpu": "a CPU", "cores": 2}, "temperature": 0.0,
                        "max_new_tokens": 64, "questions": 1, "suite": "s.jsonl", "per_task": {"Translation": 1},
                        "per_category": 2, "sample_seed": 0},
               "answers": [answer("q", "translation", "standard", 4, 1.0), answer("q", "translation", "x", 4, 0.5, [2])]}
    text = spec_bench_run.report(results)
    assert "t (no draft model); cpu, float32, engine fast" in text and "64 new tokens" in text and "not a like-for-like" in text
    assert "a CPU, 2 cores, our standard decoding 4.00 tokens/s;" in text  # 4 tokens in 1 s: which host it was


def test_a_sampled_run_has_its_own_report_section_beside_the_greedy_one():
    meta = {"target": "q", "draft": "d", "draft_quantize": "int8", "temperature": 0.0}
    assert spec_bench_run.section_key(meta) == "q + d (int8)"
    assert spec_bench_run.section_key({**meta, "temperature": 0.7}) == "q + d (int8), temperature 0.7"
    assert spec_bench_run.section_key({"target": "s", "draft": None, "temperature": 0.7}) == "s alone, temperature 0.7"


def test_a_leaderboard_lands_in_the_report_as_its_pairs_section_and_stays(tmp_path):
    """Issue #21: a Spec-Bench run with --report docs/BENCHMARKS.md puts its table into that file as
    its pair's section: a second run of the pair replaces it, another pair's is added, and the grid's
    own rewrite of the report keeps them all."""
    from specdec.bench.report_sections import keep_sections, put_section, sections

    report = tmp_path / "BENCHMARKS.md"
    report.write_text("# Benchmarks\n\ngrid table v1\n")
    put_section(report, "q + d", "## Spec-Bench: q + d\n\n| first |")
    put_section(report, "s alone", "## Spec-Bench: s alone\n\n| other |")
    put_section(report, "q + d", "## Spec-Bench: q + d\n\n| second |")
    text = report.read_text()
    assert text.startswith("# Benchmarks\n\ngrid table v1\n") and "| first |" not in text
    assert list(sections(text)) == ["q + d", "s alone"] and "| second |" in text and "| other |" in text
    rewritten = keep_sections(report, "# Benchmarks\n\ngrid table v2\n")
    assert "grid table v1" not in rewritten and sections(rewritten) == sections(text)
    fresh = tmp_path / "new.md"
    put_section(fresh, "q + d", "| alone |")
    assert fresh.read_text() == "<!-- spec-bench: q + d -->\n| alone |\n<!-- /spec-bench: q + d -->\n"


def test_the_transformers_peer_samples_with_the_runs_own_settings(monkeypatch):
    """A sampled run's peer lane samples too, at the run's temperature, top-p and top-k, seeded: the
    same seed gives the same answer; greedy runs stay greedy."""
    tokenizer = word_tokenizer(96)
    target = tiny_model("llama", seed=7)
    pair = Pair(loaded(target, tokenizer), loaded(perturbed(target, 0.03), tokenizer, "draft"))
    calls, generate = [], pair.target.model.generate
    monkeypatch.setattr(pair.target.model, "generate", lambda *a, **kw: (calls.append(kw), generate(*a, **kw))[1])
    peer = spec_bench_run.Method("transformers assisted (defaults)", peer=True)
    sampled = Request("w5 w9 w14", 16, Sampling(temperature=0.7, top_p=0.9, top_k=20, seed=3), raw=True)
    first = spec_bench_run.timed_turn(pair, peer, sampled)[1]
    assert spec_bench_run.timed_turn(pair, peer, sampled)[1] == first
    assert {k: calls[0][k] for k in ("do_sample", "temperature", "top_p", "top_k")} == \
        {"do_sample": True, "temperature": 0.7, "top_p": 0.9, "top_k": 20}
    greedy = spec_bench_run.timed_turn(pair, peer, Request("w5 w9 w14", 16, raw=True))[1]
    assert calls[-1]["do_sample"] is False and "temperature" not in calls[-1]
    assert greedy == [e.token for e in pair.standard(Request("w5 w9 w14", 16, raw=True))]


def test_a_run_can_take_a_subset_of_the_sample_by_question_id(tmp_path):
    """--prompts picks questions of the sample by id (a slow setup, such as the eager engine's peers,
    runs a few); the results say which; an id the sample lacks is refused by name."""
    suite = tmp_path / "sb.jsonl"
    rows = [("q1", "qa", ["w5 w9 w14 w5 w9"]), ("q2", "translation", ["w7 w3 w40"]), ("q3", "rag", ["w60 w5"])]
    suite.write_text("".join(json.dumps({"question_id": i, "category": c, "turns": t}) + "\n" for i, c, t in rows))
    pair = Pair(loaded(tiny_model("llama", seed=7), word_tokenizer(96)))
    args = SimpleNamespace(suite=str(suite), per_category=None, sample_seed=0, prompts=("q3", "q1"), temperatures=None,
                           max_new_tokens=6, drafters=("prompt-lookup",), repeats=1, k=None, policies=None)
    results = spec_bench_run.run(args, spec_bench_run.chosen_questions(args), pair, log=lambda message: None)
    assert sorted({a["question_id"] for a in results["answers"]}) == ["q1", "q3"]
    assert results["meta"]["questions"] == 2 and results["meta"]["prompts"] == ["q3", "q1"]
    assert "every question" in spec_bench_run.caption(results["meta"])
    with pytest.raises(ValueError, match="--prompts: q9 not in this sample"):
        spec_bench_run.chosen_questions(replace_args(args, prompts=("q9",)))


def test_a_grid_option_given_to_a_spec_bench_run_is_refused_by_name(tmp_path):
    """--fresh, --quick, --wait and the like mean something to the grid only: a Spec-Bench run refuses
    them by name before any model loads, rather than ignore them; its own options pass."""
    suite = tmp_path / "sb.jsonl"
    suite.write_text(json.dumps({"question_id": 1, "category": "qa", "turns": ["?"]}) + "\n")
    base = ["--suite", str(suite), "--out", str(tmp_path / "out")]
    for extra in (["--fresh"], ["--quick"], ["--wait", "30"], ["--no-png"], ["--fresh", "--retries", "3"]):
        with pytest.raises(SystemExit, match=f"error: {extra[0]}.*the grid's, not a Spec-Bench run's"):
            command.main(base + extra)
    parser = command.build_parser()
    command.check_spec_bench_options(parser, parser.parse_args(base + ["--repeats", "2", "--k", "3"]))


def test_a_run_checks_its_options_before_any_model_loads_and_honours_k(tmp_path):
    """A misspelt drafter, a grid option with no meaning here, or two values where the table has room
    for one are refused by name before loading; --k sets the fixed-k rows' k; a row that needs a draft
    model is refused by name when the pair has none."""
    suite = tmp_path / "sb.jsonl"
    suite.write_text(json.dumps({"question_id": 1, "category": "qa", "turns": ["w5 w9 w14 w5 w9 w14"]}) + "\n")
    args = SimpleNamespace(suite=str(suite), per_category=None, sample_seed=0, prompts=None, temperatures=None,
                           max_new_tokens=8, drafters=("prompt-lookup",), repeats=1, k=[2], policies=None)
    for changes, message in [({"drafters": ("prompt-lookp",)}, "unknown prompt-lookp; a Spec-Bench run has"),
                             ({"policies": ["cost"]}, "--policies is the grid's"),
                             ({"k": [2, 4]}, "--k: a Spec-Bench run takes one value"),
                             ({"k": [0]}, "k must be an integer in"),
                             ({"temperatures": [0.0, 0.7]}, "--temperatures: a Spec-Bench run takes one value"),
                             ({"k": [100]}, r"--k: k must be an integer in \[1, 16\]"),
                             ({"temperatures": [-1.0]}, "--temperatures: temperature must be"),
                             ({"max_new_tokens": 0}, "--max-new-tokens must be an integer >= 1, got 0"),
                             ({"repeats": 0}, "--repeats must be an integer >= 1, got 0"),
                             ({"repeats": -2}, "--repeats must be an integer >= 1, got -2"),
                             ({"per_category": 0}, "--per-category must be an integer >= 1, got 0")]:
        with pytest.raises(ValueError, match=message):
            spec_bench_run.check_options(replace_args(args, **changes))
    spec_bench_run.check_options(args)
    pair = Pair(loaded(tiny_model("llama", seed=7), word_tokenizer(96)))
    results = spec_bench_run.run(args, spec_bench_run.chosen_questions(args), pair, log=lambda message: None)
    assert {a["method"] for a in results["answers"]} == {"standard", "prompt lookup (k=2)"}
    drafted = [int(d.split(":")[1]) for a in results["answers"] for t in a["turns"] for d in t["drafts"] or []
               if d != "plain"]
    assert drafted and max(drafted) == 2  # the prompt repeats itself: lookup drafts, at most k a round
    for turn in (t for a in results["answers"] if a["method"] != "standard" for t in a["turns"]):
        # fixed k: every round asked for k = 2 (less only where the answer's room cut it), drafting at most that
        lengths = [0 if d == "plain" else int(d.split(":")[1]) for d in turn["drafts"]]
        assert len(turn["caps"]) == len(lengths) and 2 in turn["caps"]
        assert all(n <= cap <= 2 for n, cap in zip(lengths, turn["caps"]))
        assert all(repeat["caps"] == turn["caps"] for repeat in turn["repeats"])
    with pytest.raises(ValueError, match="--drafters draft-model: needs a draft model"):
        spec_bench_run.run(replace_args(args, drafters=("draft-model",)), spec_bench_run.chosen_questions(args),
                           pair, log=lambda message: None)


@pytest.mark.parametrize("line,message", [
    ('{"question_id": 1, "category": "qa", "turns": "Say hi."}', "turns must be a non-empty list"),
    ('{"question_id": 1, "category": "qa" "turns": ["x"]}', r"q.jsonl:2: not valid JSON \(Expecting ',' delimiter, column"),
    ('5', "q.jsonl:2: each line must be a JSON object, got int"),
    ('{"question_id": 1, "category": "qa"}', "q.jsonl:2: .*missing turns"),
    ('{"question_id": 0, "category": "qa", "turns": ["again"]}', "q.jsonl:2: question_id 0 is line 1's too"),
    ('{"question_id": 1, "category": "", "turns": ["x"]}', "category must be a non-empty string"),
])
def test_a_malformed_question_file_is_refused_by_file_line_and_reason(tmp_path, line, message):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"question_id": 0, "category": "qa", "turns": ["fine"]}) + "\n" + line + "\n")
    with pytest.raises(ValueError, match=message):
        spec_bench.read_questions(path)


def test_a_file_whose_first_question_lacks_a_key_is_still_read_as_spec_benchs(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"question_id": 0, "category": "qa"}) + "\n")
    assert spec_bench.is_spec_bench(path)
    with pytest.raises(ValueError, match="q.jsonl:1: .*missing turns"):
        spec_bench.read_questions(path)


def test_a_category_outside_spec_benchs_tasks_gets_a_column_of_its_own():
    answers = [answer("q1", "qa", "standard", 10, 1.0), answer("q2", "poetry", "standard", 10, 1.0),
               answer("q1", "qa", "m", 20, 1.0, [2]), answer("q2", "poetry", "m", 30, 1.0, [3])]
    base, method = spec_bench.leaderboard(answers)
    assert method.speedups["poetry"] == pytest.approx(3.0) and method.speedups["Question Answering"] == pytest.approx(2.0)
    header = spec_bench.table([base, method], "caption").splitlines()[2]
    assert header.index("Retrieval-augmented Generation") < header.index("poetry") < header.index("Overall")


def replace_args(args: SimpleNamespace, **changes) -> SimpleNamespace:
    return SimpleNamespace(**{**vars(args), **changes})


def test_a_run_refuses_a_turn_too_long_before_timing_and_saves_each_question(tmp_path):
    """A turn longer than the model's context is refused by its question before any lane is timed
    (not halfway through a run, with every answer so far lost); a run saves what it has after each
    question; a sampled run records its nucleus (top-p 0.9) in its results and caption."""
    suite = tmp_path / "sb.jsonl"
    rows = [{"question_id": 1, "category": "qa", "turns": ["w5 w9 w14"]},
            {"question_id": 2, "category": "rag", "turns": ["w5 w9", "w7 " * 600]}]
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = SimpleNamespace(suite=str(suite), per_category=None, sample_seed=0, prompts=None, temperatures=None,
                           max_new_tokens=4, drafters=("prompt-lookup",), repeats=1, k=[2], policies=None)
    pair = Pair(loaded(tiny_model("llama", seed=7), word_tokenizer(96)))  # a context of 512 positions
    timed = []
    pair.warm_up = lambda request: timed.append(request)  # noqa: E731 (nothing may run before the check)
    with pytest.raises(ValueError, match="question 2, turn 2: prompt .* exceeds the model's context of 512"):
        spec_bench_run.run(args, spec_bench_run.chosen_questions(args), pair, log=lambda message: None)
    assert not timed
    del pair.warm_up
    saved = []
    short = replace_args(args, suite=str(tmp_path / "ok.jsonl"), temperatures=[0.7])
    Path(short.suite).write_text("".join(json.dumps({**r, "turns": r["turns"][:1]}) + "\n" for r in rows))
    results = spec_bench_run.run(short, spec_bench_run.chosen_questions(short), pair, lambda message: None,
                                 save=saved.append)
    assert [len(s["answers"]) for s in saved] == [2, 4] and saved[-1]["answers"] == results["answers"]
    assert [s["meta"]["questions"] for s in saved] == [1, 2] and saved[0]["meta"]["planned"] == 2
    assert "a partial run: 1 of 2 questions" in spec_bench_run.caption(saved[0]["meta"])
    assert "planned" not in results["meta"] and "partial" not in spec_bench_run.caption(results["meta"])
    assert results["meta"]["top_p"] == 0.9 and "temperature 0.7, top-p 0.9;" in spec_bench_run.caption(results["meta"])


def test_an_output_path_that_cannot_be_written_is_refused_before_a_model_loads(tmp_path):
    suite = tmp_path / "sb.jsonl"
    suite.write_text(json.dumps({"question_id": 1, "category": "qa", "turns": ["?"]}) + "\n")
    (tmp_path / "a_file").write_text("")
    for extra, message in ((["--out", str(tmp_path / "a_file" / "out")], "cannot make the folder"),
                           (["--out", str(tmp_path / "out"), "--report", str(tmp_path)],
                            "a folder; give a Markdown file's path")):
        with pytest.raises(SystemExit, match=message):
            command.main(["--suite", str(suite), "--target", str(tmp_path / "no_model"), *extra])


def test_a_run_stopped_halfway_keeps_its_questions_beside_the_last_complete_results(tmp_path, monkeypatch):
    """Each finished question goes to spec_bench.partial.json; spec_bench.json, an earlier complete
    run's, is replaced only by a run that finishes, which also removes the partial file."""
    suite, out = tmp_path / "sb.jsonl", tmp_path / "out"
    suite.write_text("".join(json.dumps({"question_id": i, "category": "qa", "turns": ["w5 w9 w14"]}) + "\n"
                             for i in (1, 2)))
    out.mkdir()
    (out / "spec_bench.json").write_text('{"earlier": "complete"}')
    args = SimpleNamespace(suite=str(suite), per_category=None, sample_seed=0, prompts=None, temperatures=None,
                           max_new_tokens=4, drafters=("prompt-lookup",), repeats=1, k=[2], policies=None,
                           out=str(out), report=None, report_only=False)
    pair = Pair(loaded(tiny_model("llama", seed=7), word_tokenizer(96)))
    real, answered = spec_bench_run.answer_question, []

    def stops_at_the_second(pair, question, *rest):
        if answered:
            raise ValueError("stopped")
        answered.append(question.id)
        return real(pair, question, *rest)

    monkeypatch.setattr(spec_bench_run, "answer_question", stops_at_the_second)
    with pytest.raises(ValueError, match=r"question 2: stopped \(1 questions before it saved\)"):
        spec_bench_run.main(args, lambda: pair, log=lambda message: None)
    assert json.loads((out / "spec_bench.json").read_text()) == {"earlier": "complete"}
    partial = json.loads((out / "spec_bench.partial.json").read_text())
    assert partial["meta"]["questions"] == 1 and partial["meta"]["planned"] == 2 and len(partial["answers"]) == 2
    monkeypatch.setattr(spec_bench_run, "answer_question", real)
    said: list[str] = []
    spec_bench_run.main(args, lambda: pair, log=said.append)
    assert json.loads((out / "spec_bench.json").read_text())["meta"]["questions"] == 2
    assert not (out / "spec_bench.partial.json").exists()
    # A run into a folder that holds finished results says so before it starts, and whose they are.
    assert any("replaces them" in line and "a file this version cannot read" in line for line in said)
    said.clear()
    spec_bench_run.main(args, lambda: pair, log=said.append)
    assert any("replaces them" in line and "2 questions from" in line for line in said)


def test_every_lane_is_warmed_up_off_the_clock_transformers_too(monkeypatch):
    """transformers' first assisted call in a process pays its one-time costs; like our lanes it
    runs briefly on the first turn before anything is timed, so question 1 does not carry them."""
    tokenizer = word_tokenizer(96)
    target = tiny_model("llama", seed=7)
    pair = Pair(loaded(target, tokenizer), loaded(perturbed(target, 0.03), tokenizer, "draft"))
    peer_calls, real = [], spec_bench_run._peer_turn
    monkeypatch.setattr(spec_bench_run, "_peer_turn",
                        lambda pair, request, *rest: peer_calls.append(request.max_new_tokens) or real(pair, request, *rest))
    args = SimpleNamespace(suite=None, per_category=None, sample_seed=0, prompts=None, temperatures=None,
                           max_new_tokens=6, drafters=("transformers",), repeats=1, k=None, policies=None)
    question = spec_bench.Question("q1", "qa", ("w5 w9 w14 w5 w9",))
    spec_bench_run.run(args, [question], pair, log=lambda message: None)
    assert peer_calls == [4, 6]  # the warm-up's 4 tokens, then the timed turn
