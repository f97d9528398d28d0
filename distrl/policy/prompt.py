"""What the policy reads and writes, as token ids: the prompt for one observation, and an action's tokens.

The prompt is AutoUI's text (DigiRL and DistRL, ``docs/reference/actions.md``) in Qwen2-VL's chat format, one
user turn holding the screen and then the text, with no system message::

    <|im_start|>user
    <|vision_start|><|image_pad|>×N<|vision_end|>Previous Actions: A1; A2 Goal: GOAL<|im_end|>
    <|im_start|>assistant

and the answer is the action text followed by ``<|im_end|>``. ``N`` is the number of image tokens the
screen becomes (patches / merge²). ``A1; A2`` are the last ``history`` actions, oldest first, each as its
AutoUI decision body (``"action_type": "DUAL_POINT", "touch_point": "[0.5000, 0.2500]", ...``; an
invalid output shows as ``"action_type": "INVALID"``); with no history the text reads
``Previous Actions: Goal: GOAL``.

The template is written out here, not taken from a model's chat template, so that every Qwen2-VL-family
model (and ``tiny``, whose saved tokenizer carries the same template as Jinja) sees the same prompt, and
so that text (goal, typed text) is encoded with special tokens split: a goal cannot inject
``<|im_end|>``. Screens go through the model's ``Qwen2VLImageProcessor`` settings, always on the Pillow
backend, so the pixels are the same with or without torchvision installed. ``AutoProcessor`` is not used:
in transformers 5 a ``Qwen2VLProcessor`` cannot be built without torchvision (its video processor needs
it), and distrl does not need torchvision otherwise.
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import PIL.Image
import torch
from transformers import AutoTokenizer, PreTrainedTokenizerBase
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil, smart_resize

from distrl.actions import decision_spans, format_action, parse_action
from distrl.errors import PolicyError
from distrl.records import Action, InvalidAction, Observation

__all__ = ["PolicyInput", "Prompter", "Encoded", "prompt_text"]

ENDOFTEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
VISION_START = "<|vision_start|>"
VISION_END = "<|vision_end|>"
VISION_PAD = "<|vision_pad|>"
IMAGE_PAD = "<|image_pad|>"
VIDEO_PAD = "<|video_pad|>"

_DECISION = "Action Decision: "


@dataclass(frozen=True, kw_only=True, slots=True)
class PolicyInput:
    """One question to the policy: the task's goal, the screen now, and the actions taken so far."""

    goal: str
    """The task's instruction (``Task.goal``)."""
    observation: Observation
    """The current screen."""
    history: tuple[Action | InvalidAction, ...] = ()
    """This episode's earlier actions, oldest first; the prompt shows the last ``history`` of them."""
    temperature: float | None = None
    """The temperature to answer at (0: greedy); None for the policy's ``settings.temperature``. One
    batch may mix temperatures (a greedy episode beside sampled ones)."""
    sampling_key: int | None = None
    """What this answer's random draws are made from (``distrl.policy.sampling``): the same prompt and
    key give the same answer in any batch, under any policy's logits the same noise. Local runs key each
    step by its seed, episode and step; None draws from the batch's generator."""

    def __post_init__(self) -> None:
        if self.temperature is not None and not 0 <= self.temperature < math.inf:
            raise ValueError(f"a temperature is a finite number ≥ 0 (0: greedy), got {self.temperature}")
        if self.sampling_key is not None and not 0 <= self.sampling_key < 2**63:
            raise ValueError(f"a sampling key is an integer in [0, 2**63), got {self.sampling_key}")


def prompt_text(goal: str, history: Sequence[Action | InvalidAction], shown: int) -> str:
    """AutoUI's prompt text: ``Previous Actions: A1; A2 Goal: GOAL`` with the last ``shown`` actions."""
    recent = history[len(history) - shown :] if shown > 0 else ()
    actions = "; ".join(_history_entry(action) for action in recent)
    return f"Previous Actions: {actions} Goal: {goal}" if actions else f"Previous Actions: Goal: {goal}"


def _history_entry(action: Action | InvalidAction) -> str:
    if isinstance(action, InvalidAction):
        return '"action_type": "INVALID"'
    return format_action(action).removeprefix(_DECISION)


@dataclass(frozen=True, slots=True)
class Encoded:
    """One prompt, ready to batch: its token ids and its screen's patches."""

    ids: list[int]
    """Prompt token ids, image tokens included, no padding."""
    pixel_values: torch.Tensor
    """The screen's patches, ``(patches, channels·temporal·patch²)`` float32."""
    grid_thw: torch.Tensor
    """Patch grid ``(3,)``: time, height, width (in patches)."""


class Prompter:
    """Builds Qwen2-VL-family prompts from ``PolicyInput`` and turns action text into token ids and back.

    Holds the model's tokenizer and image processor; ``from_pretrained(folder)`` reads both from a model
    folder, ``save_pretrained(folder)`` writes them there.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, image_processor: Qwen2VLImageProcessorPil) -> None:
        self.tokenizer = tokenizer
        self.image_processor = image_processor
        self.merge_size = int(image_processor.merge_size)
        ids: dict[str, int] = {}
        for token in (IM_START, IM_END, VISION_START, VISION_END, IMAGE_PAD):
            token_id = tokenizer.convert_tokens_to_ids(token)
            if not isinstance(token_id, int) or token_id == tokenizer.unk_token_id:
                raise PolicyError(
                    f"the tokenizer has no {token} token, so it is not a Qwen2-VL-family tokenizer",
                    phase="load",
                )
            ids[token] = token_id
        self.image_token_id = ids[IMAGE_PAD]
        self.end_id = ids[IM_END]
        """The token that ends an answer (``<|im_end|>``)."""
        pad = tokenizer.pad_token_id
        self.pad_id: int = pad if isinstance(pad, int) else ids[IM_END]
        self._head = [ids[IM_START], *self._text_ids("user\n"), ids[VISION_START]]
        self._after_image = [ids[VISION_END]]
        self._tail = [self.end_id, *self._text_ids("\n"), ids[IM_START], *self._text_ids("assistant\n")]
        self._screens: dict[bytes, tuple[torch.Tensor, torch.Tensor]] | None = None
        """Screens already processed, by their encoded bytes, while ``remembering_screens``."""

    @classmethod
    def from_pretrained(cls, folder: str | Path) -> Prompter:
        """The tokenizer and image processor of the model folder ``folder``."""
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        image_processor = Qwen2VLImageProcessorPil.from_pretrained(str(folder))
        return cls(tokenizer, image_processor)

    def limit_pixels(self, max_pixels: int) -> None:
        """Resize screens to at most ``max_pixels`` pixels (at least one image token's worth)."""
        factor = int(self.image_processor.patch_size) * self.merge_size
        size = self.image_processor.size
        size.longest_edge = max(max_pixels, factor * factor, int(size["shortest_edge"]))  # type: ignore[attr-defined]  # a SizeDict, typed as dict

    def save_pretrained(self, folder: str | Path) -> None:
        """Write the tokenizer and the image processor into ``folder`` (Hugging Face layout)."""
        self.tokenizer.save_pretrained(str(folder))
        self.image_processor.save_pretrained(str(folder))

    @contextlib.contextmanager
    def remembering_screens(self) -> Iterator[None]:
        """Within this block, each distinct screen is decoded and processed once, however often it is
        encoded (the learner encodes every step twice per update: to score it, then to train on it).
        The patches are kept until the block ends: about 24 MB per screen at a 1,003,520-pixel cap."""
        self._screens = {}
        try:
            yield
        finally:
            self._screens = None

    def encode(self, inputs: Sequence[PolicyInput], history: int) -> list[Encoded]:
        """The prompts for ``inputs``, each showing its last ``history`` actions."""
        if not inputs:
            return []
        screens = {} if self._screens is None else self._screens
        new = {
            i.observation.screenshot: i.observation for i in inputs if i.observation.screenshot not in screens
        }
        if new:
            screens.update(zip(new, self._process(list(new.values())), strict=True))
        encoded = []
        for item in inputs:
            pixel_values, grid = screens[item.observation.screenshot]
            text = self._text_ids(prompt_text(item.goal, item.history, history))
            image = [self.image_token_id] * (int(grid.prod()) // self.merge_size**2)
            ids = [*self._head, *image, *self._after_image, *text, *self._tail]
            encoded.append(Encoded(ids, pixel_values, grid))
        return encoded

    def action_ids(self, text: str) -> list[int]:
        """The tokens of answer ``text``: its own encoding (special tokens split) and ``<|im_end|>``."""
        return [*self._text_ids(text), self.end_id]

    def decision_mask(self, text: str) -> list[bool]:
        """For each of ``action_ids(text)``: whether the token is part of the decision (it overlaps one of
        ``decision_spans(text)``: the action type, the points, the typed text) rather than the format
        every answer shares (the end token included). An answer that is not an action is all decision:
        nothing in it is the shared format."""
        if isinstance(parse_action(text), InvalidAction):
            return [True] * len(self.action_ids(text))
        spans = decision_spans(text)
        encoding = self.tokenizer(
            text, add_special_tokens=False, split_special_tokens=True, return_offsets_mapping=True
        )
        marks = [
            any(start < span_end and span_start < end for span_start, span_end in spans)
            for start, end in encoding["offset_mapping"]
        ]
        return [*marks, False]

    def forbidden_ids(self, vocab_size: int) -> list[int]:
        """Token ids an answer may not contain: every special token but ``<|im_end|>`` (image and video
        placeholders, chat markers, ``<|endoftext|>``) and the model's padding rows past the tokenizer's
        vocabulary. The policy never samples them and scores them as impossible."""
        special = {
            token_id for token_id, token in self.tokenizer.added_tokens_decoder.items() if token.special
        }
        special.update(self.tokenizer.all_special_ids)
        special.discard(self.end_id)
        return sorted(i for i in special | set(range(len(self.tokenizer), vocab_size)) if i < vocab_size)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of generated ``ids``, special tokens dropped."""
        text = self.tokenizer.decode(list(ids), skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return str(text)

    def collate(self, sequences: Sequence[Sequence[int]], encoded: Sequence[Encoded]) -> dict[str, Any]:
        """Model inputs for ``sequences`` (each a prompt of ``encoded``, maybe followed by answer tokens),
        left-padded to one length: ``input_ids``, ``attention_mask``, ``mm_token_type_ids``
        ``(batch, length)``, ``pixel_values`` ``(all patches, dim)`` and ``image_grid_thw`` ``(batch, 3)``.
        """
        length = max(len(ids) for ids in sequences)
        input_ids = torch.full((len(sequences), length), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(sequences), length), dtype=torch.long)
        for row, ids in enumerate(sequences):
            if ids:
                input_ids[row, length - len(ids) :] = torch.tensor(ids, dtype=torch.long)
                attention_mask[row, length - len(ids) :] = 1
        return {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "mm_token_type_ids": (input_ids == self.image_token_id).int() * attention_mask.int(),
            "pixel_values": torch.cat([item.pixel_values for item in encoded]),
            "image_grid_thw": torch.stack([item.grid_thw for item in encoded]),
        }

    def _process(self, observations: Sequence[Observation]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Each screen's patches and patch grid, the screens processed side by side in up to
        ``torch.get_num_threads()`` threads (decoding, resizing and normalising release the GIL), each
        exactly as the image processor alone makes it. About 85 ms a screen on one core at a 1,003,520-pixel
        cap: on the learner's critical path, once per distinct screen of an update."""

        def one(observation: Observation) -> tuple[torch.Tensor, torch.Tensor]:
            processed = self.image_processor(images=[self._image(observation)], return_tensors="pt")
            return processed["pixel_values"], processed["image_grid_thw"][0]

        threads = min(len(observations), torch.get_num_threads())
        if threads <= 1:
            return [one(observation) for observation in observations]
        with ThreadPoolExecutor(threads, thread_name_prefix="distrl-screens") as pool:
            return list(pool.map(one, observations))

    def _image(self, observation: Observation) -> PIL.Image.Image:
        """The screenshot as RGB. A JPEG is decoded at the smallest DCT scale (1/2, 1/4, 1/8) that still
        covers the size the image processor resizes it to: several times faster, and the image processor's
        bicubic resize to the same final size follows as usual."""
        try:
            image = PIL.Image.open(io.BytesIO(observation.screenshot))
            if image.format == "JPEG":
                size = self.image_processor.size
                factor = int(self.image_processor.patch_size) * self.merge_size
                height, width = smart_resize(
                    image.height, image.width, factor, size["shortest_edge"], size["longest_edge"]
                )
                image.draft("RGB", (width, height))
            return image.convert("RGB")
        except (OSError, ValueError, PIL.Image.DecompressionBombError) as exc:
            raise PolicyError(
                f"the screenshot cannot be decoded as an image ({exc})", phase="prompt"
            ) from exc

    def _text_ids(self, text: str) -> list[int]:
        encoding = self.tokenizer(text, add_special_tokens=False, split_special_tokens=True)
        return list(encoding["input_ids"])
