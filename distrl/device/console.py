"""An async client for the Android emulator console (telnet-style text on the console port).

The console greets with a few lines and ``OK``; if the greeting says ``Authentication required``,
the client sends ``auth <token>`` (the token is the contents of ``~/.emulator_console_auth_token``).
Every command answers with lines of output, then ``OK``, or with a line starting ``KO``
(``docs/reference/android.md``). The caller bounds every wait with its own timeout.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = ["ConsoleError", "EmulatorConsole", "read_token"]

_MAX_LINE_BYTES = 64 * 1024
_MAX_LINES = 10_000


class ConsoleError(Exception):
    """The console refused a command (``KO: …``) or spoke something other than the console protocol.

    Raised inside the device package only; ``AdbDevice`` turns it into a ``DeviceError``."""


async def read_token(path: str) -> str | None:
    """The auth token in the file ``path`` (stripped), or None when the file does not exist.

    Raises ``ConsoleError`` when the file is there but cannot be read."""
    try:
        text = await anyio.Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConsoleError(f"cannot read the console auth token from {path}: {exc}") from exc
    return text.strip()


class EmulatorConsole:
    """One open, authenticated console connection; one command at a time."""

    def __init__(self, stream: SocketStream) -> None:
        self._stream = stream
        self._reader = BufferedByteReceiveStream(stream)

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(
        cls, port: int, *, token: str | None, host: str = "127.0.0.1"
    ) -> AsyncIterator[EmulatorConsole]:
        """Connect to the console on ``port``, read the greeting and authenticate when asked to."""
        async with await anyio.connect_tcp(host, port) as stream:
            console = cls(stream)
            greeting = await console._reply()
            if any("authentication required" in line.lower() for line in greeting):
                if not token:
                    raise ConsoleError("the console asks for an auth token and the token file is missing")
                await console.command(f"auth {token}")
            yield console

    async def command(self, line: str) -> list[str]:
        """Send one command and return its output lines (without the final ``OK``)."""
        if "\n" in line or "\r" in line:
            raise ValueError(f"a console command is one line, got {line!r}")
        await self._stream.send(line.encode("utf-8") + b"\n")
        return await self._reply()

    async def _reply(self) -> list[str]:
        lines: list[str] = []
        while len(lines) < _MAX_LINES:
            try:
                raw = await self._reader.receive_until(b"\n", _MAX_LINE_BYTES)
            except (anyio.EndOfStream, anyio.IncompleteRead) as exc:
                raise ConsoleError("the console closed the connection") from exc
            except anyio.DelimiterNotFound as exc:
                raise ConsoleError(f"a console line is longer than {_MAX_LINE_BYTES} bytes") from exc
            text = raw.decode("utf-8", "replace").rstrip("\r")
            if text == "OK":
                return lines
            if text.startswith("KO"):
                raise ConsoleError(text)
            lines.append(text)
        raise ConsoleError(f"the console answered more than {_MAX_LINES} lines")
