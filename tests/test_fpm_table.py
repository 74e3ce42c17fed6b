"""FPM tables: the vendored AISimulate data, the plain layout, and one clear error per defect."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from v41graph.costs.fpm.load import load_table
from v41graph.costs.fpm.table import TableError
from v41graph.ir.identity import Identity

GB200 = "aisimulate-gb200-calibration-v1"
VENDORED = Path(str(resources.files("v41graph"))) / "data" / "fpm" / "aisimulate-v41"


def raw_gb200() -> list[dict]:
    """The 126 points straight from the vendored JSON (independent of the loader)."""
    text = (VENDORED / "gb200-fpm" / "calibration-v1" / "consumer-verification.json").read_text(encoding="utf-8")
    return json.loads(text)["points"]


def test_gb200_table_has_126_points_100_prefill_26_decode():
    t = load_table(GB200)
    assert len(t.points) == 126
    assert sum(p.phase == "prefill" for p in t.points) == 100
    assert sum(p.phase == "decode" for p in t.points) == 26
    assert sorted(p.observed_ms for p in t.points) == sorted(r["measured_table_ms"] for r in raw_gb200())
    assert min(p.observed_ms for p in t.points) == pytest.approx(696.0285580717027, abs=0)
    assert {p.batch_size for p in t.points} == {1, 2}


def test_gb200_identity_fields():
    ident = load_table(GB200).identity
    assert (ident.gpu, ident.backend, ident.tp, ident.ep, ident.dp, ident.pp) == ("gb200", "vllm", 4, 1, 1, 1)
    assert (ident.decoder_replay, ident.activation_dtype, ident.kv_cache_dtype) == ("off", "fp8", "fp8")
    assert ident.admission == "not admitted"
    assert (ident.dspark, ident.engram_residency, ident.modality, ident.execution) == ("off", "hbm", "text", "eager")
    assert ident.boundary.startswith("vLLM native FPM CPU schedule/output interval")
    assert load_table(GB200).note.startswith("Admission status: historical, environment-specific observations; "
                                             "not admitted for prediction")


def test_gb200_decode_points_count_one_new_token_per_request():
    decode = [p for p in load_table(GB200).points if p.phase == "decode"]
    assert all(p.total_prefill_tokens == p.batch_size for p in decode)
    assert max(p.total_kv_read_tokens for p in decode) == 4096


@pytest.mark.parametrize("name, replay", [("aisimulate-gb300-off-v1", "off"), ("aisimulate-gb300-on-v1", "bounded")])
def test_gb300_tables_load_their_124_points(name, replay):
    t = load_table(name)
    assert (t.identity.gpu, t.identity.backend, t.identity.tp, t.identity.decoder_replay) == ("gb300", "sglang", 4,
                                                                                               replay)
    # shared PROVENANCE.md: 124 rows, 99 prefill and 25 decode, batch 1-2, prefill tokens <= 512
    phases = [p.phase for p in t.points]
    assert (len(t.points), phases.count("prefill"), phases.count("decode")) == (124, 99, 25)
    assert {p.batch_size for p in t.points} == {1, 2} and max(p.total_prefill_tokens for p in t.points) == 512
    assert all(p.total_prefill_tokens == p.batch_size for p in t.points if p.phase == "decode")
    assert t.identity.admission == "not admitted" and "points: point-manifest.json" in t.note


def test_gb300_latency_ranges_match_the_provenance():
    # shared PROVENANCE.md: off-v1 149.67-186.57 ms, on-v1 149.85-185.36 ms
    for name, lo, hi in (("aisimulate-gb300-off-v1", 149.67, 186.57), ("aisimulate-gb300-on-v1", 149.85, 185.36)):
        ms = [p.observed_ms for p in load_table(name).points]
        assert (round(min(ms), 2), round(max(ms), 2)) == (lo, hi)


def test_a_manifest_row_of_the_other_replay_profile_is_refused(tmp_path):
    import json
    import shutil
    from v41graph.costs.fpm.load import builtin_folder
    folder = tmp_path / "on-v1"
    shutil.copytree(builtin_folder("aisimulate-gb300-on-v1"), folder)
    path = folder / "calibration" / "point-manifest.json"
    data = json.loads(path.read_text())
    data["rows"][3]["execution_profile"] = "full"
    path.write_text(json.dumps(data))
    with pytest.raises(TableError, match=r"on-v1/calibration/point-manifest.json row 4: mixed identities: "
                                         r"execution_profile='full' but identity.json says 'decoder_bounded'"):
        load_table(folder)


def test_vendored_folder_is_the_table_path_too():
    by_path = load_table(VENDORED / "gb200-fpm" / "calibration-v1")
    assert by_path.points == load_table(GB200).points and by_path.identity == load_table(GB200).identity


# --------------------------------------------------------------------------- plain layout

HEADER = "phase,batch_size,total_prefill_tokens,total_kv_read_tokens,observed_ms"


def identity_dict(**changes) -> dict:
    base = json.loads(load_table(GB200).identity.to_json())
    return {**base, "backend": "mine", "admission": "admitted", **changes}


def plain(tmp_path: Path, rows: list[str], header: str = HEADER, identity: dict | None = None) -> Path:
    folder = tmp_path / "table"
    folder.mkdir(exist_ok=True)
    (folder / "identity.json").write_text(json.dumps(identity or identity_dict()), encoding="utf-8")
    (folder / "points.csv").write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return folder


def test_plain_layout_loads_points_and_identity(tmp_path):
    folder = plain(tmp_path, ["prefill,1,4,0,100", "decode,2,,64,50.5", "decode,1,0,8,40"])
    t = load_table(folder)
    assert t.name == "table" and t.admitted and t.identity == Identity.from_dict(identity_dict())
    assert [(p.phase, p.batch_size, p.total_prefill_tokens, p.total_kv_read_tokens, p.observed_ms)
            for p in t.points] == [("decode", 1, 1, 8, 40.0), ("decode", 2, 2, 64, 50.5), ("prefill", 1, 4, 0, 100.0)]


def test_plain_layout_carries_failure_classes(tmp_path):
    t = load_table(plain(tmp_path, ["prefill,1,4,0,,OOM", "prefill,1,8,0,80,"], header=HEADER + ",failure"))
    assert [(p.total_prefill_tokens, p.observed_ms, p.failure) for p in t.points] == [(4, None, "OOM"),
                                                                                      (8, 80.0, None)]


def test_duplicate_coordinates(tmp_path):
    with pytest.raises(TableError, match=r"points.csv line 3: duplicate coordinates \(prefill batch 1, new tokens 4, "
                                         r"past KV 0\), already at .*points.csv line 2$"):
        load_table(plain(tmp_path, ["prefill,1,4,0,100", "prefill,1,4,0,101"]))


@pytest.mark.parametrize("value, shown", [("0", "0.0"), ("-3.5", "-3.5")])
def test_non_positive_times(tmp_path, value, shown):
    with pytest.raises(TableError, match=rf"points.csv line 2: observed_ms must be > 0, got {shown}$"):
        load_table(plain(tmp_path, [f"prefill,1,4,0,{value}"]))


def test_mixed_identities(tmp_path):
    rows = ["prefill,1,4,0,100,gb200", "prefill,1,8,0,100,gb300"]
    with pytest.raises(TableError, match=r"points.csv line 3: mixed identities: gpu='gb300' but identity.json "
                                         r"says 'gb200'$"):
        load_table(plain(tmp_path, rows, header=HEADER + ",gpu"))


def test_missing_column(tmp_path):
    with pytest.raises(TableError, match=r"points.csv: missing column 'observed_ms'$"):
        load_table(plain(tmp_path, ["prefill,1,4,0"], header="phase,batch_size,total_prefill_tokens,"
                                                             "total_kv_read_tokens"))


def test_missing_value(tmp_path):
    with pytest.raises(TableError, match=r"points.csv line 2: missing field 'batch_size'$"):
        load_table(plain(tmp_path, ["prefill,,4,0,100"]))
    with pytest.raises(TableError, match=r"points.csv line 2: missing field 'observed_ms' \(and no failure class\)$"):
        load_table(plain(tmp_path, ["prefill,1,4,0,"]))


def test_missing_identity_field(tmp_path):
    ident = identity_dict()
    del ident["boundary"]
    with pytest.raises(TableError, match=r"identity.json: missing field 'boundary'$"):
        load_table(plain(tmp_path, ["prefill,1,4,0,100"], identity=ident))


def test_bad_values_name_the_field(tmp_path):
    cases = {"prefill,1,4,0,fast": r"observed_ms must be a number, got 'fast'",
             "warmup,1,4,0,100": r"phase must be one of prefill, decode, got 'warmup'",
             "decode,2,3,0,100": r"total_prefill_tokens must equal batch_size 2, got 3",
             "prefill,1,4,0,100,GPU on fire": r"failure must be one of unsupported, .*, got 'GPU on fire'"}
    for row, message in cases.items():
        with pytest.raises(TableError, match=message):
            load_table(plain(tmp_path, [row], header=HEADER + ",failure"))


def test_unknown_table_name():
    with pytest.raises(TableError, match=r"^fpm table: 'gb999' is neither a built-in table"):
        load_table("gb999")
