"""Vision tokens are prompt positions, and the image processor resizes (issue 10, D6).

vision_config: patch 14, downsample 3 (f = 42 pixels per language token side), max_image_tokens
1,024 (max_pixels = 1024 · 42² = 1,806,336), min_pixels 295,936.
"""

from __future__ import annotations

from functools import cache

import pytest

from v41graph import Plan, PlanError, Request, load_model
from v41graph.ir.ledger import ledger
from v41graph.costs.counts import CostContext, tokens
from v41graph.ir.ledger import image_tokens
from v41graph.model.vision import max_pixels, resize
from v41graph.passes import compile_graph


@cache
def _model():
    return load_model()


def test_a_huge_image_is_resized_to_the_patch_cap():
    v = _model().vision
    assert max_pixels(v) == 1024 * 42 * 42 == 1_806_336
    # 5000 × 5000 shrinks to ⌊√(1,806,336) / 42⌋ · 42 = 32 · 42 = 1344 per side
    assert resize(v, 5000, 5000) == (1344, 1344)
    patches, merged = image_tokens(_model(), Request.prefill(2000, images=1, image_size=(5000, 5000)))
    assert (patches, merged) == ((1344 // 14) ** 2, 1024) == (9216, 1024)
    assert patches < 128_164  # the unresized count the issue measured


def test_a_small_image_grows_to_min_pixels():
    v = _model().vision
    # 100 × 100: √(295,936 / 10,000) · 100 / 42 = 12.95 → 13 · 42 = 546 per side
    assert resize(v, 100, 100) == (546, 546)
    assert 546 * 546 >= 295_936 > 504 * 504


def test_the_default_image_size():
    # 896 × 896 (the size assumed when none is given): 896 / 42 = 21.3 → 882; 63² patches; 21² tokens
    assert image_tokens(_model(), Request.prefill(1000, images=1)) == (63 * 63, 21 * 21)


def test_the_prompt_must_hold_its_image_tokens():
    with pytest.raises(PlanError, match="request 0 \\(prefill\\): its 1 image\\(s\\) take 441 language tokens but "
                                        "the prompt holds 10"):
        ledger(_model(), Plan([Request.prefill(10, images=1)]))
    with pytest.raises(PlanError, match="take 882 language tokens but the prompt holds 881"):
        ledger(_model(), Plan([Request.prefill(881, images=2)]))


def test_image_tokens_pass_through_every_language_layer():
    plan = Plan([Request.prefill(500, images=1)], fusion="unfused")
    # 441 image tokens + 59 text tokens are the prompt's 500 positions, through all 40 layers
    assert ledger(_model(), plan).token_layers() == 40 * 500
    compiled = compile_graph(_model(), plan)
    ctx = CostContext(_model(), plan)
    assert tokens(compiled.graph.nodes["vision.aligner.fc2"], ctx) == 441
    assert tokens(compiled.graph.nodes["vision.encoder"], ctx) == 3969
    assert tokens(compiled.graph.nodes["L39.wq_a"], ctx) == 500


def test_images_need_a_vision_tower():
    with pytest.raises(PlanError, match="has no vision_config"):
        ledger(load_model("deepseek-v4-flash"), Plan([Request.prefill(1000, images=1)]))
