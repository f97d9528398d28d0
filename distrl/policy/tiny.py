"""The built-in ``tiny`` policy: a real Qwen2-VL architecture, shrunk until it trains on two CPU cores.

``build_tiny(seed)`` makes a ``Qwen2VLForConditionalGeneration`` from a ``Qwen2VLConfig`` written here
and a ``Prompter`` whose tokenizer is trained here, so nothing is downloaded. Both save with
``save_pretrained(folder)`` into an ordinary Hugging Face model folder (``config.json``,
``model.safetensors``, ``tokenizer.json``, ``preprocessor_config.json``, ``chat_template.jinja``) that
``AutoModelForImageTextToText.from_pretrained`` and ``Prompter.from_pretrained`` load like any other
Qwen2-VL checkpoint: the policy has one code path, and ``tiny`` is just its smallest model.

The sizes (``TinySpec``, defaults):

- text decoder: 4 layers, hidden 128, MLP 256, 4 query / 2 key-value heads of 32, M-RoPE sections
  (4, 6, 6), input and output embeddings tied;
- vision tower: 2 blocks, width 64, 2 heads, MLP ratio 2, 14-pixel patches merged 2×2, so each image
  token covers 28×28 pixels of the resized screen;
- screens are resized to at most 224×504 pixels keeping their aspect (a 1080×2400 phone becomes 224×476:
  8×17 = 136 image tokens);
- tokenizer: byte-level BPE, 1024 entries, digits always single tokens (so ``0.7852`` is spelled digit
  by digit), ``_`` kept inside words (``action_type`` is one token), a word never joined to the space or
  quote before it (so ``Cairo`` is the same tokens in the goal and in ``"typed_text": "Cairo"``, and
  typing it is copying), merges learned from a fixed corpus of AutoUI actions and phone-task words;
  plus Qwen2-VL's special tokens.

That is 964 k parameters (vision 241 k, text 723 k; a rank-16 LoRA on all its linear layers adds 170 k).
The weights are drawn from ``torch.manual_seed(seed)`` (the tokenizer does not depend on the seed), so
one seed gives bitwise the same model on every run. Trained whole, it memorises an action in tens of Adam
steps at lr 3e-3 (``tests/test_policy.py``); 1e-2 is too high for it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_model, save_model
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2VLConfig, Qwen2VLForConditionalGeneration
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from distrl.actions import format_action
from distrl.config import TINY_BC, TINY_WEAK
from distrl.policy.prompt import (
    ENDOFTEXT,
    IM_END,
    IM_START,
    IMAGE_PAD,
    VIDEO_PAD,
    VISION_END,
    VISION_PAD,
    VISION_START,
    Prompter,
    prompt_text,
)
from distrl.records import Action, ActionType

__all__ = [
    "TinySpec",
    "build_tiny",
    "build_pretrained",
    "build_tokenizer",
    "export_pretrained",
    "tiny_config",
    "CHAT_TEMPLATE",
    "PRETRAINED_WEIGHTS",
]

PRETRAINED_WEIGHTS = {
    TINY_BC: Path(__file__).with_name("tiny_bc.safetensors"),
    TINY_WEAK: Path(__file__).with_name("tiny_weak.safetensors"),
}
"""The weights of each built-in pretrained ``tiny`` (``[policy] model`` names them), shipped with the
package (float32, 3.9 MB each), and in their metadata the ``max_pixels`` its screens are resized to:

- ``tiny-bc``: behaviour-cloned long on the sim expert's demonstrations, the strong start (95.7% greedy on
  ``general`` train, 48.5% at temperature 1 on test);
- ``tiny-weak``: the same recipe stopped early, a start where failures dominate (the paper's AutoUI
  start is 40.6% on test), for RL to show how far it lifts one
  (``docs/results/pretraining.md`` has both recipes and their figures)."""

SPECIAL_TOKENS = (ENDOFTEXT, IM_START, IM_END, VISION_START, VISION_END, VISION_PAD, IMAGE_PAD, VIDEO_PAD)
"""Qwen2-VL's special tokens, in Qwen's order; ids 0-7 of the tiny vocabulary."""

# Qwen2's split pattern with ``_`` counted as a letter, so grammar keys stay whole words, and with no
# space or punctuation glued to the front of a word: a word is spelt the same wherever it stands.
_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[\p{L}_]+|\p{N}| ?[^\s\p{L}\p{N}_]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""Qwen2-VL's chat format without its default system message: what ``Prompter`` builds, as Jinja."""

_VOCABULARY = """
    open close the a an to for in on of and with from app apps settings clock alarm alarms timer
    stopwatch calculator camera chrome browser google search youtube maps gmail phone contacts
    messages calendar photos gallery files play store music weather news wifi wi-fi bluetooth
    airplane mode display brightness dark theme sound volume battery saver location network internet
    turn on off enable disable set add delete remove create new edit save cancel ok done back home
    go show find look up what is how much many when where who today tomorrow am pm morning evening
    monday tuesday wednesday thursday friday saturday sunday every day week hour hours minute minutes
    second seconds label wake me at compute plus minus times divided by equals result price
    shopping cart buy product products item items first result results page site website amazon
    ebay bestbuy costco walmart target newegg laptop phone headphones shoes shirt book coffee
    keyboard mouse monitor tv camera watch bag chair desk lamp bottle speaker charger cable
    cheap best review reviews rating stars order checkout account sign in
"""
_WORDS = tuple(_VOCABULARY.split())
"""Words for goals and typed text in the tokenizer's training corpus."""


@dataclass(frozen=True, kw_only=True, slots=True)
class TinySpec:
    """Sizes of the tiny model; the defaults are what ``model = "tiny"`` builds."""

    vocab_size: int = 1024
    """Tokenizer entries (bytes, learned merges and special tokens)."""
    hidden_size: int = 128
    """Text decoder width."""
    intermediate_size: int = 256
    """Text decoder MLP width."""
    layers: int = 4
    """Text decoder layers."""
    heads: int = 4
    """Query heads (head size = hidden_size / heads = 32)."""
    kv_heads: int = 2
    """Key-value heads (grouped-query attention)."""
    mrope_section: tuple[int, int, int] = (4, 6, 6)
    """M-RoPE split of half a head between time, height and width; sums to head size / 2."""
    vision_depth: int = 2
    """Vision transformer blocks."""
    vision_width: int = 64
    """Vision transformer width."""
    vision_heads: int = 2
    """Vision attention heads."""
    patch_size: int = 14
    """Vision patch side, pixels."""
    merge_size: int = 2
    """Patches merged per image token, per side."""
    min_pixels: int = 56 * 56
    """Fewest pixels a screen is resized to."""
    max_pixels: int = 224 * 504
    """Most pixels a screen is resized to (224×476 for a 1080×2400 phone)."""


def build_tiny(
    seed: int = 0, spec: TinySpec | None = None
) -> tuple[Qwen2VLForConditionalGeneration, Prompter]:
    """A freshly initialised tiny Qwen2-VL and its prompter; the weights depend only on ``seed``."""
    spec = spec or TinySpec()
    tokenizer = build_tokenizer(spec.vocab_size)
    image_processor = Qwen2VLImageProcessorPil(
        min_pixels=spec.min_pixels,
        max_pixels=spec.max_pixels,
        patch_size=spec.patch_size,
        merge_size=spec.merge_size,
        temporal_patch_size=2,
    )
    config = tiny_config(tokenizer, spec)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2VLForConditionalGeneration(config)
    return model, Prompter(tokenizer, image_processor)


def build_pretrained(name: str) -> tuple[Qwen2VLForConditionalGeneration, Prompter]:
    """A built-in pretrained ``tiny`` (``tiny-bc`` or ``tiny-weak``: ``tiny`` behaviour-cloned on the
    simulated phone's expert by ``distrl pretrain``), the RL starting points that ship with distrl, as
    AutoUI is the paper's. The architecture and tokenizer are built here as for ``tiny``; the weights,
    and the screen size they were trained at (``max_pixels``), come from ``PRETRAINED_WEIGHTS[name]``."""
    path = PRETRAINED_WEIGHTS[name]
    with safe_open(str(path), framework="pt") as weights:
        max_pixels = int((weights.metadata() or {}).get("max_pixels", TinySpec().max_pixels))
    model, prompter = build_tiny(spec=TinySpec(max_pixels=max_pixels))
    load_model(model, str(path), strict=True)
    return model, prompter


def export_pretrained(model: torch.nn.Module, max_pixels: int, path: Path) -> None:
    """Write a pretrained tiny ``model`` (``from_pretrained`` of a ``distrl pretrain`` folder) and the
    ``max_pixels`` its screens were resized to as built-in weights (``PRETRAINED_WEIGHTS[name]``), in
    float32 (``tools/export-tiny-bc``). The screen size matters: the same weights shown screens of another
    size succeed half as often."""
    save_model(model.float(), str(path), metadata={"max_pixels": str(max_pixels)})


def tiny_config(tokenizer: PreTrainedTokenizerFast, spec: TinySpec) -> Qwen2VLConfig:
    """The ``Qwen2VLConfig`` of the tiny model, with the special token ids of ``tokenizer``."""
    ids = {token: _token_id(tokenizer, token) for token in SPECIAL_TOKENS}
    return Qwen2VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": spec.hidden_size,
            "intermediate_size": spec.intermediate_size,
            "num_hidden_layers": spec.layers,
            "num_attention_heads": spec.heads,
            "num_key_value_heads": spec.kv_heads,
            "max_position_embeddings": 4096,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": list(spec.mrope_section),
            },
            "bos_token_id": ids[ENDOFTEXT],
            "eos_token_id": ids[IM_END],
            "pad_token_id": ids[ENDOFTEXT],
        },
        vision_config={
            "depth": spec.vision_depth,
            "embed_dim": spec.vision_width,
            "hidden_size": spec.hidden_size,
            "num_heads": spec.vision_heads,
            "mlp_ratio": 2,
            "patch_size": spec.patch_size,
            "spatial_merge_size": spec.merge_size,
            "temporal_patch_size": 2,
        },
        image_token_id=ids[IMAGE_PAD],
        video_token_id=ids[VIDEO_PAD],
        vision_start_token_id=ids[VISION_START],
        vision_end_token_id=ids[VISION_END],
        tie_word_embeddings=True,
    )


def _token_id(tokenizer: PreTrainedTokenizerFast, token: str) -> int:
    token_id = tokenizer.convert_tokens_to_ids(token)
    assert isinstance(token_id, int), token  # one token in, one id out
    return token_id


def build_tokenizer(vocab_size: int = 1024) -> PreTrainedTokenizerFast:
    """The tiny byte-level BPE tokenizer, trained on ``_corpus()``; the same on every run."""
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_corpus(), trainer)
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]  # unannotated __init__
        tokenizer_object=bpe,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        additional_special_tokens=list(SPECIAL_TOKENS[1:]),
        padding_side="left",
        model_max_length=4096,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def _corpus() -> Iterator[str]:
    """Text like what the tiny model reads and writes: AutoUI prompts and actions (fixed RNG)."""
    rng = random.Random(0)
    for _ in range(2000):
        goal = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 9)))
        goal = goal[0].upper() + goal[1:]
        history = tuple(_random_action(rng) for _ in range(rng.randint(0, 2)))
        yield prompt_text(goal, history, len(history))
        yield format_action(_random_action(rng))


def _random_action(rng: random.Random) -> Action:
    kind = rng.choice(list(ActionType))
    if kind is ActionType.DUAL_POINT:
        touch = (round(rng.random(), 4), round(rng.random(), 4))
        lift = touch if rng.random() < 0.8 else (round(rng.random(), 4), round(rng.random(), 4))
        return Action(type=kind, touch=touch, lift=lift)
    if kind is ActionType.TYPE:
        return Action(type=kind, text=" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3))))
    return Action(type=kind)
