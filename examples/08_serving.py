"""What a client sees: a prefix hit restored from host DRAM, then a serving simulation per rate.

1. A 65,536-token prefix hit in host DRAM followed by 1,024 new tokens, with the SWA state lost
   (encoder bounded replay) and kept: the fetch overlaps the forward layer by layer.
2. Poisson arrivals of 4,096-token prompts (256 output tokens) at 2 and 8 requests/s for 60 s
   on 8 H200s (TP8, EP8): TTFT and ITL percentiles, and throughput over the window.

    python examples/08_serving.py
"""

from v41graph import load_model
from v41graph.analysis.serving.serving_summary import restore_summary, simulate_summary
from v41graph.costs.hardware import load_hardware

model, hardware = load_model(), load_hardware("h200_sxm")
print(f"{model.name} on {hardware.name}, TP8 EP8, SOL")
for swa_cached in (False, True):
    s = restore_summary(model, hardware, prefix=65536, suffix=1024, tier="host_dram", swa_cached=swa_cached,
                        tp=8, ep=8)
    print(f"SWA {'kept' if swa_cached else 'lost'}: fetch {s['fetch_bytes']:,} B in {s['fetch_s'] * 1e3:.4f} ms, "
          f"forward {s['forward_s'] * 1e3:.4f} ms (replayed token-layers {s['replayed_token_layers']:,}), "
          f"TTFT {s['ttft_s'] * 1e3:.4f} ms")

sim = simulate_summary(model, hardware, rates=(2.0, 8.0), prompt=4096, output=256, duration=60.0, seed=1, tp=8, ep=8)
w0, w1 = sim["window_s"]
print(f"simulation: {sim['step_shapes_costed']} step shapes compiled; throughput window [{w0:g}, {w1:g}) s")
print(f"boundary: {sim['boundary']}; emission: {sim['emission']} (SGLang's overlap scheduler: one step late)")
for row in sim["rates"]:
    t, i = row["ttft_s"], row["itl_s"]
    print(f"rate {row['rate_per_s']:.0f}/s: {row['requests']} requests, TTFT p50 {t['p50'] * 1e3:.2f} ms "
          f"p99 {t['p99'] * 1e3:.2f} ms, ITL p50 {i['p50'] * 1e3:.3f} ms p99 {i['p99'] * 1e3:.3f} ms, "
          f"{row['throughput_tok_s']:.1f} tok/s")
