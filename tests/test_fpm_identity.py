"""Identity: frozen, hashable, JSON round trip, built from a Plan, and routing tables by it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from v41graph import Plan, PlanError, Request
from v41graph.costs.fpm.system_figures import route
from v41graph.costs.fpm.load import load_table
from v41graph.ir.identity import Identity, Runtime, identity_from_plan

# The GB200 vLLM deployment as a user would describe it, written out from the calibration
# README and receipts (not read from the table under test).
VLLM_GB200 = Runtime(
    model="deepseek-ai/DeepSeek-V4.1-Flash@fb2764a5cf321eaa5070ca8f9e892818f477c16d",
    backend="vllm", backend_version="0.1.dev20904+g179dd0fa9",
    image_digest="sha256:c42ea19c53004855c25731f2cf5e6b5e3955ed677f8d3a7b854b864b11e32d52",
    topology="1 node x 4 GPUs", execution="eager",
    weights="main GEMMs fp8 block; experts FLASHINFER_TRTLLM_MXFP4_MXFP8",
    activation_dtype="fp8", kv_cache_dtype="fp8",
    boundary="vLLM native FPM CPU schedule/output interval (one sample per point)")


@pytest.fixture(scope="module")
def tables():
    return [load_table(n) for n in ("aisimulate-gb300-off-v1", "aisimulate-gb200-calibration-v1",
                                    "aisimulate-gb300-on-v1")]


def _plan(**policies) -> Plan:
    return Plan([Request.decode(1024, copies=2)], tp=4, **policies)


def test_identity_is_frozen_hashable_and_round_trips_json():
    ident = identity_from_plan(_plan(), "gb200", VLLM_GB200)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ident.gpu = "gb300"  # type: ignore[misc]
    twin = Identity.from_json(ident.to_json())
    assert twin == ident and hash(twin) == hash(ident) and len({ident, twin}) == 1
    data = json.loads(ident.to_json())
    assert data["coordinates"] == ["phase", "batch_size", "total_prefill_tokens", "total_kv_read_tokens"]
    assert (data["tp"], data["pp"], data["decoder_replay"], data["admission"]) == (4, 1, "off", "query")


def test_identity_takes_its_policies_from_plan_identity():
    ident = identity_from_plan(_plan(decoder_replay="bounded", fusion="two-pass", dspark="off"), "gb300", VLLM_GB200)
    assert (ident.gpu, ident.decoder_replay, ident.fusion, ident.engram_residency) == ("gb300", "bounded",
                                                                                        "two-pass", "hbm")
    assert ident.modality == "text"
    assert identity_from_plan(Plan([Request.prefill(64, images=1)]), "gb200", VLLM_GB200).modality == "text+image"


def test_aisimulate_table_identities_round_trip(tables):
    for t in tables:
        assert Identity.from_dict(json.loads(t.identity.to_json())) == t.identity


def test_plan_on_gb200_tp4_vllm_replay_off_routes_to_the_gb200_table(tables):
    table, mismatches = route(identity_from_plan(_plan(), "gb200", VLLM_GB200), tables)
    assert table is not None and table.name == "aisimulate-gb200-calibration-v1"
    assert "gpu" in mismatches["aisimulate-gb300-off-v1"]


def test_the_same_plan_on_gb300_routes_nowhere(tables):
    table, mismatches = route(identity_from_plan(_plan(), "gb300", VLLM_GB200), tables)
    assert table is None
    assert mismatches["aisimulate-gb200-calibration-v1"] == ("gpu",)


def test_replay_on_differs_from_the_replay_off_table_by_decoder_replay(tables):
    ident = identity_from_plan(_plan(decoder_replay="bounded"), "gb200", VLLM_GB200)
    gb200 = tables[1]
    assert gb200.identity.differences(ident) == ("decoder_replay",)
    assert gb200.identity.describe_differences(ident) == "decoder_replay (table 'off', query 'bounded')"


def test_unrecorded_fields_are_named_not_matched(tables):
    ident = identity_from_plan(_plan(), "gb200", VLLM_GB200)
    assert tables[1].identity.unverified(ident) == ("encoder_restore", "fusion")


def test_identity_json_errors_name_the_field():
    good = json.loads(identity_from_plan(_plan(), "gb200", VLLM_GB200).to_json())
    missing = {k: v for k, v in good.items() if k != "gpu"}
    with pytest.raises(PlanError, match=r"^identity: missing field 'gpu'$"):
        Identity.from_dict(missing)
    with pytest.raises(PlanError, match=r"^identity: unknown field 'colour'$"):
        Identity.from_dict({**good, "colour": "red"})
    with pytest.raises(PlanError, match=r"^identity: tp: must be an integer >= 1, got 0$"):
        Identity.from_dict({**good, "tp": 0})
    with pytest.raises(PlanError, match=r"^identity: admission: unknown value 'maybe'"):
        Identity.from_dict({**good, "admission": "maybe"})
    with pytest.raises(PlanError, match=r"^identity: backend: must be a non-empty string, got None$"):
        Identity.from_dict({**good, "backend": None})
