"""deploy's search knobs beyond the engine mappings: the caps and chunk sizes searched (``--caps``,
``--chunks``), and a check that goes on down the ranking when the best all miss the SLA in simulation."""

from __future__ import annotations

import json

import pytest

from v41graph import load_model
from v41graph.analysis.deploy import deploy_checked
from v41graph.analysis.deploy.deploy_checked import FALLBACK
from v41graph.analysis.deploy.deploy_search import Question, search
from v41graph.analysis.deploy.deploy_space import CAPS, CHUNKS
from v41graph.cli.main import main
from v41graph.costs.hardware import load_hardware


class _Table:
    """The two things ``_check`` reads of the search's table: rows, and the parts each was built from."""

    def __init__(self, n: int):
        self.rows = [{"label": f"c{i}", "analytic": {}} for i in range(n)]
        self.parts_of = {i: ("aggregated", (i,)) for i in range(n)}


def _fake_simulations(monkeypatch, meets: set[int]) -> list[int]:
    seen: list[int] = []

    def simulate(costers, mode, parts, q, trace, analytic):
        seen.append(parts[0])
        return {"meets_sla": parts[0] in meets, "reason": None if parts[0] in meets else f"c{parts[0]} missed"}
    monkeypatch.setattr(deploy_checked, "_simulate", simulate)
    return seen


@pytest.mark.parametrize("meets, simulated, met", [
    ({0, 1, 5}, [0, 1], [0, 1]),      # the best two meet: nothing more is simulated
    ({1, 5}, [0, 1], [1]),            # one of the two meets: it is the pick, none further down
    ({5, 6}, [0, 1, 2, 3, 4, 5], [5]),  # both miss: on down the ranking until one meets
    ({9}, list(range(8)), []),        # at most FALLBACK × check simulated, then none
])
def test_the_check_goes_down_the_ranking_until_one_meets(monkeypatch, meets, simulated, met):
    assert FALLBACK == 4
    seen = _fake_simulations(monkeypatch, meets)
    table = _Table(12)
    assert deploy_checked._check(None, table, list(range(12)), None, None, 2) == met
    assert seen == simulated
    assert [r.get("status") for r in table.rows[:len(simulated)]] == \
        [None if i in meets else "rejected" for i in simulated]


def test_caps_and_chunks_are_searched_as_given():
    """``caps`` and ``chunks`` are the search space's: every aggregated engine is tried at each (a chunk below
    the prompt is its own candidate, priced differently), and the labels and launch lines carry them."""
    m, h = load_model("deepseek-v4-flash"), load_hardware("h200_sxm")
    q = Question(isl=2000, osl=100, ttft_s=1.0, tpot_s=0.05, gpus=4, requests=40)
    r = search(m, h, q, caps=(24,), chunks=(1024, 8192), check=1, top=100)
    agg = [c for c in r["candidates"] if c["mode"] == "aggregated" and "analytic" in c]
    assert {c["deployment"][0]["chunked_prefill_size"] for c in agg} == {1024, 8192}
    assert {c["deployment"][0]["max_running_requests"] for c in agg} == {24}
    by = {c["label"]: c["analytic"]["ttft_s"] for c in agg}
    # a prompt in two chunks of 1,024 takes two steps, each carrying a decode batch: TTFT differs from the whole one
    assert by["1× [tp4 cap24 chunk1024 mixed]"] != by["1× [tp4 cap24 chunk8192 mixed]"]


def test_cli_caps_and_chunks_default_to_the_space_and_refuse_bad_values(capsys):
    assert CAPS == (8, 16, 32, 64, 128, 256, 512, 1024) and CHUNKS == (4096, 8192)
    for flag in ("--caps", "--chunks"):
        for bad in ("0", "a,1", ""):
            assert main(["deploy", "--gpus", "8", "--ttft", "1s", "--tpot", "50ms", flag, bad]) == 2
            err = capsys.readouterr().err
            assert f"argument {flag}: {bad!r} is not a comma list of whole numbers >= 1" in err


def test_cli_chunks_reach_the_launch_lines(tmp_path, capsys):
    argv = ["deploy", "--model", "deepseek-v4-flash", "--gpus", "4", "--isl", "2000", "--osl", "100", "--ttft", "1s",
            "--tpot", "50ms", "--requests", "40", "--caps", "24", "--chunks", "1024", "--check", "1", "--json",
            "-o", str(tmp_path / "out")]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    pick = data["picks"]["aggregated"]
    assert " cap24 chunk1024" in pick["label"]
    engines = [line for line in pick["launch"] if "sglang.launch_server" in line]
    dp = pick["deployment"][0]["attn_dp"]
    assert engines and all(f"--chunked-prefill-size {1024 * dp} " in line and "--max-running-requests 24 " in line
                           for line in engines)


def test_the_answer_states_the_space_searched():
    m, h = load_model("deepseek-v4-flash"), load_hardware("h200_sxm")
    q = Question(isl=2000, osl=100, ttft_s=1.0, tpot_s=0.05, gpus=4, requests=40)
    r = search(m, h, q, caps=(64, 24), chunks=(16384, 1024, 8192), check=1, top=1)
    # sorted; of the chunks that take the prompt whole only the smallest schedules differently
    assert r["space"] == {"caps": [24, 64], "chunks": [1024, 8192], "ep_below_tp": False}


def test_ep_below_tp_adds_the_moe_tp_ep_mixes_priced_on_the_default_backend():
    """``ep_below_tp``: every E dividing T joins the space; 1 < E < T runs SGLang's default a2a backend (none:
    DeepEP sets ep = tp), and its steps are priced so — the coster's plans carry moe_a2a="none"."""
    from v41graph.analysis.deploy.deploy_price import Costers, decode_s
    from v41graph.analysis.deploy.deploy_space import EngineMapping, Instance, instance_mappings
    from v41graph.analysis.serving.step_cost import StepCoster
    m, h = load_model("deepseek-v4-flash"), load_hardware("h200_sxm")
    plain = [e.label() for e in instance_mappings(m, 8) if e.gpus == 8 and e.attn_dp == 2]
    mixes = [e.label() for e in instance_mappings(m, 8, below_tp=True) if e.gpus == 8 and e.attn_dp == 2]
    assert plain == ["tp8 dpattn2", "tp8 dpattn2 ep8"]
    assert mixes == ["tp8 dpattn2", "tp8 dpattn2 ep2", "tp8 dpattn2 ep4", "tp8 dpattn2 ep8"]
    assert [EngineMapping(8, 2, e).moe_a2a for e in (1, 2, 4, 8)] == ["deepep", "none", "none", "deepep"]
    costers = Costers(m, h)
    inst = Instance(EngineMapping(8, 2, 4), 64, 4096)
    c = costers.get(inst)
    assert c.policies["moe_a2a"] == "none"
    none = StepCoster(m, h, tp=4, dp=2, ep=4, moe_a2a="none")
    deepep = StepCoster(m, h, tp=4, dp=2, ep=4)
    t = decode_s(c, 64, 4500)
    assert t == decode_s(none, 64, 4500) != decode_s(deepep, 64, 4500)


def test_cli_ep_below_tp_is_stated_and_its_lines_run_the_default_backend(tmp_path, capsys):
    argv = ["deploy", "--model", "deepseek-v4-flash", "--gpus", "4", "--isl", "2000", "--osl", "100", "--ttft", "1s",
            "--tpot", "50ms", "--requests", "40", "--caps", "32", "--chunks", "8192", "--check", "1", "--top", "100",
            "--ep-below-tp", "--json", "-o", str(tmp_path / "out")]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["space"]["ep_below_tp"] is True
    labels = {c["label"] for c in data["candidates"] if c["mode"] == "aggregated"}
    assert "1× [tp4 ep2 cap32 chunk8192]" in labels and "1× [tp4 ep4 cap32 chunk8192]" in labels
    from v41graph.analysis.deploy.deploy_launch import launch_flags
    from v41graph.analysis.deploy.deploy_space import EngineMapping, Instance
    line = launch_flags("aggregated", (Instance(EngineMapping(4, 1, 2), 32, 8192), 1), "a/b")[-1]
    assert "--ep-size 2 " in line and "--moe-a2a-backend" not in line


def test_deploy_trace_reads_the_first_rows_in_time_order(tmp_path):
    """deploy's trace: an uncut trace listed out of order comes back sorted by arrival; --trace-requests keeps
    the first N rows of the file (a cut trace must be in order)."""
    from v41graph.analysis.deploy.deploy_typed import deploy_trace
    path = tmp_path / "t.csv"
    path.write_text("t,prompt,output\n0.5,100,10\n0.0,200,20\n1.5,300,30\n")
    assert [(a.t, a.prompt, a.output) for a in deploy_trace(str(path))] == [(0.0, 200, 20), (0.5, 100, 10),
                                                                             (1.5, 300, 30)]
    inorder = tmp_path / "u.csv"
    inorder.write_text("t,prompt,output\n0.0,200,20\n0.5,100,10\n1.5,300,30\n")
    assert [a.prompt for a in deploy_trace(str(inorder), 2)] == [200, 100]
