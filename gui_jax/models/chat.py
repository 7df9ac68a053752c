"""Qwen2.5-VL chat template and model inputs for one multi-turn sequence with images.

Messages are `{"role": str, "content": str | list[item]}` with items `{"type": "text", "text": s}`
or `{"type": "image", "image": PIL | uint8 HxWx3}` (as in HF, any item with an "image" or
"image_url" key is an image). `render_chat` produces exactly the string transformers renders with
the Qwen2.5-VL chat template (a default system turn is added when the first message is not a
system message), optionally with each image's `<|image_pad|>` expanded to its token count.

A Hugging Face checkpoint may bring its own chat template (`load_chat_template(dir)`); `render_chat(...,
template=...)` then renders that Jinja template the way transformers' `apply_chat_template` does.
"""
from __future__ import annotations

import functools
import json
import os
from typing import Any, Mapping, Optional, Sequence

import jinja2
import jinja2.ext
import jinja2.sandbox
import numpy as np

from gui_jax.models.processor import IMAGE_PAD, ImageLike, ImageProcessor, expand_image_pads, tokens_per_image
from gui_jax.models.tokenizer import Tokenizer

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."
IM_START, IM_END = "<|im_start|>", "<|im_end|>"
VISION_START, VISION_END, VIDEO_PAD = "<|vision_start|>", "<|vision_end|>", "<|video_pad|>"

Message = Mapping[str, Any]


def _is_image(item: Mapping[str, Any]) -> bool:
    return item.get("type") == "image" or "image" in item or "image_url" in item


def _is_video(item: Mapping[str, Any]) -> bool:
    return item.get("type") == "video" or "video" in item


def _check_messages(messages: Sequence[Message]) -> None:
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or "role" not in m or "content" not in m:
            raise ValueError(f"message {i} must be a mapping with 'role' and 'content', got {m!r}"[:300])
        content = m["content"]
        if isinstance(content, str):
            continue
        if not isinstance(content, (list, tuple)):
            raise TypeError(f"message {i} content must be a str or a list of items, got {type(content).__name__}")
        for j, item in enumerate(content):
            if not isinstance(item, Mapping):
                raise TypeError(f"message {i} item {j} must be a mapping, got {type(item).__name__}")


def image_items(messages: Sequence[Message]) -> list[Mapping[str, Any]]:
    """The image items of all messages, in the order the template renders them."""
    _check_messages(messages)
    return [item for m in messages if not isinstance(m["content"], str)
            for item in m["content"] if _is_image(item)]


# ----------------------------------------------------------------------------- checkpoint templates


def load_chat_template(path: str) -> Optional[str]:
    """The chat template a Hugging Face checkpoint directory brings, or None when it has none.

    Looked up, in order, in chat_template.jinja (newer saves), chat_template.json ({"chat_template": str})
    and tokenizer_config.json ("chat_template": a string, or a list of {name, template} with a "default").
    """
    jinja_file = os.path.join(path, "chat_template.jinja")
    if os.path.isfile(jinja_file):
        with open(jinja_file, encoding="utf-8") as f:
            return f.read()
    for name in ("chat_template.json", "tokenizer_config.json"):
        file = os.path.join(path, name)
        if not os.path.isfile(file):
            continue
        try:
            with open(file, encoding="utf-8") as f:
                template = json.load(f).get("chat_template")
        except (json.JSONDecodeError, AttributeError) as e:
            raise ValueError(f"{file}: not a JSON object ({e})") from None
        if isinstance(template, list):  # named templates: use the default one
            named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
            template = named.get("default")
        if template is not None:
            if not isinstance(template, str):
                raise ValueError(f"{file}: chat_template must be a string, got {type(template).__name__}")
            return template
    return None


def _raise_template_error(message: str):
    raise jinja2.exceptions.TemplateError(message)


@functools.lru_cache(maxsize=8)
def _compiled_template(template: str) -> jinja2.Template:
    # The environment HF chat templates are written for: sandboxed, trim/lstrip blocks, loop controls,
    # raise_exception() and a tojson that keeps non-ASCII text.
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                       extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, indent=None, separators=None, sort_keys=False: json.dumps(
        x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys)
    env.globals["raise_exception"] = _raise_template_error
    try:
        return env.from_string(template)
    except jinja2.exceptions.TemplateSyntaxError as e:
        raise ValueError(f"chat template does not compile (line {e.lineno}): {e.message}") from None


def render_chat(
    messages: Sequence[Message],
    add_generation_prompt: bool = False,
    image_token_counts: Optional[Sequence[int]] = None,
    add_vision_id: bool = False,
    default_system: Optional[str] = DEFAULT_SYSTEM_PROMPT,
    template: Optional[str] = None,
) -> str:
    """The Qwen2.5-VL chat string. With `image_token_counts`, image k gets that many pads
    (else one placeholder pad per image, as the template itself writes). `default_system=None`
    drops the implicit system turn (then output differs from the HF template). `template`: a
    checkpoint's Jinja chat template to render instead of the built-in layout (`default_system`
    is then the template's business)."""
    _check_messages(messages)
    n_images = len(image_items(messages))
    if image_token_counts is not None and len(image_token_counts) != n_images:
        raise ValueError(f"messages contain {n_images} images but {len(image_token_counts)} token counts were given")
    if template is not None:
        try:
            text = _compiled_template(template).render(
                messages=[dict(m) for m in messages], add_generation_prompt=add_generation_prompt,
                add_vision_id=add_vision_id)
        except jinja2.exceptions.TemplateError as e:
            raise ValueError(f"chat template failed: {e}") from None
        return text if image_token_counts is None else expand_image_pads(text, image_token_counts)
    out: list[str] = []
    image_idx = video_idx = 0
    for i, m in enumerate(messages):
        if i == 0 and m["role"] != "system" and default_system is not None:
            out.append(f"{IM_START}system\n{default_system}{IM_END}\n")
        out.append(f"{IM_START}{m['role']}\n")
        content = m["content"]
        if isinstance(content, str):
            out.append(content)
        else:
            for item in content:
                if _is_image(item):
                    n = 1 if image_token_counts is None else int(image_token_counts[image_idx])
                    image_idx += 1
                    if add_vision_id:
                        out.append(f"Picture {image_idx}: ")
                    out.append(VISION_START + IMAGE_PAD * n + VISION_END)
                elif _is_video(item):
                    video_idx += 1
                    if add_vision_id:
                        out.append(f"Video {video_idx}: ")
                    out.append(VISION_START + VIDEO_PAD + VISION_END)
                elif "text" in item:
                    out.append(str(item["text"]))
        out.append(f"{IM_END}\n")
    if add_generation_prompt:
        out.append(f"{IM_START}assistant\n")
    return "".join(out)


def build_inputs(
    messages: Sequence[Message],
    images: Optional[Sequence[ImageLike]],
    tokenizer: Tokenizer,
    image_processor: ImageProcessor,
    add_generation_prompt: bool = False,
    **render_kwargs,
) -> dict[str, np.ndarray]:
    """Model inputs for one sequence.

    Returns input_ids [L] int32, pixel_values [P, patch_dim] float32 (P = sum of t*h*w over
    images), image_grid_thw [n_images, 3] int64, mm_token_type_ids [L] int32 (1 at image pads),
    assistant_mask [L] int32 (1 on assistant-turn content tokens and their <|im_end|>).
    `images` defaults to the "image" values of the image items, in order.
    """
    items = image_items(messages)
    if images is None:
        images = []
        for k, item in enumerate(items):
            if "image" not in item or item["image"] is None:
                raise ValueError(f"image item {k} has no 'image' value and no `images` list was given")
            images.append(item["image"])
    if len(images) != len(items):
        raise ValueError(f"messages contain {len(items)} image items but {len(images)} images were given")
    if any(_is_video(item) and not _is_image(item) for m in messages if not isinstance(m["content"], str)
           for item in m["content"]):
        raise NotImplementedError("video items are not supported by build_inputs")
    vis = image_processor(list(images))
    counts = tokens_per_image(vis["image_grid_thw"], image_processor.merge_size)
    text = render_chat(messages, add_generation_prompt, image_token_counts=counts, **render_kwargs)
    default_system = render_kwargs.get("default_system", DEFAULT_SYSTEM_PROMPT)
    if render_kwargs.get("template") is not None:  # did the checkpoint's template add a system turn?
        added = bool(messages) and messages[0]["role"] != "system" and text.startswith(f"{IM_START}system")
        default_system = DEFAULT_SYSTEM_PROMPT if added else None
    ids = np.asarray(tokenizer.encode(text), dtype=np.int32)
    is_image = ids == tokenizer.image_pad_id
    if int(is_image.sum()) != sum(counts):
        raise ValueError(
            f"tokenized prompt has {int(is_image.sum())} image pad tokens, expected {sum(counts)} "
            f"(does the message text contain a literal {IMAGE_PAD}?)"
        )
    return {
        "input_ids": ids,
        "pixel_values": vis["pixel_values"],
        "image_grid_thw": vis["image_grid_thw"],
        "mm_token_type_ids": is_image.astype(np.int32),
        "assistant_mask": assistant_token_mask(
            ids, messages, tokenizer, add_generation_prompt, default_system=default_system),
    }


def assistant_token_mask(
    ids: np.ndarray, messages: Sequence[Message], tokenizer: Tokenizer, add_generation_prompt: bool = False,
    default_system: Optional[str] = DEFAULT_SYSTEM_PROMPT,
) -> np.ndarray:
    """[L] int32: 1 on the tokens of each assistant turn's content and its <|im_end|>, else 0.

    Turns are found by their <|im_start|> tokens (specials never merge with text). The role
    header "<|im_start|>assistant\n" is excluded; a token that straddles the header's newline and
    the content (content starting with whitespace) counts as content.
    """
    ids = np.asarray(ids)
    roles = [m["role"] for m in messages]
    if messages and roles[0] != "system" and default_system is not None:
        roles.insert(0, "system")
    starts = np.flatnonzero(ids == tokenizer.im_start_id).tolist()
    n_blocks = len(roles) + int(add_generation_prompt)
    if len(starts) != n_blocks:
        raise ValueError(f"found {len(starts)} <|im_start|> tokens for {n_blocks} chat turns "
                         "(does a message contain a literal <|im_start|>?)")
    mask = np.zeros(ids.shape, np.int32)
    for b, role in enumerate(roles):
        if role != "assistant":
            continue
        p = starts[b]
        end = starts[b + 1] if b + 1 < len(starts) else len(ids)
        ends = np.flatnonzero(ids[p:end] == tokenizer.im_end_id)
        if len(ends) == 0:
            raise ValueError(f"assistant turn {b} has no <|im_end|> token")
        q = p + int(ends[0])
        header = f"{IM_START}{role}\n"
        k = 1
        while k < q - p and len(tokenizer.decode(ids[p:p + k].tolist())) < len(header):
            k += 1
        body = p + k if tokenizer.decode(ids[p:p + k].tolist()) == header else p + k - 1
        mask[body:q + 1] = 1
    return mask
