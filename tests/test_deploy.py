"""v41graph deploy: the search prunes, prices, checks by simulation, and its launch flags add up."""

from __future__ import annotations

import json
import re

import pytest

from v41graph import load_model
from v41graph.analysis.basis import SOL_CAVEAT
from v41graph.analysis.deploy_pick import launch_flags, launch_gpus
from v41graph.analysis.deploy_search import Question, search
from v41graph.analysis.deploy_space import (EngineMapping, Instance, _static, fit_reason, instance_mappings,
                                            static_reference)
from v41graph.cli.deploy import duration
from v41graph.cli.main import main
from v41graph.costs.hardware import load_hardware

SMALL = dict(caps=(32,), chunks=(8192,), check=2, top=3)
Q = Question(isl=4000, osl=100, ttft_s=1.0, tpot_s=0.05, gpus=4, requests=40)


@pytest.fixture(scope="module")
def small():
    return search(load_model("deepseek-v4-flash"), load_hardware("h200_sxm"), Q, **SMALL)


def test_launch_flags_gpus_add_up_to_each_pick(small):
    for mode, pick in small["picks"].items():
        assert pick is not None, mode
        assert launch_gpus(pick["launch"]) == pick["gpus"] <= Q.gpus
        for line in pick["launch"]:  # DP attention lives inside the TP group: --dp never exceeds --tp
            tp, dp = int(re.search(r"--tp (\d+)", line)[1]), re.search(r"--dp (\d+)", line)
            assert dp is None or int(dp[1]) <= tp
    assert all("--disaggregation-mode" in line for line in small["picks"]["disaggregated"]["launch"])


def test_dp_attention_flags_do_not_multiply_gpus():
    lines = launch_flags("disaggregated", (Instance(EngineMapping(8, 8, 8), 256, 8192), 1,
                                           Instance(EngineMapping(4, 1, 4), 64, 8192), 2), "m")
    assert launch_gpus(lines) == 16
    assert lines[0].count("--enable-dp-attention") == 1 and "--disaggregation-mode prefill" in lines[0]


def test_an_instance_that_cannot_fit_is_rejected_with_its_reason(small):
    one = [c for c in small["candidates"] if c["label"] == "4× [tp1 cap32 chunk8192]"]  # as many replicas as fit
    assert len(one) == 1 and one[0]["status"] == "rejected" and "analytic" not in one[0]
    assert re.match(r"weights \+ cache of 32 requests at 4,100 tokens: [\d,.]+ GiB per GPU > 118\.2 GiB "
                    r"\(90% of HBM\)", one[0]["reason"])
    reason = fit_reason(load_model("deepseek-v4-flash"), load_hardware("h200_sxm"),
                        Instance(EngineMapping(1), 32, 8192), 4000, 100)
    assert reason == one[0]["reason"]


def test_analytic_and_simulated_both_present_and_simulated_meets_sla(small):
    for pick in small["picks"].values():
        a, s = pick["analytic"], pick["simulated"]
        assert a["ttft_s"] > 0 and a["tpot_s"] > 0 and a["tokens_per_s_per_gpu"] > 0
        assert s["meets_sla"] and s["ttft_p90_s"] <= Q.ttft_s and s["tpot_p90_s"] <= Q.tpot_s
        assert s["requests"] >= 1 and pick["bottleneck"]["decode"]["family"]


def test_sla_filter_rejects_what_misses_it():
    q = Question(isl=4000, osl=100, ttft_s=1.0, tpot_s=0.001, gpus=4, requests=40)  # 1 ms TPOT: nothing meets it
    r = search(load_model("deepseek-v4-flash"), load_hardware("h200_sxm"), q, **SMALL)
    assert r["picks"] == {"aggregated": None, "disaggregated": None} and r["winner"] is None
    # the decode step alone misses 1 ms at the smallest cap: the walk up the caps stops before any price
    walked = [c for c in r["candidates"] if (c["reason"] or "").startswith("analytic TPOT: the decode step alone")]
    assert walked and all(c["status"] == "rejected" for c in r["candidates"])
    assert r["why_none"]["aggregated"].startswith("no aggregated candidate meets the SLA analytically, e.g. analytic "
                                                  "TPOT: the decode step alone is ")


def test_every_candidate_has_a_status_and_fits_cost_the_same_as_the_mapping_search(small):
    assert all(c["status"] in ("ok", "ok (not simulated)", "rejected") for c in small["candidates"])
    assert all((c["status"] == "rejected") == bool(c["reason"]) for c in small["candidates"])
    m, h = load_model("deepseek-v4.1-flash"), load_hardware("h200_sxm")
    for e in instance_mappings(m, 8):
        assert _static(m, h, e, 5000, 48) == static_reference(m, h, e, 5000, 48)


def test_replay_is_an_axis_for_v41_only():
    labels = {m.label() for m in instance_mappings(load_model("deepseek-v4.1-flash"), 2)}
    assert labels == {"tp1", "tp2", "tp2 ep2", "tp2 dpattn2", "tp2 dpattn2 ep2"}
    from v41graph.analysis.deploy_space import replay_modes
    assert replay_modes(load_model("deepseek-v4.1-flash")) == ("off", "bounded")
    assert replay_modes(load_model("deepseek-v4-flash")) == ("off",)


def test_cli_json_is_byte_identical_and_files_written(tmp_path, capsys):
    argv = ["deploy", "--model", "deepseek-v4-flash", "--gpus", "2", "--isl", "2000", "--osl", "50", "--ttft", "1s",
            "--tpot", "50ms", "--requests", "30", "--check", "1", "--json", "--cost", "sol",
            "--checkpoint", "fp4", "--fp4-on-hopper"]  # 2 GPUs hold the FP4 experts, not the FP8 ones
    outs = []
    for d in ("a", "b"):
        assert main([*argv, "-o", str(tmp_path / d)]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]
    assert (tmp_path / "a" / "deploy.json").read_bytes() == (tmp_path / "b" / "deploy.json").read_bytes()
    data = json.loads(outs[0])
    assert data["basis"] == {"name": "SOL", "mode": "sol", "chosen": "--cost", "caveat": SOL_CAVEAT}
    assert data["question"]["gpus"] == 2 and "sol_ceiling" not in data["picks"]["aggregated"]  # SOL is its own
    csv = (tmp_path / "a" / "candidates.csv").read_text().splitlines()
    assert csv[0].startswith("mode,label,gpus,status,reason") and len(csv) == len(data["candidates"]) + 1


def test_trace_with_azure_header(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("arrived_at,num_prefill_tokens,num_decode_tokens\n" +
                     "".join(f"{i * 0.5},{1000 + 10 * i},{20 + i}\n" for i in range(12)))
    assert main(["deploy", "--model", "deepseek-v4-flash", "--gpus", "2", "--ttft", "2s", "--tpot", "50ms",
                 "--trace", str(trace), "--check", "1", "--json", "-o", str(tmp_path / "o"), "--cost", "sol",
                 "--checkpoint", "fp4", "--fp4-on-hopper"]) == 0  # 2 GPUs hold the FP4 experts, not the FP8 ones
    data = json.loads(capsys.readouterr().out)
    assert data["question"]["workload"] == "trace" and data["question"]["trace_requests"] == 12
    assert data["question"]["isl"] == 1055  # the trace's mean prompt
    pick = data["picks"]["aggregated"]
    assert pick["simulated"]["requests"] == 12 and pick["analytic"]["rate_per_s"] == pytest.approx(12 / 5.5)


@pytest.mark.parametrize("text, seconds", [("1s", 1.0), ("50ms", 0.05), ("0.5s", 0.5), ("800us", 0.0008)])
def test_duration(text, seconds):
    assert duration(text) == pytest.approx(seconds)


def test_bad_duration_exits_2(capsys):
    assert main(["deploy", "--gpus", "8", "--ttft", "1000", "--tpot", "50ms"]) == 2
    err = capsys.readouterr().err
    assert "--ttft: '1000' is not a positive duration with a unit" in err and len(err.strip().splitlines()) == 1


def test_a_mode_with_no_pick_says_why():
    q = Question(isl=4000, osl=100, ttft_s=1.0, tpot_s=0.05, gpus=2, requests=40)  # a V4-Flash engine needs 2 GPUs
    r = search(load_model("deepseek-v4-flash"), load_hardware("h200_sxm"), q, **SMALL)
    assert r["picks"]["disaggregated"] is None and r["picks"]["aggregated"] is not None
    why = r["why_none"]["disaggregated"]
    assert why.startswith("no disaggregated candidate fits (1 tried); the closest, P 1× [tp1] + D 1× [tp1 cap32] "
                          "chunk8192: prefill instance: weights + cache of 4 prompts of 4,000 tokens")


def test_trace_path_relative_to_the_repository_parent():
    from v41graph.cli.deploy import ROOT, trace_path
    rel = "../shared/data/traces/azure-llm-2023/conv.csv"
    if not (ROOT.parent / rel.removeprefix("../")).is_file():
        pytest.skip("the shared Azure traces are not on this machine")
    assert trace_path(rel).is_file() and trace_path("shared/data/traces/azure-llm-2023/conv.csv").is_file()


def test_v41_knobs_are_axes_and_each_moves_a_priced_figure():
    from v41graph.analysis.deploy_price import Costers, price_aggregated
    from v41graph.analysis.deploy_space import v41_axes
    m, h = load_model("deepseek-v4.1-flash"), load_hardware("h200_sxm")
    assert v41_axes(m) == {"replay": ("off", "bounded"), "engram": ("hbm", "host"), "verify": (0, 3)}
    costers, e = Costers(m, h), EngineMapping(8, 1, 8)
    base = price_aggregated(costers, Instance(e, 64, 8192), 1, 4000, 200)
    host = price_aggregated(costers, Instance(e, 64, 8192, engram="host"), 1, 4000, 200)
    # at the same offered rate: at its own capacity's load DSpark carries more rate, not a shorter TPOT
    spark = price_aggregated(costers, Instance(e, 64, 8192, verify=3), 1, 4000, 200, base.rate_per_s)
    replay = price_aggregated(costers, Instance(e, 64, 8192, replay="bounded"), 1, 4000, 200)
    # under the SOL schedule the host lookups overlap the forward: Engram on host moves memory, not time
    assert host.ttft_s == pytest.approx(base.ttft_s, rel=1e-6)
    assert spark.tpot_s < base.tpot_s  # a verify step emits 1 + 0.9 + 0.72 + 0.504 tokens
    assert replay.ttft_s < base.ttft_s
    from v41graph.analysis.deploy_space import memory_bytes
    from v41graph.model.paging import pool_pages
    gib = 1 << 30
    mem = [memory_bytes(m, h, Instance(e, 64, 8192, engram=x), 4000, 200) for x in ("hbm", "host")]
    assert mem[0] - mem[1] == pytest.approx(23.6 * gib, rel=3e-3)  # its tables' HBM, at EP 8
    assert pool_pages(m, e.mapping, h.hbm_capacity, engram_on_host=True) > pool_pages(m, e.mapping, h.hbm_capacity)
    need = [_static(m, h, EngineMapping(4, 1, 4), 5000, 64, engram=x) for x in ("hbm", "host")]
    assert need[0] - need[1] == pytest.approx(47.2 * gib, rel=2e-3)
    assert _static(m, h, EngineMapping(4, 1, 4), 5000, 64, "host", True) == \
        static_reference(m, h, EngineMapping(4, 1, 4), 5000, 64, "host", True)


def test_v41_knobs_can_be_fixed_and_a_bad_value_is_refused(capsys):
    from v41graph.analysis.deploy_search import axes_for
    m = load_model("deepseek-v4.1-flash")
    assert axes_for(m, {"engram": ("host",), "verify": (0,)})["engram"] == ("host",)
    assert main(["deploy", "--model", "deepseek-v4.1-flash", "--gpus", "8", "--ttft", "1s", "--tpot", "50ms",
                 "--engram", "disk"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("deploy engram: 'disk' is not one of hbm, host for deepseek-v4.1-flash")
    with pytest.raises(Exception, match="deploy verify: 3 is not one of 0"):
        axes_for(load_model("deepseek-v4-flash"), {"verify": (3,)})


def test_v41_on_8_h200_has_both_modes_with_engram_on_host():
    """Engram in HBM needs a whole 8-GPU engine (tp4 ep4: 67.2 GiB experts + 47.2 GiB Engram > 118.2 GiB);
    on host it frees a prefill + decode pair of 4-GPU engines."""
    q = Question(isl=1000, osl=100, ttft_s=1.0, tpot_s=0.05, gpus=8, requests=40)
    m, h = load_model("deepseek-v4.1-flash"), load_hardware("h200_sxm")
    hbm = search(m, h, q, caps=(32,), chunks=(8192,), check=1, axes={"engram": ("hbm",), "verify": (0,),
                                                                        "replay": ("off",)})
    assert hbm["picks"]["disaggregated"] is None
    assert re.fullmatch(r"no disaggregated candidate fits \(\d+ tried\); the closest, P 1× \[tp4[^]]*\] \+ D 1× "
                        r"\[tp4[^]]*\] chunk8192: .*: 1[12]\d\.\d GiB per GPU > 118\.2 GiB \(90% of HBM\); 47\.2 GiB "
                        r"of it are the Engram tables \(Engram on host frees them\)", hbm["why_none"]["disaggregated"])
    host = search(m, h, q, caps=(32,), chunks=(8192,), check=1, axes={"engram": ("host",), "verify": (0,),
                                                                         "replay": ("off",)})
    d = host["picks"]["disaggregated"]
    assert d is not None and d["gpus"] == 8 and d["simulated"]["meets_sla"] and "engram-host" in d["label"]
    assert any("Engram tables in host memory" in n for n in d["launch_notes"])


def test_vllm_lines_add_up_to_each_pick(small):
    from v41graph.analysis.deploy_pick import vllm_gpus
    for pick in small["picks"].values():
        assert vllm_gpus(pick["vllm_launch"]) == pick["gpus"] == launch_gpus(pick["launch"])
        # the engines load the checkpoint by its Hugging Face id (the API's model: the official one)
        assert all(x.startswith("vllm serve deepseek-ai/DeepSeek-V4-Flash --tensor-parallel-size ")
                   for x in pick["vllm_launch"])
    assert all("--kv-transfer-config" in line for line in small["picks"]["disaggregated"]["vllm_launch"])
    from v41graph.analysis.deploy_pick import vllm_flags
    lines = vllm_flags("disaggregated", (Instance(EngineMapping(8, 8, 8), 256, 8192), 1,
                                         Instance(EngineMapping(4, 1, 4), 64, 8192), 2), "m")
    assert vllm_gpus(lines) == 16
    assert "--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel" in lines[0]
    assert "--tensor-parallel-size 4 --enable-expert-parallel --max-num-seqs 64" in lines[1]


def test_fewest_gpus_for_a_rate_is_the_first_budget_with_a_pick():
    from dataclasses import replace
    from v41graph.analysis.deploy_fewest import budgets, fewest
    assert budgets(64) == [1, 2, 4, 8, 16, 32, 64] and budgets(12) == [1, 2, 4, 8, 12]
    m, h = load_model("deepseek-v4-flash"), load_hardware("h200_sxm")
    q = Question(isl=2000, osl=100, ttft_s=1.0, tpot_s=0.05, gpus=1, requests=40, rate=30.0)
    kw = dict(check=1, caps=(64,), chunks=(8192,))
    r = fewest(m, h, q, max_gpus=8, **kw)
    f = r["fewest"]
    assert f["budgets"] == [1, 2, 4] and f["gpus"] == 4 and f["rate_per_s"] == 30.0
    pick = r["picks"][f["mode"]]
    assert pick["gpus"] == 4 and pick["simulated"]["meets_sla"] and pick["analytic"]["rate_per_s"] == 30.0
    # one budget down nothing serves 30 req/s: every priced candidate lacks the capacity or the SLA
    below = search(m, h, replace(q, gpus=2), **kw)
    assert below["picks"] == {"aggregated": None, "disaggregated": None}
    assert any("the target 30 req/s is over 85% of it" in (c["reason"] or "") for c in below["candidates"])
    # a rate no budget up to 2 GPUs serves says so
    none = fewest(m, h, q, max_gpus=2, **kw)["fewest"]
    assert none["gpus"] is None and none["budgets"] == [1, 2]


def test_rate_and_gpus_are_exclusive(capsys):
    assert main(["deploy", "--ttft", "1s", "--tpot", "50ms"]) == 2
    assert "give either --gpus N (a budget) or --rate" in capsys.readouterr().err
    assert main(["deploy", "--gpus", "8", "--rate", "3", "--ttft", "1s", "--tpot", "50ms"]) == 2
    assert capsys.readouterr().err.strip().endswith("not both")


def test_attention_dp_inside_an_engine_and_caps_to_1024():
    """AIConfigurator's TPOT-50 decode engine `tp1 dp4 etp4` (SGLang --tp-size 4 --attn-dp-size 4, no EP) is in
    the space, and 992 running requests fit it: caps reach 1,024 (256 per DP rank)."""
    from v41graph.analysis.deploy_space import CAPS
    from v41graph.model.mapping import Mapping
    m, h = load_model("deepseek-v4-flash"), load_hardware("h200_sxm")
    four = [e.label() for e in instance_mappings(m, 8) if e.gpus == 4]
    assert four == ["tp4", "tp4 ep4", "tp4 dpattn2", "tp4 dpattn2 ep4", "tp4 dpattn4", "tp4 dpattn4 ep4"]
    assert EngineMapping(4, 4, 1).mapping == Mapping(tp=1, dp=4, ep=1) and max(CAPS) == 1024
    assert fit_reason(m, h, Instance(EngineMapping(4, 4, 1), 1024, 4096), 4000, 1000) is None
    assert max(e.gpus for e in instance_mappings(m, 1024)) == 64  # the engines a large budget walks stop there


def test_a_mixed_chunk_engine_says_so_and_launches_with_it():
    inst = Instance(EngineMapping(4, 2, 1), 256, 4096, mixed=True)
    assert inst.label() == "tp4 dpattn2 cap256 chunk4096 mixed" and inst.schedule() == "mixed"
    assert Instance(EngineMapping(4), 256, 4096).schedule() == "prefill-first"
    assert all("--enable-mixed-chunk" in line for line in launch_flags("aggregated", (inst, 2), "m"))


def test_the_bound_prunes_without_moving_the_picks():
    """A deployment is priced only when its bound can reach the k-th best met so far (k = max(top, check)):
    with k past every candidate nothing is pruned, and the picks and the top are the same."""
    from v41graph.analysis.deploy_price import Costers
    m, h = load_model("deepseek-v4-flash"), load_hardware("h200_sxm")
    q = Question(isl=2000, osl=100, ttft_s=1.0, tpot_s=0.05, gpus=8, requests=40)
    kw = dict(caps=(32, 128), chunks=(8192,), check=1, costers=Costers(m, h))  # one step cache for both
    pruned = search(m, h, q, top=2, **kw)
    every = search(m, h, q, top=100_000, **kw)
    assert pruned["pruned_by_bound"] == {"aggregated": 20, "disaggregated": 182}
    assert every["pruned_by_bound"] == {"aggregated": 0, "disaggregated": 0}
    # the 20 aggregated rows, and the 182 pairs at their (x, y) counts: 388 rows, that the bound left unpriced
    assert len(every["candidates"]) - len(pruned["candidates"]) == 20 + 388
    for mode in ("aggregated", "disaggregated"):
        assert pruned["picks"][mode]["label"] == every["picks"][mode]["label"]
        assert pruned["top"][mode] == every["top"][mode][:2]
    assert pruned["picks"]["aggregated"]["label"] == "4× [tp2 cap128 chunk8192 mixed]"


def test_picks_and_winner_rank_on_simulated_figures(small):
    for mode, pick in small["picks"].items():
        checked = [c for c in small["candidates"] if c["mode"] == mode and "simulated" in c
                   and c["simulated"]["meets_sla"]]
        assert pick["ranked_on"] == "simulated" and pick["simulated"]["tokens_per_s_per_gpu"] == \
            max(c["simulated"]["tokens_per_s_per_gpu"] for c in checked)
    a, d = (small["picks"][m]["simulated"]["tokens_per_s_per_gpu"] for m in ("aggregated", "disaggregated"))
    w = small["winner"]
    assert w["by"] == max(a, d) / min(a, d) and w["why"].startswith("tokens/s per GPU at the SLA, simulated")


def test_a_large_deployment_is_checked_on_a_slice():
    from v41graph.analysis.deploy_search import _counts, _slice
    # 250 replicas at 1,140 req/s, 43 s lifetimes: 1,600 requests keep 2 replicas busy for three lifetimes
    assert _slice("aggregated", ("i", 250), 1140.0, 43.0, 400) == (("i", 2), 2 / 250)
    # 155 prefill + 95 decode: one decode instance and the prefill instances in proportion (1.63 -> 2)
    assert _slice("disaggregated", ("p", 155, "d", 95), 2046.75, 41.0, 400) == (("p", 2, "d", 1), 1 / 95)
    assert _slice("disaggregated", ("p", 1, "d", 1), 13.0, 34.0, 400) == (("p", 1, "d", 1), 1.0)
    # on a large budget, per x: the decode count that balances the rates (floor, ceiling) and the most that fit
    assert _counts(250, lambda x: (1000 - 4 * x) // 4, 13.2, 21.5, None)[:6] == \
        [(1, 1), (1, 249), (2, 1), (2, 2), (2, 248), (3, 1)]
    assert _counts(2, lambda x: (8 - 4 * x) // 4, 13.0, 20.0, None) == [(1, 1)]
