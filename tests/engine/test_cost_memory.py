"""The cost policy remembers across processes: a pair's cost models persist as versioned JSON, and a
new pair starts from them only when its own verify-cost table says it is the same machine."""
import json

import pytest

from helpers import loaded, perturbed, tiny_model, word_tokenizer
from specdec.engine import pair as pair_module
from specdec.engine.config import Sampling, Speculation
from specdec.engine.pair import COSTS_VERSION, Pair, Request
from specdec.engine.drafters.base import Draft
from specdec.engine.policy import CostModel, CostPolicy
from specdec.engine.verify_costs import VerifyCosts

pytestmark = pytest.mark.usefixtures("one_thread")
TABLE = VerifyCosts((1, 2, 3, 5, 9, 17, 33), (0.010, 0.011, 0.012, 0.013, 0.015, 0.02, 0.03), context=8)


@pytest.fixture(scope="module")
def models():
    target = tiny_model("llama", seed=7)
    return target, perturbed(target, 0.02), word_tokenizer(96)


def new_pair(models, table=TABLE, monkeypatch=None, draft_step=0.004):
    """A pair whose warm-up 'measures' the given verify-cost table and draft step."""
    target, draft, tokenizer = models
    pair = Pair(loaded(target, tokenizer), loaded(draft, tokenizer, "draft"))
    monkeypatch.setattr(pair_module, "measure_verify_costs", lambda lane, ids: table)
    monkeypatch.setattr(pair_module, "measure_draft_step", lambda model, ids: draft_step)
    return pair


REQUEST = Request("w5 w9 w14 w5 w9 w14 w22", max_new_tokens=24, raw=True, drafter="draft-model",
                  spec=Speculation(k=4, policy="cost"), sampling=Sampling())


def saved_run(models, path, monkeypatch):
    """A pair that remembers its costs at path, warmed up and run once on REQUEST (which saves them),
    and what it saved."""
    first = new_pair(models, monkeypatch=monkeypatch)
    first.remember_costs(path)
    first.warm_up(REQUEST)
    list(first.speculative(REQUEST))
    return first, json.loads(path.read_text())


def test_a_cost_model_survives_its_json():
    policy = CostPolicy(16, CostModel())
    policy.costs.seed_verify(TABLE)
    for costs in (policy.costs,):
        costs.source("draft-model").observe(4, 3, 0.002)
        costs.source("draft-model").calibration.observe((0.9, 0.8, 0.95, 0.2), 3)
    copy = CostModel()
    copy.restore(json.loads(json.dumps(policy.costs.to_json())))
    assert copy.to_json() == policy.costs.to_json()
    assert CostPolicy(16, copy).choose(["draft-model"]) == policy.choose(["draft-model"])


def test_a_new_pair_starts_from_what_the_last_one_learned(models, tmp_path, monkeypatch):
    path = tmp_path / "costs.json"
    first, saved = saved_run(models, path, monkeypatch)
    key = first.setup_key(REQUEST)
    assert saved["version"] == COSTS_VERSION and saved["costs"][key]["sources"]["draft-model"]["kept"]
    second = new_pair(models, monkeypatch=monkeypatch)
    second.remember_costs(path)
    second.warm_up(REQUEST)
    assert second.costs_status == "restored"
    fresh = new_pair(models, monkeypatch=monkeypatch)
    fresh.warm_up(REQUEST)
    # What the first learned, position by position, not what a warm-up alone teaches.
    assert evidence(second) == [round(w, 6) for w, _ in saved["costs"][key]["sources"]["draft-model"]["kept"]]
    assert evidence(second) != evidence(fresh) and sum(evidence(fresh)) > 0
    # No measuring round: the restored draft cost and the seeded table let it choose at once.
    first_round = next(iter(second.speculative(REQUEST)))
    assert "measuring" not in first_round.reason


def test_a_new_process_knows_which_sources_are_free():
    """A free source (prompt lookup) is known as free from a new process's first round, before the
    loop has asked it for a free draft: it needs no measuring round and its reach restarts on the new
    text (4), not the depth its earlier rounds reached (here 12, so 24)."""
    learned = CostModel()
    learned.seed_verify(TABLE)
    learned.observe_free({"prompt-lookup": Draft([5, 6, 7], None)}, [5])
    for _ in range(4):
        learned.source("prompt-lookup").observe(12, 12, None)
    restored = CostModel()
    restored.restore(json.loads(json.dumps(learned.to_json())))
    restored.start_request()
    assert restored.free == {"prompt-lookup"}
    policy = CostPolicy(32, restored)
    assert policy.depth_reach("prompt-lookup") == CostPolicy.MIN_REACH
    assert "measuring" not in policy.choose(["prompt-lookup"]).reason
    forgot = CostModel()  # a file without the free sources: the reach its rounds reached
    forgot.restore({**learned.to_json(), "free": []})
    forgot.start_request()
    assert CostPolicy(32, forgot).depth_reach("prompt-lookup") == 24


def test_another_machine_keeps_the_acceptance_and_measures_its_timings(models, tmp_path, monkeypatch):
    """A verify-cost table that disagrees by more than a factor of 2 (every pass three times slower,
    the draft's too: another kind of machine) takes over what the pair and the text decided,
    acceptance by position, and none of the timings: the draft's cost is measured again."""
    path = tmp_path / "costs.json"
    first, data = saved_run(models, path, monkeypatch)
    saved = data["costs"][first.setup_key(REQUEST)]
    slower = VerifyCosts(TABLE.widths, tuple(3 * s for s in TABLE.seconds), 8)
    second = new_pair(models, slower, monkeypatch, draft_step=3 * 0.004)
    second.remember_costs(path)
    second.warm_up(REQUEST)
    assert second.costs_status.startswith("acceptance only") and "disagrees" in second.costs_status
    assert evidence(second) == [round(w, 6) for w, _ in saved["sources"]["draft-model"]["kept"]]
    model = second.cost_model(REQUEST)
    assert model.source("draft-model").draft.mean is None  # its cost per token: to be measured here
    assert model.pass_seconds(1) == pytest.approx(slower.seconds[0])  # its own table, not the saved one
    assert "measuring" in next(iter(second.speculative(REQUEST))).reason


def test_a_slower_run_of_the_same_machine_scales_the_saved_draft_costs(models, tmp_path, monkeypatch):
    """A table that disagrees by a factor within 2 (the 2-core host under another load, or an AVX2
    host beside an AVX-512 one) is the same kind of machine: the saved draft cost, scaled by how much
    slower a step runs, prices the draft model at once, worth one observation, so no round is spent
    measuring it; its acceptance is the saved one, its pass times its own table's."""
    path = tmp_path / "costs.json"
    first, data = saved_run(models, path, monkeypatch)
    saved = data["costs"][first.setup_key(REQUEST)]["sources"]["draft-model"]["draft"]
    slower = VerifyCosts(TABLE.widths, tuple(1.35 * s for s in TABLE.seconds), 8)
    second = new_pair(models, slower, monkeypatch, draft_step=1.35 * 0.004)
    second.remember_costs(path)
    second.warm_up(REQUEST)
    assert second.costs_status.startswith("acceptance, and draft costs scaled by 1.35 (the draft's step)")
    assert "disagrees" in second.costs_status
    draft = second.cost_model(REQUEST).source("draft-model").draft
    assert draft.mean == pytest.approx(1.35 * saved[1] / saved[0]) and draft.weight == pytest.approx(CostModel.SCALED_DRAFT_WEIGHT)
    assert second.cost_model(REQUEST).pass_seconds(1) == pytest.approx(slower.seconds[0])
    assert "measuring" not in next(iter(second.speculative(REQUEST))).reason


def test_saved_draft_costs_scale_by_the_drafts_own_step(models, tmp_path, monkeypatch):
    """The target's step and the draft's need not change alike (an int8 draft runs other kernels than
    an fp32 target): the saved draft cost scales by the draft's step as both processes timed it at
    warm-up, by the target's only where the file has no draft step (saved before it was timed), and
    not at all past a factor of 2."""
    path = tmp_path / "costs.json"
    first, data = saved_run(models, path, monkeypatch)
    assert data["draft_step"] == pytest.approx(0.004)
    saved = data["costs"][first.setup_key(REQUEST)]["sources"]["draft-model"]["draft"]
    much_slower = VerifyCosts(TABLE.widths, tuple(1.9 * s for s in TABLE.seconds), 8)

    def draft_mean(draft_step: float) -> tuple[Pair, float | None]:
        pair = new_pair(models, much_slower, monkeypatch, draft_step)
        pair.remember_costs(path)
        pair.warm_up(REQUEST)
        return pair, pair.cost_model(REQUEST).source("draft-model").draft.mean

    pair, mean = draft_mean(1.1 * 0.004)
    assert mean == pytest.approx(1.1 * saved[1] / saved[0]) and "1.10 (the draft's step)" in pair.costs_status
    pair, mean = draft_mean(2.5 * 0.004)
    assert pair.costs_status.startswith("acceptance only") and pair.cost_model(REQUEST).source("draft-model").draft.weight < 1
    del data["draft_step"]
    path.write_text(json.dumps(data))
    pair, mean = draft_mean(1.1 * 0.004)
    assert mean == pytest.approx(1.9 * saved[1] / saved[0]) and "1.90 (the target's step)" in pair.costs_status


def test_a_speed_ratio_counts_only_within_a_factor():
    assert TABLE.speed_ratio(VerifyCosts(TABLE.widths, tuple(1.5 * s for s in TABLE.seconds), 8)) == pytest.approx(1.5)
    assert TABLE.speed_ratio(VerifyCosts(TABLE.widths, tuple(s / 1.9 for s in TABLE.seconds), 8)) == pytest.approx(1 / 1.9)
    assert TABLE.speed_ratio(VerifyCosts(TABLE.widths, tuple(3 * s for s in TABLE.seconds), 8)) is None


def test_a_folder_that_cannot_be_written_costs_the_run_nothing(models, tmp_path, monkeypatch):
    """The app keeps serving where its costs cannot be saved (a read-only disk): the run ends with its
    answer, the pair stops trying and says why."""
    blocker = tmp_path / "a file"
    blocker.write_text("")
    pair = new_pair(models, monkeypatch=monkeypatch)
    pair.remember_costs(blocker / "costs.json")  # its folder is a file: mkdir fails
    pair.warm_up(REQUEST)
    assert sum(len(r.tokens) for r in pair.speculative(REQUEST)) > 0
    assert "not saved" in pair.costs_status and pair.costs_file is None


@pytest.mark.parametrize("spoil", ["another version", "broken"])
def test_costs_from_elsewhere_are_ignored(models, tmp_path, monkeypatch, spoil):
    path = tmp_path / "costs.json"
    first, _ = saved_run(models, path, monkeypatch)
    table = TABLE
    if spoil == "another version":
        path.write_text(json.dumps({**json.loads(path.read_text()), "version": COSTS_VERSION + 1}))
    else:
        path.write_text(path.read_text()[:40])
    second, fresh = new_pair(models, table, monkeypatch), new_pair(models, table, monkeypatch)
    second.remember_costs(path)
    second.warm_up(REQUEST)
    fresh.warm_up(REQUEST)
    assert evidence(second) == evidence(fresh)  # only what its own warm-up showed it
    expected = {"another version": "another version", "broken": "unreadable"}[spoil]
    assert expected in second.costs_status and fresh.costs_status == "none saved"


def evidence(pair):
    """How many rounds' worth of acceptance the pair's greedy cost model holds, by position."""
    return [round(kept.weight, 6) for kept in pair.cost_model(REQUEST).source("draft-model").kept]


def test_verify_tables_agree_only_within_tolerance():
    slower = VerifyCosts(TABLE.widths, tuple(1.1 * s for s in TABLE.seconds), 8)
    bent = VerifyCosts(TABLE.widths, TABLE.seconds[:4] + (0.03, 0.04, 0.05), 8)
    # Another host: the Qwen pair's decode step is 0.24 s on an AVX-512 EPYC, 0.33 s on an AVX2 one.
    other_host = VerifyCosts(TABLE.widths, tuple(1.35 * s for s in TABLE.seconds), 8)
    assert TABLE.agrees_with(slower) and not TABLE.agrees_with(bent) and not TABLE.agrees_with(other_host)
    assert VerifyCosts.from_json(TABLE.to_json()) == TABLE


def test_setups_that_draft_differently_keep_their_own_evidence(models, monkeypatch):
    """Issue #24: a self run with other layers, or a tree with another shape, must not start from
    another setup's acceptance; the target's pass times are one table for all."""
    from dataclasses import replace

    from specdec.engine.config import TreeShape

    pair = new_pair(models, monkeypatch=monkeypatch)
    pair.warm_up(REQUEST)
    base = replace(REQUEST, drafter="self", draft_layers=(0,))
    other_layers, sampled = replace(base, draft_layers=(1,)), replace(base, sampling=Sampling(temperature=1.0))
    tree = replace(REQUEST, drafter="lookup-tree")
    other_tree = replace(tree, spec=replace(tree.spec, tree=TreeShape(8, 2)))
    keys = {pair.setup_key(r) for r in (REQUEST, base, other_layers, sampled, tree, other_tree)}
    assert len(keys) == 6
    list(pair.speculative(base))
    assert pair.cost_model(base).source("self").kept and not pair.cost_model(other_layers).source("self").kept
    assert pair.cost_model(other_layers).verify is pair.cost_model(base).verify
    # A width no run here has passed over keeps the seeded table's value (the self run's own passes,
    # 2 to 5 tokens wide since its first draft measures to k = 4, moved those widths' entries).
    assert pair.cost_model(other_tree).pass_seconds(33) == pytest.approx(TABLE.at(33))


def test_a_fresh_verify_table_wins_over_a_saved_one(models, tmp_path, monkeypatch):
    """Restored acceptance, yes; restored pass times only where this machine measured none now."""
    path = tmp_path / "costs.json"
    first, _ = saved_run(models, path, monkeypatch)
    slower = VerifyCosts(TABLE.widths, tuple(1.12 * s for s in TABLE.seconds), 8)  # agrees within 15%
    second = new_pair(models, slower, monkeypatch)
    second.remember_costs(path)
    second.warm_up(REQUEST)
    assert sum(evidence(second)) > 0
    assert second.cost_model(REQUEST).verify[33].mean == pytest.approx(slower.at(33))


def test_a_saved_width_between_a_fresh_tables_widths_is_read_off_its_line():
    """A width learned on its own passes keeps the speed of the last time it was used. A process
    that seeded its own warm-up table takes no saved pass time, not even at a width the table
    lacks: it reads v(4) off the line between its fresh v(3) and v(5), where the saved passes ran
    long in another hour. Without a table of its own, the saved pass times are all it has."""
    learned = CostModel()
    learned.seed_verify(TABLE)
    for _ in range(20):
        learned.learn_pass(4, 9.0)
    saved = json.loads(json.dumps(learned.to_json()))
    fresh = VerifyCosts(TABLE.widths, tuple(1.1 * s for s in TABLE.seconds), 8)
    seeded = CostModel()
    seeded.seed_verify(fresh)
    seeded.restore(saved)
    assert 4 not in seeded.verify and seeded.pass_seconds(4) == pytest.approx(fresh.at(4))
    unseeded = CostModel()
    unseeded.restore(saved)
    assert unseeded.pass_seconds(4) == pytest.approx(learned.pass_seconds(4))
    assert learned.pass_seconds(4) > 2 * fresh.at(4)  # (each long pass clipped to OUTLIER x the estimate)


def test_the_speculative_warm_up_learns_from_text_of_its_own(models, monkeypatch):
    """The warm-up is often the request about to be timed: its speculative lane drafts on
    WARM_UP_PROMPT, so the cost model a timed run starts from is the same whichever request warmed
    it, and holds evidence (a fresh process's first request is not priced at the prior alone)."""
    other = Request("w40 w41 w40 w41 w40 w41 w40", max_new_tokens=24, raw=True, drafter="draft-model",
                    spec=Speculation(k=4, policy="cost"), sampling=Sampling())
    first, second = new_pair(models, monkeypatch=monkeypatch), new_pair(models, monkeypatch=monkeypatch)
    first.warm_up(REQUEST)
    second.warm_up(other)
    assert evidence(first) == evidence(second) and sum(evidence(first)) > 0
    assert acceptance(first, REQUEST) == acceptance(second, other)
    # What the warm-up did before: the request's own first tokens, which this request's differ from.
    leaked = new_pair(models, monkeypatch=monkeypatch)
    leaked.measure_verify_costs(leaked.prompt_ids(REQUEST))
    list(leaked.speculative(pair_module.replace(REQUEST, max_new_tokens=4)))
    assert acceptance(leaked, REQUEST) != acceptance(first, REQUEST)


def acceptance(pair, request):
    """What the pair's cost model has learned of the draft model's acceptance (not its timings)."""
    costs = pair.cost_model(request).source("draft-model")
    return [(round(kept.weight, 6), round(kept.mean or 0.0, 6)) for kept in costs.kept], costs.calibration.to_json()
