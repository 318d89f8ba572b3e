"""The fast engine (specdec.models.fast): same products as the dense layer, exact decoding on top of
it, memory it does not silently take, and the verify-cost table the cost policy starts from."""
import copy
import time

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from chi_square import chi_square, critical, joint
from helpers import perturbed, tiny_model
from specdec.engine.config import Sampling, Speculation, TreeShape
from specdec.engine.decoding import speculative_decode, standard_decode
from specdec.engine.drafters import make_drafter
from specdec.engine.kvcache import CachedModel
from specdec.engine.policy import CostModel, CostPolicy
from specdec.engine.verify_costs import VerifyCosts, measure_draft_step, measure_verify_costs
from specdec.models import fast, loading

pytestmark = pytest.mark.usefixtures("one_thread")


def packed(model, dense_rows=1):
    """Every linear layer packed; passes over more than dense_rows tokens use the packed kernel."""
    fast.prepack(model, min_weights=0, dense_rows=dense_rows)
    return model


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dense_rows,padded_rows", [(0, ()), (3, ()), (0, (6, 6, 6, 6, 6, 6)), (1, (4, 4, 4, 4, 6, 6))])
def test_fast_linear_computes_the_dense_product_at_every_width(bias, dense_rows, padded_rows):
    """Dense, packed, and packed over zero rows padded to a wider pass whose extra outputs are dropped."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(48, 80, bias=bias)
    layer = fast.FastLinear(linear, dense_rows=dense_rows, padded_rows=padded_rows)
    for shape in [(1, 48), (2, 48), (5, 48), (1, 9, 48), (2, 17, 48), (1, 3, 48), (3, 1, 48)]:
        x = torch.randn(shape)
        with torch.inference_mode():
            assert torch.allclose(layer(x), linear(x), atol=1e-5), shape
    assert layer.weight is linear.weight  # the dense weight is shared, never copied


def test_prepack_takes_large_layers_only_and_keeps_a_tied_head_tied():
    config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True)
    model = LlamaForCausalLM(config).eval()
    assert model.lm_head.weight is model.model.embed_tokens.weight
    large = fast.packable(model, min_weights=8192)  # the MLP (64 x 128) and the head (256 x 64), not 64 x 64
    assert sorted(large) == ["lm_head", "model.layers.0.mlp.down_proj", "model.layers.0.mlp.gate_proj",
                             "model.layers.0.mlp.up_proj"]
    assert fast.packed_bytes(model, 8192) == 4 * (3 * 64 * 128 + 256 * 64)
    assert fast.prepack(model, min_weights=8192, dense_rows=1) == 4
    assert isinstance(model.lm_head, fast.FastLinear) and isinstance(model.model.layers[0].self_attn.q_proj,
                                                                     torch.nn.Linear)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()


def test_calibration_keeps_the_dense_kernel_exactly_as_wide_as_it_is_faster():
    """A stand-in pass whose dense kernels win up to 2 rows and lose above: every layer gets 2."""
    layers = [fast.FastLinear(torch.nn.Linear(16, 16)) for _ in range(3)]

    def run(rows):  # (10 ms apart: a sleep's overshoot on a loaded 2-core host runs to a few ms)
        dense = rows <= layers[0].dense_rows
        time.sleep(0.005 if dense == (rows <= 2) else 0.015)

    assert fast.calibrate_dense_rows(layers, run, widest=4, repeats=2) == 2
    assert [layer.dense_rows for layer in layers] == [2, 2, 2]
    # Where the packed kernels win at once (the AMD EPYC: SmolLM2's step 18 ms against 35), none.
    assert fast.calibrate_dense_rows(layers, lambda rows: time.sleep(0.015 if rows <= layers[0].dense_rows else 0.005),
                                     widest=4, repeats=2) == 0


def test_padding_runs_each_width_at_the_cheapest_from_it_up():
    """A stand-in packed pass that costs 15 ms at every width but 4 (5 ms) and 6 (30 ms), as
    Qwen2.5-1.5B's whole pass on the AMD EPYC costs least at 4-6 rows: passes over 1-3 rows run at 4,
    5 and 6 as they are (nothing wider is cheaper). A cost that grows with the rows pads nothing.
    (The costs differ by 10 ms or more: a sleep's jitter must not decide the plan. At 3 ms a row,
    one CI run on a loaded 2-core AVX2 host padded 1 row to 2.)"""
    layers = [fast.FastLinear(torch.nn.Linear(16, 16)) for _ in range(2)]
    cost = {4: 0.005, 6: 0.03}
    plan = fast.calibrate_padding(layers, lambda rows: time.sleep(cost.get(rows, 0.015)), widest=6, repeats=2)
    assert plan == (4, 4, 4, 4, 5, 6) and all(layer.padded_rows == plan for layer in layers)
    growing = fast.calibrate_padding(layers, lambda rows: time.sleep(0.01 * rows), widest=6, repeats=2)
    assert growing == (1, 2, 3, 4, 5, 6)


def test_prepack_calibrates_on_passes_of_the_whole_model(llama):
    model = copy.deepcopy(llama)
    assert fast.prepack(model, min_weights=0) > 0
    rows = {layer.dense_rows for layer in fast.fast_layers(model)}
    assert len(rows) == 1 and 0 <= rows.pop() <= 4  # one crossover for the model, as timed here
    plans = {layer.padded_rows for layer in fast.fast_layers(model)}
    assert len(plans) == 1  # one padding plan, each width run at itself or wider
    assert all(width >= n for n, width in enumerate(plans.pop(), 1))


def test_logits_of_fast_and_eager_agree_on_tiny_models(llama, qwen):
    for model in (llama, qwen):
        quick = packed(perturbed(model, 0.0), dense_rows=0)
        ids = list(range(3, 40))
        for n in (1, 5, 9):
            eager, packed_logits = CachedModel(model).logits(ids, n), CachedModel(quick).logits(ids, n)
            assert (eager - packed_logits).abs().max() < 1e-4


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("drafter", ["draft-model", "prompt-lookup", "hybrid", "draft-tree", "lookup-tree", "self"])
def test_greedy_speculative_equals_standard_on_the_fast_engine(arch, drafter):
    """Both lanes on one packed model, single steps on the dense kernel and wider passes on the
    packed one, as the fast engine runs them."""
    target = packed(tiny_model(arch, seed=7))
    draft = packed(perturbed(tiny_model(arch, seed=7), 0.03))
    prompt = [5, 9, 14, 5, 9, 14, 22, 31, 5, 9]
    expected = [e.token for e in standard_decode(CachedModel(target), prompt, Sampling(), 40)]
    lane = CachedModel(target)
    rounds = list(speculative_decode(
        lane, make_drafter(drafter, draft, target.vocab_size, target=lane, tree=TreeShape(8, 2)), prompt,
        Speculation(k=4), Sampling(), 40))
    assert [t for r in rounds for t in r.tokens] == expected
    assert any(len(r.drafted) + 1 > 1 for r in rounds)  # wide (packed) passes really ran


def test_speculative_sampling_on_the_fast_engine_matches_the_target():
    """The seeded chi-square of tests/engine/test_sampling_e2e.py, on packed models."""
    VOCAB = 8
    target = packed(tiny_model("llama", seed=21, vocab=VOCAB, hidden=32), dense_rows=0)
    draft = packed(perturbed(tiny_model("llama", seed=21, vocab=VOCAB, hidden=32), 0.5, seed=4), dense_rows=0)
    sampling, runs, prompt = Sampling(temperature=0.8, top_k=6, top_p=0.9), 1500, [3, 5, 7, 3, 5, 6, 4, 3, 5]
    lane, drafter = CachedModel(target), make_drafter("draft-model", draft, VOCAB)
    counts = torch.zeros(VOCAB, VOCAB)
    for seed in range(runs):
        s = Sampling(sampling.temperature, sampling.top_k, sampling.top_p, seed)
        tokens = [t for r in speculative_decode(lane, drafter, prompt, Speculation(k=2), s, 3) for t in r.tokens]
        counts[tokens[0], tokens[1]] += 1
    stat, dof = chi_square(counts, joint(target, sampling, prompt, VOCAB), runs)
    assert stat < critical(dof), (stat, dof)
    wrong, wrong_dof = chi_square(counts, joint(draft, sampling, prompt, VOCAB), runs)
    assert wrong > critical(wrong_dof), "the test cannot tell the draft's distribution from the target's"


def test_the_fast_engine_stays_eager_without_the_memory(monkeypatch, tmp_path):
    model, log = tiny_model("llama"), []
    monkeypatch.setattr(loading, "packed_bytes", lambda m: 10 << 30)
    monkeypatch.setattr(loading, "available_memory", lambda: 4 << 30)
    engine = loading.apply_engine(model, "fast", torch.device("cpu"), torch.float32, "tiny", log.append)
    assert engine == "eager" and not fast.fast_layers(model)
    assert "needs 10.7 GB more" in log[0] and "4.3 GB is available" in log[0]


def test_engines_are_checked_and_default_by_device():
    with pytest.raises(ValueError, match="unknown engine 'turbo'; choose one of fast, eager"):
        fast.check_engine("turbo")
    assert fast.default_engine(torch.device("cpu")) == "fast"
    assert fast.default_engine(torch.device("cuda")) == "eager"
    assert not fast.can_prepack(torch.device("cuda"), torch.float32)
    assert not fast.can_prepack(torch.device("cpu"), torch.float16)


def test_verify_cost_table_reads_between_widths_and_seeds_the_cost_policy(llama):
    table = VerifyCosts((1, 3, 9), (0.10, 0.12, 0.30), context=16)
    assert table.at(1) == 0.10 and table.at(2) == pytest.approx(0.11) and table.at(6) == pytest.approx(0.21)
    assert table.at(40) == 0.30 and table.steps(9) == pytest.approx(3.0)
    costs = CostModel()
    costs.seed_verify(table)
    assert costs.pass_seconds(2) == pytest.approx(0.11) and max(costs.seen_widths) == 9
    policy = CostPolicy(16, costs)
    # With the table, the policy has no plain step to measure first: it measures the draft at once.
    assert "measuring" in policy.choose(("draft-model",)).reason and policy.trust_region(("draft-model",)) == 11
    measured = measure_verify_costs(CachedModel(llama), list(range(3, 20)), widths=(1, 2, 5), repeats=1)
    assert measured.widths == (1, 2, 5) and all(s > 0 for s in measured.seconds) and measured.context == 17
    # A draft's step, after a context of ids past its own vocabulary (a target with more tokens):
    # folded into its embedding rows, timed like the table's width 1.
    rows = llama.get_input_embeddings().num_embeddings
    assert measure_draft_step(llama, [rows + 5, 3, 2 * rows + 1], repeats=1) > 0


def test_the_verify_table_times_interleaved_sweeps_so_a_slow_spell_does_not_tilt_it(monkeypatch):
    """A host slow for one sweep's worth of passes: each width is timed once per sweep, so the slow
    spell costs every width one of its three times, which the median drops, and the table keeps its
    shape. (Timed back to back, the slow spell would have fallen on one width alone.)"""
    import specdec.engine.verify_costs as verify_costs

    widths, calls = (1, 2, 5), []

    class FakeLane:  # records the widths asked for; the fake clock below makes the passes' times
        device = "cpu"

        def reset(self):
            pass

        def crop(self, n):
            pass

        def logits(self, ids, width):
            calls.append(width)

    class FakeClock:  # a pass over n tokens takes n seconds, ten times as long in the second timed sweep
        def __init__(self, device):
            self.t, self.passes = 0.0, 0

        def now(self):
            passes = len(calls) - 1  # (the context's untimed pass first)
            if passes > self.passes:  # a pass ended since the last reading: it took its cost
                self.passes, sweep = passes, (passes - 1) // len(widths)
                self.t += calls[-1] * (10 if sweep == 2 else 1)
            return self.t

    monkeypatch.setattr(verify_costs, "Clock", FakeClock)
    table = measure_verify_costs(FakeLane(), [7, 8], widths=widths, repeats=3)
    assert calls == [1] + list(widths) * 4  # the context, then an untimed sweep and three timed ones
    assert table.seconds == (1, 2, 5)  # each width's median: the slow sweep dropped everywhere


@pytest.mark.integration
def test_fast_and_eager_logits_agree_on_smollm2():
    """The real embedded model: as the fast engine loads it (q, k, v and gate, up stacked, every layer
    packed), and with every width on the packed kernel, logits within 1e-5 of the logits' scale of
    eager's (about 40 here, so 4e-4 absolute: fp32 summed in another order over 30 layers). Same argmax."""
    eager = loading.load_model("embedded", engine="eager", log=lambda m: None)
    engine = loading.load_model("embedded", engine="fast", log=lambda m: None)
    every = loading.load_model("embedded", engine="eager", log=lambda m: None)
    assert engine.engine == "fast" and len(fast.fast_layers(engine.model)) == 30 * 4 + 1  # q/k/v and gate/up stacked
    assert fast.prepack(every.model, min_weights=0, dense_rows=0) > 200
    ids = eager.tokenizer("def merge(a, b):\n    return sorted(a + b)\n")["input_ids"]
    for n in (1, 5, 9):
        a = CachedModel(eager.model).logits(ids, n)
        b, c = CachedModel(engine.model).logits(ids, n), CachedModel(every.model).logits(ids, n)
        assert (a - b).abs().max() < 1e-5 * a.abs().max() and (a - c).abs().max() < 1e-5 * a.abs().max()
        assert torch.equal(a.argmax(-1), b.argmax(-1)) and torch.equal(a.argmax(-1), c.argmax(-1))


def test_each_setup_remembers_its_costs_in_its_own_file(llama, monkeypatch, tmp_path):
    from specdec.engine.loaded import Loaded

    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path))
    monkeypatch.delenv("SPECDEC_COSTS")  # (the suite's own folder: conftest)
    cpu = torch.device("cpu")
    target = Loaded("org/model", llama, None, cpu, torch.float32, "fast")
    draft = Loaded("draft", llama, None, cpu, torch.float32, "eager", "int8")
    files = {loading.costs_file(target), loading.costs_file(target, draft),
             loading.costs_file(target, Loaded("draft", llama, None, cpu, torch.float32, "eager")),
             loading.costs_file(Loaded("org/model", llama, None, cpu, torch.float32, "eager"), draft)}
    assert len(files) == 4 and all(f.parent == tmp_path / "costs" and f.name.startswith("model-") for f in files)
    assert loading.costs_file(target, draft) == loading.costs_file(target, draft)
    name = loading.costs_file(target, draft).name
    monkeypatch.setenv("SPECDEC_COSTS", str(tmp_path / "elsewhere"))  # a folder of their own, named
    assert loading.costs_file(target, draft) == tmp_path / "elsewhere" / name
