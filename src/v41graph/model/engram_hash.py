"""Interface ①: the Engram hash layout — which table row each N-gram of token ids addresses.

Facts from the V4.1 reference hashing (model-facts §6), re-derived here from the config:

* token ids are first folded into a compressed vocabulary (``engram_compressed_vocab_size``,
  99,092 for the V4 tokenizer; the fold itself needs the tokenizer, see ``ir/engram_rows.py``);
* each Engram layer draws one odd multiplier per look-back shift (``engram_max_ngram_size`` of
  them) from ``numpy.random.default_rng(10007 · layer_id)``, uniform in [0, ⌊(2⁶³−1) / V_c⌋ // 2)
  then ``2r + 1`` — bounded so that ``id × multiplier`` never overflows int64;
* an N-gram's hash is the rolling XOR of ``id_{t−k} × m_k`` for k < N (orders 2..max);
* each (order, head) column takes the hash modulo its own prime: successive primes above
  ``engram_vocab_size − 1``, the search restarting at that bound for every order and never reusing
  a prime across columns or layers; the column's rows start at the running sum of earlier primes.

The primes of a layer must add up to its table size in ``engram_num_embeddings``; a config where
they do not is refused (the table would not be the one the hashes address).

>>> layout = hash_layout()
>>> layout.layers[0].layer_id, layout.layers[0].primes[:2], layout.layers[0].rows
(1, (16000057, 16000079), 384006168)
>>> layout.layers[1].primes[0], layout.layers[1].primes[-1], layout.layers[1].rows
(16000477, 16000889, 384016682)
>>> all(m % 2 == 1 for m in layout.layers[0].multipliers)
True
"""

from __future__ import annotations

from dataclasses import dataclass
import json
from typing import Any, Mapping

import numpy as np

from ..errors import ConfigError
from .config import builtin_config_text, builtin_models, load_model
from .configkeys import Keys

#: the seed stride of the reference: layer l's multipliers come from default_rng(10007 · l)
SEED_STRIDE = 10007


@dataclass(frozen=True)
class LayerHash:
    """One Engram layer's hash constants; columns are ordered (order 2 heads…, order 3 heads…, …)."""

    layer_id: int
    multipliers: tuple[int, ...]  # one per look-back shift 0..max_ngram−1
    primes: tuple[int, ...]  # one per column
    offsets: tuple[int, ...]  # first row of each column in the layer's table

    @property
    def rows(self) -> int:
        """Rows of the layer's table: the sum of its column primes."""
        return sum(self.primes)


@dataclass(frozen=True)
class HashLayout:
    """Hash constants of every Engram layer of a model, plus the ids the hashing needs."""

    max_ngram: int
    heads: int
    compressed_vocab: int
    pad_id: int  # a tokenizer id; the fill for look-back past the start or into an image span
    image_token_id: int | None
    layers: tuple[LayerHash, ...]

    @property
    def columns(self) -> int:
        """(max_ngram − 1) × heads lookups per position per layer (24 for V4.1-Flash)."""
        return (self.max_ngram - 1) * self.heads

    def layer(self, layer_id: int) -> LayerHash:
        for layer in self.layers:
            if layer.layer_id == layer_id:
                return layer
        raise ConfigError(f"engram layer: {layer_id} is not an Engram layer "
                          f"(engram_layer_ids {[l.layer_id for l in self.layers]})")


def _primes(layer_ids, orders: int, heads: int, start: int) -> list[tuple[int, ...]]:
    import sympy  # nextprime; imported here, not by every importer of the layout
    used: set[int] = set()
    out = []
    for _ in layer_ids:
        cols = []
        for _ in range(orders):
            p = start - 1  # every order restarts the search at engram_vocab_size − 1 …
            for _ in range(heads):
                p = int(sympy.nextprime(p))
                while p in used:  # … and skips primes another column already took
                    p = int(sympy.nextprime(p))
                used.add(p)
                cols.append(p)
        out.append(tuple(cols))
    return out


def layout_from_config(config: Mapping[str, Any]) -> HashLayout:
    """Hash layout from a parsed V4.1 config.json (``text_config`` holds the Engram keys)."""
    root = Keys(config)
    k = root.section_of("text_config") if root.has("text_config") else root
    layer_ids = k.ints("engram_layer_ids", default=[])
    if not layer_ids:
        raise ConfigError(f"config key '{k.name('engram_layer_ids')}': the model has no Engram layers to hash")
    sizes = k.ints("engram_num_embeddings")
    max_ngram = k.int("engram_max_ngram_size", minimum=2, maximum=64)
    heads = k.int("engram_n_heads", minimum=1, maximum=1024)
    start = k.int("engram_vocab_size", minimum=2)
    vc = k.int("engram_compressed_vocab_size", minimum=1)
    pad = k.int("engram_pad_token_id", default=root.int("pad_token_id", default=2))
    image = root.int("image_token_id", default=None) if root.has("image_token_id") else None
    primes = _primes(layer_ids, max_ngram - 1, heads, start)
    bound = max(1, (np.iinfo(np.int64).max // vc) // 2)
    if len(sizes) != len(layer_ids):
        raise ConfigError(f"config key '{k.name('engram_num_embeddings')}' has {len(sizes)} entries for "
                          f"{len(layer_ids)} Engram layers")
    layers = []
    for lid, size, cols in zip(layer_ids, sizes, primes):
        if sum(cols) != size:
            raise ConfigError(f"config key '{k.name('engram_num_embeddings')}': layer {lid} has {size:,} rows but "
                              f"its {len(cols)} hash primes sum to {sum(cols):,}")
        draws = np.random.default_rng(SEED_STRIDE * lid).integers(0, bound, size=max_ngram, dtype=np.int64)
        offsets = tuple(int(x) for x in np.cumsum((0,) + cols[:-1]))
        layers.append(LayerHash(lid, tuple(int(2 * r + 1) for r in draws), cols, offsets))
    return HashLayout(max_ngram, heads, vc, pad, image, tuple(layers))


def hash_layout(name_or_path: str | None = None) -> HashLayout:
    """Hash layout of a built-in model (default V4.1-Flash) or of a config.json path."""
    model = load_model(name_or_path)  # validates the name or file first, with its own errors
    key = model.name if name_or_path is None or str(name_or_path) in builtin_models() else None
    if key is not None:
        return layout_from_config(json.loads(builtin_config_text(key)))
    with open(name_or_path, encoding="utf-8") as f:
        return layout_from_config(json.load(f))


__all__ = ["HashLayout", "LayerHash", "hash_layout", "layout_from_config"]
