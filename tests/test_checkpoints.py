"""Checkpoints per hardware (issue 34): a GPU without FP4 tensor cores runs a model's engine-published
FP8 checkpoint, one with them the official FP4 one; V4.1-Flash, with no FP8 checkpoint, stays FP4 on
Hopper with a caveat; every answer names the checkpoint; the Python API switches only when asked."""

from __future__ import annotations

import json

import pytest

from v41graph import Plan, Request, load_model
from v41graph.costs.hardware import for_hardware, load_hardware
from v41graph.errors import ConfigError
from v41graph.model.checkpoints import CHECKPOINTS, UNVERIFIED, VERIFIED, choose_checkpoint
from v41graph.model.config import builtin_config_text, builtin_models
from v41graph.model.inventory import inventory
from v41graph.passes import compile

from helpers import run, run_json

FLASH, FLASH_FP8 = "deepseek-ai/DeepSeek-V4-Flash", "sgl-project/DeepSeek-V4-Flash-FP8"
FP4_ON_HOPPER = ("--checkpoint", "fp4", "--fp4-on-hopper")


@pytest.fixture(scope="module")
def fp8_config(tmp_path_factory):
    """V4-Flash's config.json with ``expert_dtype`` fp8, given by path (as tests/test_routing.py does)."""
    config = json.loads(builtin_config_text("deepseek-v4-flash"))
    config["expert_dtype"] = "fp8"
    path = tmp_path_factory.mktemp("fp8") / "deepseek-v4-flash-fp8.json"
    path.write_text(json.dumps(config))
    return path


def total(model, hardware: str, tp: int, ep: int, request=None) -> float:
    plan = Plan([request or Request.prefill(8192)], tp=tp, ep=ep)
    return compile(model, plan, hardware).report("schedule").total_time_s


# ---- the records ------------------------------------------------------------------------------

def test_every_built_in_has_its_official_checkpoint_first():
    assert sorted(CHECKPOINTS) == sorted(builtin_models())
    for name, known in CHECKPOINTS.items():
        assert known[0].publisher == "official" and known[0].expert_dtype == "fp4" and known[0].status == VERIFIED
        assert load_model(name).checkpoint == known[0].hf_id
    assert [c.hf_id for c in CHECKPOINTS["deepseek-v4-pro"]] == ["deepseek-ai/DeepSeek-V4-Pro",
                                                                 "sgl-project/DeepSeek-V4-Pro-FP8"]
    assert [c.hf_id for c in CHECKPOINTS["deepseek-v4-flash-0731"]] == ["deepseek-ai/DeepSeek-V4-Flash-0731"]
    assert [c.hf_id for c in CHECKPOINTS["deepseek-v4-pro-0813"]] == ["deepseek-ai/DeepSeek-V4-Pro-0813"]
    community = CHECKPOINTS["deepseek-v4.1-flash"][1]
    assert (community.hf_id, community.publisher, community.status, community.alias) == \
        ("timur136/DeepSeek-V4.1-Flash-FP8", "community", UNVERIFIED, None)


@pytest.mark.parametrize("name, gpu, expected", [
    ("deepseek-v4-flash", "h200_sxm", FLASH_FP8), ("deepseek-v4-flash", "gb200", FLASH),
    ("deepseek-v4-flash", "b200_sxm", FLASH), ("deepseek-v4-flash", "gb300", FLASH),
    ("deepseek-v4-pro", "h200_sxm", "sgl-project/DeepSeek-V4-Pro-FP8"), ("deepseek-v4-pro", "gb300",
                                                                          "deepseek-ai/DeepSeek-V4-Pro"),
    ("deepseek-v4-flash-0731", "h200_sxm", "deepseek-ai/DeepSeek-V4-Flash-0731"),
    ("deepseek-v4.1-flash", "h200_sxm", "deepseek-ai/DeepSeek-V4.1-Flash"),  # the community FP8 one: never by default
])
def test_the_rule(name, gpu, expected):
    m = for_hardware(load_model(name), gpu)
    assert m.checkpoint == expected
    assert m.expert_dtype == ("fp8" if expected.endswith("-FP8") else "fp4")


def test_the_api_switches_only_when_asked(fp8_config):
    flash = load_model("deepseek-v4-flash")
    assert (flash.checkpoint, flash.expert_dtype) == (FLASH, "fp4")  # compile prices what it is given
    fp8 = load_model("deepseek-v4-flash", checkpoint="fp8")
    assert (fp8.checkpoint, fp8.expert_dtype) == (FLASH_FP8, "fp8")
    assert load_model("deepseek-v4-flash", checkpoint=FLASH_FP8) == fp8 == for_hardware(flash, "h200_sxm")
    assert load_model("deepseek-v4.1-flash", checkpoint="timur136/DeepSeek-V4.1-Flash-FP8").expert_dtype == "fp8"
    user = load_model(fp8_config)  # a config.json by path: what it says, checkpoint unknown
    assert (user.checkpoint, user.expert_dtype) == (None, "fp8")
    assert for_hardware(user, "gb200") == user
    with pytest.raises(ConfigError, match="checkpoint 'fp8': model 'deepseek-v4-flash-fp8' is a config.json"):
        load_model(fp8_config, checkpoint="fp8")
    with pytest.raises(ConfigError, match="fp4_on_hopper"):
        for_hardware(flash, "h200_sxm", "fp4")
    assert for_hardware(flash, "h200_sxm", "fp4", fp4_on_hopper=True) == flash


def test_the_format_drives_the_weights():
    fp4, fp8 = inventory(load_model("deepseek-v4-flash")), inventory(load_model("deepseek-v4-flash", checkpoint="fp8"))
    assert fp4.total_bytes == 161_685_592_904 and fp8.total_bytes == 294_578_445_128


def test_v41_on_hopper_keeps_fp4_with_a_caveat():
    c = choose_checkpoint(load_model(), has_fp4=False, gpu="h200_sxm")
    assert (c.hf_id, c.expert_dtype) == ("deepseek-ai/DeepSeek-V4.1-Flash", "fp4")
    assert c.caveat.startswith("no FP8 checkpoint published; FP4 experts on a GPU without FP4 tensor cores")
    assert choose_checkpoint(load_model(), has_fp4=True, gpu="gb300").caveat is None


# ---- the CLI ----------------------------------------------------------------------------------

def test_cost_on_h200_prices_the_fp8_checkpoint(capsys, fp8_config):
    d = run_json(capsys, "cost", "--model", "deepseek-v4-flash", "--hardware", "h200_sxm")
    assert (d["mapping"]["tp"], d["mapping"]["ep"]) == (4, 4)  # FP8 experts do not fit on 2 GPUs (FP4: tp 2)
    assert d["total_time_s"] == total(load_model(fp8_config), "h200_sxm", 4, 4)
    assert d["total_time_s"] == pytest.approx(0.0841784, rel=1e-6)  # 84.178 ms; FP4 at tp 2 was 117.848 ms
    assert d["checkpoint"]["hf_id"] == FLASH_FP8 and d["checkpoint"]["expert_dtype"] == "fp8"
    assert d["checkpoint"]["status"] == VERIFIED and "no FP4 tensor cores" in d["checkpoint"]["reason"]


def test_cost_on_gb200_prices_the_fp4_checkpoint(capsys):
    d = run_json(capsys, "cost", "--model", "deepseek-v4-flash", "--hardware", "gb200")
    assert (d["mapping"]["tp"], d["mapping"]["ep"]) == (1, 1)
    assert d["total_time_s"] == total(load_model("deepseek-v4-flash"), "gb200", 1, 1)
    assert d["checkpoint"]["hf_id"] == FLASH and d["checkpoint"]["caveat"] is None


def test_decode_on_h200_explicit_mapping(capsys, fp8_config):
    argv = ("cost", "--model", "deepseek-v4-flash", "--hardware", "h200_sxm", "--decode", "64:8192", "--tp", "8",
            "--ep", "8")
    fp8, fp4 = run_json(capsys, *argv), run_json(capsys, *argv, *FP4_ON_HOPPER)
    decode = Request.decode(8192, copies=64)
    assert fp8["total_time_s"] == total(load_model(fp8_config), "h200_sxm", 8, 8, decode)
    assert fp4["total_time_s"] == total(load_model("deepseek-v4-flash"), "h200_sxm", 8, 8, decode)
    assert fp4["checkpoint"]["hf_id"] == FLASH and fp4["checkpoint"]["reason"] == "chosen by --checkpoint fp4"
    assert fp8["total_time_s"] > fp4["total_time_s"]  # the decode step reads twice the expert bytes


def test_text_names_the_checkpoint_below_the_deployment(capsys):
    status, out, err = run(capsys, "cost", "--model", "deepseek-v4-flash", "--hardware", "h200_sxm", "--prefill",
                           "1024", "--tp", "8", "--ep", "8")
    lines = out.splitlines()
    assert status == 0 and lines[1].startswith("deployment: 8 × h200_sxm")
    assert lines[2] == ("checkpoint: sgl-project/DeepSeek-V4-Flash-FP8 (fp8 experts, engine, VERIFIED) — h200_sxm "
                        "has no FP4 tensor cores: engines serve deepseek-v4-flash there from its FP8 checkpoint")


def test_v41_on_h200_stays_fp4_with_the_caveat_in_the_output(capsys):
    argv = ("cost", "--hardware", "h200_sxm", "--prefill", "1024", "--tp", "8", "--ep", "8")
    d = run_json(capsys, *argv)
    assert d["checkpoint"]["hf_id"] == "deepseek-ai/DeepSeek-V4.1-Flash" and d["checkpoint"]["expert_dtype"] == "fp4"
    assert d["total_time_s"] == total(load_model(), "h200_sxm", 8, 8, Request.prefill(1024))
    status, out, _ = run(capsys, *argv)
    assert "caveat: no FP8 checkpoint published; FP4 experts on a GPU without FP4 tensor cores (h200_sxm)" in out


@pytest.mark.parametrize("extra, message", [
    (("--checkpoint", "nope"), "--checkpoint 'nope': unknown checkpoint of model 'deepseek-v4-flash' (known: "
     "deepseek-ai/DeepSeek-V4-Flash (fp4), sgl-project/DeepSeek-V4-Flash-FP8 (fp8))"),
    (("--checkpoint", "fp4"), "--checkpoint 'fp4': deepseek-ai/DeepSeek-V4-Flash holds FP4 experts and h200_sxm has "
     "no FP4 tensor cores; engines serve sgl-project/DeepSeek-V4-Flash-FP8 there (add --fp4-on-hopper"),
    (("--checkpoint", FLASH), f"--checkpoint '{FLASH}': {FLASH} holds FP4 experts"),
    (("--fp4-on-hopper",), "--fp4-on-hopper: changes nothing here"),
])
def test_bad_checkpoint_options_exit_2_in_one_line(capsys, extra, message):
    status, out, err = run(capsys, "cost", "--model", "deepseek-v4-flash", "--hardware", "h200_sxm", *extra)
    assert (status, out) == (2, "") and err.count("\n") == 1 and message in err


def test_fp4_on_gb200_needs_no_flag_and_the_flag_is_refused_there(capsys):
    assert run_json(capsys, "cost", "--model", "deepseek-v4-flash", "--hardware", "gb200",
                    "--checkpoint", "fp4")["checkpoint"]["hf_id"] == FLASH
    status, _, err = run(capsys, "cost", "--model", "deepseek-v4-flash", "--hardware", "gb200", *FP4_ON_HOPPER)
    assert status == 2 and "--fp4-on-hopper: changes nothing here" in err


def test_a_user_config_keeps_its_expert_dtype(capsys, fp8_config):
    d = run_json(capsys, "memory", "--model", str(fp8_config), "--hardware", "gb200")
    assert d["checkpoint"]["hf_id"] is None and d["checkpoint"]["expert_dtype"] == "fp8"
    assert d["weights_bytes"] == 294_578_445_128
    status, _, err = run(capsys, "memory", "--model", str(fp8_config), "--checkpoint", "fp4")
    assert status == 2 and "no known checkpoints" in err


def test_memory_fit_follows_the_checkpoint(capsys):
    argv = ("memory", "--model", "deepseek-v4-flash", "--hardware", "h200_sxm", "--tp", "2", "--ep", "2")
    fp8, fp4 = run_json(capsys, *argv)["memory_per_gpu"], run_json(capsys, *argv, *FP4_ON_HOPPER)["memory_per_gpu"]
    assert (fp8["total_bytes"], fp8["fits"]) == (148_868_135_240, False)
    assert (fp4["total_bytes"], fp4["fits"]) == (82_421_709_128, True)


def test_deploy_launch_lines_name_the_hugging_face_id(capsys, tmp_path):
    d = run_json(capsys, "deploy", "--model", "deepseek-v4-flash", "--hardware", "h200_sxm", "--gpus", "4",
                 "--isl", "2000", "--osl", "50", "--ttft", "2s", "--tpot", "50ms", "--requests", "30", "--check", "1",
                 "--cost", "sol", "-o", str(tmp_path))
    assert d["checkpoint"]["hf_id"] == FLASH_FP8
    pick = d["picks"]["aggregated"]
    server = next(line for line in pick["launch"] if "sglang.launch_server" in line)  # after a router line
    assert server.startswith(f"python -m sglang.launch_server --model-path {FLASH_FP8} --tp-size 4")
    assert pick["vllm_launch"][0].startswith(f"CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve {FLASH_FP8} "
                                             "--tensor-parallel-size ")  # (attention DP: tp × dp = 4)


def test_compare_runs_each_side_on_its_gpus_checkpoint(capsys):
    status, out, _ = run(capsys, "compare", "--model", "deepseek-v4-flash", "--hardware", "h200_sxm", "--hardware",
                         "gb200", "--prefill", "1024", "--tp", "8", "--ep", "8")
    lines = out.splitlines()
    assert status == 0 and lines[0].startswith("A: deepseek-v4-flash · h200_sxm") and lines[1].startswith("B: ")
    assert lines[2].startswith(f"checkpoint: {FLASH_FP8} ") and lines[3].startswith(f"checkpoint: {FLASH} ")


def test_sweep_rows_name_each_points_checkpoint():
    from v41graph import sweep
    r = sweep(model=["deepseek-v4-flash"], hardware=["h200_sxm", "gb200"], tp=[8], ep=[8], prompt=[1024],
              executor="serial")
    assert [row["checkpoint"] for row in r.rows] == [FLASH_FP8, FLASH]
    fp4 = sweep(model=["deepseek-v4-flash"], hardware=["h200_sxm"], checkpoint=["fp4"], tp=[8], ep=[8],
                prompt=[1024], executor="serial", fp4_on_hopper=True)
    assert fp4.rows[0]["checkpoint"] == FLASH and fp4.rows[0]["itl_s"] < r.rows[0]["itl_s"]
    refused = sweep(model=["deepseek-v4-flash"], hardware=["h200_sxm"], checkpoint=["fp4"], tp=[8], ep=[8],
                    prompt=[1024], executor="serial")
    assert not refused.rows[0]["valid"] and "fp4_on_hopper" in refused.rows[0]["reason"]
    with pytest.raises(ConfigError, match="sweep checkpoint 'fp16': unknown checkpoint"):
        sweep(model=["deepseek-v4-flash"], checkpoint=["fp16"], executor="serial")


def test_hardware_has_fp4_from_its_peaks():
    assert {h: load_hardware(h).has_fp4 for h in ("h200_sxm", "b200_sxm", "gb200", "gb300")} == \
        {"h200_sxm": False, "b200_sxm": True, "gb200": True, "gb300": True}
