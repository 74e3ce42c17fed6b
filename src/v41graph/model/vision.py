"""The image processor: how an image's pixel size becomes ViT patches and language tokens.

The notes say the processor, not the raw width and height, decides the input size and the token
count. ``vision_config`` gives ``patch_size`` (14), ``downsample_ratio`` (3: a 3×3 pixel-unshuffle
merges patches into one language token), ``min_pixels`` (295,936) and ``max_image_tokens``
(1,024). The resize is a documented assumption in the form the Qwen2-VL family's ``smart_resize``
uses, with exact integer arithmetic:

* each side is rounded (half up) to a multiple of f = patch_size × downsample_ratio (42), at least f;
* if the area exceeds ``max_pixels`` = max_image_tokens · f² (1,806,336), both sides shrink by
  the same factor to ⌊√(side² · max_pixels / area) / f⌋ · f (at least f); below ``min_pixels``
  they grow to ⌈√(side² · min_pixels / area) / f⌉ · f;
* patches = (w / 14)·(h / 14); language tokens = patches / 9, never above ``max_image_tokens``.

>>> from v41graph import load_model
>>> v = load_model().vision
>>> resize(v, 5000, 5000), image_tokens(v, (5000, 5000))
((1344, 1344), (9216, 1024))
>>> resize(v, 896, 896), image_tokens(v, (896, 896))
((882, 882), (3969, 441))
>>> resize(v, 100, 100), image_tokens(v, (100, 100))
((546, 546), (1521, 169))
"""

from __future__ import annotations

from math import isqrt

from ..errors import PlanError
from .config import VisionSpec

#: the size assumed for an image whose size a request does not give
DEFAULT_IMAGE_SIZE = (896, 896)


def _factor(v: VisionSpec) -> int:
    return v.patch_size * v.downsample_ratio


def max_pixels(v: VisionSpec) -> int:
    """Largest resized area: ``max_image_tokens`` merged tokens of f × f pixels each."""
    return v.max_image_tokens * _factor(v) ** 2


def _ceil_sqrt(num: int, den: int) -> int:
    """⌈√(num / den)⌉ exactly: the least k with k² · den ≥ num."""
    k = isqrt(num // den)
    while k * k * den < num:
        k += 1
    return k


def resize(v: VisionSpec, width: int, height: int) -> tuple[int, int]:
    """The processor's resized (width, height): multiples of f inside [min_pixels, max_pixels]."""
    for name, side in (("width", width), ("height", height)):
        if isinstance(side, bool) or not isinstance(side, int) or side < 1:
            raise PlanError(f"request image_size: {name} must be a positive number of pixels, got {side!r}")
    f = _factor(v)
    w, h = max(f, (width + f // 2) // f * f), max(f, (height + f // 2) // f * f)
    area, top = width * height, max_pixels(v)
    if w * h > top:  # shrink: side / √(area / top), floored to a multiple of f
        w = max(f, isqrt(width * width * top // (area * f * f)) * f)
        h = max(f, isqrt(height * height * top // (area * f * f)) * f)
    elif w * h < v.min_pixels:  # grow: side · √(min / area), ceiled to a multiple of f
        w = _ceil_sqrt(width * width * v.min_pixels, area * f * f) * f
        h = _ceil_sqrt(height * height * v.min_pixels, area * f * f) * f
    return w, h


def image_tokens(v: VisionSpec, size: tuple[int, int] | None) -> tuple[int, int]:
    """(ViT patches, language tokens) of one image of ``size`` pixels (default 896×896)."""
    w, h = resize(v, *(size or DEFAULT_IMAGE_SIZE))
    patches = (w // v.patch_size) * (h // v.patch_size)
    return patches, min(patches // v.downsample_ratio ** 2, v.max_image_tokens)
