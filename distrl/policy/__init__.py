"""The policy: a Hugging Face vision-language model with a peft LoRA adapter, speaking AutoUI actions.

- ``Policy`` (``model``): load (``tiny`` or a local Qwen2-VL-family folder), sample answers with their
  log-probs, teacher-forced log-probs and entropy for the learner.
- ``Adapter`` (``adapter``, a policy's ``adapter``): the LoRA adapter on disk and in memory, served
  folded into the base weights on workers.
- ``resolve_device``, ``resolve_dtype`` (``loading``): where and in what a model loads; the base model
  and its adapter.
- ``Prompter`` and ``PolicyInput`` (``prompt``): the prompt template and the token ids of answers.
- ``build_tiny`` (``tiny``): the built-in tiny Qwen2-VL, made from a config and a tokenizer trained here.

Importing this package imports torch and transformers; the light layers never do.
"""

from distrl.policy.adapter import Adapter
from distrl.policy.loading import QWEN_VL_FAMILY, resolve_device, resolve_dtype
from distrl.policy.model import Policy, Sample, Scores, TokenScores
from distrl.policy.prompt import PolicyInput, Prompter, prompt_text
from distrl.policy.tiny import CHAT_TEMPLATE, TinySpec, build_tiny, build_tokenizer, tiny_config

__all__ = [
    "Policy",
    "Adapter",
    "Sample",
    "Scores",
    "TokenScores",
    "PolicyInput",
    "Prompter",
    "prompt_text",
    "build_tiny",
    "TinySpec",
    "build_tokenizer",
    "tiny_config",
    "CHAT_TEMPLATE",
    "QWEN_VL_FAMILY",
    "resolve_device",
    "resolve_dtype",
]
