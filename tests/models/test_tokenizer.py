"""Tokenizers: Qwen2.5 vocabulary vs an independent tiktoken reference, HF tokenizer.json, tiny SentencePiece."""
import base64
import random
import unicodedata

import pytest
from hypothesis import given, settings, strategies as st

from gui_jax.models import tokenizer as T
from gui_jax.models.tokenizer_corpus import corpus_lines

# Written out here independently of the module under test.
QWEN_REGEX = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
              r"""\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN_SPECIALS = {
    151643: "<|endoftext|>", 151644: "<|im_start|>", 151645: "<|im_end|>", 151646: "<|object_ref_start|>",
    151647: "<|object_ref_end|>", 151648: "<|box_start|>", 151649: "<|box_end|>", 151650: "<|quad_start|>",
    151651: "<|quad_end|>", 151652: "<|vision_start|>", 151653: "<|vision_end|>", 151654: "<|vision_pad|>",
    151655: "<|image_pad|>", 151656: "<|video_pad|>", 151657: "<tool_call>", 151658: "</tool_call>",
    151659: "<|fim_prefix|>", 151660: "<|fim_middle|>", 151661: "<|fim_suffix|>", 151662: "<|fim_pad|>",
    151663: "<|repo_name|>", 151664: "<|file_sep|>",
}


@pytest.fixture(scope="module")
def reference():
    """tiktoken Encoding from the raw ranks file + the Qwen regex + the 22 specials."""
    import tiktoken

    ranks = {}
    with open(T.qwen_ranks_path(), "rb") as f:
        for line in f:
            if line.strip():
                tok, rank = line.split()
                ranks[base64.b64decode(tok)] = int(rank)
    return tiktoken.Encoding("ref", pat_str=QWEN_REGEX, mergeable_ranks=ranks,
                             special_tokens={t: i for i, t in QWEN_SPECIALS.items()})


@pytest.fixture(scope="module")
def qwen():
    return T.qwen25_tokenizer()


@pytest.fixture(scope="module")
def qwen_json(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("qwen") / "tokenizer.json")
    return T.export_qwen25_tokenizer_json(path)


@pytest.fixture(scope="module")
def qwen_hf(qwen_json):
    return T.HFTokenizer.from_file(qwen_json)


FRAGMENTS = [
    "hello", "World", " the", "don't", "I'LL", "we've", "it's", "café", "naïve", "e\u0301", "Ångström",
    "你好", "世界", "中文分词", "こんにちは", "カタカナ", "한국어", "Привет", "مرحبا", "नमस्ते", "ελληνικά",
    "😀", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "🧪", " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ", "\u3000",
    "\xa0", "\u2028", "0", "7", "42", "2024-06-01", "3.14159", "1,000,000", "١٢٣", "①", "x=1;", "def f(a, b):",
    "    return a+b", "{\"action\": \"click\", \"coordinate\": [540, 1203]}", "<think>", "</think>",
    "click(start_box='(12,34)')", 'do(action="Tap", element=[1,2,3,4])', "#!/usr/bin/env", "C++", "a->b",
    "...", "!!!", "?!", "--", "__init__", "https://example.com/a?b=c&d=e", "@user", "$9.99", "%", "~/x",
    "<|im_start|>", "<|im_end|>", "<|image_pad|>", "<|vision_start|>", "<tool_call>", "<|endoftext|>", "\\n",
]


def varied_strings(n, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            if r < 0.55:
                parts.append(rng.choice(FRAGMENTS))
            elif r < 0.7:  # random CJK / hangul / emoji code points
                lo, hi = rng.choice([(0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0x1F300, 0x1FAFF), (0x3040, 0x30FF)])
                parts.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 4))))
            elif r < 0.85:  # whitespace runs
                parts.append("".join(rng.choice(" \t\n\r\u3000\xa0") for _ in range(rng.randint(1, 6))))
            elif r < 0.95:  # digit runs
                parts.append(str(rng.randint(0, 10 ** rng.randint(1, 12))))
            else:  # random printable BMP characters
                parts.append("".join(chr(rng.randint(0x20, 0x2FFF)) for _ in range(rng.randint(1, 5))))
        out.append("".join(parts))
    return out


def test_special_token_ids(qwen, qwen_hf):
    for tok in (qwen, qwen_hf):
        assert tok.vocab_size == 151665
        for i, s in QWEN_SPECIALS.items():
            assert tok.token_to_id(s) == i
            assert tok.encode(s) == [i]
            assert tok.decode([i]) == s
        assert (tok.endoftext_id, tok.im_start_id, tok.im_end_id) == (151643, 151644, 151645)
        assert (tok.vision_start_id, tok.vision_end_id, tok.image_pad_id) == (151652, 151653, 151655)
        assert tok.eos_id == tok.pad_id == 151643 and tok.stop_ids == (151645, 151643)
        assert isinstance(tok, T.Tokenizer)
    assert tuple(QWEN_SPECIALS.values()) == T.QWEN25_SPECIAL_TOKENS


def test_known_ids(qwen):
    assert qwen.encode("Hello world!") == [9707, 1879, 0]
    assert qwen.encode("<|im_start|>user\nhi<|im_end|>\n") == [151644, 872, 198, 6023, 151645, 198]
    # skip_special_tokens drops the 14 `special` tokens but keeps <tool_call> (a plain added token in Qwen2.5)
    ids = qwen.encode("<|im_start|>a<tool_call>b<|im_end|>")
    assert qwen.decode(ids, skip_special_tokens=True) == "a<tool_call>b"


def test_qwen25_agrees_with_tiktoken_reference_on_1000_strings(reference, qwen, qwen_hf):
    strings = varied_strings(1200)
    assert len(set(strings)) > 1100
    n_tokens = 0
    for s in strings:
        nfc = unicodedata.normalize("NFC", s)
        ref = reference.encode(nfc, allowed_special="all")
        assert qwen.encode(s) == ref, s
        assert qwen_hf.encode(s) == ref, s  # tokenizer.json built from recovered merges
        assert qwen.decode(ref) == nfc and qwen_hf.decode(ref) == nfc
        n_tokens += len(ref)
    assert n_tokens > 10_000


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_qwen25_agrees_with_reference_hypothesis(reference, qwen, qwen_hf, s):
    nfc = unicodedata.normalize("NFC", s)
    ref = reference.encode(nfc, allowed_special="all")
    assert qwen.encode(s) == ref
    assert qwen_hf.encode(s) == ref
    assert qwen.decode(ref) == nfc


def test_merges_from_ranks_small():
    ranks = {bytes([b]): b for b in range(256)}
    ranks[b"ab"] = 256
    ranks[b"abc"] = 257
    ranks[b"bc"] = 258  # after "abc": abc must come from (ab, c), not (a, bc)
    ranks[b"bcbc"] = 259
    assert T.merges_from_ranks(ranks) == [(b"a", b"b"), (b"ab", b"c"), (b"b", b"c"), (b"bc", b"bc")]
    with pytest.raises(ValueError, match="not the merge"):
        T.merges_from_ranks({b"a": 0, b"b": 1, b"abc": 2})


def _small_tokenizer_json(tmp_path, specials):
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(["[UNK]", "hello", "world", "tap", "the", "button"])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(list(specials))
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    return str(path)


def test_hf_tokenizer_from_file(tmp_path):
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>"]
    path = _small_tokenizer_json(tmp_path, specials)
    tok = T.HFTokenizer.from_file(path)
    assert tok.vocab_size == 12
    assert (tok.endoftext_id, tok.im_start_id, tok.im_end_id) == (6, 7, 8)
    assert (tok.vision_start_id, tok.vision_end_id, tok.image_pad_id) == (9, 10, 11)
    ids = tok.encode("<|im_start|>tap the button<|image_pad|><|image_pad|><|im_end|>")
    assert ids == [7, 3, 4, 5, 11, 11, 8]
    assert tok.decode(ids, skip_special_tokens=True) == "tap the button"
    assert T.HFTokenizer.from_file(str(tmp_path)).encode("hello world") == [1, 2]  # directory works too
    # a checkpoint without a required special token is rejected with the token named
    (tmp_path / "b").mkdir()
    bad = _small_tokenizer_json(tmp_path / "b", specials[:5])
    with pytest.raises(ValueError, match="<\\|image_pad\\|>"):
        T.HFTokenizer.from_file(bad)
    with pytest.raises(FileNotFoundError):
        T.HFTokenizer.from_file(str(tmp_path / "missing.json"))


def test_exported_json_loads_in_transformers(qwen_json, qwen):
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(tokenizer_file=qwen_json)
    for s in varied_strings(50, seed=1):
        assert hf(s, add_special_tokens=False)["input_ids"] == qwen.encode(s)


# ---------------------------------------------------------------------------- tiny SentencePiece
@pytest.fixture(scope="module")
def tiny():
    return T.tiny_tokenizer()


def test_tiny_layout_matches_model_config(tiny):
    from gui_jax.models.qwen2_5_vl import config as C

    assert tiny.vocab_size == T.TINY_VOCAB_SIZE == C.TINY_VOCAB_SIZE == 4096
    assert T.TINY_SPECIAL_IDS == C.TINY_SPECIAL_IDS
    for s, i in T.TINY_SPECIAL_IDS.items():
        assert tiny.token_to_id(s) == i and tiny.encode(s) == [i] and tiny.decode([i]) == s
    for s in T.TINY_EXTRA_SYMBOLS:
        assert len(tiny.encode(s)) == 1
    assert (tiny.image_pad_id, tiny.im_start_id, tiny.im_end_id) == (C.TINY_IMAGE_PAD_ID, C.TINY_IM_START_ID,
                                                                     C.TINY_IM_END_ID)
    assert (tiny.vision_start_id, tiny.vision_end_id, tiny.eos_id) == (C.TINY_VISION_START_ID, C.TINY_VISION_END_ID,
                                                                       C.TINY_ENDOFTEXT_ID)
    assert tiny.token_to_id("<|not a token|>") is None


def test_tiny_digits_split_and_specials_inside_text(tiny):
    ids = tiny.encode("[540, 1203]")
    pieces = [tiny.id_to_token(i) for i in ids]
    digit_pieces = [p for p in pieces if any(c.isdigit() for c in p)]
    assert len(digit_pieces) == 7 and all(sum(c.isdigit() for c in p) == 1 for p in digit_pieces)
    text = "<|im_start|>user\n<|vision_start|><|image_pad|><|image_pad|><|vision_end|>Open Clock<|im_end|>"
    ids = tiny.encode(text)
    assert ids.count(tiny.image_pad_id) == 2 and ids[0] == tiny.im_start_id and ids[-1] == tiny.im_end_id
    assert tiny.decode(ids) == text
    assert tiny.decode(ids, skip_special_tokens=True) == "user\nOpen Clock"


def test_tiny_is_compact_on_agent_text(tiny):
    line = '<action>{"action": "click", "coordinate": [540, 1203]}</action>'
    assert len(tiny.encode(line)) <= 25  # common words/JSON keys are single pieces


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80))
def test_tiny_round_trip_any_text(tiny, s):
    ids = tiny.encode(s)
    assert all(0 <= i < tiny.vocab_size for i in ids)
    assert tiny.decode(ids) == s


def test_tiny_round_trip_edge_cases(tiny):
    for s in ["", " ", "▁", "a▁b ▁▁", "  two  spaces\n\n\t", "<0x41>", "<unk>", "\x00\x7f", "你好😀", " leading"]:
        assert tiny.decode(tiny.encode(s)) == s


def test_corpus_deterministic_and_covers_dialects():
    a = list(corpus_lines(seed=0, n_examples=200))
    assert a == list(corpus_lines(seed=0, n_examples=200))
    assert a != list(corpus_lines(seed=1, n_examples=200))
    joined = "\n".join(a)
    for marker in ("<action>{", "Action: click(start_box=", 'do(action="', '"name": "mobile_use"', "UI tree:"):
        assert marker in joined
    assert list(corpus_lines(0, 1, extra_lines=["sim line", ""]))[-1] == "sim line"


def test_training_twice_gives_identical_bytes():
    small = list(corpus_lines(seed=3, n_examples=300))
    first = T.train_sentencepiece(small, vocab_size=800)
    assert first == T.train_sentencepiece(small, vocab_size=800)
    assert T.SentencePieceTokenizer(first).vocab_size == 800
    assert T.SentencePieceTokenizer(first).image_pad_id == 800 - 22 + 12


def test_shipped_model_is_reproducible():
    """Retraining in this process reproduces the shipped file bit for bit (trained in another process)."""
    model = T.train_sentencepiece(corpus_lines())
    with open(T.TINY_SP_MODEL_PATH, "rb") as f:
        assert f.read() == model, "tiny_sp.model is stale: rerun `python -m gui_jax.models.tokenizer_corpus --train`"
    assert len(model) < 1_000_000
