"""Cut the vendored measured-data slice out of the aiconfigurator-core 0.12.0 wheel.

Reads the wheel's parquet tables with pyarrow (a tool dependency only: v41graph itself reads the
slice as gzipped CSV) and writes src/v41graph/data/measured/: the same ``systems/<system>.yaml`` +
``systems/data/<system>/<family>/<backend>/<version>/<table>.csv.gz`` layout, only the rows the
built-in models need on h200_sxm, gb200 and gb300 for SGLang 0.5.14 (NCCL collectives from the
version the system YAML names), plus LICENSE (Apache-2.0), NOTICE and MANIFEST.json (the wheel's
SHA-256, each source file's SHA-256, the row filters, and what was converted).

Run: ``python tools/slice_measured.py WHEEL_OR_UNPACKED_DIR`` (needs ``pip install pyarrow``).
The output is deterministic: rows sorted, floats written with repr().
"""

from __future__ import annotations

import csv
import gzip
import io
import hashlib
import json
import sys
import tempfile
import zipfile
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

SYSTEMS = ("h200_sxm", "gb200", "gb300")
SGLANG = "0.5.14"
OUT = Path(__file__).resolve().parents[1] / "src" / "v41graph" / "data" / "measured"
TPS = (1, 2, 4, 8)
APACHE = Path("/usr/share/common-licenses/Apache-2.0")
COPYRIGHT = "Copyright (c) 2025-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved."


def _model_dims() -> dict[str, set]:
    """GEMM (n, k) values, MoE shapes and hidden sizes of every built-in model, full and per TP rank."""
    from v41graph import Plan, Request, load_model, lower
    from v41graph.ir.ops import Gemm
    out = {"gemm": set(), "hidden": set(), "inter": set(), "experts": set(), "topk": set(), "heads": set()}
    for name in ("deepseek-v4-flash", "deepseek-v4-pro", "deepseek-v4.1-flash"):
        m = load_model(name)
        g = lower(m, Plan([Request.prefill(256)], fusion="two-pass"))
        dims = {v for n in g.nodes.values() if isinstance(n.op, Gemm) for v in (n.op.n, n.op.k)}
        dims |= {m.hidden_size, 2 * m.moe_intermediate_size, m.moe_intermediate_size, m.n_routed_experts, 256}
        out["gemm"] |= {d // tp for d in dims for tp in TPS if d % tp == 0}
        out["hidden"].add(m.hidden_size)
        out["inter"] |= {m.moe_intermediate_size // tp for tp in TPS}
        out["experts"].add(m.n_routed_experts)
        out["topk"].add(m.experts_per_token)
        out["heads"] |= {m.num_heads // tp for tp in TPS}
    return out


def _brackets(grid: list[int], wanted: set[int]) -> set[int]:
    """The grid values at and around each wanted value (what interpolation or holding reads)."""
    keep = set()
    for w in wanted:
        below = [g for g in grid if g <= w]
        above = [g for g in grid if g >= w]
        keep |= {max(below)} if below else set()
        keep |= {min(above)} if above else set(sorted(grid)[-2:])
    return keep


def _isin(table, column, values):
    import pyarrow as pa
    return pc.is_in(table.column(column), value_set=pa.array(sorted(values)))


def _filters(dims: dict[str, set]):
    """(family, file stem, columns kept, filter(table) -> mask, description) per table."""
    def gemm(t):
        grid = sorted(set(t.column("n").to_pylist()) | set(t.column("k").to_pylist()))
        keep = _brackets(grid, dims["gemm"])
        return pc.and_(pc.and_(_isin(t, "gemm_dtype", {"fp8_block", "bfloat16"}), _isin(t, "n", keep)),
                       _isin(t, "k", keep))

    def moe(t):
        m = _isin(t, "moe_dtype", {"fp8_block", "w4a8_mxfp4_mxfp8", "w4a16_mxfp4", "bfloat16"})
        for col, key in (("hidden_size", "hidden"), ("topk", "topk"), ("num_experts", "experts")):
            m = pc.and_(m, _isin(t, col, dims[key]))
        m = pc.and_(m, _isin(t, "inter_size", dims["inter"]))
        return pc.and_(m, _isin(t, "distribution", {"balanced", "power_law_1.01"}))

    def attention(t):
        m = pc.and_(_isin(t, "model", {"sgl-project/DeepSeek-V4-Flash-FP8", "sgl-project/DeepSeek-V4-Pro-FP8"}),
                    pc.equal(t.column("gemm_type"), "fp8_block"))
        # local heads × tp = the checkpoint's heads (64 Flash, 128 Pro): the engines' TP split
        total = pc.multiply(t.column("num_heads"), t.column("tp_size"))
        flash = pc.and_(pc.equal(t.column("model"), "sgl-project/DeepSeek-V4-Flash-FP8"), pc.equal(total, 64))
        pro = pc.and_(pc.equal(t.column("model"), "sgl-project/DeepSeek-V4-Pro-FP8"), pc.equal(total, 128))
        return pc.and_(m, pc.or_(flash, pro))

    every = lambda t: pc.greater_equal(t.column("latency"), 0)  # noqa: E731
    attn_cols = ("model", "gemm_type", "num_heads", "tp_size", "compress_ratio", "batch_size", "isl", "step",
                 "latency")
    yield ("gemm", "gemm_perf", ("gemm_dtype", "m", "n", "k", "latency"), gemm,
           "gemm_dtype in {fp8_block, bfloat16}; n and k at the grid values bracketing every built-in GEMM dim "
           "(full and /tp for tp 1, 2, 4, 8)")
    yield ("moe", "moe_perf", ("moe_dtype", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
                               "moe_ep_size", "distribution", "num_tokens", "latency"), moe,
           "moe_dtype in {fp8_block, w4a8_mxfp4_mxfp8, w4a16_mxfp4, bfloat16}; the built-in models' hidden, "
           "inter (full and /tp), topk and expert counts; distribution balanced or power_law_1.01")
    yield ("mhc", "mhc_module_perf", ("op_name", "hidden_size", "hc_mult", "sinkhorn_iters", "num_sites",
                                      "num_tokens", "latency"), every, "all rows")
    for name in ("dsv4_csa_context_module_perf", "dsv4_hca_context_module_perf", "dsv4_csa_generation_module_perf",
                 "dsv4_hca_generation_module_perf"):
        yield ("sparse_attention", name, attn_cols, attention,
               "model DeepSeek-V4-Flash-FP8 (num_heads x tp_size = 64) or -Pro-FP8 (= 128); gemm_type fp8_block")
    yield ("comm", "custom_allreduce_perf", ("allreduce_dtype", "num_gpus", "backend", "message_size", "latency"),
           every, "all rows")


def _write_csv(path: Path, table, columns) -> int:
    rows = sorted(zip(*(table.column(c).to_pylist() for c in columns)), key=lambda r: tuple(map(str, r)))
    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO(newline="")
    w = csv.writer(text, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([repr(float(v)) if isinstance(v, float) else v for v in r])
    with path.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as f:
        f.write(text.getvalue().encode("utf-8"))  # mtime 0, no name: the same bytes on every run
    return len(rows)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _nccl_version(yaml: Path) -> str:
    for line in yaml.read_text().splitlines():
        if line.strip().startswith("nccl_version:"):
            return line.split(":", 1)[1].strip().strip("'\"")
    raise SystemExit(f"{yaml}: no nccl_version")


def main(src: str) -> None:
    src_path = Path(src)
    wheel_sha = None
    if src_path.is_file():
        wheel_sha = _sha(src_path)
        tmp = Path(tempfile.mkdtemp())
        zipfile.ZipFile(src_path).extractall(tmp)
        src_path = tmp
    root = src_path / "aiconfigurator_core" / "systems"
    dims = _model_dims()
    manifest = {"source": {"package": "aiconfigurator-core", "version": "0.12.0",
                           "wheel": "aiconfigurator_core-0.12.0-cp311-abi3-manylinux_2_28_x86_64.whl",
                           "wheel_sha256": wheel_sha, "license": "Apache-2.0", "copyright": COPYRIGHT},
                "note": "Rows were converted from parquet to gzipped CSV and filtered to what v41graph's built-in "
                        "models need; values are unchanged (latency in milliseconds, as upstream). Produced by "
                        "tools/slice_measured.py.",
                "tables": []}
    for system in SYSTEMS:
        yaml = root / f"{system}.yaml"
        (OUT / "systems").mkdir(parents=True, exist_ok=True)
        (OUT / "systems" / yaml.name).write_text(yaml.read_text())
        jobs = [(fam, stem, cols, flt, desc, "sglang", SGLANG) for fam, stem, cols, flt, desc in _filters(dims)]
        jobs.append(("comm", "nccl_perf", ("op_name", "nccl_dtype", "num_gpus", "message_size", "latency"),
                     lambda t: pc.equal(t.column("nccl_dtype"), "half"), "nccl_dtype half", "nccl",
                     _nccl_version(yaml)))
        for fam, stem, cols, flt, desc, backend, version in jobs:
            rel = Path("data") / system / fam / backend / version
            pq_path = root / rel / f"{stem}.parquet"
            if not pq_path.exists():
                continue
            table = pq.read_table(pq_path)
            kept = table.filter(flt(table))
            out = OUT / "systems" / rel / f"{stem}.csv.gz"
            n = _write_csv(out, kept, cols)
            manifest["tables"].append({"path": str(Path("systems") / rel / f"{stem}.csv.gz"),
                                       "source": f"aiconfigurator_core/systems/{rel}/{stem}.parquet",
                                       "source_sha256": _sha(pq_path), "source_rows": table.num_rows,
                                       "rows": n, "filter": desc, "sha256": _sha(out)})
    manifest["tables"].sort(key=lambda t: t["path"])
    (OUT / "MANIFEST.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    (OUT / "LICENSE").write_text(APACHE.read_text())
    (OUT / "NOTICE").write_text(
        "The tables under systems/ are a converted and filtered slice of the performance data shipped in\n"
        f"aiconfigurator-core 0.12.0 (https://github.com/ai-dynamo/aiconfigurator).\n{COPYRIGHT}\n"
        "Licensed under the Apache License, Version 2.0 (see LICENSE). Changes: parquet converted to gzipped CSV,\n"
        "rows filtered and columns dropped as MANIFEST.json records; no value was altered.\n")
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"wrote {len(manifest['tables'])} tables, {total / 1e6:.2f} MB under {OUT}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1
         else "/tmp/aic/aiconfigurator_core-0.12.0-cp311-abi3-manylinux_2_28_x86_64.whl")
