"""Token trees in the playground: the tree drafters through the launched app's /compare (the trees in
the stats JSON, their shape checked), the tree arguments and policies refused with the limit named,
calls from before the tree arguments, the tree figure and the Round slider, and the tokens-per-pass
chart. Tiny local models keep it fast."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from gradio_client.exceptions import AppError

from helpers import args, client, launched, make_pair_folders, with_limits

import app
import space_config
from specdec.engine.drafters import TREE
from specdec.engine.events import ACCEPTED, BONUS, CORRECTED, PLAIN, RoundEvent, TreeRound
from specdec.engine.run_stats import TreeYield
from specdec.playground import charts
from specdec.playground.result import RaceResult
from specdec.playground.limits import InvalidInput, check_request
from specdec.playground.render import FATES
from specdec.playground.tree_view import pick_tree

PROMPT = "abc abc abc abc abc"
GOOD = dict(prompt="hi", target="embedded", draft="", drafter="lookup-tree", k=4, adaptive_k=False, temperature=0.0,
            top_p=1.0, max_new_tokens=8, seed=0)  # check_request's first ten arguments, for a tree drafter


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return make_pair_folders(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def api(folders):
    with launched() as (url, _):
        yield client(url)


def compare(api, *values, **changes) -> list:
    """/compare with all 14 arguments, tree_budget and tree_branching last."""
    return api.predict(*args(*values, **changes), api_name="/compare")


@pytest.fixture(scope="module")
def lookup_run(api, folders):
    return compare(api, PROMPT, folders["target"], drafter="lookup-tree", k=3, max_new_tokens=32)


@pytest.fixture(scope="module")
def draft_run(api, folders):
    return compare(api, PROMPT, folders["target"], folders["draft"], "draft-tree", k=3, max_new_tokens=32,
                   tree_budget=8, tree_branching=2)


def check_trees(stats: dict) -> None:
    """Every tree is a tree, its path a path in it from the root, and the round's tokens its path's
    plus the target's own, with the fate the path's end decides."""
    trees = stats["trees"]
    assert trees and len(trees) == stats["tree"]["rounds"]
    json.dumps(trees, allow_nan=False)
    for t in trees:
        n = len(t["tokens"])
        assert len(t["text"]) == len(t["parents"]) == n == stats["drafted"][t["round"]] > 0
        assert all(-1 <= p < i for i, p in enumerate(t["parents"]))  # parents come first
        assert [t["parents"][node] for node in t["path"]] == ([-1] + t["path"])[:len(t["path"])]
        assert len(t["path"]) == stats["accepted"][t["round"]]
        leaf = not any(p == (t["path"][-1] if t["path"] else -1) for p in t["parents"])
        if t["target_token"] is not None:
            assert t["target_fate"] == (BONUS if leaf else CORRECTED) and isinstance(t["target_text"], str)
    ends = [t for t in trees if t["target_token"] is not None]
    if len(ends) == len(trees):  # no round cut short: a pass yields the path and one target token
        mean = sum(len(t["path"]) + 1 for t in trees) / len(trees)
        assert stats["tree"]["tokens_per_pass"] == pytest.approx(mean)


def test_lookup_tree_run_returns_its_trees(lookup_run, folders):
    stats = lookup_run[7]
    assert stats["finished"] and stats["drafter"] == "lookup-tree" and stats["identical"] is True
    assert stats["tree_shape"] == {"budget": 16, "branching": 4} and stats["tree"]["rounds"] > 0
    check_trees(stats)
    assert all(t["reach"] is None and len(t["tokens"]) <= 16 for t in stats["trees"])  # lookup: no probabilities
    assert all(t["source"] == "lookup-tree:16" and t["origin"].startswith("context") for t in stats["trees"])
    assert "lookup-tree · up to 16 nodes · depth k=3" in lookup_run[1]
    rows = {row[0]: row[1] for row in lookup_run[2]["data"]}
    assert "nodes" in rows["token tree (mean per round)"]


def test_draft_tree_run_returns_trees_within_its_shape(draft_run, folders):
    stats = draft_run[7]
    assert stats["finished"] and stats["drafter"] == "draft-tree" and stats["identical"] is True
    assert stats["tree_shape"] == {"budget": 8, "branching": 2}
    check_trees(stats)
    for t in stats["trees"]:
        assert t["origin"] == "draft model" and t["source"].startswith("draft-tree:")
        assert len(t["tokens"]) <= 8
        assert all(t["parents"].count(p) <= 2 for p in set(t["parents"]))  # branching
        reach = t["reach"]
        assert all(0 < r <= 1 for r in reach)
        assert all(reach[i] <= reach[p] + 1e-9 for i, p in enumerate(t["parents"]) if p >= 0)
    # The third chart is tokens per pass against node count, with the draft's own estimate.
    chart = json.loads(draft_run[5]["plot"])
    assert chart["layout"]["title"]["text"] == "Expected tokens per pass vs nodes verified"
    names = [trace.get("name", "") for trace in chart["data"]]
    assert any(name.startswith("draft's own estimate") for name in names)
    assert any(name.startswith("chain theory τ") for name in names)
    assert "measured (mean nodes, tokens per pass)" in names


def test_a_sampled_draft_tree_run_returns_consistent_trees(api, folders):
    stats = compare(api, PROMPT, folders["target"], folders["draft"], "draft-tree", k=2, temperature=0.9, seed=3,
                    max_new_tokens=16, tree_budget=6, tree_branching=3)[7]
    assert stats["finished"] and not stats["greedy"] and "identical" not in stats
    check_trees(stats)


def test_chain_runs_keep_their_charts_and_have_no_trees(api, folders):
    result = api.predict(*args(PROMPT, folders["target"], max_new_tokens=8)[:12], api_name="/compare")  # older clients: 12
    stats = result[7]
    assert stats["finished"] and stats["trees"] is None and stats["tree"] is None and stats["tree_shape"] is None
    assert json.loads(result[5]["plot"])["layout"]["title"]["text"].startswith("Expected speedup vs k")
    assert charts.tree_figure(None).layout.annotations[0].text.startswith("tree drafters only")


def test_a_twelve_argument_tree_call_gets_the_default_shape(api, folders):
    stats = api.predict(*args(PROMPT, folders["target"], drafter="lookup-tree", max_new_tokens=8),
                        api_name="/compare")[7]
    assert stats["finished"] and stats["tree_shape"] == {"budget": 16, "branching": 4}


@pytest.mark.parametrize("changes, message", [
    ({"tree_budget": 300}, "tree_budget must be in [1, 256], got 300"),
    ({"tree_budget": 0}, "tree_budget must be in [1, 256], got 0"),
    ({"tree_budget": 2.5}, "tree_budget must be a whole number"),
    ({"tree_branching": 17}, "tree_branching must be in [1, 16], got 17"),
    ({"tree_branching": "many"}, "tree_branching must be a number"),
])
def test_bad_tree_requests_name_the_limit_and_the_server_keeps_serving(api, folders, changes, message):
    with pytest.raises(AppError) as error:
        compare(api, PROMPT, folders["target"], drafter="lookup-tree", max_new_tokens=4, **changes)
    assert message in str(error.value)
    assert compare(api, PROMPT, folders["target"], max_new_tokens=4)[7]["finished"]


def test_limits_list_the_tree_drafters_and_the_budget(api):
    info = api.predict(api_name="/limits")
    assert TREE <= set(info["drafters"]) and info["limits"]["tree_budget_max"] == 256
    assert space_config.PUBLIC_LIMITS.tree_budget_max == 64 < space_config.LOCAL_LIMITS.tree_budget_max == 256
    good = GOOD
    with pytest.raises(InvalidInput, match=r"tree_budget must be in \[1, 64\]"):
        check_request(space_config.PUBLIC_LIMITS, **good, tree_budget=65)
    assert check_request(space_config.PUBLIC_LIMITS, **good, tree_budget=64).tree_budget == 64


@pytest.mark.parametrize("name", ["tree_budget", "tree_branching"])
@pytest.mark.parametrize("value", [10**400, float("nan"), None, [4], True, "16x", -1])
def test_junk_tree_arguments_are_refused_naming_them(name, value):
    with pytest.raises(InvalidInput, match=rf"^{name} must be"):
        check_request(with_limits(), **GOOD, **{name: value})


def test_the_drafter_shows_only_the_fields_it_reads():
    shown = {name: [u["visible"] for u in app.drafter_fields(name)] for name in ("self", "draft-tree", "hybrid")}
    assert shown == {"self": [True, False, False], "draft-tree": [False, True, True], "hybrid": [False] * 3}


# ---------------------------------------------------------------- the tree figure

def fills(fig) -> dict[str, list]:
    """The node traces (not the root) by legend name: their fill colour, once per node."""
    nodes = [t for t in fig.data if t.mode == "markers+text" and t.showlegend is not False]
    return {t.name: [t.marker.color] * len(t.x) for t in nodes}


def test_tree_figure_draws_every_node_and_colours_the_path(draft_run):
    tree = max(draft_run[7]["trees"], key=lambda t: (len(t["path"]), len(t["tokens"])))
    fig = charts.tree_figure(tree)
    nodes = [t for t in fig.data if t.mode == "markers+text"]
    assert sum(len(t.x) for t in nodes) == len(tree["tokens"]) + 1 + (tree["target_token"] is not None)  # + root
    colours = fills(fig)
    assert colours.get(FATES[ACCEPTED][2], []) == [FATES[ACCEPTED][0]] * len(tree["path"])
    assert colours["drafted, not accepted"] == [FATES[PLAIN][0]] * (len(tree["tokens"]) - len(tree["path"]))
    if tree["target_token"] is not None:
        fate = tree["target_fate"]
        assert colours[charts.TREE_TARGET[fate]] == [FATES[fate][0]]
    hover = " ".join(h for t in nodes for h in (t.hovertext or ()))
    assert "draft reach" in hover and f"Round {tree['round']} · from the draft model:" in fig.layout.title.text


def test_the_round_slider_steps_through_the_trees_without_running(lookup_run):
    trees = lookup_run[7]["trees"]
    figure, slider = app.tree_view({"trees": trees})
    assert slider["visible"] is (len(trees) > 1) and slider["value"] == 1
    assert figure.layout.title.text.startswith(f"Round {trees[0]['round']} · from the context:")
    last = app.tree_round({"trees": trees}, len(trees))
    assert last.layout.title.text.startswith(f"Round {trees[-1]['round']} · from the context:")
    assert pick_tree(trees, 10**9) is trees[-1] and pick_tree(trees, None) is trees[0] and pick_tree([], 1) is None
    assert app.tree_view(None)[0].layout.annotations[0].text.startswith("tree drafters only")


def test_tree_layout_keeps_branches_apart_and_whitespace_visible():
    depth, y = charts.tree_layout([-1, 0, 0, -1, 3])
    assert depth == [1, 2, 2, 1, 2]
    assert y[1] > y[2] > y[4] and y[0] == (y[1] + y[2]) / 2 and y[3] == y[4]  # parents centred on children
    tree = {"round": 3, "tokens": [5, 6, 7], "text": [" a", "\n", ""], "parents": [-1, 0, -1], "path": [0],
            "reach": None, "target_token": 9, "target_text": "<b>", "target_fate": CORRECTED}
    fig = charts.tree_figure(tree)
    labels = [label for t in fig.data if t.mode == "markers+text" for label in t.text]
    assert {"␣a", "↵", "#7", "&lt;b&gt;", "▸"} <= set(labels)
    grey = next(t for t in fig.data if t.name == "drafted, not accepted")
    assert len(grey.hovertext) == 2 and all("no draft probabilities" in h for h in grey.hovertext)
    assert "rejected" in grey.hovertext[0] and fills(fig)[charts.TREE_TARGET[CORRECTED]]


def test_a_recycled_tree_says_its_branches_came_from_the_table():
    """Issue #23: the tree view shows where a round's branches came from: the table (token recycling),
    the context (prompt lookup) or the draft model."""
    from helpers import word_tokenizer
    from specdec.playground.tree_view import origin, tree_json

    event = RoundEvent(4, 2, (7, 8), 1, (7, 9), (ACCEPTED, CORRECTED), 0.0, 0.0, (), False, source="recycling:4",
                       tree=TreeRound((7, 8), (-1, -1), (0,)))
    tree = tree_json(event, word_tokenizer(96), root=5)
    assert tree["source"] == "recycling:4" and tree["origin"].startswith("table") and "recycling" in tree["origin"]
    assert origin("lookup-tree:16").startswith("context") and origin("draft-tree:8") == "draft model"
    fig = charts.tree_figure(tree)
    assert "from the table and context" in fig.layout.title.text
    grey = next(t for t in fig.data if t.name == "drafted, not accepted")
    assert all("no draft probabilities (from the table and context)" in h for h in grey.hovertext)
    # Token recycling's nodes each say which offered them: the table, the context (what followed the
    # same tokens earlier) or both.
    mixed = tree_json(replace(event, tree=TreeRound((7, 8), (-1, -1), (0,), None, ("context", "table"))),
                      word_tokenizer(96), root=5)
    assert mixed["origins"] == ["context", "table"] and tree["origins"] is None
    fig = charts.tree_figure(mixed)
    kept = next(t for t in fig.data if t.name == charts.FATES[ACCEPTED][2])
    grey = next(t for t in fig.data if t.name == "drafted, not accepted")
    assert "(from the context: what followed these tokens before)" in kept.hovertext[0]
    assert "(from the table)" in grey.hovertext[0]


# ---------------------------------------------------------------- tokens per pass against node count

def chain_round(i: int, reach, path, tokens) -> RoundEvent:
    """A tree round whose tree is one chain, with the draft's reach of each node."""
    tree = TreeRound(tuple(range(len(reach))), tuple([-1] + list(range(len(reach) - 1))), path, reach)
    fates = (ACCEPTED,) * len(path) + (BONUS,)
    return RoundEvent(i, 3, tree.tokens, len(path), tuple(tokens), fates, 0.01, 0.02, (), False, tree=tree)


def test_the_draft_estimate_sums_each_rounds_likeliest_reach():
    assert charts.draft_estimate([[0.25, 0.5], [1.0]], 3) == pytest.approx([1.75, 1.875, 1.875])
    assert charts.draft_estimate([], 3) == []
    rounds = [chain_round(0, (0.5, 0.25), (0,), (1, 2)), chain_round(1, (1.0,), (0,), (1, 2))]
    fig = charts.tree_tokens_per_pass(rounds, 0.6, TreeYield(2, 1.5, 1.0, 1.0, 2.0))
    curves = {t.name: t for t in fig.data}
    assert list(curves["draft's own estimate: 1 + Σ top-n reach"].y) == pytest.approx([1.75, 1.875])
    assert list(curves["chain theory τ(α̂ = 0.60, n)"].y) == pytest.approx([1.6, 1.96])
    assert (curves["measured (mean nodes, tokens per pass)"].x[0], fig.layout.xaxis.title.text) == (
        1.5, "nodes verified per pass (n)")


def test_the_run_reports_its_engine_and_verify_costs_and_draws_them(lookup_run):
    """Issue #18: the /compare JSON carries the engine and the device's verify-cost table (measured at
    warm-up) with the run's own passes; the table shows the engine, the chart both."""
    from specdec.playground import render

    stats = lookup_run[7]
    assert stats["engine"] in ("fast", "eager")
    table = stats["verify_costs"]
    assert table["widths"] == [1, 2, 3, 5, 9, 17, 33] and table["steps"][0] == pytest.approx(1.0)
    assert stats["verify_points"] and all(width >= 1 and seconds > 0 for width, seconds in stats["verify_points"])
    result = RaceResult.from_json(stats)  # what the browser hands the chart's event
    assert result.verify_costs.widths == (1, 2, 3, 5, 9, 17, 33) and result.verify_points
    figure = charts.verify_cost_figure(result)
    assert [trace.name for trace in figure.data] == ["measured at warm-up", "this run's passes"]
    assert not charts.verify_cost_figure(None).data
    assert app.verify_cost_chart(stats).data and not app.verify_cost_chart({"standard": {}}).data  # a light frame
    rows = render.stats_rows(result)
    assert ["engine", stats["engine"]] == rows[[r[0] for r in rows].index("engine")][:2]


def test_a_finished_run_gives_one_verdict_with_its_interval(lookup_run):
    """Issue #20: final, interval, busy and repeats in the JSON; the card only once the run ended,
    saying so when the interval holds 1.0 or the machine was busy."""
    from specdec.playground import render

    stats = lookup_run[7]
    assert stats["final"] is True and stats["repeats"] == 1 and stats["busy"] in (True, False)
    low, high = stats["interval"]
    assert low <= stats["speedup"] <= high
    result = RaceResult.from_json(stats)
    assert result.to_json() == stats  # the JSON keeps its shape both ways
    assert "90% interval" in render.result_card(result) and "appears here when a run ends" in render.result_card(None)
    running = replace(result, finished=False)
    assert "appears here" in render.result_card(running)
    rows = render.stats_rows(running)
    assert rows[0][1] == "running (figures provisional)"
    unsure = render.result_card(replace(result, run=replace(result.run, speedup=1.02), interval=(0.91, 1.12), busy=True))
    assert "cannot tell whether speculation paid" in unsure and "machine was busy" in unsure
    sure = render.result_card(replace(result, run=replace(result.run, speedup=1.5), interval=(1.3, 1.7), busy=False))
    assert "1.50x faster (90% interval 1.30–1.70)" in sure and "cannot tell" not in sure
