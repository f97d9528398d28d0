"""An OpenAI-compatible chat-completions server on loopback, for the judge's tests and benchmarks.

It speaks the real interface over real HTTP (``POST /v1/chat/completions``, the request and answer
bodies of OpenAI's API, ``Authorization: Bearer``, 429 with ``Retry-After``), so the judge's own client
talks to it exactly as to OpenAI, vLLM or Ollama. Its verdicts come from an oracle the test gives (the
sim's truth for the final screenshot), optionally flipped for a known share of episodes (a fallible
judge) and delayed (a slow one). On demand it fails: ``script`` holds what the next requests get
(``429``, ``500``, ``timeout``, ``drop``, ``garbage``, ``refuse``), or misbehaves as a hostile server
would: ``drip`` (a verdict a byte every ``drip_s``), ``huge`` (a 200 of ``huge_bytes`` with a verdict in
it), ``flood`` (a chunked answer without end), ``429-forever`` (``Retry-After: 100000``).
"""

from __future__ import annotations

import base64
import collections
import contextlib
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Oracle = Callable[[str, bytes], bool | None]
"""``(goal, final screenshot bytes)`` → the truth (None: the oracle does not know)."""

_GOAL = re.compile(r"Instruction: (.*)")


@dataclass
class Asked:
    """One request the server received."""

    goal: str
    model: str
    authorization: str
    images: int
    answer: str


@dataclass
class JudgeServer:
    url: str
    """Base URL, ``http://127.0.0.1:PORT/v1``."""
    oracle: Oracle
    script: collections.deque[str] = field(default_factory=collections.deque)
    """What the next requests get instead of a verdict, one entry each."""
    flip: float = 0.0
    """Share of episodes (chosen by the final screen's hash) whose verdict is the wrong one."""
    delay_s: float = 0.0
    """Added before every answer (a slow judge)."""
    hang_s: float = 5.0
    """How long a ``timeout`` entry holds its request before answering."""
    drip_s: float = 0.05
    """Pause between two bytes of a ``drip`` answer."""
    huge_bytes: int = 8 << 20
    """Size of a ``huge`` answer."""
    asked: list[Asked] = field(default_factory=list)
    requests: int = 0
    bytes_sent: int = 0
    """Bytes of ``drip`` and ``flood`` answers written before the client hung up."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def take_step(self) -> str:
        """Count one request and take what it gets from ``script`` ('' for a verdict): one request's
        thread at a time, so two requests at once never both take, or both miss, a step."""
        with self._lock:
            self.requests += 1
            return self.script.popleft() if self.script else ""

    def respond(
        self, body: dict[str, Any], authorization: str, step: str
    ) -> tuple[int, dict[str, str], bytes]:
        """The answer to one request whose step (``take_step``) is ``step``."""
        if step == "timeout":
            time.sleep(self.hang_s)
        elif self.delay_s:
            time.sleep(self.delay_s)
        if step == "429":
            return 429, {"Retry-After": "0"}, _error("Rate limit reached", "rate_limit_exceeded")
        if step == "429-forever":
            return 429, {"Retry-After": "100000"}, _error("Rate limit reached", "rate_limit_exceeded")
        if step == "500":
            return 500, {}, _error("The server had an error", "server_error")
        if step == "refuse":
            return 401, {}, _error("Incorrect API key provided", "invalid_api_key")
        messages = body.get("messages") or []
        content = messages[-1]["content"] if messages else []
        text = " ".join(part.get("text", "") for part in content if part.get("type") == "text")
        images = [part["image_url"]["url"] for part in content if part.get("type") == "image_url"]
        found = _GOAL.search(text)
        goal = found.group(1).strip() if found else ""
        final = base64.b64decode(images[-1].split(",", 1)[1]) if images else b""
        truth = self.oracle(goal, final)
        if step == "garbage" or truth is None:
            answer = "I am not sure what this screenshot shows."
        else:
            flipped = self.flip and int(hashlib.sha256(final).hexdigest()[:8], 16) / 2**32 < self.flip
            said = truth != bool(flipped)
            answer = (
                f"Reason: the final screen {'shows' if said else 'does not show'} the instruction done.\n"
                f"Status: {'success' if said else 'failure'}"
            )
        self.asked.append(Asked(goal, str(body.get("model")), authorization, len(images), answer))
        completion = {
            "id": f"chatcmpl-{self.requests}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": len(text) // 4 + 85 * len(images),
                "completion_tokens": len(answer) // 4,
                "total_tokens": len(text) // 4 + 85 * len(images) + len(answer) // 4,
            },
        }
        if step == "huge":
            padding = " " * max(self.huge_bytes - len(json.dumps(completion)), 0)
            completion["choices"] = [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": padding + answer},
                    "finish_reason": "stop",
                }
            ]
        return 200, {"X-Step": step} if step else {}, json.dumps(completion).encode()


def _error(message: str, code: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "error", "code": code}}).encode()


@contextlib.contextmanager
def serve_judge(oracle: Oracle) -> Iterator[JudgeServer]:
    """A judge server on a free loopback port, until the block ends."""
    holder: list[JudgeServer] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            if self.path != "/v1/chat/completions":
                self._send(404, {}, _error(f"no route {self.path}", "not_found"))
                return
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            server = holder[0]
            step = server.take_step()
            if step == "drop":
                self.close_connection = True
                self.connection.close()
                return
            if step == "flood":
                self._flood(server)
                return
            status, headers, payload = server.respond(body, self.headers.get("Authorization", ""), step)
            if headers.pop("X-Step", "") == "drip":
                self._drip(server, payload)
                return
            self._send(status, headers, payload)

        def _drip(self, server: JudgeServer, payload: bytes) -> None:
            """A whole, valid verdict, one byte every ``drip_s``, until the client hangs up."""
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.close_connection = True
            with contextlib.suppress(OSError):
                for index in range(len(payload)):
                    self.wfile.write(payload[index : index + 1])
                    self.wfile.flush()
                    server.bytes_sent += 1
                    time.sleep(server.drip_s)

        def _flood(self, server: JudgeServer) -> None:
            """A chunked 200 that never ends, until the client hangs up."""
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.close_connection = True
            opening = b'{"choices": [{"message": {"content": "'
            chunk = b" " * 65536
            with contextlib.suppress(OSError):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(opening), opening))
                while True:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    server.bytes_sent += len(chunk)

        def _send(self, status: int, headers: dict[str, str], payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            with contextlib.suppress(OSError):  # the client gave up (its timeout)
                self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    holder.append(JudgeServer(url=f"http://127.0.0.1:{httpd.server_address[1]}/v1", oracle=oracle))
    thread = threading.Thread(target=httpd.serve_forever, name="judge server", daemon=True)
    thread.start()
    try:
        yield holder[0]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def main() -> None:
    """``python -m distrl.testing.judge_server --truth FILE``: serve until killed, the truth read from
    ``FILE`` (a JSON object of final-screenshot SHA-256 → success); prints the base URL as its first line."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--truth", required=True, help="JSON: sha256 of the final screenshot -> true/false")
    parser.add_argument("--flip", type=float, default=0.0, help="share of verdicts given wrong")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds added before every answer")
    args = parser.parse_args()
    with open(args.truth, encoding="utf-8") as file:
        truth: dict[str, bool] = json.load(file)
    with serve_judge(lambda goal, final: truth.get(hashlib.sha256(final).hexdigest())) as server:
        server.flip, server.delay_s = args.flip, args.delay
        print(server.url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
