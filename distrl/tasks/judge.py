"""The ``judge`` evaluator: a VLM decides from the final screens whether an episode reached its goal.

Any OpenAI-compatible chat-completions endpoint serves (OpenAI, Gemini's OpenAI-compatible endpoint,
vLLM, SGLang, Ollama). As the paper's autonomous evaluator does, the judge sees the goal, the last
screenshots (``screens``, default the final one: the paper found that more screens made its judge
declare success more readily) and the last actions, and answers ``Status: success`` or
``Status: failure`` with a short reason, which is kept with the trajectory.

- Calls run concurrently up to ``max_concurrency``; 429s, 5xx answers, timeouts and lost connections
  are retried with exponential backoff, ``max_retries`` times. A server's ``Retry-After`` is honoured up
  to ``max_backoff_s``, the judge's own longest wait: a server cannot hold a run longer than its settings.
- ``timeout_s`` is one deadline per call, covering the connect, the request and the whole answer (a
  server that answers a byte at a time cannot stretch it), and an answer over ``max_response_bytes`` is
  dropped unread past that size.
- Verdicts are cached on disk, keyed by the prompt's version, the model, the goal, the actions shown
  and the screens' hashes: judging the same episode again costs nothing.
- No verdict (the judge is down, refuses, or answers without a status) is a ``JudgeError``: the caller
  keeps the episode unscored and asks again later. It is never a failure.
- The API key is sent in the ``Authorization`` header only: it is never logged, cached or raised.

httpx is imported when a judge is built: distrl installs and runs without it (``pip install
'distrl[judge]'``).
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import hashlib
import json
import logging
import os
import random
import re
import time
from pathlib import Path
from typing import Any

import anyio

from distrl.errors import JudgeError
from distrl.records import Observation, Step, Trajectory

__all__ = ["PROMPT_VERSION", "Judge", "JudgeStats", "Verdict", "judge_messages", "parse_verdict"]

log = logging.getLogger(__name__)

PROMPT_VERSION = 1
"""Part of every cache key: a new prompt asks again."""
ACTIONS_SHOWN = 3
"""The last actions the judge reads (the paper's judge read the last two)."""
MAX_BACKOFF_S = 30.0
"""Longest wait between two tries of one call (a server's ``Retry-After`` included), by default."""
MAX_RESPONSE_BYTES = 1 << 20
"""Largest answer read, by default: a verdict of 256 tokens is a few kB."""

SYSTEM_PROMPT = """\
You are an expert evaluator of an agent that controls an Android phone to fulfil a user's instruction.
You are given the instruction, the agent's last actions, and the last screenshot(s) of the phone, the \
final one last. Decide whether the agent has completed the instruction.

- Judge from the screenshots: the task is complete when the final screen shows the instruction done \
(the setting changed, the alarm set, the search results or the product page asked for), or shows that \
the agent did exactly what was asked.
- Saying it is done is not doing it: an agent that stopped on an unrelated screen has failed.
- For a search, the search must have been submitted with the right query; for a setting, the final \
value must be the one asked for.

Answer in exactly this form:
Reason: <one or two sentences>
Status: success or failure"""

_STATUS = re.compile(r"status\W{0,6}(success|failure)", re.IGNORECASE)
_REASON = re.compile(r"reason\W{0,4}(.+)", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The judge's answer about one episode."""

    success: bool
    reason: str
    cached: bool = False


@dataclasses.dataclass
class JudgeStats:
    """What the judge cost: its calls, their latency and tokens (for progress and TensorBoard)."""

    verdicts: int = 0
    """Verdicts given (cached ones included)."""
    cache_hits: int = 0
    requests: int = 0
    """HTTP requests sent (retries included)."""
    retries: int = 0
    errors: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    """Calls that ended without a verdict, by ``JudgeError.reason``."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: collections.deque[float] = dataclasses.field(
        default_factory=lambda: collections.deque(maxlen=1000)
    )
    """Seconds from asking to the verdict (building the prompt, the calls, their retries; not the wait
    for a free call), of the last 1,000 verdicts not from the cache."""

    def scalars(self) -> dict[str, float]:
        """These counts by name, as the run reports them (``RunStats.judge``, TensorBoard's ``judge/``)."""
        latencies = sorted(self.latency_s)
        return {
            "verdicts": self.verdicts,
            "requests": self.requests,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "errors": sum(self.errors.values()),
            "latency_p50_s": latencies[len(latencies) // 2] if latencies else 0.0,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


def parse_verdict(text: str) -> Verdict | None:
    """The verdict in a judge's answer (its last ``Status:``), or None when there is none."""
    statuses = _STATUS.findall(text)
    if not statuses:
        return None
    found = _REASON.search(text)
    reason = found.group(1).strip() if found else _STATUS.sub("", text).strip()
    return Verdict(success=statuses[-1].lower() == "success", reason=" ".join(reason.split())[:300])


def _screens(trajectory: Trajectory, count: int) -> list[Observation]:
    """The last ``count`` screens of an episode, the final one last (each screen once)."""
    screens = [step.observation for step in trajectory.steps]
    final = trajectory.final_observation
    if final is not None and (not screens or screens[-1].screenshot != final.screenshot):
        screens.append(final)
    return screens[-count:]


def _action_text(step: Step) -> str:
    return " ".join(step.output.split())[:200] or "(nothing)"


def judge_messages(trajectory: Trajectory, screens: list[Observation]) -> list[dict[str, Any]]:
    """The chat messages that ask about ``trajectory``, its ``screens`` attached as data URLs."""
    steps = trajectory.steps[-ACTIONS_SHOWN:]
    actions = "\n".join(f"{step.index + 1}. {_action_text(step)}" for step in steps) or "(none)"
    text = (
        f"Instruction: {trajectory.task.goal}\n"
        f"The agent's last actions (of {len(trajectory.steps)}):\n{actions}\n"
        f"The last {len(screens)} screenshot(s) follow, the final one last."
    )
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for screen in screens:
        data = base64.b64encode(screen.screenshot).decode("ascii")
        mime = "image/jpeg" if screen.image_format == "jpeg" else "image/png"
        content.append({"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}})
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": content}]


class Judge:
    """One endpoint and model, with its concurrency limit, retries and cache."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        max_concurrency: int = 8,
        timeout_s: float = 60.0,
        max_retries: int = 5,
        screens: int = 1,
        cache_dir: str | Path | None = None,
        backoff_s: float = 1.0,
        max_backoff_s: float = MAX_BACKOFF_S,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        try:
            import httpx
        except ImportError:
            raise JudgeError(
                "the judge needs httpx: pip install 'distrl[judge]'", reason="refused", status=None
            ) from None
        self.model = model
        self.screens = screens
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.timeout_s = timeout_s
        self.max_response_bytes = max_response_bytes
        self._url = base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(timeout_s))
        self._limiter = anyio.CapacityLimiter(max_concurrency)
        self._cache = Path(cache_dir) if cache_dir else None
        self.stats = JudgeStats()

    async def __aenter__(self) -> Judge:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def verdict(self, trajectory: Trajectory) -> Verdict:
        """Whether ``trajectory`` reached its goal, by the judge (or its cache); ``JudgeError`` if the
        judge gave no verdict after its retries."""
        screens = _screens(trajectory, self.screens)
        key = self._key(trajectory, screens)
        cached = await anyio.to_thread.run_sync(self._cached, key)
        if cached is not None:
            self.stats.verdicts += 1
            self.stats.cache_hits += 1
            return cached
        async with self._limiter:  # the time waited here is the queue's, not the judge's
            started = time.perf_counter()
            messages = await anyio.to_thread.run_sync(judge_messages, trajectory, screens)
            body = {"model": self.model, "messages": messages, "temperature": 0, "max_tokens": 256}
            answer = await self._ask(body)
            self.stats.latency_s.append(time.perf_counter() - started)
        self.stats.verdicts += 1
        await anyio.to_thread.run_sync(self._store, key, answer)
        return answer

    # ------------------------------------------------------------------ the call
    async def _ask(self, body: dict[str, Any]) -> Verdict:
        import httpx

        error = JudgeError("the judge was not asked", reason="unreachable", status=None)
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.stats.retries += 1
            self.stats.requests += 1
            wait_s = min(self.backoff_s * 2**attempt, self.max_backoff_s) * random.uniform(0.5, 1.5)
            try:
                answer = await self._post(body)
            except (httpx.TimeoutException, TimeoutError):
                error = JudgeError(
                    f"the judge did not answer within timeout_s = {self.timeout_s:g} s ({self._url})",
                    reason="unreachable",
                )
            except httpx.TransportError as exc:
                error = JudgeError(f"cannot reach the judge at {self._url}: {exc}", reason="unreachable")
            except _TooLarge as exc:
                error = JudgeError(
                    f"the judge's answer is over max_response_bytes = {self.max_response_bytes} ({exc})",
                    reason="garbage",
                    status=exc.status,
                )
            else:
                if answer.status == 429 or answer.status >= 500:
                    error = JudgeError(
                        f"the judge answered HTTP {answer.status}: {answer.excerpt()}",
                        reason="busy",
                        status=answer.status,
                    )
                    wait_s = _retry_after(answer.retry_after, self.max_backoff_s) or wait_s
                elif answer.status != 200:
                    self.stats.errors["refused"] += 1
                    raise JudgeError(
                        f"the judge refused the request, HTTP {answer.status}: {answer.excerpt()}",
                        reason="refused",
                        status=answer.status,
                    )
                else:
                    verdict = self._read(answer.content)
                    if verdict is not None:
                        return verdict
                    error = JudgeError(
                        f"the judge's answer has no 'Status: success|failure': {answer.excerpt()}",
                        reason="garbage",
                        status=answer.status,
                    )
            if attempt < self.max_retries:
                log.debug("judge: %s; trying again in %.1f s", error, wait_s)
                await anyio.sleep(wait_s)
        self.stats.errors[error.reason or "unreachable"] += 1
        raise error

    async def _post(self, body: dict[str, Any]) -> _Answer:
        """One request and its whole answer, within ``timeout_s`` all told (``TimeoutError`` past it) and
        ``max_response_bytes`` (``_TooLarge`` past it: the rest is never read). The deadline is read again
        once the answer is in: a cancellation that came while httpcore closed it under a shield (a loaded
        loop) is not delivered, and an answer whose last byte was read late is late all the same."""
        deadline = anyio.current_time() + self.timeout_s
        with anyio.fail_after(self.timeout_s):
            async with self._client.stream("POST", self._url, json=body) as response:
                status = response.status_code
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > self.max_response_bytes:
                    raise _TooLarge(f"it declares {int(declared)} bytes", status)
                content = bytearray()
                async for chunk in response.aiter_bytes():
                    content += chunk
                    if len(content) > self.max_response_bytes:
                        raise _TooLarge(f"more than {self.max_response_bytes} bytes came", status)
                read_at = anyio.current_time()  # the whole answer read; closing it is not the judge's time
                answer = _Answer(status, response.headers.get("retry-after", ""), bytes(content))
        if read_at > deadline:
            raise TimeoutError
        return answer

    def _read(self, content: bytes) -> Verdict | None:
        try:
            data = json.loads(content)
            usage = data.get("usage") or {}
            self.stats.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.stats.completion_tokens += int(usage.get("completion_tokens") or 0)
            said = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            return None
        if isinstance(said, list):  # some servers answer in parts
            said = " ".join(part.get("text", "") for part in said if isinstance(part, dict))
        return parse_verdict(said) if isinstance(said, str) else None

    # ------------------------------------------------------------------ the cache
    def _key(self, trajectory: Trajectory, screens: list[Observation]) -> str:
        steps = trajectory.steps[-ACTIONS_SHOWN:]
        document = [
            PROMPT_VERSION,
            self.model,
            trajectory.task.goal,
            [_action_text(step) for step in steps],
            len(trajectory.steps),
            [hashlib.sha256(screen.screenshot).hexdigest() for screen in screens],
        ]
        return hashlib.sha256(json.dumps(document).encode()).hexdigest()

    def _path(self, key: str) -> Path | None:
        return None if self._cache is None else self._cache / key[:2] / f"{key}.json"

    def _cached(self, key: str) -> Verdict | None:
        path = self._path(key)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return Verdict(success=bool(data["success"]), reason=str(data["reason"]), cached=True)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("judge cache: ignoring %s (%s)", path, exc)
            return None

    def _store(self, key: str, verdict: Verdict) -> None:
        path = self._path(key)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(
                json.dumps({"success": verdict.success, "reason": verdict.reason, "model": self.model}),
                encoding="utf-8",
            )
            temporary.replace(path)
        except OSError as exc:
            log.warning("judge cache: cannot write %s (%s)", path, exc)


class _TooLarge(Exception):
    """An answer over the judge's ``max_response_bytes``."""

    def __init__(self, detail: str, status: int) -> None:
        super().__init__(detail)
        self.status = status


@dataclasses.dataclass(frozen=True)
class _Answer:
    """One HTTP answer, read whole."""

    status: int
    retry_after: str
    content: bytes

    def excerpt(self) -> str:
        text = " ".join(self.content[:4096].decode("utf-8", "replace").split())
        return text[:200] or "(empty)"


def _retry_after(value: str, longest_s: float) -> float | None:
    """A ``Retry-After`` in seconds, at most ``longest_s`` (None: absent or not a number of seconds)."""
    try:
        seconds = float(value)
    except ValueError:
        return None
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), longest_s)
