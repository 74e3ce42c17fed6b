"""docs/cli.md is the argparse tree as `--help` prints it (issue 36, item 8): regenerated here and compared whole,
so an option added, renamed or re-documented without `python docs/cli_doc.py` fails."""

from __future__ import annotations

from helpers import ROOT, load_script


def test_the_cli_reference_is_the_parsers_help():
    script = load_script("docs/cli_doc.py")
    text = script.render()
    assert (ROOT / "docs" / "cli.md").read_text(encoding="utf-8") == text, "stale: python docs/cli_doc.py"
    from v41graph.cli.main import build_parser
    names = list(script.commands(build_parser()))
    assert len(names) == 19 and all(f"\n## `v41graph {n}`\n" in text for n in names)
    assert "--allow-unlaunchable" in text and "--html FILE" in text  # options of this session's commands
