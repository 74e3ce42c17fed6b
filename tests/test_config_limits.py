"""Configs and model paths that once crashed or hung are refused before any work, with one clear error."""

from __future__ import annotations

import copy
import json
import os

import pytest

from v41graph import ConfigError, load_model
from v41graph.model.config import builtin_config_text, model_from_config

V41 = json.loads(builtin_config_text("deepseek-v4.1-flash"))


def _write(tmp_path, text: str) -> str:
    path = tmp_path / "config.json"
    path.write_text(text)
    return str(path)


def test_deeply_nested_json_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="nests JSON too deeply"):
        load_model(_write(tmp_path, "[" * 5000 + "]" * 5000))


def test_a_5000_digit_integer_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"is not valid JSON: .*5000 digits"):
        load_model(_write(tmp_path, '{"hidden_size": ' + "9" * 5000 + "}"))


def test_a_name_too_long_for_the_file_system(tmp_path):
    with pytest.raises(ConfigError, match="cannot use x{80}… as a path: File name too long"):
        load_model("x" * 300 + ".json")


def test_an_empty_name():
    with pytest.raises(ConfigError, match="^model: the model name is empty"):
        load_model("")


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_path_that_is_not_a_regular_file(tmp_path, kind):
    target = tmp_path / "x"
    target.mkdir() if kind == "directory" else os.mkfifo(target)
    with pytest.raises(ConfigError, match=f"^model: '{target}' is not a regular file$"):
        load_model(str(target))


@pytest.mark.parametrize("key, value, message", [
    ("num_hidden_layers", 10 ** 6, "'text_config.num_hidden_layers' must be <= 1,024, got 1000000"),
    ("dspark_n_routed_experts", 2 ** 31, "'text_config.dspark_n_routed_experts' must be <= 65,536, got 2147483648"),
    ("n_routed_experts", 2 ** 20, "'text_config.n_routed_experts' must be <= 65,536, got 1048576"),
    ("hidden_size", 2 ** 40, "'text_config.hidden_size' must be <= 1,048,576, got 1099511627776"),
    ("vocab_size", 2 ** 60, "'text_config.vocab_size' must be <= 281,474,976,710,656, got 1152921504606846976"),
])
def test_sizes_that_drive_loops_are_bounded(key, value, message):
    config = copy.deepcopy(V41)
    config["text_config"][key] = value
    with pytest.raises(ConfigError, match=f"^config key {message}$"):
        model_from_config(config)


@pytest.mark.parametrize("key", ["engram_max_ngram_size", "engram_n_heads", "engram_head_dim"])
def test_engram_layers_need_their_shape_keys(key):
    config = copy.deepcopy(V41)
    del config["text_config"][key]
    with pytest.raises(ConfigError, match=f"^config key 'text_config.{key}' is missing$"):
        model_from_config(config)


def test_an_ngram_order_below_two_is_refused():
    # orders 2..max: max 1 would give no lookups and a negative projection width
    config = copy.deepcopy(V41)
    config["text_config"]["engram_max_ngram_size"] = 1
    with pytest.raises(ConfigError, match="'text_config.engram_max_ngram_size' must be >= 2, got 1"):
        model_from_config(config)


def test_v4_needs_no_engram_keys():
    assert load_model("deepseek-v4-flash").engram_max_ngram_size == 0


def test_layers_times_experts_is_bounded():
    config = copy.deepcopy(V41)
    config["text_config"]["n_routed_experts"] = 4096  # 40 × 4096 + 3 draft blocks × 128 = 164,224
    with pytest.raises(ConfigError, match=r"^config: 40 layers × 4,096 routed experts \(\+ draft blocks\) make "
                                          r"164,224 expert instances; at most 65,536$"):
        model_from_config(config)
