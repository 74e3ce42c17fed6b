"""The README's and the guide's (docs/guide.md) command-line examples are true: every ```console block is run
and its output compared; the README is a product page of at most 350 lines (issue 36, item 8).

Convention (for whoever edits README.md): a ```console block holds ``$ COMMAND`` lines, each
followed by the exact output of that command (stdout and stderr together). ``...`` in the
output stands for any text, as in doctest; trailing spaces are ignored. The commands of one
block run in order in one shell, in an empty folder that holds a link to ``examples/``, with this
Python's ``v41graph`` and ``python`` first on PATH. A claim about output that is not in such a
block ("`v41graph …` prints …") is an error: the test cannot check it.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide.md"
DOCS = (README, GUIDE)  # the files whose console blocks run
SEP = "\x1e"  # between the outputs of two commands


def console_blocks(text: str) -> list[tuple[int, list[tuple[str, str]]]]:
    """``(line number, [(command, expected output), …])`` for each ```console block."""
    blocks = []
    for m in re.finditer(r"^( *)```console\n(.*?)^\1```$", text, re.M | re.S):
        body = textwrap.dedent(m.group(2))
        pairs: list[tuple[str, list[str]]] = []
        for line in body.splitlines():
            if line.startswith("$ "):
                pairs.append((line[2:], []))
            elif pairs:
                pairs[-1][1].append(line)
            else:
                raise AssertionError(f"README line {text[:m.start()].count(chr(10)) + 1}: output before any '$ '")
        blocks.append((text[:m.start()].count("\n") + 1, [(c, "\n".join(o)) for c, o in pairs]))
    return blocks


def run_block(commands: list[str], cwd: Path) -> list[str]:
    script = "".join(f"{{ {c}\n}} 2>&1; __s=$?; printf '{SEP}'; (exit $__s)\n" for c in commands)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               COLUMNS="100")
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    outputs = proc.stdout.split(SEP)
    assert len(outputs) == len(commands) + 1, proc.stderr
    return outputs[:-1]


def _normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines()) + "\n"


BLOCKS = [(doc, line, pairs) for doc in DOCS for line, pairs in console_blocks(doc.read_text(encoding="utf-8"))]


def test_the_readme_states_its_cli_claims_in_console_blocks():
    assert len(BLOCKS) >= 5 and len(README.read_text(encoding="utf-8").splitlines()) <= 350
    assert {doc for doc, _, _ in BLOCKS} == set(DOCS)
    commands = [c for _, _, pairs in BLOCKS for c, _ in pairs]
    for needed in ("v41graph report", "v41graph --version", "v41graph formula token_layers --replay bounded",
                   "v41graph memory --context -5"):
        assert needed in commands, needed
    prose = "".join(re.sub(r"^( *)```.*?^\1```$", "", doc.read_text(encoding="utf-8"), flags=re.M | re.S)
                    for doc in DOCS)
    claims = re.findall(r"`v41graph [^`]*`\s+(?:prints|reports|gives|outputs)\b", prose)
    assert not claims, f"output claims outside a console block: {claims}"


@pytest.mark.parametrize("doc, line, pairs", BLOCKS, ids=[f"{doc.name}:{line}" for doc, line, _ in BLOCKS])
def test_console_block(doc, line, pairs, tmp_path):
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    outputs = run_block([c for c, _ in pairs], tmp_path)
    checker = doctest.OutputChecker()
    for (command, want), got in zip(pairs, outputs):
        want, got = _normal(want), _normal(got)
        assert checker.check_output(want, got, doctest.ELLIPSIS), (
            f"{doc.name} line {line}: `{command}` printed\n{got}\nbut {doc.name} says\n{want}")
