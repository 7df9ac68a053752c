"""Chat template: same string as transformers' apply_chat_template with the Qwen2.5-VL template; build_inputs
equal to Qwen2_5_VLProcessor (input_ids, pixel_values, image_grid_thw, mm_token_type_ids)."""
import warnings

import numpy as np
import pytest
from PIL import Image

from gui_jax.models import tokenizer as T
from gui_jax.models.chat import build_inputs, image_items, render_chat
from gui_jax.models.processor import ImageProcessor

warnings.filterwarnings("ignore", category=FutureWarning)

# The chat_template of Qwen2.5-VL-*-Instruct (chat_template.json), the reference we must reproduce.
QWEN25_VL_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}"
    "<|im_end|>\n{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' or 'image' in "
    "content or 'image_url' in content %}{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}"
    "Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>{% elif content['type'] "
    "== 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}"
    "Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>{% elif 'text' in content "
    "%}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}"
    "<|im_start|>assistant\n{% endif %}"
)


def _img(h, w, seed=0):
    return Image.fromarray(np.random.default_rng(seed + h * 7 + w).integers(0, 256, (h, w, 3), dtype=np.uint8))


IMG_A, IMG_B, IMG_C = _img(100, 60), _img(56, 300, 1), _img(400, 180, 2)

CONVERSATIONS = [
    [{"role": "user", "content": "Open the Clock app."}],
    [{"role": "system", "content": "You are a GUI agent."}, {"role": "user", "content": "hi\n\nthere"}],
    [{"role": "user", "content": [{"type": "image", "image": IMG_A}, {"type": "text", "text": "Goal: add alarm"}]}],
    [
        {"role": "system", "content": [{"type": "text", "text": "Sys {{ not jinja }}"}]},
        {"role": "user", "content": [{"type": "text", "text": "Step 1"}, {"type": "image", "image": IMG_A},
                                     {"type": "text", "text": "UI tree:\nButton;click;;Save;[0,0][10,10]"}]},
        {"role": "assistant",
         "content": '<think>tap save</think>\n<action>{"action": "click", "coordinate": [5, 5]}</action>'},
        {"role": "user", "content": [{"image": IMG_B}, {"type": "image_url", "image_url": "x.png", "image": IMG_C},
                                     {"type": "text", "text": "next?"}]},
    ],
    [{"role": "user", "content": []}, {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}],
    [{"role": "user", "content": [{"type": "text", "text": "你好 😀 "}, {"type": "image", "image": IMG_C}]},
     {"role": "assistant", "content": "Thought: x\nAction: click(start_box='(1,2)')"},
     {"role": "user", "content": [{"type": "image", "image": IMG_B}]}],
]


@pytest.fixture(scope="module")
def hf_tokenizer():
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")),
                                   chat_template=QWEN25_VL_TEMPLATE)


def _for_hf(messages):
    """HF's template only looks at keys; drop the image objects it does not need for rendering."""
    return [{**m, "content": m["content"] if isinstance(m["content"], str) else
             [{k: ("<img>" if k == "image" else v) for k, v in item.items()} for item in m["content"]]}
            for m in messages]


@pytest.mark.parametrize("conv", range(len(CONVERSATIONS)))
@pytest.mark.parametrize("gen", [False, True])
@pytest.mark.parametrize("vision_id", [False, True])
def test_render_matches_transformers_template(hf_tokenizer, conv, gen, vision_id):
    messages = CONVERSATIONS[conv]
    ref = hf_tokenizer.apply_chat_template(_for_hf(messages), tokenize=False, add_generation_prompt=gen,
                                           add_vision_id=vision_id)
    assert render_chat(messages, add_generation_prompt=gen, add_vision_id=vision_id) == ref


def test_render_expands_pads_and_options():
    messages = CONVERSATIONS[3]
    assert len(image_items(messages)) == 3
    text = render_chat(messages, image_token_counts=[2, 3, 1])
    assert text.count("<|image_pad|>") == 6
    assert "<|vision_start|><|image_pad|><|image_pad|><|vision_end|>UI tree" in text
    no_sys = render_chat([{"role": "user", "content": "hi"}], default_system=None)
    assert no_sys == "<|im_start|>user\nhi<|im_end|>\n"
    with pytest.raises(ValueError, match="3 images but 2 token counts"):
        render_chat(messages, image_token_counts=[1, 2])
    with pytest.raises(ValueError, match="message 0 must be a mapping"):
        render_chat([{"content": "no role"}])
    with pytest.raises(TypeError, match="message 1 content"):
        render_chat([{"role": "user", "content": "a"}, {"role": "user", "content": None}])


@pytest.fixture(scope="module")
def hf_processor():
    from transformers import PreTrainedTokenizerFast, Qwen2_5_VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    class NoVideoProcessor(Qwen2_5_VLProcessor):  # no torchvision here, so no video processor
        def check_argument_for_proper_class(self, name, arg):
            return None if arg is None else super().check_argument_for_proper_class(name, arg)

    tok = PreTrainedTokenizerFast(tokenizer_object=T.qwen25_hf_tokenizer(), chat_template=QWEN25_VL_TEMPLATE,
                                  eos_token="<|im_end|>", pad_token="<|endoftext|>")
    return NoVideoProcessor(image_processor=Qwen2VLImageProcessorPil(), tokenizer=tok, chat_template=QWEN25_VL_TEMPLATE)


@pytest.mark.parametrize("conv", [0, 2, 3, 5])
def test_build_inputs_matches_qwen25_vl_processor(hf_processor, conv):
    messages = CONVERSATIONS[conv]
    images = [item["image"] for item in image_items(messages)]
    text = hf_processor.apply_chat_template(_for_hf(messages), tokenize=False, add_generation_prompt=True)
    ref = hf_processor(text=[text], images=images or None, return_tensors="np")
    ours = build_inputs(messages, None, T.qwen25_tokenizer(), ImageProcessor(), add_generation_prompt=True)
    assert ours["input_ids"].dtype == np.int32 and ours["mm_token_type_ids"].dtype == np.int32
    np.testing.assert_array_equal(ours["input_ids"], ref["input_ids"][0])
    np.testing.assert_array_equal(ours["mm_token_type_ids"], ref["mm_token_type_ids"][0])
    expected = "".join(
        m["content"] if isinstance(m["content"], str) else "".join(i.get("text", "") for i in m["content"])
        for m in messages if m["role"] == "assistant")
    masked = ours["input_ids"][ours["assistant_mask"] == 1].tolist()
    assert T.qwen25_tokenizer().decode(masked).replace("<|im_end|>", "") == expected
    assert T.qwen25_tokenizer().decode(masked).count("<|im_end|>") == sum(m["role"] == "assistant" for m in messages)
    if images:
        np.testing.assert_array_equal(ours["image_grid_thw"], ref["image_grid_thw"])
        np.testing.assert_array_equal(ours["pixel_values"], ref["pixel_values"])
    else:
        assert ours["pixel_values"].shape == (0, 1176) and ours["image_grid_thw"].shape == (0, 3)


def test_build_inputs_with_tiny_tokenizer():
    tok, proc = T.tiny_tokenizer(), ImageProcessor()
    messages = CONVERSATIONS[3]
    out = build_inputs(messages, None, tok, proc)
    counts = [proc.num_image_tokens(im.height, im.width) for im in (IMG_A, IMG_B, IMG_C)]
    assert int(out["mm_token_type_ids"].sum()) == sum(counts)
    assert np.array_equal(out["mm_token_type_ids"] == 1, out["input_ids"] == tok.image_pad_id)
    assert out["pixel_values"].shape[0] == 4 * sum(counts)
    assert tok.decode(out["input_ids"].tolist()) == render_chat(messages, image_token_counts=counts)
    # runs of pads sit between vision_start / vision_end
    ids = out["input_ids"].tolist()
    starts = [i for i, t in enumerate(ids) if t == tok.vision_start_id]
    assert [ids[s + 1 + c] for s, c in zip(starts, counts)] == [tok.vision_end_id] * 3
    # explicit images override item values; counts must agree
    arr = np.asarray(IMG_A)
    out2 = build_inputs(CONVERSATIONS[2], [arr], tok, proc)
    assert np.array_equal(out2["pixel_values"], proc(IMG_A)["pixel_values"])
    with pytest.raises(ValueError, match="1 image items but 2 images"):
        build_inputs(CONVERSATIONS[2], [arr, arr], tok, proc)
    with pytest.raises(ValueError, match="literal <\\|image_pad\\|>"):
        build_inputs([{"role": "user", "content": "sneaky <|image_pad|>"}], [], tok, proc)
    with pytest.raises(ValueError, match="image item 0 has no 'image'"):
        build_inputs([{"role": "user", "content": [{"type": "image"}]}], None, tok, proc)


@pytest.mark.parametrize("tok_name", ["qwen25", "tiny"])
def test_assistant_mask(tok_name):
    tok = T.qwen25_tokenizer() if tok_name == "qwen25" else T.tiny_tokenizer()
    messages = [
        {"role": "user", "content": [{"type": "image", "image": IMG_A}, {"type": "text", "text": "go"}]},
        {"role": "assistant", "content": "<think>a</think>\n<action>{}</action>"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "and"},
        {"role": "assistant", "content": "\n\n  leading whitespace"},
    ]
    out = build_inputs(messages, None, tok, ImageProcessor(), add_generation_prompt=True)
    ids, mask = out["input_ids"], out["assistant_mask"]
    assert mask.dtype == np.int32 and mask.shape == ids.shape
    assert int(mask[ids == tok.im_end_id].sum()) == 3 and int((mask & out["mm_token_type_ids"]).sum()) == 0
    # masked spans decode to the contents (a token straddling the header newline may add that one "\n")
    spans = np.split(ids, np.flatnonzero(np.diff(mask) != 0) + 1)
    masked_runs, pos = [], 0
    for span in spans:
        if mask[pos]:
            masked_runs.append(tok.decode(span.tolist()))
        pos += len(span)
    assert masked_runs[0] == "<think>a</think>\n<action>{}</action><|im_end|>"
    assert masked_runs[1] == "<|im_end|>"
    assert masked_runs[2] in ("\n\n  leading whitespace<|im_end|>", "\n\n\n  leading whitespace<|im_end|>")
    with pytest.raises(ValueError, match="<\\|im_start\\|> tokens for"):
        build_inputs([{"role": "user", "content": "x<|im_start|>"}], [], tok, ImageProcessor())
