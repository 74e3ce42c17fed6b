"""Hardware descriptions: exact built-in figures, sources for every figure, loader errors."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from v41graph.costs.hardware import ALIASES, Hardware, builtin_hardware, hardware_from_dict, load_hardware
from v41graph.errors import CostError

BLACKWELL = ("b200_sxm", "gb200", "gb300")


def _user_spec(**changes) -> dict:
    spec = {
        "name": "lab_gpu",
        "description": "a made-up GPU for tests",
        "peak_flops": {"bf16": 100_000_000_000_000, "fp8": 200_000_000_000_000},
        "hbm_bandwidth": 2_000_000_000_000,
        "hbm_capacity": 80_000_000_000,
        "nvlink_bandwidth": 300_000_000_000,
        "host_bandwidth": 32_000_000_000,
        "gpus_per_node": 4,
        "scaleout_bandwidth": 25_000_000_000,
        "sources": {"peak_flops.bf16": "measured", "peak_flops.fp8": "measured", "hbm_bandwidth": "measured",
                    "hbm_capacity": "nvidia-smi", "nvlink_bandwidth": "nccl-tests", "host_bandwidth": "nvbandwidth",
                    "gpus_per_node": "lspci", "scaleout_bandwidth": "ib_write_bw"},
    }
    spec.update(changes)
    return spec


def _write(tmp_path, spec) -> str:
    path = tmp_path / "lab_gpu.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return str(path)


def test_h200_exact_figures():
    h = load_hardware("h200_sxm")
    assert h.peak("bf16") == 989 * 10**12
    assert h.peak("fp8") == 1979 * 10**12
    assert h.hbm_bandwidth == 4_800_000_000_000
    assert h.hbm_capacity == 141 * 10**9
    assert h.nvlink_bandwidth == 450 * 10**9          # 900 GB/s bidirectional, per direction
    assert h.host_bandwidth == 64 * 10**9             # PCIe Gen5 x16, per direction


def test_blackwell_headline_figures():
    assert load_hardware("gb300").peak("fp4") == 15 * 10**15
    assert load_hardware("gb300").hbm_capacity == 288 * 10**9
    assert load_hardware("gb300").hbm_bandwidth == 8 * 10**12
    for name in BLACKWELL:
        assert load_hardware(name).nvlink_bandwidth == 900 * 10**9


@pytest.mark.parametrize("name", builtin_hardware())
def test_every_builtin_loads_and_every_figure_has_a_source(name):
    h = load_hardware(name)
    assert h.name == name
    figures = {f"peak_flops.{p}" for p in h.peak_flops} | {
        "hbm_bandwidth", "hbm_capacity", "nvlink_bandwidth", "host_bandwidth", "gpus_per_node", "scaleout_bandwidth"}
    # storage tiers (costs/tiers.py): every built-in has host DRAM, SSD and remote, each figure sourced
    figures |= {f"storage_tiers.{t}.{f}" for t in ("host_dram", "ssd", "remote") for f in ("bandwidth", "latency_ns")}
    assert set(h.storage_tiers) == {"hbm", "host_dram", "ssd", "remote"}
    assert h.tier("host_dram").bandwidth == h.host_bandwidth and h.tier("remote").bandwidth == h.scaleout_bandwidth
    assert set(h.sources) == figures
    assert all(s.strip() for s in h.sources.values())
    assert all(type(v) is int and v > 0 for v in h.peak_flops.values())
    if name in BLACKWELL:  # dense tensor rate doubles at each step tf32 -> bf16 -> fp8 (catches typos)
        assert h.peak("fp8") == 2 * h.peak("bf16") == 4 * h.peak("tf32")


def test_builtins_and_aliases():
    assert builtin_hardware() == ("b200_sxm", "gb200", "gb300", "h200_sxm")
    for alias, stem in ALIASES.items():
        assert load_hardware(alias) == load_hardware(stem)


def test_fp4_only_on_blackwell():
    for name in BLACKWELL:
        assert load_hardware(name).peak("fp4") > load_hardware(name).peak("fp8")
    h200 = load_hardware("h200_sxm")
    assert "fp4" not in h200.peak_flops
    with pytest.raises(CostError, match=r"'h200_sxm'.*'fp4'.*has: bf16, fp32, fp8, tf32"):
        h200.peak("fp4")


def test_unknown_name_lists_known_ones():
    with pytest.raises(CostError) as err:
        load_hardware("h300")
    message = str(err.value)
    assert "'h300'" in message
    for name in builtin_hardware():
        assert name in message


def test_hardware_is_immutable_hashable_and_picklable():
    h = load_hardware("gb200")
    with pytest.raises(TypeError):
        h.peak_flops["fp4"] = 1
    with pytest.raises(AttributeError):
        h.hbm_capacity = 1
    assert hash(h) == hash(load_hardware("gb200"))
    assert pickle.loads(pickle.dumps(h)) == h == copy.deepcopy(h)


def test_user_file_loads(tmp_path):
    h = load_hardware(_write(tmp_path, _user_spec()))
    assert isinstance(h, Hardware)
    assert h.name == "lab_gpu"
    assert h.peak("fp8") == 200 * 10**12
    assert h.host_bandwidth == 32 * 10**9


def test_user_file_integral_float_is_accepted(tmp_path):
    assert load_hardware(_write(tmp_path, _user_spec(hbm_bandwidth=2e12))).hbm_bandwidth == 2_000_000_000_000


def test_missing_key_names_file_and_key(tmp_path):
    spec = _user_spec()
    del spec["hbm_bandwidth"]
    path = _write(tmp_path, spec)
    with pytest.raises(CostError, match=r"lab_gpu\.json.*'hbm_bandwidth' is missing"):
        load_hardware(path)


@pytest.mark.parametrize("change, key, shown", [
    ({"peak_flops": {"bf16": -5, "fp8": 1}}, "peak_flops.bf16", "-5"),
    ({"hbm_capacity": 0}, "hbm_capacity", "0"),
    ({"hbm_capacity": "141e9"}, "hbm_capacity", "'141e9'"),
    ({"nvlink_bandwidth": True}, "nvlink_bandwidth", "True"),
    ({"host_bandwidth": 1.5}, "host_bandwidth", "1.5"),
    ({"name": ""}, "name", "''"),
])
def test_bad_value_names_file_key_and_value(tmp_path, change, key, shown):
    path = _write(tmp_path, _user_spec(**change))
    with pytest.raises(CostError) as err:
        load_hardware(path)
    message = str(err.value)
    assert "lab_gpu.json" in message and repr(key) in message and shown in message


def test_sources_must_cover_every_figure_and_nothing_else():
    spec = _user_spec()
    del spec["sources"]["hbm_capacity"]
    with pytest.raises(CostError, match="no entry for 'hbm_capacity'"):
        hardware_from_dict(spec, "test")
    spec = _user_spec()
    spec["sources"]["peak_flops.fp4"] = "wishful"
    with pytest.raises(CostError, match=r"'sources\.peak_flops\.fp4' names no figure"):
        hardware_from_dict(spec, "test")


def test_unknown_key_and_bad_json(tmp_path):
    with pytest.raises(CostError, match="unknown key 'hbm_bandwith'"):
        hardware_from_dict(_user_spec(hbm_bandwith=1), "test")
    path = tmp_path / "broken.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(CostError, match=r"broken\.json.*not valid JSON"):
        load_hardware(str(path))


@pytest.mark.parametrize("name, gpus, scaleout, capacity", [
    ("h200_sxm", 8, 400 * 10**9 // 8, 141 * 10**9),   # HGX board of 8; ConnectX-7 400 Gb/s per GPU
    ("b200_sxm", 8, 400 * 10**9 // 8, 180 * 10**9),   # DGX B200: 8 GPUs, 8 ConnectX-7 400 Gb/s
    ("gb200", 72, 400 * 10**9 // 8, 186 * 10**9),     # NVL72 rack; ConnectX-7 400 Gb/s per GPU
    ("gb300", 72, 800 * 10**9 // 8, 288 * 10**9),     # NVL72 rack; ConnectX-8 800 Gb/s per GPU
])
def test_nvlink_domain_and_scale_out(name, gpus, scaleout, capacity):
    h = load_hardware(name)
    assert (h.gpus_per_node, h.scaleout_bandwidth, h.hbm_capacity) == (gpus, scaleout, capacity)
