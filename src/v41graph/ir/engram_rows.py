"""The Engram rows a request's tokens touch, hashed as in the V4.1 reference (model-facts §6).

Two steps turn token ids into table rows:

1. **Fold** each id into the compressed vocabulary. The reference decodes every id alone, then
   normalises the text — NFKC, NFD, strip combining marks, lowercase, runs of space/tab/CR/LF to
   one space, trim — and numbers the distinct results in id order. A text that is exactly one
   space stays one space; a text that normalises to nothing keeps its own text; a lone UTF-8
   fragment (its decode holds U+FFFD) keys on its raw token string. For the V4 tokenizer this
   gives 99,092 ids, V4.1's ``engram_compressed_vocab_size`` (checked, not assumed).
2. **Hash** each position: look back over the previous ``max_ngram − 1`` tokens; before the
   sequence start, or at or beyond an image token, the look-back stops and sees the pad id
   instead (an image token is dead: it looks nothing up itself and blocks every look-back through
   it). The rolling XOR of ``fold(id_{t−k}) × m_k`` for k < N, taken modulo the column's prime
   and offset by the column's first row, is the row of order N's column. The pad id is only the
   fill where the look-back stops; a pad token inside the text is hashed like any other token
   and does not stop the look-back (as in the reference).

>>> import numpy as np
>>> from v41graph.model.engram_hash import hash_layout
>>> from v41graph.workload.tokens import TokenContent
>>> layout = hash_layout()
>>> fold = np.arange(layout.compressed_vocab)          # stand-in fold for ids below 99,092
>>> rows = touched_rows(TokenContent.pad(3), layout, 1, fold)
>>> rows.shape, bool((rows == rows[0]).all())           # every pad position hashes alike
((3, 24), True)
"""

from __future__ import annotations

from dataclasses import dataclass
import re
import unicodedata

import numpy as np

from ..errors import PlanError
from ..model.engram_hash import HashLayout
from ..reuse import cached
from ..workload.tokens import TokenContent, V4Tokenizer, v4_tokenizer

_SPACES = re.compile(r"[ \t\r\n]+")
#: Unicode White_Space, which the reference's trim strips (Python's str.strip also strips
#: U+001C..U+001F, which are not White_Space, so it is not used)
_WHITE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
                   + "".join(chr(c) for c in range(0x2000, 0x200B)))


def _byte_decoder() -> dict[str, int]:
    # The byte-level alphabet: printable Latin-1 bytes stand for themselves, the other 68 bytes
    # are numbered from U+0100 in byte order.
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    rest = [b for b in range(256) if b not in printable]
    return {chr(b): b for b in printable} | {chr(0x100 + i): b for i, b in enumerate(rest)}


_BYTES = _byte_decoder()


def decode_token(raw: str) -> str:
    """Text of one token string: byte-level characters to bytes, others as their UTF-8."""
    out = bytearray()
    for ch in raw:
        b = _BYTES.get(ch)
        out.extend(ch.encode("utf-8") if b is None else (b,))
    return out.decode("utf-8", errors="replace")


def normalize(text: str) -> str:
    """The reference's fold key of a decoded token text.

    >>> normalize(" The"), normalize("THE"), normalize("Café"), normalize(" "), normalize("\\n\\n")
    ('the', 'the', 'cafe', ' ', ' ')
    """
    s = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text))
    s = "".join(c.lower() for c in s if not unicodedata.category(c).startswith("M"))  # per char: no final sigma
    s = _SPACES.sub(" ", s)
    if s == " ":
        return s
    a, b = 0, len(s)
    while a < b and s[a] in _WHITE:
        a += 1
    while b > a and s[b - 1] in _WHITE:
        b -= 1
    return s[a:b]


def fold_table(strings) -> np.ndarray:
    """Compressed id of every token id, from the tokenizer's raw token strings in id order."""
    keys: dict[str, int] = {}
    out = np.empty(len(strings), dtype=np.int64)
    for i, raw in enumerate(strings):
        text = decode_token(raw)
        key = raw if "\ufffd" in text else (normalize(text) or text)
        out[i] = keys.setdefault(key, len(keys))
    return out


@cached(2, resource=True)  # a table of the tokenizer's vocabulary, as loaded
def _v4_fold(tokenizer: V4Tokenizer) -> np.ndarray:
    table = fold_table(tokenizer.strings)
    table.setflags(write=False)
    return table


def v4_fold(layout: HashLayout, tokenizer: V4Tokenizer | None = None) -> np.ndarray:
    """The V4 tokenizer's fold, checked against the config's compressed vocabulary size."""
    table = _v4_fold(tokenizer or v4_tokenizer())
    size = int(table.max()) + 1
    if size != layout.compressed_vocab:
        raise PlanError(f"engram fold: the tokenizer folds into {size:,} ids but the config's "
                        f"engram_compressed_vocab_size is {layout.compressed_vocab:,}")
    return table


def dead_mask(content: TokenContent, layout: HashLayout) -> np.ndarray:
    """True at image positions: the given spans plus every ``image_token_id`` placeholder."""
    ids = np.asarray(content.ids, dtype=np.int64)
    dead = ids == layout.image_token_id if layout.image_token_id is not None else np.zeros(len(ids), bool)
    for a, b in content.image_spans:
        dead[a:b] = True
    return dead


def touched_rows(content: TokenContent, layout: HashLayout, layer_id: int, fold: np.ndarray,
                 start: int = 0) -> np.ndarray:
    """Rows [positions, columns] of layer ``layer_id``'s table for positions ``start..`` (image rows: −1).

    Positions before ``start`` are history (a decode step's look-back); only later ones look up.
    """
    layer = layout.layer(layer_id)
    ids = np.asarray(content.ids, dtype=np.int64)
    if not 0 <= start < len(ids):
        raise PlanError(f"engram rows: start {start} is outside the {len(ids)} tokens")
    if len(ids) and int(ids.max()) >= len(fold):
        raise PlanError(f"engram rows: token id {int(ids.max())} is outside the tokenizer's {len(fold)} ids")
    dead = dead_mask(content, layout)
    pad = int(fold[layout.pad_id])
    folded = fold[np.where(dead, layout.pad_id, ids)]
    pos = np.arange(start, len(ids))
    blocked = np.zeros(len(pos), dtype=bool)
    mult = np.asarray(layer.multipliers, dtype=np.int64)
    primes = np.asarray(layer.primes, dtype=np.int64)
    offsets = np.asarray(layer.offsets, dtype=np.int64)
    mix = None
    cols = []
    for shift in range(layout.max_ngram):
        src = pos - shift
        blocked |= (src < 0) | dead[np.maximum(src, 0)]
        term = np.where(blocked, pad, folded[np.maximum(src, 0)]) * mult[shift]
        mix = term if mix is None else np.bitwise_xor(mix, term)
        if shift:  # order shift+1 is complete: its heads take the hash modulo their own primes
            sl = slice((shift - 1) * layout.heads, shift * layout.heads)
            cols.append(mix[:, None] % primes[sl] + offsets[sl])
    rows = np.concatenate(cols, axis=1)
    rows[dead[start:]] = -1
    return rows


@dataclass(frozen=True)
class RequestRows:
    """The rows one request touches at each Engram layer (image positions dropped)."""

    content: TokenContent
    start: int
    rows: dict  # layer id -> int64 array [live positions, columns]

    def lookups(self, layer_id: int) -> int:
        return int(self.rows[layer_id].size)


def request_rows(content: TokenContent, layout: HashLayout, fold: np.ndarray, start: int = 0) -> RequestRows:
    """Rows of every Engram layer for the positions ``start..`` of ``content``."""
    out = {}
    for layer in layout.layers:
        r = touched_rows(content, layout, layer.layer_id, fold, start)
        out[layer.layer_id] = r[r[:, 0] >= 0]
    return RequestRows(content, start, out)


__all__ = ["RequestRows", "dead_mask", "decode_token", "fold_table", "normalize", "request_rows",
           "touched_rows", "v4_fold"]
