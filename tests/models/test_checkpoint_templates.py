"""A HF checkpoint's own chat template and preprocessor_config.json are used: rendering equals transformers'
apply_chat_template, build_inputs masks the assistant turns, the processor reads the checkpoint's settings."""
import json

import numpy as np
import pytest
from PIL import Image

from gui_jax.models import tokenizer as T
from gui_jax.models.chat import build_inputs, load_chat_template, render_chat
from gui_jax.models.processor import ImageProcessor

# A Qwen-style template with its own system prompt, loop controls, tojson and raise_exception.
TEMPLATE = (
    "{% if messages[0]['role'] == 'tool' %}{{ raise_exception('tool first') }}{% endif %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou operate a phone. Reply with one action.<|im_end|>\n{% endif %}"
    "{% if message['role'] == 'skip' %}{% continue %}{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for c in message['content'] %}{% if c['type'] == 'image' or 'image' in c %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif 'text' in c %}{{ c['text'] }}"
    "{% elif 'meta' in c %}{{ c['meta'] | tojson }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
IMG = Image.fromarray(np.random.default_rng(0).integers(0, 256, (60, 90, 3), dtype=np.uint8))
MESSAGES = [
    {"role": "user", "content": [{"type": "image", "image": IMG}, {"type": "text", "text": "Öffne die Uhr"},
                                 {"type": "meta", "meta": {"app": "Uhr", "step": 1}}]},
    {"role": "skip", "content": "dropped by the template"},
    {"role": "assistant", "content": '<action>{"action": "open", "text": "Uhr"}</action>'},
    {"role": "user", "content": [{"type": "image", "image": IMG}, {"type": "text", "text": "next"}]},
]


@pytest.fixture(scope="module")
def checkpoint_dirs(tmp_path_factory):
  root = tmp_path_factory.mktemp("ckpt")
  dirs = {}
  for kind in ("jinja", "json", "tokenizer_config", "named", "none"):
    d = root / kind
    d.mkdir()
    dirs[kind] = d
  (dirs["jinja"] / "chat_template.jinja").write_text(TEMPLATE)
  (dirs["json"] / "chat_template.json").write_text(json.dumps({"chat_template": TEMPLATE}))
  (dirs["tokenizer_config"] / "tokenizer_config.json").write_text(json.dumps({"chat_template": TEMPLATE}))
  (dirs["named"] / "tokenizer_config.json").write_text(json.dumps(
      {"chat_template": [{"name": "tool_use", "template": "x"}, {"name": "default", "template": TEMPLATE}]}))
  (dirs["none"] / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 10}))
  return dirs


def test_template_found_in_every_hf_location(checkpoint_dirs):
  for kind in ("jinja", "json", "tokenizer_config", "named"):
    assert load_chat_template(str(checkpoint_dirs[kind])) == TEMPLATE, kind
  assert load_chat_template(str(checkpoint_dirs["none"])) is None


@pytest.mark.parametrize("gen", [False, True])
def test_rendering_equals_transformers_apply_chat_template(gen):
  from tokenizers import Tokenizer, models
  from transformers import PreTrainedTokenizerFast

  hf = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")),
                               chat_template=TEMPLATE)
  for_hf = [{**m, "content": m["content"] if isinstance(m["content"], str) else
             [{k: ("<img>" if k == "image" else v) for k, v in c.items()} for c in m["content"]]} for m in MESSAGES]
  ref = hf.apply_chat_template(for_hf, tokenize=False, add_generation_prompt=gen)
  ours = render_chat(MESSAGES, add_generation_prompt=gen, template=TEMPLATE)
  assert ours == ref
  assert ours.startswith("<|im_start|>system\nYou operate a phone.") and "dropped" not in ours
  assert '{"app": "Uhr", "step": 1}' in ours
  assert render_chat(MESSAGES, image_token_counts=[3, 2], template=TEMPLATE).count("<|image_pad|>") == 5
  with pytest.raises(ValueError, match="chat template failed: tool first"):
    render_chat([{"role": "tool", "content": "x"}], template=TEMPLATE)
  with pytest.raises(ValueError, match="does not compile"):
    render_chat(MESSAGES, template="{% for m in messages %}")


def test_build_inputs_with_checkpoint_template_masks_assistant_turns():
  tok, proc = T.tiny_tokenizer(), ImageProcessor()
  messages = [m for m in MESSAGES if m["role"] != "skip"]
  out = build_inputs(messages, None, tok, proc, template=TEMPLATE)
  counts = [proc.num_image_tokens(60, 90)] * 2
  assert tok.decode(out["input_ids"].tolist()) == render_chat(messages, image_token_counts=counts, template=TEMPLATE)
  masked = tok.decode(out["input_ids"][out["assistant_mask"] == 1].tolist())
  assert masked == messages[1]["content"] + "<|im_end|>"
  # A template that adds no system turn: the mask still finds the assistant turn.
  no_system = TEMPLATE.replace("loop.first and message['role'] != 'system'", "false")
  out2 = build_inputs(messages, None, tok, proc, template=no_system)
  assert tok.decode(out2["input_ids"][out2["assistant_mask"] == 1].tolist()) == masked


def test_image_processor_from_checkpoint(tmp_path):
  assert ImageProcessor.from_pretrained(str(tmp_path)) == ImageProcessor()
  (tmp_path / "preprocessor_config.json").write_text(json.dumps(
      {"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "merge_size": 2, "temporal_patch_size": 2,
       "image_mean": [0.5, 0.5, 0.5], "image_std": [0.25, 0.25, 0.25]}))
  proc = ImageProcessor.from_pretrained(str(tmp_path))
  assert (proc.min_pixels, proc.max_pixels, proc.image_mean) == (3136, 12845056, (0.5, 0.5, 0.5))
  assert ImageProcessor.from_pretrained(str(tmp_path), max_pixels=200_704).max_pixels == 200_704
  # transformers >= 4.5x writes size.shortest_edge / longest_edge instead of min/max_pixels
  (tmp_path / "preprocessor_config.json").write_text(json.dumps({"size": {"shortest_edge": 6272,
                                                                           "longest_edge": 401408}}))
  proc = ImageProcessor.from_pretrained(str(tmp_path))
  assert (proc.min_pixels, proc.max_pixels) == (6272, 401408)
  assert proc.grid_thw(1200, 540) == ImageProcessor(min_pixels=6272, max_pixels=401408).grid_thw(1200, 540)
  (tmp_path / "preprocessor_config.json").write_text(json.dumps({"min_pixels": 10, "max_pixels": 5}))
  with pytest.raises(ValueError, match=r"preprocessor_config\.json: need 0 < min_pixels <= max_pixels"):
    ImageProcessor.from_pretrained(str(tmp_path))
  (tmp_path / "preprocessor_config.json").write_text("{oops")
  with pytest.raises(ValueError, match=r"preprocessor_config\.json: not valid JSON"):
    ImageProcessor.from_pretrained(str(tmp_path))
