"""Issue 17: paged caches, two-domain prefix restore over tiers, the request lifecycle, the serving
simulation and disaggregated stages. Expected figures are written out by hand from
reference/kv-pool-facts.md (256-token FULL pages; V4.1 per FULL page 3 × (128·288 + 128·68) +
(256·288 + 2·128·68) = 227,840 B; V4-Flash pages padded to 576 B) and the hardware files."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from helpers import run, run_json
from v41graph import Plan, Request, load_model
from v41graph.analysis.serving.serving_summary import restore_summary, simulate_summary
from v41graph.analysis.serving.simulate import Arrival, Scheduler, simulate
from v41graph.analysis.serving.step_cost import StepCoster
from v41graph.costs.hardware import hardware_from_dict, load_hardware
from v41graph.costs.requests.lifecycle import ttft_parts
from v41graph.errors import CostError
from v41graph.model.paging import paged_cache
from v41graph.passes import compile

V41 = load_model()
V4 = load_model("deepseek-v4-flash")
H200 = load_hardware("h200_sxm")
V41_PAGE = 3 * (128 * 288 + 128 * 68) + (256 * 288 + 2 * 128 * 68)          # 227,840
V41_SWA_PAGE = 256 * 528                                                      # 135,168, already 512-aligned
# V4-Flash: 21 ratio-4 owners (64 slots × 584 B → 65 × 576; index 64 × 68) + 20 ratio-128 (2 × 584 → 3 × 576)
V4_PAGE = 21 * (65 * 576 + 64 * 68) + 20 * (3 * 576)
V4_SWA_PAGE = 260 * 576                                                       # 256 × 584 = 149,504 → 149,760


@pytest.mark.parametrize("context, pages, swa_pages", [(4095, 16, 1), (4096, 16, 1), (4097, 17, 2), (1, 1, 1)])
def test_pages_and_bytes_at_a_page_boundary(context, pages, swa_pages):
    assert V41_PAGE == 227_840
    p = paged_cache(V41, context)
    assert (p.full_pages, p.global_bytes) == (pages, pages * V41_PAGE)
    assert p.swa_pages == 40 * swa_pages and p.swa_bytes == 40 * swa_pages * V41_SWA_PAGE
    q = paged_cache(V4, context)
    assert q.global_bytes == pages * V4_PAGE and q.swa_bytes == 43 * swa_pages * V4_SWA_PAGE


def test_memory_cli_shows_the_page_step(capsys):
    seen = {}
    for n in (4095, 4096, 4097):
        status, out, _ = run(capsys, "memory", "--context", str(n))
        assert status == 0
        seen[n] = re.search(r"global KV ([\d,]+) pages × ([\d,]+) B = ([\d,]+) B", out).groups()
        data = run_json(capsys, "memory", "--context", str(n))
        assert data["pages"]["global_bytes"] == int(seen[n][2].replace(",", ""))
    assert seen[4095] == seen[4096] == ("16", "227,840", f"{16 * V41_PAGE:,}")
    assert seen[4097] == ("17", "227,840", f"{17 * V41_PAGE:,}")  # one token more: one whole page more


def test_ratios_against_v4_flash_at_1m(capsys):
    n = 1_048_576
    v41_global = 890 * n
    v4_global = 21 * (n // 4) * (584 + 68) + 20 * (n // 128) * 584
    data = run_json(capsys, "ratios")
    assert data["global_kv_ratio_exact_entries"] == v41_global / v4_global  # 0.2533: the paper's "about 1/4"
    assert data["global_kv_ratio_paged"] == (n // 256 * V41_PAGE) / (n // 256 * V4_PAGE)
    # persisted: V4.1 keeps no SWA; V4-Flash keeps its window's page (1 page, N is page-aligned) in 43 layers
    persisted = (n // 256 * V41_PAGE) / (n // 256 * V4_PAGE + 43 * V4_SWA_PAGE)
    assert data["persisted_ratio_v41_no_swa_vs_v4_with_swa"] == persisted
    assert 0.24 < persisted < 0.25  # at 1M the window is negligible: not the paper's 1/8 (docs/serving.md)
    _, out, _ = run(capsys, "ratios")
    assert "global KV per token (exact entries): 0.2533  (paper: about 1/4)" in out


def _hand_pipeline(forward_s: float, fetch_latency: float, bandwidth: int) -> float:
    """Owners 2, 8, 14 (45,568 B a page) then 20 (91,136 B) arrive in turn; layer l waits for its owner."""
    pages, t, arrive = 65536 // 256, fetch_latency, {}
    for owner, per_page in ((2, 36864 + 8704), (8, 36864 + 8704), (14, 36864 + 8704), (20, 73728 + 2 * 8704)):
        t += pages * per_page / bandwidth
        arrive[owner] = t
    done = 0.0
    for layer in range(40):
        owner = None if layer < 2 else (2 if layer < 8 else 8 if layer < 14 else 14 if layer < 20 else 20)
        done = max(done, arrive.get(owner, 0.0)) + forward_s / 40
    return done


@pytest.mark.parametrize("tier", ["host_dram", "ssd"])
def test_prefix_hit_restored_from_a_tier_swa_lost_and_kept(tier):
    bw, lat = {"host_dram": (64_000_000_000, 10e-6), "ssd": (7_000_000_000, 100e-6)}[tier]
    lost = restore_summary(V41, H200, prefix=65536, suffix=1024, tier=tier, swa_cached=False, tp=8, ep=8)
    kept = restore_summary(V41, H200, prefix=65536, suffix=1024, tier=tier, swa_cached=True, tp=8, ep=8)
    nbytes = 256 * V41_PAGE
    for s in (lost, kept):
        assert s["fetch_bytes"] == nbytes == 58_327_040
        assert s["fetch_s"] == pytest.approx(lat + nbytes / bw, rel=1e-12)  # bytes / host-link bandwidth
        assert s["ttft_s"] == pytest.approx(_hand_pipeline(s["forward_s"], lat, bw), rel=1e-12)
        assert max(s["fetch_s"], s["forward_s"]) <= s["ttft_s"] < s["fetch_s"] + s["forward_s"]  # overlapped
    assert lost["replayed_token_layers"] == 128 * 40  # the window recomputed in every layer
    assert kept["replayed_token_layers"] == 0 and kept["forward_s"] < lost["forward_s"]  # no replay


def test_simulated_hit_ttft_is_the_restore():
    coster = StepCoster(V41, H200, tp=8, ep=8, bucket=False)
    hit = [Arrival(0.0, 66560, 1, hit=65536, swa_cached=False, tier="host_dram")]
    want = restore_summary(V41, H200, prefix=65536, suffix=1024, tier="host_dram", swa_cached=False, tp=8, ep=8)
    assert simulate(hit, coster, Scheduler(overlap=False)).records[0].ttft_s == pytest.approx(want["ttft_s"],
                                                                                              rel=1e-12)
    # overlap: the one-token request rides one more (decode) step, and its token leaves when that ends
    late = simulate(hit, coster).records[0].ttft_s
    assert late == pytest.approx(want["ttft_s"] + _forward(Request.decode(66561)), rel=1e-12)


def _forward(*reqs) -> float:
    return float(compile(V41, Plan(list(reqs), tp=8, ep=8), H200).report("schedule").total_time_s)


def test_chunked_prompt_ttft_is_its_chunk_forwards():
    coster = StepCoster(V41, H200, tp=8, ep=8, bucket=False)
    chunks = sum(_forward(Request.chunk(20000, s, n)) for s, n in [(0, 8192), (8192, 8192), (16384, 3616)])
    r = simulate([Arrival(0.0, 20000, 2)], coster, Scheduler(overlap=False)).records[0]
    assert r.ttft_s == pytest.approx(chunks, rel=1e-12)
    # the overlap scheduler (the default) emits the first token when the decode step after the last chunk ends
    r = simulate([Arrival(0.0, 20000, 2)], coster).records[0]
    assert r.ttft_s == pytest.approx(chunks + _forward(Request.decode(20001)), rel=1e-12)


def test_chunked_prompt_with_decode_batched_between():
    coster = StepCoster(V41, H200, tp=8, ep=8, bucket=False)
    run_ = simulate([Arrival(0.0, 1000, 50), Arrival(0.01, 20000, 2)], coster, Scheduler(mixed=True))
    a, b = run_.records
    parts = ttft_parts(b, run_.log)
    assert [run_.log[i].kind for i in b.steps] == ["mixed"] * 3  # the decode of request 0 rides in each chunk
    after = run_.log[b.steps[-1] + 1]  # the step after its last chunk: the overlap scheduler emits when it ends
    assert parts.emission_s == pytest.approx(after.end - after.start, rel=1e-12) and parts.emission_s > 0
    assert parts.ttft_s == pytest.approx(parts.queue_s + parts.own_steps_s + parts.between_s + parts.emission_s,
                                         rel=1e-12)
    assert parts.own_steps_s == pytest.approx(sum(run_.log[i].end - run_.log[i].start for i in b.steps))
    first = run_.log[b.steps[0]]
    # request 0's prompt + the tokens produced before this step, which the overlap scheduler emits one step
    # late: by this step's end
    context = 1000 + sum(1 for t in a.token_times if t <= first.end)
    assert first.end - first.start == pytest.approx(
        _forward(Request.chunk(20000, 0, 8192, seq=0), Request.decode(context, seq=1)), rel=1e-12)


def test_simulate_cli_acceptance(capsys):
    argv = ("simulate", "--rate", "2,4,8", "--prompt", "4096", "--output", "256", "--duration", "600", "--seed", "1",
            "--hardware", "h200_sxm", "--tp", "8", "--ep", "8")
    status, out, err = run(capsys, *argv)
    assert status == 0 and err == ""
    rows = re.findall(r"^ +(\d\.0) +(\d+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)$",
                      out, re.M)
    assert [r[0] for r in rows] == ["2.0", "4.0", "8.0"]
    p99 = [float(r[4]) for r in rows]
    assert p99 == sorted(p99) and p99[0] < p99[-1]  # TTFT p99 grows with the rate
    tput = [float(r[8]) for r in rows]
    assert tput[0] < tput[1] < tput[2]
    assert "from arrival at the scheduler" in out and "[0, 600) s" in out


def test_simulate_is_byte_identical_and_json_agrees(capsys):
    argv = ("simulate", "--rate", "4", "--duration", "60", "--tp", "8", "--ep", "8")
    first, second = run(capsys, *argv), run(capsys, *argv)
    assert first == second and first[0] == 0
    data = run_json(capsys, *argv)
    row = data["rates"][0]
    assert f"{row['ttft_s']['p50'] * 1e3:8.2f}" in first[1] and data["scheduler"]["max_prefill_tokens"] == 16384
    # throughput counts tokens emitted inside [0, 60) only: at most every request's 256 tokens
    assert 0 < row["throughput_tok_s"] <= row["requests"] * 256 / 60


def test_disaggregated_transfer_in_the_ttft():
    data = simulate_summary(V41, H200, rates=(1.0,), prompt=4096, output=4, duration=10, seed=3, tp=8, ep=8,
                            disagg={"tp": 8, "ep": 8})
    row = data["rates"][0]
    moved = 16 * V41_PAGE + 40 * V41_SWA_PAGE  # global pages + the SWA window page of every layer
    assert row["kv_transfer_bytes"]["p50"] == moved == 9_052_160
    assert row["kv_transfer_s"]["p50"] == pytest.approx(moved / 50_000_000_000, rel=1e-12)
    alone = simulate_summary(V41, H200, rates=(1.0,), prompt=4096, output=4, duration=10, seed=3, tp=8, ep=8,
                             scheduler=Scheduler(overlap=False))
    # the first rows' queueing is zero at this rate: TTFT = prefill forward + transfer; the prefill instance
    # goes idle after each prefill, so even under the overlap scheduler it hands over at the prefill's end
    assert row["ttft_s"]["p50"] == pytest.approx(alone["rates"][0]["ttft_s"]["p50"] + moved / 50e9, rel=1e-9)


def test_bad_inputs_are_one_line_errors(capsys, tmp_path):
    status, out, err = run(capsys, "simulate", "--rate", "2,-1")
    assert status == 2 and err.count("\n") == 1 and "positive rates" in err
    bad = tmp_path / "t.csv"
    bad.write_text("t,prompt,output,colour\n0,10,1,red\n", encoding="utf-8")
    status, _, err = run(capsys, "simulate", "--trace", str(bad))
    assert status == 2 and "unknown column ['colour']" in err
    status, _, err = run(capsys, "restore", "--prefix", "100", "--suffix", "1", "--tier", "tape")
    assert status == 2 and "invalid choice" in err
    with pytest.raises(CostError, match="hit < prompt"):
        Arrival(0.0, 100, 1, hit=100)


def test_trace_file_runs(capsys, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("t,prompt,output,hit,swa_cached,tier\n0,4352,2,4096,0,host_dram\n0.5,512,3,0,1,hbm\n",
                     encoding="utf-8")
    data = run_json(capsys, "simulate", "--trace", str(trace), "--duration", "2", "--tp", "8", "--ep", "8")
    assert data["workload"]["arrivals"] == "trace" and data["rates"][0]["requests"] == 2


def test_storage_tier_validation():
    base = json.loads((resources.files("v41graph") / "data" / "hardware" / "h200_sxm.json").read_text(encoding="utf-8"))
    base["storage_tiers"] = {"tape": {"bandwidth": 1, "latency_ns": 0}}
    with pytest.raises(CostError, match="unknown storage tier 'tape'"):
        hardware_from_dict(base, "x")
    base["storage_tiers"] = {"ssd": {"bandwidth": 0, "latency_ns": 0}}
    with pytest.raises(CostError, match="storage_tiers.ssd.bandwidth must be a positive integer"):
        hardware_from_dict(base, "x")
    with pytest.raises(CostError, match="no storage tier 'tape'"):
        H200.tier("tape")


def test_dspark_bursts_in_the_itl():
    from dataclasses import replace
    coster = StepCoster(V41, H200, tp=8, ep=8, bucket=False)
    off = Scheduler(overlap=False)
    run_ = simulate([Arrival(0.0, 4096, 7)], coster, off, dspark=(1.0, 1.0))  # every draft accepted: 3 a step
    r = run_.records[0]
    assert [s.kind for s in run_.log] == ["prefill", "decode", "decode"]
    step1, step2 = run_.log[1].end - run_.log[1].start, run_.log[2].end - run_.log[2].start
    assert r.token_times == (run_.log[0].end,) + (run_.log[1].end,) * 3 + (run_.log[2].end,) * 3
    from v41graph.costs.requests.lifecycle import itl_samples
    assert itl_samples(r) == (step1, 0.0, 0.0, step2, 0.0, 0.0)  # a burst: one gap, then zeros
    # overlap: a burst leaves with the next step's end; the request rides one more step after its last burst
    late = simulate([Arrival(0.0, 4096, 7)], coster, dspark=(1.0, 1.0))
    assert late.log[:3] == run_.log and [s.kind for s in late.log[3:]] == ["decode"]
    assert late.records[0].token_times == (run_.log[1].end,) + (run_.log[2].end,) * 3 + (late.log[3].end,) * 3
    verify = replace(Request.verify(4096 + 1, 2), copies=1, seq=0)  # prompt + the first token, 2 drafted tokens
    want = float(compile(V41, Plan([verify], dspark="on", tp=8, ep=8), H200).report("schedule").total_time_s)
    assert step1 == pytest.approx(want, rel=1e-12)
    none = simulate([Arrival(0.0, 4096, 3)], coster, off, dspark=(0.0,)).records[0]  # nothing accepted: 1 a step
    assert len(set(none.token_times)) == 3


def test_dspark_cli_states_the_expected_tokens(capsys):
    data = run_json(capsys, "simulate", "--rate", "1", "--duration", "10", "--tp", "8", "--ep", "8",
                    "--dspark-acceptance", "0.8,0.5")
    assert data["dspark"]["expected_tokens_per_step"] == 1 + 0.8 + 0.8 * 0.5
    status, _, err = run(capsys, "simulate", "--dspark-acceptance", "0.8,1.5")
    assert status == 2 and "probabilities in [0, 1]" in err


def test_kv_pool_in_pages_bounds_admission():
    coster = StepCoster(V41, H200, tp=8, ep=8, bucket=False)
    pages = -(-(4096 + 2) // 256)  # 17 FULL pages reserved per request (prompt + output)
    arrivals = [Arrival(0.0, 4096, 2), Arrival(0.0, 4096, 2)]
    tight = simulate(arrivals, coster, Scheduler(kv_pages=2 * pages - 1))
    a, b = tight.records
    # the second waits until the first frees its pages: under overlap after the step that follows its last
    # token (prefill, decode, then the step SGLang runs before it learns of the finish)
    assert [s.kind for s in tight.log] == ["prefill", "decode", "decode", "prefill", "decode", "decode"]
    assert b.steps == (3,) and tight.log[b.steps[0]].start == tight.log[2].end
    assert a.token_times == (tight.log[1].end, tight.log[2].end)  # overlap: each token one step late
    roomy = simulate(arrivals, coster, Scheduler(kv_pages=2 * pages))
    assert roomy.records[0].steps == roomy.records[1].steps == (0,)  # both fit: one prefill step
    with pytest.raises(CostError, match="needs 17 pages, more than the pool's 16"):
        simulate(arrivals, coster, Scheduler(kv_pages=16))


def test_chunked_suffix_after_a_lost_swa_replays_in_its_first_chunk():
    coster = StepCoster(V41, H200, tp=8, ep=8, bucket=False)
    run_ = simulate([Arrival(0.0, 65536 + 10000, 1, hit=65536, swa_cached=False)], coster)  # HBM hit, 2 chunks
    r = run_.records[0]
    first = run_.log[r.steps[0]]
    plan = Plan([Request.extend(65536, 8192, False, seq=0)], encoder_restore="bounded", tp=8, ep=8)
    assert first.end - first.start == pytest.approx(
        float(compile(V41, plan, H200).report("schedule").total_time_s), rel=1e-12)
    assert len(r.steps) == 2 and first.restore_s == 0.0  # in HBM: nothing to fetch
