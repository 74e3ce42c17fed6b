"""v41graph deploy: the search prunes, prices, checks by simulation, and its launch flags add up."""

from __future__ import annotations

import json
import re

import pytest
from helpers import load_script

from v41graph import load_model
from v41graph.analysis.basis import SOL_CAVEAT
from v41graph.analysis.deploy.deploy_pick import launch_flags, launch_gpus
from v41graph.analysis.deploy.deploy_search import Question, search
from v41graph.analysis.deploy.deploy_space import (EngineMapping, Instance, _static, fit_reason, instance_mappings,
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
        for line in pick["launch"][1:]:  # DP attention lives inside the TP group: --attn-dp-size never exceeds it
            tp, dp = int(re.search(r"--tp-size (\d+)", line)[1]), re.search(r"--attn-dp-size (\d+)", line)
            assert dp is None or tp % int(dp[1]) == 0
    assert all("--disaggregation-mode" in line for line in small["picks"]["disaggregated"]["launch"][1:])


def test_dp_attention_flags_do_not_multiply_gpus():
    lines = launch_flags("disaggregated", (Instance(EngineMapping(8, 8, 8), 256, 8192), 1,
                                           Instance(EngineMapping(4, 1, 4), 64, 8192), 2), "m")
    assert launch_gpus(lines) == 16 and len(lines) == 4 and "--pd-disaggregation" in lines[0]
    assert lines[1].count("--attn-dp-size 8") == 1 and "--disaggregation-mode prefill" in lines[1]


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
    from v41graph.analysis.deploy.deploy_space import replay_modes
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
    from v41graph.analysis.deploy.deploy_price import Costers, price_aggregated
    from v41graph.analysis.deploy.deploy_space import v41_axes
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
    from v41graph.analysis.deploy.deploy_space import memory_bytes
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
    from v41graph.analysis.deploy.deploy_space import axes_for
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
                                                                         "replay": ("off",)}, allow_unlaunchable=True)
    d = host["picks"]["disaggregated"]
    assert d is not None and d["gpus"] == 8 and d["simulated"]["meets_sla"] and "engram-host" in d["label"]
    assert any("Engram tables in host memory" in n for n in d["launch_notes"])
    assert all(x.endswith("; missing: Engram tables in host memory (no SGLang 0.5.23 flag places them)")
               for x in d["launch"][1:])


def test_vllm_lines_add_up_to_each_pick(small):
    from v41graph.analysis.deploy.deploy_pick import vllm_gpus
    for pick in small["picks"].values():
        assert vllm_gpus(pick["vllm_launch"]) == pick["gpus"] == launch_gpus(pick["launch"])
        # the engines load the checkpoint by its Hugging Face id (the API's model: the official one)
        assert all(re.match(r"CUDA_VISIBLE_DEVICES=[\d,]+ vllm serve deepseek-ai/DeepSeek-V4-Flash "
                            r"--tensor-parallel-size ", x) for x in pick["vllm_launch"])
    assert all("--kv-transfer-config" in line for line in small["picks"]["disaggregated"]["vllm_launch"])
    from v41graph.analysis.deploy.deploy_pick import vllm_flags
    lines = vllm_flags("disaggregated", (Instance(EngineMapping(8, 8, 8), 256, 8192), 1,
                                         Instance(EngineMapping(4, 1, 4), 64, 8192), 2), "m")
    assert vllm_gpus(lines) == 16
    assert "--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel" in lines[0]
    assert "--tensor-parallel-size 4 --enable-expert-parallel --max-num-seqs 64" in lines[1]


def test_fewest_gpus_for_a_rate_is_the_first_budget_with_a_pick():
    from dataclasses import replace
    from v41graph.analysis.deploy.deploy_fewest import budgets, fewest
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


# --- guard rails (issue 35, item 5) ---

@pytest.mark.parametrize("flag, value, message", [
    ("--isl", "0", "'0' is not a prompt length: a prompt holds at least 1 token"),
    ("--osl", "1", "'1' is not an output length deploy can rank: TPOT needs at least 2 output tokens"),
    ("--osl", "0", "'0' is not an output length deploy can rank: TPOT needs at least 2 output tokens"),
    ("--rate", "inf", "'inf' is not a positive finite number"),
    ("--rate", "nan", "'nan' is not a positive finite number"),
    ("--rate", "-1", "'-1' is not a positive finite number"),
    ("--target-tokens-per-s", "inf", "'inf' is not a positive finite number"),
])
def test_a_bad_length_or_rate_is_one_line_exit_2(flag, value, message, capsys):
    budget = [] if flag in ("--rate", "--target-tokens-per-s") else ["--gpus", "8"]
    assert main(["deploy", *budget, "--ttft", "1s", "--tpot", "50ms", f"{flag}={value}"]) == 2
    assert capsys.readouterr().err == f"v41graph: error: v41graph deploy: argument {flag}: {message}\n"


def test_a_rate_past_every_budget_is_a_bounded_none_that_searches_nothing(tmp_path, capsys):
    argv = ["deploy", "--model", "deepseek-v4-flash", "--rate", "1e6", "--max-gpus", "8", "--ttft", "1s",
            "--tpot", "50ms", "--cost", "sol", "--json", "-o", str(tmp_path / "o")]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    f = data["fewest"]
    assert f["gpus"] is None and f["budgets"] == f["skipped"] == [1, 2, 4, 8] and data["candidates"] == []
    assert re.fullmatch(r"1e\+06 req/s is over 85% of the most 8 GPUs can carry, [\d.]+ req/s \(8 × the best "
                        r"decode-only rate per GPU, tp\d[^)]* cap1024\)", f["bound"])
    assert data["why_none"]["aggregated"] == f"no budget up to 8 GPUs can carry the rate: {f['bound']}"
    assert data["picks"] == {"aggregated": None, "disaggregated": None} and data["winner"] is None


def test_the_rate_bound_is_above_every_priced_capacity(small):
    """The bound that skips budgets never skips one a candidate could serve: every priced candidate's
    capacity is at most its GPUs × the bound (same model, GPU, basis, caps and lengths)."""
    from v41graph.analysis.deploy.deploy_fewest import rate_bound
    from v41graph.analysis.deploy.deploy_price import Costers
    bound = rate_bound(Costers(load_model("deepseek-v4-flash"), load_hardware("h200_sxm")), Q, Q.gpus,
                       caps=SMALL["caps"])
    priced = [c for c in small["candidates"] if "analytic" in c]
    assert priced and max(c["analytic"]["capacity_per_s"] / c["gpus"] for c in priced) <= bound[4][0]
    assert sorted(bound) == [2, 4] and bound[2][0] <= bound[4][0]


def test_decode_steps_do_not_depend_on_replay_or_engram_residency():
    """What rate_bound relies on: a decode step costs the same under either replay and Engram residency."""
    from v41graph.analysis.deploy.deploy_price import Costers, decode_s
    c, e = Costers(load_model("deepseek-v4.1-flash"), load_hardware("h200_sxm")), EngineMapping(4, 1, 4)
    times = {decode_s(c.get(Instance(e, 64, 8192, rp, en)), 64, 4500, v) for rp in ("off", "bounded")
             for en in ("hbm", "host") for v in (0,)}
    assert len(times) == 1


def test_replicas_fill_the_budget_and_ties_compare_rounded():
    """An aggregated engine's replicas fill the budget (equal per-GPU figures, more rate), and the ranking
    compares figures rounded to 9 digits, so float noise (~1e-13) never outranks the next key."""
    from v41graph.analysis.deploy.deploy_pick import rounded
    q = Question(isl=4000, osl=1000, ttft_s=1.0, tpot_s=0.05, gpus=8, requests=40)
    r = search(load_model("deepseek-v4-flash"), load_hardware("b200_sxm"), q, caps=(32,), chunks=(8192,), check=1,
               top=4)
    assert r["top"]["aggregated"] == ["4× [tp2 cap32 chunk8192 mixed]", "4× [tp2 ep2 cap32 chunk8192 mixed]",
                                      "4× [tp2 cap32 chunk8192]", "4× [tp2 ep2 cap32 chunk8192]"]
    assert r["picks"]["aggregated"]["gpus"] == 8
    x = r["picks"]["aggregated"]["analytic"]["tokens_per_s_per_gpu"]
    assert rounded(x * (1 + 4e-13)) == rounded(x) != rounded(x * (1 + 1e-7))


def test_model_defaults_to_v41(tmp_path, capsys):
    assert main(["deploy", "--gpus", "8", "--isl", "2000", "--osl", "50", "--ttft", "1s", "--tpot", "50ms",
                 "--requests", "30", "--check", "1", "--json", "--cost", "sol", "--replay", "off",
                 "--dspark-verify", "0", "-o", str(tmp_path / "o")]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "deepseek-v4.1-flash"


# --- launch lines that start (issue 35, item 4) ---

def _flag_sheet() -> tuple[set[str], set[str]]:
    """SGLang 0.5.23's server flags (the shared reference sheet, one option string a line) and the deprecated
    ones its notes name; skipped where the shared reference is not beside the repository."""
    from v41graph.cli.deploy import ROOT
    ref = ROOT.parent / "shared" / "reference"  # ../shared/reference relative to the repository root
    txt, md = ref / "sglang-0.5.23-server-flags.txt", ref / "sglang-0.5.23-server-flags.md"
    if not txt.is_file() or not md.is_file():
        pytest.skip("the shared SGLang 0.5.23 flag sheet is not on this machine")
    flags = {line.strip() for line in txt.read_text().splitlines() if line.startswith("--")}
    notes = md.read_text()
    # the sheet's own words: --attn-dp-size replaces --enable-dp-attention (+ --dp-size), deprecated
    assert "replaces `--enable-dp-attention` + `--dp-size`, which 0.5.23 still accepts with a deprecation" in notes
    return flags, {"--enable-dp-attention"}


#: sglang-router's flags the router lines use (sgl-project/sglang sgl-router: launch_router --help and its
#: PD examples: --pd-disaggregation, --prefill URL [BOOTSTRAP_PORT], --decode URL, --worker-urls, --policy)
ROUTER_FLAGS = {"--pd-disaggregation", "--prefill", "--decode", "--worker-urls", "--policy", "--host", "--port"}


def lint_launch_lines(lines: list[str], host: int = 8) -> list[str]:
    """Every problem with a pick's SGLang lines: a flag SGLang 0.5.23 does not register by that full name
    (an argparse prefix such as --tp included) or deprecates, a model that is not a Hugging Face id, two
    engines on one GPU of a host, a port or bootstrap port used twice, a PD pick without its router, or
    a router naming an engine or bootstrap port that is not there."""
    import shlex
    flags, deprecated = _flag_sheet()
    problems, routers = [], [line for line in lines if " -m sglang_router.launch_router " in line]
    # what the engine lines so far hold, for the clashes a later line makes
    seen = {"gpus": set(), "ports": set(), "boots": [], "urls": {"prefill": set(), "decode": set(), None: set()}}
    for line in lines:
        command, _, comment = line.partition("  # ")
        words = shlex.split(command)
        problems += _flag_problems(words, ROUTER_FLAGS if line in routers else flags, deprecated)
        if line not in routers:
            problems += _engine_problems(words, comment, host, seen)
    if len(set(seen["boots"])) != len(seen["boots"]):
        problems.append(f"bootstrap ports used twice: {seen['boots']}")
    if seen["urls"]["prefill"] or seen["urls"]["decode"]:
        problems += _router_problems(lines, routers, seen["urls"])
    return problems


def _flag_problems(words: list[str], known: set[str], deprecated: set[str]) -> list[str]:
    return [f"{'deprecated' if w in deprecated else 'unknown'} flag {w}"
            for w in words if w.startswith("--") and (w not in known or w in deprecated)]


def _engine_problems(words: list[str], comment: str, host: int, seen: dict) -> list[str]:
    """One engine line's model id and placement, and its GPUs, port and bootstrap port against ``seen``."""
    problems = []
    opt = {w: words[i + 1] if i + 1 < len(words) else "" for i, w in enumerate(words) if w.startswith("--")}
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", opt.get("--model-path", "")):
        problems.append(f"--model-path {opt.get('--model-path')!r} is not a Hugging Face id")
    node = int(re.match(r"node(\d+)", comment)[1])
    if "--tp-size" not in opt or "--base-gpu-id" not in opt:
        return problems + ["no --tp-size or --base-gpu-id: the GPUs are not placed"]
    per = int(opt["--tp-size"]) // int(opt.get("--nnodes", 1))
    base = int(opt["--base-gpu-id"])
    if base + per > host:
        problems.append(f"node{node}: GPUs {base}..{base + per - 1} past the host's {host}")
    for g in range(base, base + per):
        if (node, g) in seen["gpus"]:
            problems.append(f"node{node} GPU {g}: two engines")
        seen["gpus"].add((node, g))
    if opt.get("--node-rank", "0") != "0":  # a multi-node engine's port and role are its rank 0's
        return problems
    if (node, opt["--port"]) in seen["ports"]:
        problems.append(f"node{node} port {opt['--port']} used twice")
    seen["ports"].add((node, opt["--port"]))
    role = opt.get("--disaggregation-mode")
    url = f"http://node{node}:{opt['--port']}"
    seen["urls"][role].add(url + (f" {opt['--disaggregation-bootstrap-port']}" if role == "prefill" else ""))
    if role == "prefill":
        seen["boots"].append(opt["--disaggregation-bootstrap-port"])
    return problems


def _router_problems(lines: list[str], routers: list[str], urls: dict) -> list[str]:
    """A PD pick's router: first, alone, and naming exactly the engines (and bootstrap ports) the lines run."""
    if len(routers) != 1 or not lines[0] == routers[0]:
        return ["a PD pick needs its router line first"]
    named = {"prefill": set(re.findall(r"--prefill (\S+ \d+)", routers[0])),
             "decode": set(re.findall(r"--decode (\S+)", routers[0]))}
    return [f"the router's {role} engines {sorted(named[role])} are not the lines' {sorted(urls[role])}"
            for role in ("prefill", "decode") if named[role] != urls[role]]


def test_the_lint_catches_what_would_not_start():
    """The lint itself: an argparse prefix, the deprecated DP-attention flag, two engines on one GPU."""
    bad = ["python -m sglang.launch_server --model-path a/b --tp 4 --port 30000  # node0",
           "python -m sglang.launch_server --model-path a/b --tp-size 4 --dp-size 4 --enable-dp-attention "
           "--base-gpu-id 0 --port 32000  # node0",
           "python -m sglang.launch_server --model-path m --tp-size 2 --base-gpu-id 2 --port 34000  # node0"]
    assert lint_launch_lines(bad) == ["unknown flag --tp", "no --tp-size or --base-gpu-id: the GPUs are not placed",
                                       "deprecated flag --enable-dp-attention",
                                       "--model-path 'm' is not a Hugging Face id",
                                       "node0 GPU 2: two engines", "node0 GPU 3: two engines"]


@pytest.fixture(scope="module")
def tpot50(tmp_path_factory):
    """The 8 × H200 V4-Flash question of issue 35 at TPOT 50 ms on the default (measured) basis, as printed."""
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["deploy", "--model", "deepseek-v4-flash", "--hardware", "h200_sxm", "--gpus", "8", "--isl", "4000",
                     "--osl", "1000", "--ttft", "1s", "--tpot", "50ms", "--json",
                     "-o", str(tmp_path_factory.mktemp("tpot50"))]) == 0
    return json.loads(out.getvalue())


def test_every_printed_sglang_line_of_the_tpot50_picks_starts(tpot50):
    for mode, pick in tpot50["picks"].items():
        assert pick is not None, mode
        assert lint_launch_lines(pick["launch"]) == [], mode
        assert launch_gpus(pick["launch"]) == pick["gpus"] == 8
        assert all("--model-path sgl-project/DeepSeek-V4-Flash-FP8 " in x for x in pick["launch"][1:])
    assert tpot50["picks"]["disaggregated"]["launch"][0].startswith(
        "python -m sglang_router.launch_router --pd-disaggregation --prefill http://node0:")


def test_the_docs_recorded_tpot50_picks_are_todays(tpot50):
    """docs/deploy.md's side-by-side table comes from benchmarks/bench_deploy.json; its v41graph picks are what
    deploy answers today (AIConfigurator's side is a recorded run of another tool)."""
    bench = load_script("benchmarks/bench_deploy.py")
    record = json.loads(bench.RECORD.read_text(encoding="utf-8"))
    recorded = next(r for r in record["v41graph"] if r["gpus"] == 8 and r["tpot"] == "50ms")
    today = bench._picks(tpot50)
    assert recorded["winner"] == today["winner"] == "disaggregated"
    # the same picks; their figures within 0.1 %: the record ran on the measured extra's tables, CI on the
    # packaged slice, whose interpolation moves a simulated figure by a few tenths of a token per second
    for mode, pick in today["picks"].items():
        assert pick["label"] == recorded["picks"][mode]["label"]
        for figure in ("analytic", "simulated"):
            assert pick[figure] == pytest.approx(recorded["picks"][mode][figure], rel=1e-3), (mode, figure)


def test_under_attention_dp_the_chunk_flag_is_the_chunk_times_the_dp_ranks():
    """SGLang divides --chunked-prefill-size by the attention-DP size; each rank keeps the priced chunk."""
    lines = launch_flags("aggregated", (Instance(EngineMapping(4, 2, 4), 64, 4096), 1), "a/b")
    assert "--attn-dp-size 2 " in lines[0] and "--chunked-prefill-size 8192 " in lines[0]
    lines = launch_flags("aggregated", (Instance(EngineMapping(4, 1, 4), 64, 4096), 1), "a/b")
    assert "--chunked-prefill-size 4096 " in lines[0]


@pytest.mark.parametrize("mode, parts, host", [
    # attention DP below TP, EP below TP, replicas packed on one host
    ("aggregated", (Instance(EngineMapping(4, 2, 4), 64, 8192), 2), 8),
    ("aggregated", (Instance(EngineMapping(8, 2, 2), 64, 8192), 1), 8),
    ("aggregated", (Instance(EngineMapping(2, 1, 1), 64, 8192), 8), 8),
    # PD: 3 prefill tp2 + 1 decode tp2 dpattn2 on one host; across hosts; GB300 trays of 4
    ("disaggregated", (Instance(EngineMapping(2), 256, 8192), 3, Instance(EngineMapping(2, 2, 2), 64, 8192), 1), 8),
    ("disaggregated", (Instance(EngineMapping(4, 4, 4), 256, 4096), 3, Instance(EngineMapping(8, 8, 8), 256,
                                                                                     4096, verify=3), 2), 8),
    ("disaggregated", (Instance(EngineMapping(4, 1, 4), 256, 4096), 1, Instance(EngineMapping(16, 16, 16), 512,
                                                                                     4096), 1), 4),
    ("aggregated", (Instance(EngineMapping(16, 16, 16), 512, 8192, replay="bounded"), 2), 8),
])
def test_general_mappings_launch_on_disjoint_gpus(mode, parts, host):
    lines = launch_flags(mode, parts, "deepseek-ai/DeepSeek-V4.1-Flash", host, replay_flag=True)
    assert lint_launch_lines(lines, host) == []
    gpus = parts[0].engine.gpus * parts[1] + (parts[2].engine.gpus * parts[3] if mode == "disaggregated" else 0)
    assert launch_gpus(lines) == gpus
    from v41graph.analysis.deploy.deploy_pick import vllm_flags, vllm_gpus
    assert vllm_gpus(vllm_flags(mode, parts, "m", host)) == gpus


def test_an_engine_across_hosts_has_a_line_per_host():
    lines = launch_flags("aggregated", (Instance(EngineMapping(16, 16, 16), 512, 8192), 1), "a/b", 8)
    assert [line.split("  # ")[1] for line in lines] == ["node0 (rank 0 of 2)", "node1 (rank 1 of 2)"]
    assert all("--nnodes 2 --dist-init-addr" not in x and "--dist-init-addr node0:29500" in x for x in lines)
    assert "--node-rank 1 " in lines[1] and "--base-gpu-id 0 " in lines[1]


def test_v41_knobs_by_their_flags_and_engram_on_host_only_when_allowed(capsys, tmp_path):
    lines = launch_flags("aggregated", (Instance(EngineMapping(8, 8, 8), 64, 8192, "off", "host", 3), 1), "a/b",
                         replay_flag=True)
    assert "--no-enable-decoder-swa-bounded-replay --speculative-algorithm DSPARK --speculative-dspark-block-size 3 " \
        in lines[0]
    assert lines[0].endswith("  # node0; missing: Engram tables in host memory (no SGLang 0.5.23 flag places them)")
    assert lint_launch_lines(lines) == []
    argv = ["deploy", "--model", "deepseek-v4.1-flash", "--gpus", "8", "--ttft", "1s", "--tpot", "50ms",
            "--engram", "host", "-o", str(tmp_path / "o")]
    assert main(argv) == 2
    assert capsys.readouterr().err == ("v41graph: error: deploy engram: 'host' has no engine flag (Engram tables in "
                                       "host memory (no SGLang 0.5.23 flag places them)); --allow-unlaunchable "
                                       "searches it anyway\n")


# --- routing and the figure at capacity (issue 35, item 3) ---

def test_routing_is_in_the_coster_key_and_moves_the_price():
    from v41graph.analysis.deploy.deploy_price import Costers, decode_s
    from v41graph.ir.routing import UNIFORM, parse_routing
    m, h, inst = load_model("deepseek-v4-flash"), load_hardware("h200_sxm"), Instance(EngineMapping(4, 1, 4), 32, 8192)
    uni, pl = Costers(m, h), Costers(m, h, routing=parse_routing("power-law"))
    assert uni.key(inst) == (4, 1, 4, "off", "hbm", UNIFORM) and pl.key(inst)[-1] == parse_routing("power-law")
    t_uni, t_pl = (decode_s(c.get(inst), 32, 4500) for c in (uni, pl))
    assert t_uni != t_pl and pl.get(inst).policies["routing"].model == "power-law"
    with pytest.raises(Exception, match=r"deploy costers: shapes priced under routing uniform cannot join a search "
                                        r"under power-law α=1\.01 \(seed 0\)"):
        pl.adopt(uni.entries())


def test_deploy_takes_routing_as_cost_does_and_states_it(tmp_path, capsys):
    from v41graph.cli.main import build_parser
    from v41graph.cli.options.plan_options import routing

    def routing_type(command):
        sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
        return next(a for a in sub._actions if a.dest == "routing").type
    assert routing_type("deploy") is routing_type("cost") is routing  # one option, one parser
    argv = ["deploy", "--model", "deepseek-v4-flash", "--gpus", "4", "--isl", "2000", "--osl", "50", "--ttft", "1s",
            "--tpot", "50ms", "--requests", "30", "--check", "1", "--cost", "sol", "--routing", "power-law:1.2:7"]
    assert main([*argv, "--json", "-o", str(tmp_path / "a")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["routing"] == {"model": "power-law", "alpha": 1.2, "seed": 7, "describe": "power-law α=1.2 (seed 7)"}
    assert main([*argv, "-o", str(tmp_path / "b")]) == 0
    assert capsys.readouterr().out.splitlines()[3] == "routing: power-law α=1.2 (seed 7) (the expert loads of every " \
                                                      "MoE step priced)"
    assert main([*argv[:-1], "zipf", "-o", str(tmp_path / "c")]) == 2
    assert capsys.readouterr().err == ("v41graph: error: v41graph deploy: argument --routing: unknown model 'zipf' "
                                       "(expected uniform, power-law[:ALPHA[:SEED]] or a loads file)\n")


def test_tokens_per_s_at_capacity_beside_the_offered_load(small):
    from v41graph.analysis.deploy.deploy_price import LOAD
    for pick in small["picks"].values():
        a = pick["analytic"]
        assert a["tokens_per_s_per_gpu_at_capacity"] == a["capacity_per_s"] * Q.osl / pick["gpus"]
        assert a["tokens_per_s_per_gpu"] == pytest.approx(LOAD * a["tokens_per_s_per_gpu_at_capacity"], rel=1e-12)


def test_attention_dp_inside_an_engine_and_caps_to_1024():
    """AIConfigurator's TPOT-50 decode engine `tp1 dp4 etp4` (SGLang --tp-size 4 --attn-dp-size 4, no EP) is in
    the space, and 992 running requests fit it: caps reach 1,024 (256 per DP rank)."""
    from v41graph.analysis.deploy.deploy_space import CAPS
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
    lines = launch_flags("aggregated", (inst, 2), "a/b")
    assert lines[0].startswith("python -m sglang_router.launch_router --worker-urls ")  # replicas: the router first
    assert all("--enable-mixed-chunk" in line for line in lines[1:]) and "--enable-mixed-chunk" not in lines[0]


def test_the_bound_prunes_without_moving_the_picks():
    """A deployment is priced only when its bound can reach the k-th best met so far (k = max(top, 4 × check),
    the check's reach down the ranking):
    with k past every candidate nothing is pruned, and the picks and the top are the same."""
    from v41graph.analysis.deploy.deploy_price import Costers
    m, h = load_model("deepseek-v4-flash"), load_hardware("h200_sxm")
    q = Question(isl=2000, osl=100, ttft_s=1.0, tpot_s=0.05, gpus=8, requests=40)
    kw = dict(caps=(32, 128), chunks=(8192,), check=1, costers=Costers(m, h))  # one step cache for both
    pruned = search(m, h, q, top=2, **kw)
    every = search(m, h, q, top=100_000, **kw)
    assert pruned["pruned_by_bound"] == {"aggregated": 14, "disaggregated": 182}
    assert every["pruned_by_bound"] == {"aggregated": 0, "disaggregated": 0}
    # the 14 aggregated rows, and the 182 pairs at their (x, y) counts: 388 rows, that the bound left unpriced
    assert len(every["candidates"]) - len(pruned["candidates"]) == 14 + 388
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
    from v41graph.analysis.deploy.deploy_pick import rounded
    assert w["by"] == rounded(max(a, d)) / rounded(min(a, d))
    assert w["why"].startswith("tokens/s per GPU at the SLA, simulated")


def test_a_large_deployment_is_checked_on_a_slice():
    from v41graph.analysis.deploy.deploy_checked import _slice
    from v41graph.analysis.deploy.deploy_walk import _counts
    # 250 replicas at 1,140 req/s, 43 s lifetimes: 1,600 requests keep 2 replicas busy for three lifetimes
    assert _slice("aggregated", ("i", 250), 1140.0, 43.0, 400) == (("i", 2), 2 / 250)
    # 155 prefill + 95 decode: one decode instance and the prefill instances in proportion (1.63 -> 2)
    assert _slice("disaggregated", ("p", 155, "d", 95), 2046.75, 41.0, 400) == (("p", 2, "d", 1), 1 / 95)
    assert _slice("disaggregated", ("p", 1, "d", 1), 13.0, 34.0, 400) == (("p", 1, "d", 1), 1.0)
    # on a large budget, per x: the decode count that balances the rates (floor, ceiling) and the most that fit
    assert _counts(250, lambda x: (1000 - 4 * x) // 4, 13.2, 21.5, None)[:6] == \
        [(1, 1), (1, 249), (2, 1), (2, 2), (2, 248), (3, 1)]
    assert _counts(2, lambda x: (8 - 4 * x) // 4, 13.0, 20.0, None) == [(1, 1)]
