"""Docs from scripts (issue 37, item 9): every generated doc in docs/ is what its script writes, stamped with
the machine and date it ran on; regenerated here (v41graph's figures recomputed, exactly), a doc that drifts
from its script fails. Recorded runs (another tool's figures, wall-clock timings) are compared with the
record beside the script, which must name its machine and date."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import aiconfigurator_compare  # noqa: E402
import common  # noqa: E402

DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _names_machine_and_date(run: dict) -> None:
    assert re.fullmatch(r".+ \(.+, \d+ CPUs, Python \S+\)", run["machine"]), run
    assert DATE.fullmatch(run["date"]), run


# --- every doc is accounted for ----------------------------------------------------------------------------------

#: docs written by a script, stamped with the machine and date (whole, or in generated blocks)
STAMPED = {"aiconfigurator-comparison.md": "benchmarks/aiconfigurator_compare.py",
           "forecast.md": "benchmarks/bench_forecast.py", "fpm.md": "benchmarks/bench_fpm.py",
           "measured-vs-model.md": "benchmarks/bench_measured_vs_aic.py", "parameters.md": "docs/parameters_doc.py",
           "profile.md": "benchmarks/profile_doc.py", "serving.md": "docs/serving_doc.py",
           "deploy.md": "benchmarks/bench_deploy.py"}
#: docs with no machine-made figure, each with why and what checks it
UNSTAMPED = {"architecture.md": "prose; tests/test_architecture_doc.py checks its module list",
             "vocabulary.md": "rendered from the code (render/vocabulary_doc.py), the same on every machine; "
                              "tests/test_vocabulary.py compares it whole",
             "cli.md": "generated from the argparse tree by docs/cli_doc.py, the same on every machine; "
                       "tests/test_cli_doc.py compares it whole",
             "guide.md": "prose around console blocks and doctests that tests/test_readme.py and test_cli.py run"}
#: the README's pictures are drawn by docs/make_pictures.py; what they draw is recorded, with machine and date,
#: in docs/pictures/figures.json (the last tests below)


def test_every_doc_is_written_by_a_stamped_script_or_says_why_not():
    docs = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert docs - set(STAMPED) - set(UNSTAMPED) == set(), "a new doc: generate it (stamped) or list it here"
    for name, script in STAMPED.items():
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        m = common.STAMP.fullmatch(common.stamp_of(text))
        assert m["script"] == script and (ROOT / script).exists(), name


# --- the stamp -------------------------------------------------------------------------------------------------

def test_a_stamp_names_script_machine_and_date():
    line = common.stamp("benchmarks/x.py")
    m = common.STAMP.fullmatch(line)
    assert m and m["script"] == "benchmarks/x.py" and DATE.fullmatch(m["date"])
    assert re.fullmatch(r".+ \(.+, \d+ CPUs, Python \S+\)", m["machine"])
    assert common.stamp_of(f"# t\n\n{line}\n\ntext\n") == line
    with pytest.raises(ValueError, match="found 0"):
        common.stamp_of("# t\n")


def test_blocks_replace_and_read_back():
    text = "head\n<!-- b -->\nold\n<!-- e -->\ntail\n"
    new = common.replace_block(text, "<!-- b -->", "<!-- e -->", "new\nlines")
    assert new == "head\n<!-- b -->\nnew\nlines\n<!-- e -->\ntail\n"
    assert common.block_of(new, "<!-- b -->", "<!-- e -->") == "new\nlines"
    with pytest.raises(ValueError, match="no <!-- x --> … <!-- e --> block"):
        common.replace_block(text, "<!-- x -->", "<!-- e -->", "")


# --- docs/aiconfigurator-comparison.md ----------------------------------------------------------------------------

def test_aiconfigurator_comparison_is_the_scripts_output_from_its_record():
    committed = aiconfigurator_compare.DOC.read_text(encoding="utf-8")
    record = json.loads(aiconfigurator_compare.RECORD.read_text(encoding="utf-8"))
    _names_machine_and_date(record["run"])
    assert aiconfigurator_compare.generate(common.stamp_of(committed), record) == committed, \
        "docs/aiconfigurator-comparison.md drifted: python benchmarks/aiconfigurator_compare.py --write-doc"
    assert "UNEXPLAINED" not in committed  # every family off by more than 5 % has its paragraph


def test_aiconfigurator_comparison_states_todays_totals():
    committed = aiconfigurator_compare.DOC.read_text(encoding="utf-8")
    ours = aiconfigurator_compare.ours()
    record = json.loads(aiconfigurator_compare.RECORD.read_text(encoding="utf-8"))["sol"]
    for w in aiconfigurator_compare.WORKLOADS:
        a, b = record[w]["total_ms"], ours[w]["total_ms"]
        assert f"| {w} | {a:.3f} ms | {b:.3f} ms | {b / a:.2f} |" in committed
    # the round-2 figures the issue found stale are gone
    assert "167.716" not in committed and "33.437" not in committed


def test_a_live_aiconfigurator_run_reproduces_the_record():
    pytest.importorskip("aiconfigurator_core", reason="the live comparison needs aiconfigurator-core")
    live = aiconfigurator_compare.aic(live=True)["sol"]
    record = json.loads(aiconfigurator_compare.RECORD.read_text(encoding="utf-8"))["sol"]
    assert {w: round(v["total_ms"], 9) for w, v in live.items()} == \
        {w: round(v["total_ms"], 9) for w, v in record.items()}


# --- docs/deploy.md (two generated tables from a recorded run of both tools; the prose by hand) -----------------

def test_deploy_doc_tables_are_the_scripts_output_from_its_record():
    bench = load_script("benchmarks/bench_deploy.py")
    committed = bench.DOC.read_text(encoding="utf-8")
    record = json.loads(bench.RECORD.read_text(encoding="utf-8"))
    _names_machine_and_date(record["run"])
    assert bench.generate(committed, record, common.stamp_of(committed)) == committed, \
        "docs/deploy.md drifted: python benchmarks/bench_deploy.py --write-doc"
    assert {r["tpot"] for r in record["aiconfigurator"]} == {"50ms", "20ms"}  # both tools, one run
    for r in (r for r in record["v41graph"] if r["gpus"] == 8):  # a figure is the median of the bench's runs
        assert len(r["cpu_s_runs"]) == bench.REPEAT and r["cpu_s"] == sorted(r["cpu_s_runs"])[bench.REPEAT // 2]
    assert "| TPOT 50 ms, winner | disaggregated | disaggregated | |" in committed


# --- docs/fpm.md (two generated blocks; the rest by hand) ---------------------------------------------------------

def test_fpm_doc_blocks_are_the_scripts_output():
    import bench_fpm
    committed = bench_fpm.DOC.read_text(encoding="utf-8")
    text, _ = bench_fpm.generate(bench_fpm.committed_stamp())
    assert common.block_of(committed, bench_fpm.BEGIN, bench_fpm.END) == text, \
        "docs/fpm.md drifted: python benchmarks/bench_fpm.py --write"
    assert common.block_of(committed, bench_fpm.EVAL_BEGIN, bench_fpm.EVAL_END) == bench_fpm.evaluate_block()
    assert common.STAMP.fullmatch(bench_fpm.committed_stamp())["script"] == "benchmarks/bench_fpm.py"
    # the one table no script here can rewrite (rows outside the repository) says so beside it
    assert "A recorded run, quoted, not\nregenerated" in committed
    # the prose's range of the GB200 observations is the table's
    from v41graph.costs.fpm.load import load_table
    observed = [p.observed_ms for p in load_table(bench_fpm.GB200).points if not p.failure]
    assert committed.count(f"{min(observed):.0f}–{max(observed):.0f} ms") == 2


# --- docs/parameters.md ---------------------------------------------------------------------------------------------

def _docs_script(name: str):
    return load_script(f"docs/{name}.py")


def test_parameters_doc_is_the_scripts_output():
    script = _docs_script("parameters_doc")
    committed = script.DOC.read_text(encoding="utf-8")
    assert script.generate(common.stamp_of(committed)) == committed, \
        "docs/parameters.md drifted: python docs/parameters_doc.py --write"
    # one figure spelled out: V4.1-Flash's decode total, 16,130,606,192 parameters
    assert "| V4.1-Flash, decode | 16.13B | 16B | +0.8 % |" in committed


# --- docs/serving.md (five generated blocks; the simulations from their record) -----------------------------------

def test_serving_doc_blocks_are_the_scripts_output_from_its_record():
    script = _docs_script("serving_doc")
    runs = json.loads(script.RECORD.read_text(encoding="utf-8"))
    _names_machine_and_date(runs["run"])
    assert all(runs[k]["cpu_s"] > 0 and runs[k]["wall_s"] > 0 for k in ("overlap", "step_end"))
    stamp, found = script.committed()
    assert script.blocks(runs, stamp) == found, "docs/serving.md drifted: python docs/serving_doc.py --write"


def test_serving_simulations_reproduce_their_record():
    # the two simulate runs the doc quotes are deterministic (seeded arrivals, SOL step costs): rerun, they
    # must give the recorded figures exactly; only where, when and how long they took may differ (~12 s)
    script = _docs_script("serving_doc")
    runs = json.loads(script.RECORD.read_text(encoding="utf-8"))
    assert script.deterministic(script.simulations()) == script.deterministic(runs)


# --- docs/profile.md (wall-clock figures: the doc is its record's rendering) --------------------------------------

def test_profile_doc_is_the_scripts_output_from_its_record():
    import profile_doc
    committed = profile_doc.DOC.read_text(encoding="utf-8")
    record = json.loads(profile_doc.RECORD.read_text(encoding="utf-8"))
    _names_machine_and_date(record["run"])
    assert profile_doc.generate(common.stamp_of(committed), record) == committed, \
        "docs/profile.md drifted: python benchmarks/profile_doc.py --write"
    # every step of compile's pipeline and verify() has its warm and cold figure, for each case
    from bench_compile import CASES, VERIFY
    assert list(record["cases"]) == list(CASES)
    for case in record["cases"].values():
        assert list(case["warm"]) == list(case["cold"]) == ["lower", "precision", "replay", "kv_dedup", "fusion",
                                                            "schedule", "compile", VERIFY]
        assert f"| {VERIFY} | {case['warm'][VERIFY] * 1e3:.2f} |" in committed


# --- docs/pictures (the README's pictures: their data, not their pixels) -------------------------------------------

def test_pictures_draw_what_the_code_computes_today():
    script = _docs_script("make_pictures")
    record = json.loads(script.RECORD.read_text(encoding="utf-8"))
    _names_machine_and_date(record["run"])
    from v41graph import load_model
    fresh = script.series(load_model())
    assert fresh == {k: record[k] for k in fresh}, "docs/pictures drifted: python docs/make_pictures.py"


def test_the_pareto_pictures_points_reprice_as_recorded():
    # the 54-point sweep takes ~16 s: reprice the sub-grid its Pareto points span (hybrid reads the measured
    # tables, so only where the same ones are found); "pareto" depends on the whole grid, so it is left out
    from v41graph import sweep
    from v41graph.costs.measured.layout import find_source
    script = _docs_script("make_pictures")
    record = json.loads(script.RECORD.read_text(encoding="utf-8"))
    if find_source().kind != record["run"]["measured_tables"]:
        pytest.skip(f"recorded with the {record['run']['measured_tables']} tables; here {find_source().kind}")
    front = [r for r in record["sweep_rows"] if r.get("pareto")]
    assert len(front) >= 3
    keys = ("prompt", "batch", "tp", "ep")
    grid = {k: sorted({r[k] for r in front}) for k in keys}
    recorded = {tuple(r[k] for k in keys): {f: v for f, v in r.items() if f != "pareto"}
                for r in record["sweep_rows"] if all(r[k] in grid[k] for k in keys)}
    fresh = {tuple(r[k] for k in keys): {f: v for f, v in script._plain(r).items() if f != "pareto"}
             for r in sweep(**grid).rows}
    assert fresh == recorded
