"""Issue 34, item 4: tokens as engines stream them. Under SGLang's overlap scheduler (the default) a
step's tokens are emitted when the next step ends, if it follows back to back, else at the step's own
end; ``overlap=False`` (``--disable-overlap-schedule``) is the simulation as it was, byte for byte.

Most figures use a step coster of fixed times in binary fractions (a prefill step 1/4 s, a decode
step 1/16 s), so every expected time is exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emission_cases import cases, dump
from helpers import run, run_json
from v41graph import Plan, Request, load_model
from v41graph.analysis.deploy.deploy_price import Costers, prefill_s, price_aggregated, price_disaggregated
from v41graph.analysis.deploy.deploy_space import EngineMapping, Instance, prefill_prompts
from v41graph.analysis.serving.simulate import Arrival, Scheduler, simulate
from v41graph.analysis.serving.step_cost import StepCoster
from v41graph.costs.hardware import load_hardware
from v41graph.costs.requests.lifecycle import itl_samples, ttft_parts
from v41graph.passes import compile

GOLDEN = Path(__file__).parent / "golden" / "serving" / "step_end.json"
P, D = 0.25, 0.0625  # the fixed prefill and decode step times
OFF = Scheduler(overlap=False)


class Fixed:
    """A step coster: 1/4 s for a step with prefill work, 1/16 s for a decode-only step."""

    def piece_key(self, piece):
        return piece

    def decode_key(self, batch, context_sum):
        return (batch, context_sum)

    def forward_s(self, pieces, decode, verify_len=0):
        return P if pieces else D


def test_overlap_off_is_byte_identical_to_the_simulation_before():
    """The golden was written by c3b7347's simulation and rewritten once, at the decode-batch fix (the
    batch is a snapshot: a request finishing in a step no longer makes the next one skip its token, and a
    prompt finishing its prefill in a mixed step no longer decodes in that same step); see
    test_a_finishing_request_does_not_skip_the_next and test_a_mixed_step_decodes_only_the_running."""
    golden = GOLDEN.read_text(encoding="utf-8")
    assert dump(cases(lambda **kw: Scheduler(overlap=False, **kw))) == golden
    # with overlap a finished request rides one more step: every case with decode steps gains steps
    a, b = json.loads(golden), json.loads(dump(cases(lambda **kw: Scheduler(**kw))))
    assert a != b and all(len(b[k]["log"]) >= len(a[k]["log"]) for k in a if "log" in a[k])


def test_a_finishing_request_does_not_skip_the_next():
    """Two requests decode side by side and the first finishes: the second still gets its token in that
    step (the batch used to be the live list, from which the finisher was removed mid-loop)."""
    run = simulate([Arrival(0.0, 100, 2), Arrival(0.0, 100, 3)], Fixed(), OFF)
    assert [s.kind for s in run.log] == ["prefill", "decode", "decode"]
    assert [r.token_times for r in run.records] == [(P, P + D), (P, P + D, P + 2 * D)]


def test_a_mixed_step_decodes_only_the_running():
    """A prompt that finishes its prefill in a mixed step gets its first token there and decodes from the
    next step on (it used to be appended to the batch being decoded and get a second token at once)."""
    run = simulate([Arrival(0.0, 100, 3), Arrival(0.3, 100, 2)], Fixed(), Scheduler(overlap=False, mixed=True))
    assert [s.kind for s in run.log] == ["prefill", "decode", "mixed", "decode"]
    assert [r.token_times for r in run.records] == [(P, P + D, 2 * P + D), (2 * P + D, 2 * P + 2 * D)]


def test_under_overlap_a_finished_request_rides_one_more_step():
    """SGLang learns of a finish one batch late: the request is in one more (costed) decode step and its
    last token goes out when that step ends, so its token gaps are all one decode step."""
    late = simulate([Arrival(0.0, 100, 3)], Fixed(), Scheduler())
    now = simulate([Arrival(0.0, 100, 3)], Fixed(), OFF)
    assert [s.kind for s in late.log] == ["prefill", "decode", "decode", "decode"]
    assert [s.kind for s in now.log] == ["prefill", "decode", "decode"]
    assert late.records[0].token_times == (P + D, P + 2 * D, P + 3 * D)
    assert now.records[0].token_times == (P, P + D, P + 2 * D)


def test_isolated_request_ttft_is_prefill_plus_one_decode_step():
    late = simulate([Arrival(0.0, 100, 4)], Fixed()).records[0]
    now = simulate([Arrival(0.0, 100, 4)], Fixed(), OFF).records[0]
    assert late.token_times == (0.3125, 0.375, 0.4375, 0.5)  # the last rides one more step (then idle)
    assert now.token_times == (0.25, 0.3125, 0.375, 0.4375)
    assert (late.ttft_s, now.ttft_s) == (P + D, P) == (0.3125, 0.25)
    run_ = simulate([Arrival(0.0, 100, 4)], Fixed())
    parts = ttft_parts(run_.records[0], run_.log)
    assert (parts.queue_s, parts.own_steps_s, parts.between_s, parts.emission_s) == (0.0, P, 0.0, D)


def _forward(*reqs) -> float:
    return float(compile(load_model(), Plan(list(reqs), tp=8, ep=8), load_hardware("h200_sxm"))
                 .report("schedule").total_time_s)


def test_isolated_request_on_the_compiled_graph():
    coster = StepCoster(load_model(), load_hardware("h200_sxm"), tp=8, ep=8, bucket=False)
    prefill, decode = _forward(Request.prefill(4096)), _forward(Request.decode(4097))
    late = simulate([Arrival(0.0, 4096, 3)], coster).records[0]
    now = simulate([Arrival(0.0, 4096, 3)], coster, OFF).records[0]
    assert late.ttft_s == pytest.approx(prefill + decode, rel=1e-12)
    assert now.ttft_s == pytest.approx(prefill, rel=1e-12)


def test_itl_unchanged_in_steady_state():
    # A decodes 8 tokens; B arrives during A's decode, is prefilled between two of A's decode steps and keeps
    # the engine busy past A's end, so every step of A's is followed back to back
    arrivals = [Arrival(0.0, 100, 8), Arrival(0.4, 100, 20)]
    late, now = simulate(arrivals, Fixed()), simulate(arrivals, Fixed(), OFF)
    assert late.log[:-1] == now.log and late.log[-1].kind == "decode"  # B rides one more step at the end
    a_late, a_now = late.records[0], now.records[0]
    assert a_now.token_times == (0.25, 0.3125, 0.375, 0.4375, 0.75, 0.8125, 0.875, 0.9375)  # B's prefill: 0.4375-0.6875
    assert a_late.token_times == (0.3125, 0.375, 0.4375, 0.6875, 0.8125, 0.875, 0.9375, 1.0)
    assert itl_samples(a_now) == (D, D, D, P + D, D, D, D)
    assert itl_samples(a_late) == (D, D, P, 2 * D, D, D, D)  # B's prefill shifts one decode step to the next gap
    tpot = lambda r: (r.token_times[-1] - r.token_times[0]) / (len(r.token_times) - 1)  # noqa: E731
    assert tpot(a_late) == tpot(a_now) == 0.6875 / 7  # both ends one step late: the same TPOT
    b_late, b_now = late.records[1], now.records[1]
    assert itl_samples(b_late) == itl_samples(b_now)  # every step back to back, the last one too: the same gaps
    assert (b_now.ttft_s, b_late.ttft_s) == (0.6875 - 0.4, 0.75 - 0.4)


def test_a_one_token_request_rides_one_more_step_then_the_engine_idles():
    # one output token: SGLang learns it is done one batch late, so one (costed) decode step follows the
    # prefill and the token leaves when it ends; then the engine idles until the next arrival
    run_ = simulate([Arrival(0.0, 100, 1), Arrival(2.0, 100, 1)], Fixed())
    assert [(s.kind, s.start) for s in run_.log] == [("prefill", 0.0), ("decode", P), ("prefill", 2.0),
                                                     ("decode", 2 + P)]
    assert [r.token_times for r in run_.records] == [(P + D,), (2 + P + D,)]
    off = simulate([Arrival(0.0, 100, 1), Arrival(2.0, 100, 1)], Fixed(), OFF)
    assert [r.token_times for r in off.records] == [(P,), (2 + P,)]


def test_prefill_instance_hands_over_when_its_token_is_emitted():
    # a prefill instance: B's prefill follows A's back to back, so A's first token (and its KV send) waits for it
    arrivals = [Arrival(0.0, 100, 5), Arrival(0.1, 100, 5), Arrival(3.0, 100, 5)]
    late = simulate(arrivals, Fixed(), prefill_only=True)
    now = simulate(arrivals, Fixed(), OFF, prefill_only=True)
    assert [r.token_times for r in late.records] == [(0.5,), (0.5,), (3.25,)]
    assert [r.token_times for r in now.records] == [(0.25,), (0.5,), (3.25,)]


def test_decode_instance_first_token_is_the_handoff():
    late = simulate([Arrival(1.0, 100, 3)], Fixed(), decode_only=True).records[0]
    now = simulate([Arrival(1.0, 100, 3)], Fixed(), OFF, decode_only=True).records[0]
    assert late.token_times == (1.0, 1.125, 1.1875)
    assert now.token_times == (1.0, 1.0625, 1.125)


def test_simulate_cli_flag_and_json(capsys):
    argv = ("simulate", "--rate", "1", "--duration", "5", "--prompt", "1024", "--output", "8", "--tp", "8",
            "--ep", "8", "--cost", "sol")
    late, now = run_json(capsys, *argv), run_json(capsys, *argv, "--disable-overlap-schedule")
    assert (late["emission"], now["emission"]) == ("overlap", "step_end")
    a, b = late["rates"][0], now["rates"][0]
    assert a["requests"] == b["requests"] > 0 and a["steps"] == b["steps"] + a["requests"]  # one more step each
    # isolated requests: the first token waits for one decode step of a batch of 1 at 1,025 tokens (bucketed
    # to 1,280), every request alike
    step = StepCoster(load_model(), load_hardware("h200_sxm"), tp=8, ep=8).forward_s((), (1, 1280))
    assert a["ttft_s"]["p50"] == pytest.approx(b["ttft_s"]["p50"] + step, rel=1e-9)
    assert a["itl_s"]["p50"] == pytest.approx(b["itl_s"]["p50"], rel=1e-9)
    status, out, _ = run(capsys, *argv)
    assert status == 0 and "emission: tokens emitted one step late (SGLang overlap scheduler)" in out
    _, out, _ = run(capsys, *argv, "--disable-overlap-schedule")
    assert "emission: tokens emitted at the end of their step (--disable-overlap-schedule)" in out


def test_analytic_ttft_adds_the_following_step():
    from v41graph.analysis.deploy.deploy_price import aggregated_at, aggregated_steps
    model, hw = load_model("deepseek-v4-flash"), load_hardware("h200_sxm")
    costers = Costers(model, hw)
    inst = Instance(EngineMapping(4, 1, 4), 32, 8192)
    off = Instance(EngineMapping(4, 1, 4), 32, 8192, overlap=False)
    now = price_aggregated(costers, off, 1, 4000, 100)
    late = price_aggregated(costers, inst, 1, 4000, 100, now.rate_per_s)  # both at one rate
    s = aggregated_steps(costers, inst, 4000, 100)
    b_now = aggregated_at(s, now.rate_per_s, 32, 100, False)[2]
    b_late = aggregated_at(s, now.rate_per_s, 32, 100, True)[2]
    assert b_late > b_now  # under overlap a finished request rides one more step in the batch
    step = now.ttft_s - s.td(b_now)  # without overlap: the decode step in progress, the prefill step
    assert step >= prefill_s(costers.get(inst), 4000, 8192, 4) / 4 > 0
    rho = 1 - s.td(b_late) / late.tpot_s  # the share of decode time prefills take (TPOT = t_d / (1 - rho))
    assert 0 < rho < 1
    # + (overlap) the next step: another prompt's prefill when one waits (probability rho), else a decode
    assert late.ttft_s == pytest.approx(s.td(b_late) + step + rho * step + (1 - rho) * s.td(b_late), rel=1e-9)
    pre, pre_off = Instance(EngineMapping(4, 1, 4), 32, 8192), Instance(EngineMapping(4, 1, 4), 32, 8192,
                                                                         overlap=False)
    late = price_disaggregated(costers, pre, 1, inst, 1, 4000, 100)
    now = price_disaggregated(costers, pre_off, 1, inst, 1, 4000, 100)
    step = prefill_s(costers.get(inst), 4000, 8192, prefill_prompts(4000))
    rho = late.rate_per_s / (prefill_prompts(4000) / step)  # the prefill instance's load
    assert late.ttft_s - now.ttft_s == pytest.approx(rho * step, rel=1e-12) and 0 < rho < 1


def test_deploy_cli_flag_json_and_launch_line(tmp_path, capsys):
    argv = ["deploy", "--model", "deepseek-v4-flash", "--gpus", "2", "--isl", "2000", "--osl", "50", "--ttft", "1s",
            "--tpot", "50ms", "--requests", "30", "--check", "1", "--cost", "sol",
            "--checkpoint", "fp4", "--fp4-on-hopper"]  # FP8 experts do not fit 2 H200s
    late = run_json(capsys, *argv, "-o", str(tmp_path / "a"))
    now = run_json(capsys, *argv, "-o", str(tmp_path / "b"), "--disable-overlap-schedule")
    assert (late["emission"], now["emission"]) == ("overlap", "step_end")
    pl, pn = late["picks"]["aggregated"], now["picks"]["aggregated"]
    assert pl["label"] == pn["label"]
    # under overlap a finished request rides one more step: the batch (and so TPOT) moves by about 1/OSL
    assert pl["analytic"]["ttft_s"] > pn["analytic"]["ttft_s"]
    assert pl["analytic"]["tpot_s"] == pytest.approx(pn["analytic"]["tpot_s"], rel=2 / 50)
    assert pl["simulated"]["ttft_p50_s"] > pn["simulated"]["ttft_p50_s"]
    assert all("--disable-overlap-schedule" in line for line in pn["launch"])
    assert not any("--disable-overlap-schedule" in line for line in pl["launch"])
    assert pn["deployment"][0]["overlap_schedule"] is False and pl["deployment"][0]["overlap_schedule"] is True
    status, out, _ = run(capsys, *argv, "-o", str(tmp_path / "c"))
    assert status == 0 and "emission: tokens emitted one step late (SGLang overlap scheduler)" in out
