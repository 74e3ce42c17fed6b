"""Readers for AISimulate's DeepSeek-V4.1 FPM folders (vendored under ``data/fpm/aisimulate-v41``).

- ``gb200-fpm/calibration-v1``: the 126 points are ``consumer-verification.json``'s
  ``measured_table_ms`` (the exact Parquet values, checked there against the native consumer);
  ``point-manifest.json`` must list the same coordinates and ``collection-receipt.json`` the same
  count per phase. The identity comes from ``prediction-config.json`` and the collection
  receipt; the README's "Admission status" line decides admission (anything but an explicit
  "admitted" is "not admitted", the safe side).
- ``gb300-fpm/{off,on}-v1``: the identity from ``calibration/identity.json`` and the table
  metadata; the 124 points from ``calibration/point-manifest.json`` (``latency_ms``, one native
  DeviceTimer sample each). Every row must state the identity's system, backend, TP and execution
  profile (``full`` for replay off, ``decoder_bounded`` for replay on): the two tables refuse each
  other's rows as they refuse each other's plans. A folder without the manifest has no points
  (every query is a ``missing sample``).

Source values are mapped onto the plan's policy names once, here: ``decoder_replay`` false/"off"
→ "off", true/"on" → "bounded"; Engram ``hbm_tp_sharded`` → "hbm" (Engram residency: sharded in HBM).

>>> from v41graph.costs.fpm.load import builtin_folder
>>> t = load_gb300_identity(builtin_folder("aisimulate-gb300-on-v1"), "on")
>>> t.identity.backend, t.identity.gpu, t.identity.decoder_replay, len(t.points)
('sglang', 'gb300', 'bounded', 124)
"""

from __future__ import annotations

import json
from pathlib import Path

from ...ir.identity import Identity
from .table import FpmTable, Point, TableError, make_table

_REPLAY = {False: "off", True: "bounded", "off": "off", "on": "bounded"}
_ENGRAM = {"hbm_tp_sharded": "hbm"}
# The GB200 README, section "Runtime and timing boundary": vLLM FPM reports the CPU
# schedule/output (or adjacent-output) interval, one native sample per point.
GB200_BOUNDARY = "vLLM native FPM CPU schedule/output interval (one sample per point)"
GB300_BOUNDARY = "SGLang native DeviceTimer interval on tp0/dp0 (one sample per point)"


def _json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TableError(f"aisimulate table: missing file {str(path)!r}") from None
    except json.JSONDecodeError as exc:
        raise TableError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None


def _field(data: dict, key: str, where: Path):
    if key not in data:
        raise TableError(f"{where}: missing field {key!r}")
    return data[key]


def _mapped(table: dict, value, field: str, where: Path) -> str:
    if value not in table:
        raise TableError(f"{where}: {field} {value!r} has no v41graph policy (known: {', '.join(map(str, table))})")
    return table[value]


def _admission(readme: Path) -> tuple[str, str]:
    """(admission, the README's admission line) — only an explicit "admitted" admits."""
    paragraphs = readme.read_text(encoding="utf-8").split("\n\n") if readme.is_file() else ()
    for para in paragraphs:
        if "Admission status:" in para:
            text = " ".join(para.replace("*", "").split())
            return ("not admitted" if "not admitted" in text or "admitted" not in text else "admitted"), text
    return "not admitted", f"{readme.name}: no admission status stated"


def _gb200_point(raw: dict, where: str) -> Point:
    try:
        phase, ms = raw["phase"], raw["measured_table_ms"]
        s = raw["metrics"]["scheduled_requests"]
        if phase == "prefill":
            if s["num_decode_requests"]:
                raise TableError(f"{where}: a prefill point with decode requests")
            return Point("prefill", s["num_prefill_requests"], s["sum_prefill_tokens"], s["sum_prefill_kv_tokens"], ms)
        if s["num_prefill_requests"]:
            raise TableError(f"{where}: a decode point with prefill requests")
        return Point(phase, s["num_decode_requests"], s["num_decode_requests"], s["sum_decode_kv_tokens"], ms)
    except KeyError as exc:
        raise TableError(f"{where}: missing field {exc.args[0]!r}") from None


def load_gb200_calibration(folder: Path, name: str) -> FpmTable:
    """The GB200 vLLM TP4 126-point calibration table, with its identity and admission."""
    verification = _json(folder / "consumer-verification.json")
    manifest = _json(folder / "point-manifest.json")
    config = _json(folder / "prediction-config.json")
    receipt = _json(folder / "collection-receipt.json")
    raws = _field(verification, "points", folder / "consumer-verification.json")
    labels = tuple(f"{folder.name}/consumer-verification.json point {i + 1}" for i in range(len(raws)))
    points = [_gb200_point(raw, label) for raw, label in zip(raws, labels)]
    planned = {("decode", q["batch_size"], q["batch_size"], q["total_kv_read_tokens"]) for q in manifest["decode"]}
    planned |= {("prefill", q["batch_size"], q["total_prefill_tokens"], q["total_kv_read_tokens"])
                for q in manifest["prefill"]}
    measured = {p.key for p in points}
    if measured != planned:
        odd = sorted(measured ^ planned)[0]
        raise TableError(f"{folder.name}: point-manifest.json and consumer-verification.json disagree at {odd}")
    for phase, info in _field(receipt, "phases", folder / "collection-receipt.json").items():
        count = sum(p.phase == phase for p in points)
        if count != info["measured_points"]:
            raise TableError(f"{folder.name}: collection receipt says {info['measured_points']} {phase} points, "
                             f"the table has {count}")
    where = folder / "collection-receipt.json"
    execution = receipt["phases"]["prefill"]["execution_identity"]
    admission, note = _admission(folder / "README.md")
    identity = Identity(
        model=f"{_field(config, 'model_name', where)}@{_field(receipt, 'model_revision', where)}",
        backend=config["backend"], backend_version=config["backend_version"],
        image_digest=f"sha256:{_field(receipt, 'prepared_runtime_image_sha256', where)}",
        gpu=config["system_name"],
        topology="1 node x 4 GPUs",  # README "Runtime and timing boundary": one node with four GB200 GPUs
        tp=config["tp_size"], ep=config["moe_ep_size"], dp=config["attention_dp_size"], pp=config["pp_size"],
        decoder_replay=_mapped(_REPLAY, config["decoder_replay"], "decoder_replay", where),
        encoder_restore=None, fusion=None,  # not recorded by the source
        engram_residency=_mapped(_ENGRAM, execution["engram_residency"], "engram_residency", where),
        dspark="on" if _field(receipt, "dspark", where) else "off",
        modality=execution["input_modality"],
        execution="cuda graphs" if receipt["cuda_graphs"] else receipt["phases"]["prefill"]["execution_mode"],
        weights=f"main GEMMs fp8 block; experts {receipt['actual_moe_kernel']}",
        activation_dtype=config["activation_dtype"], kv_cache_dtype=receipt["kv_cache_dtype"],
        boundary=GB200_BOUNDARY, admission=admission)
    return make_table(name, identity, points, str(folder), note, labels)


_PROFILE = {"off": "full", "bounded": "decoder_bounded"}  # execution_profile of each replay policy


def _gb300_points(path: Path, identity: Identity, parquet_sha256: str) -> tuple[list[Point], tuple[str, ...]]:
    """The manifest's rows as points; a row of another identity is an error naming the field."""
    data = _json(path)
    if _field(data, "source_parquet_sha256", path) != parquet_sha256:
        raise TableError(f"{path}: source_parquet_sha256 {data['source_parquet_sha256'][:12]}… is not the "
                         f"table metadata's {parquet_sha256[:12]}… (the manifest belongs to another table)")
    rows = _field(data, "rows", path)
    points, labels = [], []
    want = {"system": identity.gpu, "backend": identity.backend, "tp": identity.tp,
            "execution_profile": _PROFILE[identity.decoder_replay]}
    for i, row in enumerate(rows):
        where = f"{path.parent.parent.name}/calibration/point-manifest.json row {i + 1}"
        for key, value in want.items():
            if _field(row, key, where) != value:
                raise TableError(f"{where}: mixed identities: {key}={row[key]!r} but identity.json says {value!r}")
        phase, batch = _field(row, "workload_kind", where), _field(row, "batch_size", where)
        # AISimulate writes 0 new tokens for decode; a decode step is one token per request
        new = batch if phase == "decode" else _field(row, "total_prefill_tokens", where)
        points.append(Point(phase, batch, new, _field(row, "total_kv_read_tokens", where),
                            _field(row, "latency_ms", where)))
        labels.append(where)
    return points, tuple(labels)


def load_gb300_identity(folder: Path, name: str) -> FpmTable:
    """A GB300 SGLang table: identity, metadata and (when the manifest is there) its points."""
    where = folder / "calibration" / "identity.json"
    data = _json(where)
    actual = _field(data, "actual_execution", where)
    runtime = _field(data, "source_runtime_qualification", where)
    meta_files = sorted((folder / "systems" / "data").glob("*/*/*/fpm_forward_perf.metadata.json"))
    if not meta_files:
        raise TableError(f"{folder.name}: no systems/data/<gpu>/<backend>/<version>/fpm_forward_perf.metadata.json")
    meta = _json(meta_files[0])
    admission, note = _admission(folder / "README.md")
    role = data.get("collection_policy", {}).get("dataset_role")
    identity = Identity(
        model=f"{meta['model_paths'][0]}@{actual['model_revision']}", backend=meta["backend"],
        backend_version=meta["backend_version"], image_digest=actual["image_arm_digest"], gpu=meta["system"],
        topology=None, tp=actual["tp"], ep=actual["moe_ep"], dp=actual["dp"], pp=actual["pp"],
        decoder_replay=_mapped(_REPLAY, actual["decoder_bounded_replay"], "decoder_bounded_replay", where),
        encoder_restore=None, fusion=None,
        engram_residency=_mapped(_ENGRAM, actual["engram_residency"], "engram_residency", where),
        dspark="on" if actual["speculative"] else "off", modality=actual["input_modality"], execution=None,
        weights=data["actual_precision_qualification"]["moe_quant_mode"], activation_dtype=None,
        kv_cache_dtype=data["actual_precision_qualification"]["actual_server_flags"]["kv_cache_dtype"],
        boundary=GB300_BOUNDARY if runtime.get("timing_scope") == "native_sglang_device_timer_tp0_dp0"
        else runtime.get("timing_scope"), admission=admission)
    manifest = folder / "calibration" / "point-manifest.json"
    points, labels = _gb300_points(manifest, identity, meta["parquet_sha256"]) if manifest.is_file() else ([], None)
    if points and len(points) != meta["row_count"]:
        raise TableError(f"{folder.name}: point-manifest.json has {len(points)} rows, "
                         f"{meta_files[0].name} says {meta['row_count']}")
    source = "point-manifest.json" if points else "not vendored: every query is a missing sample"
    note = (f"{note}; dataset role {role!r}; {meta['row_count']} rows in {meta_files[0].name} "
            f"(Parquet sha256 {meta['parquet_sha256'][:12]}…), points: {source}")
    return make_table(name, identity, points, str(folder), note, labels)


__all__ = ["load_gb200_calibration", "load_gb300_identity"]
