"""Interface ②: requests, policies and plan validation (SPEC §2.1–2.2).

Every bad input must raise :class:`v41graph.PlanError` with a message that names the field and
the offending value; the expected messages are written out here, not rebuilt from the code.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import sympy

from v41graph import Plan, PlanError, Request, load_model, lower
from v41graph.ir.ledger import ledger
from v41graph.model.config import model_from_config
from v41graph.model.config import builtin_config_text
from v41graph.symbols import N, P, S


def _raises(message: str):
    """PlanError whose message contains ``message`` literally."""
    return pytest.raises(PlanError, match=re.escape(message))


# --------------------------------------------------------------------------- request constructors


def test_prefill_fields():
    r = Request.prefill(8192)
    assert (r.kind, r.cached, r.new, r.prompt, r.end) == ("prefill", 0, 8192, 8192, 8192)
    assert r.swa_cached is True and r.is_extend and r.is_last_chunk
    assert r.emits_logits == 1


def test_extend_fields():
    r = Request.extend(1001, 50, swa_cached=False)
    assert (r.kind, r.cached, r.new, r.prompt, r.end) == ("extend", 1001, 50, 1051, 1051)
    assert r.swa_cached is False and r.is_extend
    assert Request.extend(1001, 50).swa_cached is True


def test_chunk_fields_and_last_chunk():
    first, middle, last = Request.chunk(1000, 0, 400), Request.chunk(1000, 400, 400), Request.chunk(1000, 800, 200)
    assert (middle.kind, middle.cached, middle.new, middle.prompt, middle.end) == ("chunk", 400, 400, 1000, 800)
    assert [c.is_last_chunk for c in (first, middle, last)] == [False, False, True]
    # Only the chunk that reaches the prompt's end computes a logit.
    assert [c.emits_logits for c in (first, middle, last)] == [0, 0, 1]
    assert Request.chunk(1000, 0, 1000).is_last_chunk


def test_decode_and_verify_fields():
    d = Request.decode(4096)
    assert (d.kind, d.cached, d.new, d.end, d.emits_logits) == ("decode", 4096, 1, 4097, 1)
    assert not d.is_extend
    v = Request.verify(4096, 5)
    assert (v.kind, v.cached, v.new, v.verify_len, v.emits_logits) == ("verify", 4096, 5, 5, 5)
    assert not v.is_extend


@pytest.mark.parametrize("make, message", [
    (lambda: Request.prefill(0), "request prefill.prompt: must be >= 1, got 0"),
    (lambda: Request.prefill(-3), "request prefill.prompt: must be >= 1, got -3"),
    (lambda: Request.prefill(1.5), "request prefill.prompt: must be an integer or sympy expression, got 1.5"),
    (lambda: Request.prefill(True), "request prefill.prompt: must be an integer or sympy expression, got True"),
    (lambda: Request.prefill("8k"), "request prefill.prompt: must be an integer or sympy expression, got '8k'"),
    (lambda: Request.chunk(1000, 900, 200), "request chunk: start + length = 1100 exceeds prompt 1000"),
    (lambda: Request.chunk(1000, -1, 200), "request chunk.start: must be >= 0, got -1"),
    (lambda: Request.chunk(1000, 0, 0), "request chunk.length: must be >= 1, got 0"),
    (lambda: Request.decode(0), "request decode.context: must be >= 1, got 0"),
    (lambda: Request.extend(0, 5), "request extend.cached_prefix: must be >= 1, got 0"),
    (lambda: Request.extend(5, 0), "request extend.new_tokens: must be >= 1, got 0"),
    (lambda: Request.verify(4096, 0), "request verify.verify_len: must be >= 1, got 0"),
    (lambda: Request.prefill(10, images=-1), "request images: must be a non-negative integer, got -1"),
    (lambda: Request.prefill(10, images=1, image_size=(896,)),
     "request prefill.image_size: expected (width, height) in pixels, got (896,)"),
    (lambda: Request.prefill(10, images=1, image_size=(0, 896)),
     "request prefill.image_size: expected (width, height) in pixels, got (0, 896)"),
])
def test_bad_request_names_field_and_value(make, message):
    with _raises(message):
        make()


def test_sympy_number_is_validated_as_a_number():
    # A sympy *number* is checked like an int; only free symbols are taken on trust.
    with _raises("request decode.context: must be >= 1, got 0"):
        Request.decode(sympy.Integer(0))
    assert Request.decode(sympy.Integer(7)).cached == 7


def test_symbolic_lengths_accepted():
    assert Request.prefill(N).new == N
    e = Request.extend(P, S)
    assert (e.cached, e.new, e.end) == (P, S, P + S)
    assert Request.chunk(N, 0, N).is_last_chunk
    assert not Request.chunk(N, 0, 128).is_last_chunk
    # The beyond-prompt check cannot decide symbolically, so it is skipped.
    assert Request.chunk(N, 900, 200).end == 1100
    assert Plan([Request.prefill(N)], decoder_replay="bounded").requests[0].new is N


def test_requests_are_frozen():
    r = Request.prefill(10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.new = 11


# --------------------------------------------------------------------------- plan policies


def test_plan_defaults():
    p = Plan([Request.prefill(8192), Request.decode(4096)])
    assert [r.kind for r in p.requests] == ["prefill", "decode"]
    assert isinstance(p.requests, tuple)
    assert (p.decoder_replay, p.replay_cut, p.chunk_tail, p.encoder_restore) == ("off", "sglang", "every", "persisted")
    # fusion follows the model family unless the plan names one (issue 9): V4.1 single-pass, V4 two-pass
    assert (p.fusion, p.engram_residency, p.dspark) == (None, "hbm", "off")
    assert p.fusion_for(load_model()) == "single-pass"
    assert p.fusion_for(load_model("deepseek-v4-flash")) == "two-pass"
    assert p.with_policies(fusion="unfused").fusion_for(load_model("deepseek-v4-flash")) == "unfused"
    assert (p.tp, p.ep, p.dp, p.late_layer_start, p.replay_window) == (1, 1, 1, None, None)


@pytest.mark.parametrize("policies, message", [
    ({"foo": 1}, "plan: unknown policy 'foo'"),
    ({"decoder_replay": "maybe"}, "plan decoder_replay: unknown value 'maybe' (expected one of off, bounded)"),
    ({"replay_cut": "half"}, "plan replay_cut: unknown value 'half' (expected one of sglang, paper)"),
    ({"chunk_tail": "first"}, "plan chunk_tail: unknown value 'first' (expected one of every, last)"),
    ({"encoder_restore": "lost"}, "plan encoder_restore: unknown value 'lost' (expected one of persisted, bounded)"),
    ({"fusion": "mega"}, "plan fusion: unknown value 'mega' (expected one of unfused, two-pass, single-pass)"),
    ({"engram_residency": "ssd"}, "plan engram_residency: unknown value 'ssd' (expected one of hbm, host)"),
    ({"dspark": "yes"}, "plan dspark: unknown value 'yes' (expected one of off, on)"),
    ({"tp": 0}, "plan tp: must be >= 1, got 0"),
    ({"ep": -2}, "plan ep: must be >= 1, got -2"),
    ({"dp": 1.5}, "plan dp: must be an integer or sympy expression, got 1.5"),
    ({"replay_window": 0}, "plan replay_window: must be >= 1, got 0"),
    ({"late_layer_start": -1}, "plan late_layer_start: must be >= 1, got -1"),
        ({"late_layer_start": 0}, "plan late_layer_start: must be >= 1, got 0"),
])
def test_bad_policy_names_field_and_value(policies, message):
    with _raises(message):
        Plan([Request.prefill(10)], **policies)


def test_empty_and_foreign_requests():
    with _raises("plan requests: a plan needs at least one request"):
        Plan([])
    with _raises("plan requests: expected Request, got 8192"):
        Plan([8192])


def test_lost_swa_state_needs_bounded_restore():
    lost = Request.extend(1001, 50, swa_cached=False)
    with _raises("plan encoder_restore: 'persisted' cannot serve a request whose SWA state was lost "
                 "(swa_cached=False)"):
        Plan([lost])
    with _raises("plan encoder_restore: 'persisted'"):
        Plan([Request.prefill(10), lost], encoder_restore="persisted")
    assert Plan([lost], encoder_restore="bounded").encoder_restore == "bounded"


def test_with_policies_revalidates_and_keeps_requests():
    p = Plan([Request.prefill(10)], tp=2, label="a")
    q = p.with_policies(decoder_replay="bounded")
    assert (q.decoder_replay, q.tp, q.requests) == ("bounded", 2, p.requests)
    assert p.decoder_replay == "off"  # the original is untouched
    with _raises("plan decoder_replay: unknown value 'maybe'"):
        p.with_policies(decoder_replay="maybe")


def test_identity_is_the_policies_without_label():
    a = Plan([Request.prefill(10)], label="run A")
    b = Plan([Request.prefill(10)], label="run B")
    assert a == b and a.identity() == b.identity()
    names = [k for k, _ in a.identity()]
    assert names == ["decoder_replay", "replay_cut", "late_layer_start", "replay_window", "chunk_tail",
                     "encoder_restore", "fusion", "engram_residency", "dspark", "tp", "ep", "dp", "routing",
                     "ep_redundant", "shared_overlap", "moe_a2a"]
    assert a.identity() != a.with_policies(decoder_replay="bounded").identity()
    assert a.identity() != a.with_policies(fusion="unfused").identity()


def test_plan_is_frozen():
    p = Plan([Request.prefill(10)])
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.tp = 2


# --------------------------------------------------------------------------- checks against a model


def test_check_returns_the_plan(flash):
    p = Plan([Request.prefill(10)], tp=8, ep=64)
    assert p.check(flash) is p


def test_tp_must_divide_the_heads(flash):
    # V4.1-Flash has 64 attention heads.
    plan = Plan([Request.prefill(10)], tp=3)
    with _raises("plan tp: 3 does not divide the 64 attention heads"):
        plan.check(flash)
    with _raises("plan tp: 3 does not divide the 64 attention heads"):
        lower(flash, plan)
    with _raises("plan tp: 3 does not divide the 64 attention heads"):
        ledger(flash, plan)


def test_ep_must_divide_the_experts(flash):
    # 384 routed experts: 5 does not divide them, 8 / 384 do.
    with _raises("plan ep: 5 does not divide the 384 routed experts"):
        lower(flash, Plan([Request.prefill(10)], ep=5))
    Plan([Request.prefill(10)], ep=384).check(flash)


def test_late_layer_start_must_be_inside_the_model(flash):
    with _raises("plan late_layer_start: 41 is outside 1..40"):
        Plan([Request.prefill(10)], late_layer_start=41).check(flash)
    with _raises("plan late_layer_start: must be >= 1, got 0"):
        Plan([Request.prefill(10)], late_layer_start=0)


def test_verify_request_needs_dspark(flash):
    plan = Plan([Request.verify(4096, 5)])
    with _raises("plan dspark: a verify request needs dspark='on'"):
        plan.check(flash)
    with _raises("plan dspark: a verify request needs dspark='on'"):
        lower(flash, plan)
    assert plan.with_policies(dspark="on").check(flash).dspark == "on"


def test_dspark_needs_draft_blocks():
    raw = json.loads(builtin_config_text("deepseek-v4-flash"))
    raw["num_nextn_predict_layers"] = 0
    raw["compress_ratios"] = raw["compress_ratios"][:raw["num_hidden_layers"]]
    bare = model_from_config(raw, "no-drafts")
    with _raises("plan dspark: 'on' but model 'no-drafts' declares no draft blocks"):
        Plan([Request.decode(10)], dspark="on").check(bare)


def test_decoder_replay_needs_v41(v4_flash):
    plan = Plan([Request.prefill(10)], decoder_replay="bounded")
    message = "plan decoder_replay: 'bounded' needs a causal encoder-decoder (V4.1); model 'deepseek-v4-flash' is v4"
    with _raises(message):
        plan.check(v4_flash)
    with _raises(message):
        ledger(v4_flash, plan)
    with _raises(message):
        lower(v4_flash, plan)


# --------------------------------------------------------------------------- replay cut and window


def test_late_start_sglang_and_paper(flash):
    # SGLang: the layer after the last KV source (20) = 21; the paper: L/2 = 20.
    assert Plan([Request.prefill(10)]).late_start(flash) == 21
    assert Plan([Request.prefill(10)], replay_cut="sglang").late_start(flash) == 21
    assert Plan([Request.prefill(10)], replay_cut="paper").late_start(flash) == 20
    assert Plan([Request.prefill(10)], replay_cut="paper", late_layer_start=30).late_start(flash) == 30


def test_window_defaults_to_the_model(flash):
    assert Plan([Request.prefill(10)]).window(flash) == 128
    assert Plan([Request.prefill(10)], replay_window=64).window(flash) == 64
