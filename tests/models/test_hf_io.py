"""HF checkpoint I/O for the Flax Qwen2.5-VL: transformers saves load, round trips are bitwise, errors name tensors."""
import json
import os
import shutil

import ml_dtypes
import numpy as np
import pytest
import torch
from transformers import Qwen2_5_VLForConditionalGeneration

from gui_jax.models.qwen2_5_vl import Qwen25VLConfig, load_hf_checkpoint, preset, save_hf_checkpoint
from gui_jax.models.qwen2_5_vl.hf_io import canonical_hf_name, open_checkpoint_files
from gui_jax.models.qwen2_5_vl.safetensors_io import SafetensorsFile, write_safetensors
from support.qwen_hf import hf_config, make_hf_model


def _tensors(path):
  files = open_checkpoint_files(path)
  return {name: st.get(orig) for name, (st, orig) in files.items()}


def _assert_same_tensors(a, b):
  assert sorted(a) == sorted(b)
  for k in a:
    assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
    assert a[k].tobytes() == b[k].tobytes(), k


@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory):
  root = tmp_path_factory.mktemp("hfio")
  out = {}
  for tie in (False, True):
    model = make_hf_model(hf_config(tie=tie), seed=7)
    single, sharded = str(root / f"single_{tie}"), str(root / f"sharded_{tie}")
    model.save_pretrained(single)
    model.save_pretrained(sharded, max_shard_size="40KB")
    out[tie] = (model, single, sharded)
  bf16 = str(root / "bf16")
  make_hf_model(hf_config(tie=False), seed=8).to(torch.bfloat16).save_pretrained(bf16, max_shard_size="40KB")
  out["bf16"] = bf16
  return out


@pytest.mark.parametrize("tie", [False, True])
def test_single_and_sharded_saves_load_and_round_trip_bitwise(hf_dirs, tie, tmp_path):
  model, single, sharded = hf_dirs[tie]
  assert os.path.exists(os.path.join(sharded, "model.safetensors.index.json"))
  assert not os.path.exists(os.path.join(single, "model.safetensors.index.json"))
  original = _tensors(single)
  assert ("lm_head.weight" in original) == (not tie)
  # The loaded params equal the torch weights (with the kernel transposes).
  ours, cfg = load_hf_checkpoint(single)
  q = model.model.language_model.layers[1].self_attn.q_proj.weight.detach().numpy()
  np.testing.assert_array_equal(np.asarray(ours.language_model.layers[1].self_attn.q_proj.kernel[...]), q.T)
  conv = model.model.visual.patch_embed.proj.weight.detach().numpy()
  np.testing.assert_array_equal(np.asarray(ours.visual.patch_embed.kernel[...]),
                                conv.reshape(conv.shape[0], -1).T)
  assert cfg.tie_word_embeddings == tie and (ours.lm_head is None) == tie
  # HF -> Flax -> HF, unsharded and sharded, bitwise.
  for src in (single, sharded):
    loaded, _ = load_hf_checkpoint(src)
    out_single, out_sharded = str(tmp_path / "s"), str(tmp_path / "m")
    assert save_hf_checkpoint(loaded, out_single) == ["model.safetensors"]
    files = save_hf_checkpoint(loaded, out_sharded, max_shard_size="30KB")
    assert len(files) > 3 and files[-1] == "model.safetensors.index.json"
    _assert_same_tensors(original, _tensors(out_single))
    _assert_same_tensors(original, _tensors(out_sharded))
  # Stacked layout (scan_layers): per-layer tensors load into one [layers, ...] param and save back bitwise.
  stacked, scfg = load_hf_checkpoint(sharded, scan_layers=True)
  assert scfg.scan_layers
  np.testing.assert_array_equal(np.asarray(stacked.language_model.layers.self_attn.q_proj.kernel[...][1]), q.T)
  qkv = model.model.visual.blocks[2].attn.qkv.weight.detach().numpy()
  np.testing.assert_array_equal(np.asarray(stacked.visual.blocks.attn.qkv.kernel[...][2]), qkv.T)
  save_hf_checkpoint(stacked, str(tmp_path / "stacked"), max_shard_size="30KB")
  _assert_same_tensors(original, _tensors(str(tmp_path / "stacked")))
  # transformers reads what we wrote (config + sharded safetensors) back to the same weights.
  back = Qwen2_5_VLForConditionalGeneration.from_pretrained(out_sharded).float()
  ref_sd, back_sd = model.state_dict(), back.state_dict()
  for k, v in ref_sd.items():
    assert torch.equal(v, back_sd[k]), k


def test_bfloat16_checkpoint_round_trips_bitwise(hf_dirs, tmp_path):
  src = hf_dirs["bf16"]
  model, cfg = load_hf_checkpoint(src)
  assert cfg.param_dtype == "bfloat16"
  assert model.language_model.embed_tokens[...].dtype == ml_dtypes.bfloat16
  save_hf_checkpoint(model, str(tmp_path / "out"), max_shard_size="40KB")
  original = _tensors(src)
  assert original["model.norm.weight"].dtype == ml_dtypes.bfloat16
  _assert_same_tensors(original, _tensors(str(tmp_path / "out")))


def _rewrite(src, dst, edit):
  """Copies checkpoint dir src to dst, applying edit(dict name->array) to the single safetensors file."""
  shutil.copytree(src, dst)
  path = os.path.join(dst, "model.safetensors")
  st = SafetensorsFile(path)
  tensors = {k: st.get(k) for k in st.keys()}
  edit(tensors)
  write_safetensors(path, tensors)


def test_missing_wrong_shape_and_unexpected_tensors_raise_naming_the_tensor(hf_dirs, tmp_path):
  _, single, _ = hf_dirs[False]
  name = "model.layers.1.self_attn.k_proj.bias"
  _rewrite(single, tmp_path / "missing", lambda t: t.pop(name))
  with pytest.raises(ValueError, match=r"missing 1 tensor.*model\.layers\.1\.self_attn\.k_proj\.bias"):
    load_hf_checkpoint(str(tmp_path / "missing"))

  def reshape(t):
    t["visual.blocks.0.attn.qkv.weight"] = t["visual.blocks.0.attn.qkv.weight"][:-1]
  _rewrite(single, tmp_path / "shape", reshape)
  with pytest.raises(ValueError, match=r"visual\.blocks\.0\.attn\.qkv\.weight.*shape \(95, 32\).*\(96, 32\)"):
    load_hf_checkpoint(str(tmp_path / "shape"))

  def extra(t):
    t["model.layers.9.mlp.up_proj.weight"] = np.zeros((2, 2), np.float32)
  _rewrite(single, tmp_path / "extra", extra)
  with pytest.raises(ValueError, match=r"unexpected.*model\.layers\.9\.mlp\.up_proj\.weight"):
    load_hf_checkpoint(str(tmp_path / "extra"))
  load_hf_checkpoint(str(tmp_path / "extra"), strict=False)


def test_config_layouts_and_presets_round_trip():
  for name in ("tiny", "3b", "7b", "32b", "72b"):
    cfg = preset(name)
    assert cfg.scan_layers == (name != "tiny")  # runtime option, not in config.json
    assert Qwen25VLConfig.from_hf_dict(cfg.to_hf_dict(), dtype=cfg.dtype, scan_layers=cfg.scan_layers) == cfg
  with pytest.raises(TypeError, match="unknown runtime option"):
    Qwen25VLConfig.from_hf_dict(preset("tiny").to_hf_dict(), scan=True)
  with pytest.raises(ValueError, match="remat_policy 'dots' unknown"):
    preset("tiny", remat_policy="dots")
  c7 = preset("7b")
  assert (c7.text.hidden_size, c7.text.num_hidden_layers, c7.text.num_key_value_heads) == (3584, 28, 4)
  assert preset("3b").tie_word_embeddings and preset("3b").text.vocab_size == 151936
  assert c7.vision.fullatt_block_indexes == (7, 15, 23, 31) and c7.vision.out_hidden_size == 3584
  # Legacy (pre-v5) layout: text fields at top level, rope_scaling with type 'mrope'.
  d = c7.to_hf_dict()
  legacy = {k: v for k, v in d.items() if k != "text_config"}
  legacy.update({k: v for k, v in d["text_config"].items() if k != "rope_parameters"})
  legacy.update(rope_theta=1000000.0, rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]})
  legacy["vision_config"] = {k: v for k, v in d["vision_config"].items() if k != "out_hidden_size"}
  assert Qwen25VLConfig.from_hf_dict(json.loads(json.dumps(legacy)), dtype="bfloat16", scan_layers=True) == c7
  assert canonical_hf_name("model.language_model.layers.0.mlp.up_proj.weight") == "model.layers.0.mlp.up_proj.weight"
  assert canonical_hf_name("model.visual.merger.mlp.0.bias") == "visual.merger.mlp.0.bias"
  with pytest.raises(ValueError, match="unknown Qwen2.5-VL preset 'huge'"):
    preset("huge")


def test_safetensors_file_slices_dtypes_and_errors(tmp_path):
  rng = np.random.default_rng(0)
  tensors = {"w.bf16": rng.standard_normal((4, 6)).astype(ml_dtypes.bfloat16),
             "b.f32": rng.standard_normal(5).astype(np.float32), "i.i64": np.arange(6, dtype=np.int64).reshape(3, 2)}
  path = str(tmp_path / "t.safetensors")
  write_safetensors(path, tensors, metadata={"format": "pt"})
  st = SafetensorsFile(path)
  assert sorted(st.keys()) == sorted(tensors) and st.metadata == {"format": "pt"}
  for name, arr in tensors.items():
    assert st.shape(name) == arr.shape and st.dtype(name) == arr.dtype
    assert st.get(name).tobytes() == arr.tobytes() and st.get(name).dtype == arr.dtype
  assert st.get_slice("w.bf16", (slice(1, 3), slice(2, 5))).tobytes() == tensors["w.bf16"][1:3, 2:5].tobytes()
  assert st.get_slice("i.i64", 2).tolist() == [4, 5]
  with pytest.raises(KeyError, match=r"t\.safetensors: no tensor 'nope'"):
    st.get("nope")
  with pytest.raises(ValueError, match=r"tensor 'c': dtype complex64 cannot be stored"):
    write_safetensors(path, {"c": np.zeros(2, np.complex64)})
  bad = tmp_path / "bad.safetensors"
  bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}")
  with pytest.raises(ValueError, match=r"bad\.safetensors: not a readable safetensors file"):
    SafetensorsFile(str(bad))
