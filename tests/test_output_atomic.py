"""Output folders written whole, answers from memory, Ctrl-C in one line (issue 38, items 3 and 5)."""

from __future__ import annotations

import json
import time

import pytest

import v41graph.cli.report as report_cli
import v41graph.passes
import v41graph.render.html.html_report as html_report
from v41graph.cli.main import main
from v41graph.cli.out_folder import output_folder
from v41graph.errors import V41Error


def _files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_second_report_leaves_only_its_own_files(tmp_path, capsys):
    out = tmp_path / "R"
    assert main(["report", "--model", "deepseek-v4.1-flash", "--out", str(out)]) == 0
    assert {"boundary.svg", "boundary.dot"} <= set(_files(out))  # V4.1 draws its encoder → decoder boundary
    capsys.readouterr()
    assert main(["report", "--model", "deepseek-v4-flash", "--out", str(out), "--json"]) == 0
    printed = capsys.readouterr().out
    files = _files(out)
    assert sorted(files) == ["report.html", "report.json", "report.md"]  # V4.1's diagram is gone
    assert not any(b"deepseek-v4.1" in text for text in files.values())
    assert json.loads(printed)["model"] == "deepseek-v4-flash"
    assert printed.encode() == files["report.json"]  # the same bytes, though not read back
    assert [p.name for p in tmp_path.iterdir()] == ["R"]  # no temporary sibling left


def test_json_is_not_read_back_from_the_folder(tmp_path, capsys, monkeypatch):
    out = tmp_path / "R"
    out.mkdir()
    (out / "report.json").write_text('{"model": "planted"}\n')
    written = []
    real = html_report.write_report_html

    def write_page(data, page, path):  # the page gets the figures in memory, not the planted file
        written.append(data["model"])
        (path.parent / "report.json").write_text('{"model": "overwritten"}\n')  # nor this run's file
        real(data, page, path)

    monkeypatch.setattr(html_report, "write_report_html", write_page)
    assert main(["report", "--model", "deepseek-v4-flash", "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "deepseek-v4-flash"
    assert written == ["deepseek-v4-flash"]


def test_an_interrupted_write_keeps_the_old_folder_and_no_temporary_one(tmp_path, capsys, monkeypatch):
    out = tmp_path / "R"
    out.mkdir()
    (out / "report.md").write_text("the earlier report\n")
    before = _files(out)

    def interrupted(data, page, path):
        path.write_text("<html>half")
        raise KeyboardInterrupt

    monkeypatch.setattr(html_report, "write_report_html", interrupted)
    assert main(["report", "--model", "deepseek-v4-flash", "--out", str(out)]) == 130
    captured = capsys.readouterr()
    assert captured.err == "v41graph: interrupted\n" and captured.out == ""
    assert _files(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["R"]


def test_ctrl_c_anywhere_is_one_line_and_130(tmp_path, capsys, monkeypatch):
    def interrupted(name):
        raise KeyboardInterrupt

    monkeypatch.setattr(report_cli, "load_model", interrupted)
    assert main(["report", "--out", str(tmp_path / "R")]) == 130
    assert capsys.readouterr().err == "v41graph: interrupted\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command, work", [
    (["report", "--out"], "v41graph.analysis.report_data.report_answer"),
    (["deploy", "--model", "deepseek-v4-flash", "--gpus", "8", "--ttft", "1s", "--tpot", "50ms", "-o"],
     "v41graph.analysis.deploy.deploy_typed.deploy_answer")])
def test_a_folder_of_other_files_is_refused_before_any_work(tmp_path, capsys, monkeypatch, command, work):
    (tmp_path / "notes.txt").write_text("mine")
    called = []  # refused up front: neither the command's work nor any compile ran (not a wall-clock bound)
    monkeypatch.setattr(work, lambda *a, **k: called.append(work) or 1 / 0)
    monkeypatch.setattr(v41graph.passes, "run_pipeline", lambda *a, **k: called.append("compile") or 1 / 0)
    assert main([*command, str(tmp_path)]) == 2
    assert called == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'notes.txt'" in err and "--force" in err
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_the_working_folder_is_refused_even_with_force(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--out", ".", "--force"]) == 2
    assert "working folder" in capsys.readouterr().err


def test_output_folder_replaces_whole_or_not_at_all(tmp_path):
    out = tmp_path / "R"
    with output_folder(out, ("a", "b")) as tmp:
        (tmp / "a").write_text("1")
        (tmp / "b").write_text("1")
    with pytest.raises(RuntimeError), output_folder(out, ("a", "b")) as tmp:
        (tmp / "a").write_text("2")
        raise RuntimeError("failed half way")
    assert _files(out) == {"a": b"1", "b": b"1"}
    with output_folder(out, ("a", "b")) as tmp:
        (tmp / "a").write_text("3")
    assert _files(out) == {"a": b"3"}  # b, of the earlier run, did not stay
    (out / "mine").write_text("keep")
    with pytest.raises(V41Error, match="--force"), output_folder(out, ("a", "b")):
        pass
    with output_folder(out, ("a", "b"), force=True) as tmp:
        (tmp / "a").write_text("4")
    assert _files(out) == {"a": b"4"} and [p.name for p in tmp_path.iterdir()] == ["R"]


def test_an_interrupted_sweep_stops_its_workers_at_once(monkeypatch):
    import concurrent.futures
    import multiprocessing
    import multiprocessing.process

    from v41graph.analysis.sweep.sweep_grid import sweep

    def interrupted(futures):
        assert len(multiprocessing.active_children()) == 2  # the pool's workers run
        raise KeyboardInterrupt
        yield  # pragma: no cover

    # what the pool was told, not how long it took: the queued jobs dropped, the running workers terminated
    shutdowns, terminated = [], []
    pool, process = concurrent.futures.ProcessPoolExecutor, multiprocessing.process.BaseProcess
    shutdown, terminate = pool.shutdown, process.terminate
    monkeypatch.setattr(pool, "shutdown", lambda self, *a, **k: shutdowns.append(k) or shutdown(self, *a, **k))
    monkeypatch.setattr(process, "terminate", lambda self: terminated.append(self.pid) or terminate(self))
    monkeypatch.setattr(concurrent.futures, "as_completed", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sweep(tp=[1, 2, 4, 8], prompt=[1024, 4096], executor="local", workers=2, progress=False, fast_min=99)
    assert shutdowns == [{"wait": False, "cancel_futures": True}] and len(set(terminated)) == 2
    for _ in range(200):  # a bounded wait for the terminated workers to be reaped (a state, not a speed)
        if not multiprocessing.active_children():
            break
        time.sleep(0.05)
    assert multiprocessing.active_children() == []
