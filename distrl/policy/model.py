"""``Policy``: a Qwen2-VL-family model with a LoRA adapter that samples actions and scores them.

``Policy.load(settings)`` builds ``tiny`` or loads a local model folder (``from_pretrained``), puts it on
the device in its dtype, and attaches a LoRA adapter: a fresh one from the settings, or the PEFT adapter
folder ``settings.adapter``. Only the adapter trains (its weights stay float32 under a bf16 model).

What the numbers are (x is the prompt of ``distrl.policy.prompt``, z_t the current weights' logits):

- π(· | x, y_<t) = softmax(z_t) at temperature 1 over the vocabulary less ``Prompter.forbidden_ids``
  (special tokens other than ``<|im_end|>``, which the sampler may never pick either).
- ``logprobs(batch, texts)`` = Σ_t log π(y_t | x, y_<t), teacher-forced, for y =
  ``Prompter.action_ids(text)``: the tokenizer's own encoding of the text, then ``<|im_end|>``. Its
  entropy is the mean over y's tokens of H(π(· | x, y_<t)) in nats (a mean, so that it does not grow
  with the answer's length).
- ``Sample.logprob`` is log μ(text | x), the behaviour log-prob: the same sum under the weights that
  sampled it and the distribution they sampled from, softmax(z_t / T) at ``settings.temperature`` T
  (greedy decoding, T = 0, is deterministic: log μ = 0). The learner's ρ = π/μ then compares its
  temperature-1 policy with what the worker really did: exactly 1 on-policy at T = 1, and right for a
  cooler collection too. When the sampler ended by itself with exactly the tokens y (the usual case) the
  sum comes from the generation's own logits; otherwise (it reached ``max_new_tokens``, or spelled the
  text with other tokens than the tokenizer would) y is scored teacher-forced afterwards.
- ``Sample.sampled_logprob`` is Σ log μ of the tokens actually sampled (``Sample.token_ids``), from the
  generation's logits; ``score_tokens(..., temperature=T)`` recomputes it teacher-forced.
- ``token_scores`` gives what the learner's actor loss reads token by token: each answer token's
  log π, which of them are the decision (``Prompter.decision_mask``), the entropy, and with a
  ``reference`` (``reference_log_probs``: the same answers under the starting adapter, or none) the
  answer's KL(π ‖ π_ref): at each of its tokens Σ_v π(v)·(log π(v) − log π_ref(v)), summed over the
  answer as its log-prob is (the sequence-level KL along the answer).

Batches are left-padded, and padding changes no number beyond float rounding (tested to 1e-4 in float32).

Over 450 lines, one module: sampling, teacher-forced scoring and the learner's token scores share the
batching and the conventions above, which must not drift apart; loading is ``loading.py``, the adapter's
state and its merged serving ``adapter.py``, the decoding engine ``engine.py``, how each row draws (its
temperature, its sampling key) ``sampling.py``, prompts ``prompt.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal, NamedTuple, TypeVar

import peft
import torch
from transformers import GenerationConfig

from distrl.actions import parse_action
from distrl.config import PolicySettings, checked_section, seed_problem
from distrl.errors import PolicyError
from distrl.policy.adapter import Adapter
from distrl.policy.engine import Engine, make_engine
from distrl.policy.loading import attach_adapter, load_base, resolve_device, resolve_dtype
from distrl.policy.prompt import Encoded, PolicyInput, Prompter
from distrl.policy.sampling import sampling_plan
from distrl.records import Action, InvalidAction, Observation, Step

__all__ = ["Policy", "Sample", "Scores", "TokenScores"]


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Sample:
    """One sampled answer: its text, what it means, and its log-probs (see the module docstring)."""

    text: str
    """The answer as text (the sampled tokens before ``<|im_end|>``, decoded)."""
    action: Action | InvalidAction
    """``parse_action(text)``: garbage is an ``InvalidAction``, never an exception."""
    logprob: float
    """log μ(text | prompt), the behaviour log-prob: under the weights that sampled it, at the sampling
    temperature (``logprobs(..., temperature=T)`` of it; 0 for greedy decoding)."""
    tokens: int
    """Tokens ``logprob`` sums over: the tokenizer's encoding of ``text`` plus the end token."""
    truncated: bool
    """The sampler reached ``max_new_tokens`` before the end token."""
    canonical: bool
    """The sampled tokens were exactly the scored ones (then ``logprob == sampled_logprob``)."""
    token_ids: tuple[int, ...]
    """The tokens sampled, up to and with the end token."""
    sampled_logprob: float
    """Σ log μ of ``token_ids`` at the sampling temperature, from the generation's logits."""

    def step(self, index: int, observation: Observation, version: int, duration_s: float) -> Step:
        """This answer as the ``index``-th step of a trajectory: what was seen, said, meant and by which
        weights, with ``logprob`` as the behaviour log-prob."""
        return Step(
            index=index,
            observation=observation,
            output=self.text,
            action=self.action,
            policy_version=version,
            behaviour_logprob=self.logprob,
            duration_s=duration_s,
        )


class Scores(NamedTuple):
    """What ``Policy.score`` returns for a batch of (prompt, answer) pairs; see ``Policy.score``."""

    logprob: torch.Tensor
    """log π(answer | prompt), ``(batch,)``."""
    entropy: torch.Tensor
    """Mean per-token entropy over the answer, ``(batch,)``."""
    state: torch.Tensor | None
    """Last hidden state at the last prompt token, ``(batch, hidden)``."""
    answer_state: torch.Tensor | None
    """Last hidden state at the answer's last token, ``(batch, hidden)``."""


class TokenScores(NamedTuple):
    """What ``Policy.token_scores`` returns: the answers token by token, right-aligned in a window of the
    longest answer's length (a shorter answer's first positions are outside it)."""

    logprob: torch.Tensor
    """log π of each answer token, ``(batch, window)``; 0 outside the answer."""
    answer: torch.Tensor
    """``(batch, window)`` booleans: the position holds an answer token."""
    decision: torch.Tensor
    """``(batch, window)`` booleans: the token is part of the decision (``Prompter.decision_mask``)."""
    entropy: torch.Tensor
    """Mean per-token entropy over the answer, ``(batch,)``."""
    log_probs: torch.Tensor
    """log π over the vocabulary at each position of the window, ``(batch, window, vocab)``,
    differentiable: what a KL to a reference reads (``distrl.learner.losses.kl_to_reference``)."""


class Policy:
    """A vision-language model with a LoRA adapter, answering ``PolicyInput`` with AutoUI actions.

    Not thread-safe: one call at a time (a worker's batcher and the learner each own one).
    """

    def __init__(self, model: peft.PeftModel, prompter: Prompter, settings: PolicySettings) -> None:
        self.model = model
        """The PEFT-wrapped model; only the adapter's parameters require gradients."""
        self.prompter = prompter
        self.settings = settings
        """Decoding (temperature, ``max_new_tokens``) and prompt (``history``) settings in use."""
        self.device: torch.device = next(model.parameters()).device
        vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self._forbidden_ids = prompter.forbidden_ids(vocab_size)
        self._forbidden = torch.zeros(vocab_size, dtype=torch.bool, device=self.device)
        self._forbidden[self._forbidden_ids] = True
        self.adapter = Adapter(model, settings.model)
        """The LoRA adapter's weights, folder and serving (``distrl.policy.adapter``)."""
        self.engine: Engine = make_engine(settings.engine)
        """What decodes ``sample``'s batches (``distrl.policy.engine``)."""

    @classmethod
    def load(
        cls,
        settings: PolicySettings,
        *,
        device: Literal["auto", "cpu", "cuda"] | str = "auto",
        dtype: Literal["auto", "float32", "bfloat16", "float16"] | None = None,
        seed: int = 0,
    ) -> Policy:
        """The policy ``settings`` describe, on ``device`` (``auto``: CUDA if present) in ``dtype``
        (default ``settings.dtype``; ``auto`` is bfloat16 where the device supports it, else float32).

        ``seed`` draws the tiny model's weights and a fresh adapter's initial weights. Raises
        ``PolicyError`` with one sentence when the model or the adapter cannot be loaded, ``ConfigError``
        naming the setting where ``settings`` are out of their bounds (as the inventory checks them),
        ``TypeError`` where they are no settings, and ``ValueError`` for a seed out of 0 to ``MOST_SEED``.
        """
        checked_section(settings, "policy")  # as the inventory checks them (built in Python, say)
        if problem := seed_problem(seed):
            raise ValueError(problem)
        torch_device = resolve_device(device)
        torch_dtype = resolve_dtype(dtype or settings.dtype, torch_device)
        with _seeded(seed, torch_device):
            base, prompter = load_base(settings.model, torch_dtype, seed)
            if settings.max_image_pixels:
                prompter.limit_pixels(settings.max_image_pixels)
            base.to(device=torch_device, dtype=torch_dtype)  # type: ignore[call-arg]  # decorated, untyped
            # The policy owns its decoding: no checkpoint's sampling defaults (top-k, penalties) apply.
            base.generation_config = GenerationConfig(  # type: ignore[no-untyped-call]  # unannotated
                eos_token_id=prompter.end_id, pad_token_id=prompter.pad_id
            )
            model = attach_adapter(base, settings)
        model.eval()
        return cls(model, prompter, settings)

    # -- acting ----------------------------------------------------------------------------------------

    def sample(self, batch: Sequence[PolicyInput], *, seed: int | None = None) -> list[Sample]:
        """One answer per input, generated as one left-padded batch (eval mode, no gradients), each at its
        input's temperature (``PolicyInput.temperature``, else ``settings.temperature``).

        ``seed`` makes sampling reproducible; the global RNG is left as it was.
        """
        if not batch:
            return []
        encoded = self.prompter.encode(batch, self.settings.history)
        temperatures = [self.temperature_for(item.temperature) for item in batch]
        # the engine may decode more rows than asked (copies of the last), whose answers are dropped
        extra = self.engine.rows(len(batch)) - len(batch)
        rows = _padded(encoded, extra)
        inputs = self._on_device(self.prompter.collate([item.ids for item in rows], rows))
        keys = [item.sampling_key for item in batch]
        sampling, processors = sampling_plan(_padded(temperatures, extra), _padded(keys, extra), self.device)
        config = GenerationConfig(  # type: ignore[no-untyped-call]  # unannotated __init__
            **sampling,
            max_new_tokens=self.settings.max_new_tokens,
            num_beams=1,
            repetition_penalty=1.0,
            suppress_tokens=self._forbidden_ids,
            eos_token_id=self.prompter.end_id,
            pad_token_id=self.prompter.pad_id,
            output_logits=True,
            return_dict_in_generate=True,
        )
        with self._inference(), _seeded(seed, self.device):
            generated, step_logits = self.engine.generate(self.model, inputs, config, processors)
            generated = generated[: len(batch)]
            # log μ of each sampled token at its row's temperature, from the raw logits, one step at a time
            token_logprobs = torch.zeros(generated.shape, dtype=torch.float32)
            for temperature in set(temperatures):
                chosen = [row for row, t in enumerate(temperatures) if t == temperature]
                steps = [
                    self._log_softmax(logits[chosen], temperature)
                    .gather(-1, generated[chosen, t, None])
                    .squeeze(-1)
                    for t, logits in enumerate(step_logits)
                ]
                token_logprobs[chosen] = torch.stack(steps, dim=1).cpu()
        return self._samples(encoded, generated.cpu().tolist(), token_logprobs, temperatures)

    def temperature_for(self, temperature: float | None) -> float:
        """The temperature an answer asked for at ``temperature`` is decoded at (None: the settings')."""
        return self.settings.temperature if temperature is None else temperature

    def _samples(
        self,
        encoded: list[Encoded],
        generated: list[list[int]],
        token_logprobs: torch.Tensor,
        temperatures: Sequence[float],
    ) -> list[Sample]:
        samples = []
        for row, ids in enumerate(generated):
            ended = self.prompter.end_id in ids
            length = ids.index(self.prompter.end_id) + 1 if ended else len(ids)
            text = self.prompter.decode(ids[: length - 1] if ended else ids)
            tokens = self.prompter.action_ids(text)
            sampled_logprob = float(token_logprobs[row, :length].sum())
            samples.append(
                Sample(
                    text=text,
                    action=parse_action(text),
                    logprob=sampled_logprob,
                    tokens=len(tokens),
                    truncated=not ended,
                    canonical=ended and tokens == ids[:length],
                    token_ids=tuple(ids[:length]),
                    sampled_logprob=sampled_logprob,
                )
            )
        # greedy decoding chose whatever text it wrote with certainty (log μ = 0); a sampled one is scored
        for temperature in set(temperatures) - {0.0}:
            rescore = [
                row
                for row, sample in enumerate(samples)
                if not sample.canonical and temperatures[row] == temperature
            ]
            if not rescore:
                continue
            with self._inference():
                values, _ = self._score(
                    [encoded[row] for row in rescore],
                    [self.prompter.action_ids(samples[row].text) for row in rescore],
                    temperature,
                )
            for row, value in zip(rescore, values.tolist(), strict=True):
                samples[row] = dataclasses.replace(samples[row], logprob=value)
        return samples

    # -- learning ----------------------------------------------------------------------------------------

    def logprobs(
        self, batch: Sequence[PolicyInput], actions_text: Sequence[str], *, temperature: float = 1.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """log π(text | prompt) and mean per-token entropy for each input, teacher-forced, at
        ``temperature`` (1: the policy the learner trains; 0: greedy decoding, whose log-prob is 0).

        Returns two float32 tensors of shape ``(batch,)`` on the policy's device, differentiable with
        respect to the adapter when gradients are enabled. Runs in the model's current mode
        (``train()`` turns LoRA dropout on).
        """
        if len(batch) != len(actions_text):
            raise ValueError(f"{len(batch)} inputs but {len(actions_text)} actions")
        answers = [self.prompter.action_ids(text) for text in actions_text]
        return self.score_tokens(batch, answers, temperature=temperature)

    def score_tokens(
        self, batch: Sequence[PolicyInput], answers: Sequence[Sequence[int]], *, temperature: float = 1.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``logprobs`` for answers given as token ids (non-empty; normally ending with the end token).
        A forbidden token scores -inf."""
        if len(batch) != len(answers):
            raise ValueError(f"{len(batch)} inputs but {len(answers)} answers")
        if not batch:
            empty = torch.zeros(0, device=self.device)
            return empty, empty
        if not all(answers):
            raise ValueError("an answer has no tokens")
        return self._score(self.prompter.encode(batch, self.settings.history), answers, temperature)

    def token_scores(self, batch: Sequence[PolicyInput], actions_text: Sequence[str]) -> TokenScores:
        """The answers' per-token log π, decision mask, entropy and distributions, teacher-forced at
        temperature 1 (as ``logprobs``, differentiable the same way)."""
        if len(batch) != len(actions_text):
            raise ValueError(f"{len(batch)} inputs but {len(actions_text)} actions")
        encoded = self.prompter.encode(batch, self.settings.history)
        answers = [self.prompter.action_ids(text) for text in actions_text]
        window = self._window(encoded, answers, 1.0, hidden=False)
        decision = torch.zeros_like(window.answer)
        for row, text in enumerate(actions_text):
            marks = self.prompter.decision_mask(text)
            decision[row, window.answer.shape[1] - len(marks) :] = torch.tensor(marks, device=self.device)
        return TokenScores(
            torch.where(window.answer, window.token_logprobs, 0.0),
            window.answer,
            decision,
            window.entropy,
            window.log_probs,
        )

    def reference_log_probs(
        self,
        batch: Sequence[PolicyInput],
        actions_text: Sequence[str],
        adapter: Mapping[str, torch.Tensor] | None,
    ) -> torch.Tensor:
        """log π_ref(· | x, y_<t) over the vocabulary at each position of the answers' window,
        ``(batch, window, vocab)``, without gradients, in evaluation mode: π_ref is this model with the
        adapter weights ``adapter`` (``Adapter.state()`` names), or with its adapter disabled for None.
        The adapter is as it was afterwards."""
        encoded = self.prompter.encode(batch, self.settings.history)
        answers = [self.prompter.action_ids(text) for text in actions_text]
        with self._inference():
            if adapter is None:
                with self.adapter.disabled():
                    return self._window(encoded, answers, 1.0, hidden=False).log_probs
            own = self.adapter.state()
            self.adapter.load_state(adapter)
            try:
                return self._window(encoded, answers, 1.0, hidden=False).log_probs
            finally:
                self.adapter.load_state(own)

    def score(self, batch: Sequence[PolicyInput], actions_text: Sequence[str]) -> Scores:
        """``logprobs`` plus the model's last hidden states, for critics that read the policy's features.

        ``state`` is the last layer's output at the last prompt token (what the model knows of the screen,
        the goal and the history before it answers), ``answer_state`` at the answer's last token (the
        end token: the state and the action together). Both are float32 ``(batch, hidden)`` and carry
        gradients like the log-probs do; detach them to train only a head on top.
        """
        if len(batch) != len(actions_text):
            raise ValueError(f"{len(batch)} inputs but {len(actions_text)} actions")
        if not batch:
            empty = torch.zeros(0, device=self.device)
            return Scores(empty, empty, empty.reshape(0, 0), empty.reshape(0, 0))
        encoded = self.prompter.encode(batch, self.settings.history)
        return self._forward(encoded, [self.prompter.action_ids(text) for text in actions_text], hidden=True)

    def _score(
        self, encoded: Sequence[Encoded], answers: Sequence[Sequence[int]], temperature: float = 1.0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Sum of log-probs (at ``temperature``) and mean entropy of ``answers`` after their prompts,
        shape ``(batch,)``."""
        scores = self._forward(encoded, answers, hidden=False, temperature=temperature)
        return scores.logprob, scores.entropy

    def _forward(
        self,
        encoded: Sequence[Encoded],
        answers: Sequence[Sequence[int]],
        *,
        hidden: bool,
        temperature: float = 1.0,
    ) -> Scores:
        window = self._window(encoded, answers, temperature, hidden=hidden)
        logprob = torch.where(window.answer, window.token_logprobs, 0.0).sum(dim=-1)
        if window.hidden is None:
            return Scores(logprob, window.entropy, None, None)
        last = window.hidden.float()  # (batch, length, hidden)
        rows = torch.arange(len(answers), device=self.device)
        state = last[rows, last.shape[1] - 1 - window.lengths]
        return Scores(logprob, window.entropy, state, last[:, -1])

    def _window(
        self,
        encoded: Sequence[Encoded],
        answers: Sequence[Sequence[int]],
        temperature: float,
        *,
        hidden: bool,
    ) -> _Window:
        """One teacher-forced pass over prompts + ``answers``, kept for the answers' window only."""
        window = max(len(ids) for ids in answers)
        sequences = [[*item.ids, *ids] for item, ids in zip(encoded, answers, strict=True)]
        inputs = self._on_device(self.prompter.collate(sequences, encoded))
        # Sequences are left-padded, so every answer sits in the last ``window`` positions; logits at
        # position p predict the token at p + 1, hence one more logit kept and the last one dropped.
        output = self.model(**inputs, logits_to_keep=window + 1, use_cache=False, output_hidden_states=hidden)
        logits = output.logits[:, :-1]
        log_probs = self._log_softmax(logits)  # (batch, window, vocab), at temperature 1
        targets = inputs["input_ids"][:, -window:]
        lengths = torch.tensor([len(ids) for ids in answers], device=self.device)
        answer = torch.arange(window, device=self.device)[None, :] >= (window - lengths)[:, None]
        tempered = log_probs if temperature == 1.0 else self._log_softmax(logits, temperature)
        token_logprobs = tempered.gather(-1, targets[..., None]).squeeze(-1)
        # forbidden tokens have p = 0 and log p = -inf: they add 0 to the entropy, not NaN
        token_entropy = -(log_probs.exp() * log_probs.masked_fill(self._forbidden, 0.0)).sum(dim=-1)
        entropy = torch.where(answer, token_entropy, 0.0).sum(dim=-1) / lengths
        return _Window(
            log_probs, token_logprobs, answer, lengths, entropy, output.hidden_states[-1] if hidden else None
        )

    def _log_softmax(self, logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
        """log softmax(z / T) in float32, forbidden tokens at -inf; ``(..., vocab)``. T = 0 is greedy
        decoding, which picks the highest logit with certainty: log-prob 0 there, -inf elsewhere (the
        first of equal highest, as ``argmax``)."""
        logits = logits.float().masked_fill(self._forbidden, float("-inf"))
        if temperature == 0.0:
            chosen = logits.argmax(dim=-1, keepdim=True)
            return torch.full_like(logits, float("-inf")).scatter(-1, chosen, 0.0)
        return torch.log_softmax(logits / temperature, dim=-1)

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """The adapter's parameters, for an optimiser."""
        return [parameter for parameter in self.model.parameters() if parameter.requires_grad]

    def train(self, mode: bool = True) -> None:
        """Training mode (LoRA dropout on) or, with ``False``, evaluation mode. A policy serving its adapter
        merged (``Adapter.serve_merged``) cannot train: the adapter's gradients would not reach the folded
        weights."""
        if mode and self.adapter.merged:
            raise PolicyError("a policy serving its adapter merged cannot train", phase="adapter")
        self.model.train(mode)

    def _on_device(self, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return {name: value.to(self.device) for name, value in inputs.items()}

    @contextlib.contextmanager
    def _inference(self) -> Iterator[None]:
        training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                yield
        finally:
            self.model.train(training)


class _Window(NamedTuple):
    """One teacher-forced pass, kept for the answers' window (``Policy._window``)."""

    log_probs: torch.Tensor
    """log π over the vocabulary at temperature 1, ``(batch, window, vocab)``."""
    token_logprobs: torch.Tensor
    """Each target token's log-prob at the pass's temperature, ``(batch, window)`` (garbage outside
    ``answer``)."""
    answer: torch.Tensor
    lengths: torch.Tensor
    entropy: torch.Tensor
    hidden: torch.Tensor | None
    """The last layer's output over the whole sequence, ``(batch, length, hidden)``, when asked for."""


@contextlib.contextmanager
def _seeded(seed: int | None, device: torch.device) -> Iterator[None]:
    """Run with torch's RNGs seeded to ``seed``, restoring them after; nothing when it is None."""
    if seed is None:
        yield
        return
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


_Row = TypeVar("_Row")


def _padded(rows: Sequence[_Row], extra: int) -> list[_Row]:
    """``rows`` and ``extra`` copies of its last: the rows an engine decodes beyond those asked for."""
    return [*rows, *[rows[-1]] * extra]
