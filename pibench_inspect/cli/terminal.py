"""The person's terminal in `pibench play`: what is shown is inert, and lines are read off the
event loop.

Everything shown comes from text someone else wrote: the scenario (policy, brief, seeded state),
the simulated user, the model under test. A terminal acts on control characters and escape
sequences in what it prints: OSC 52 writes the clipboard, `ESC [2J` clears the screen, a bare
CR overwrites a line, bidi overrides reorder it. `inert()` renders each such character as
visible text (`\\x1b`, `\\u202e`), so the person sees what was said, and the terminal does
nothing it was not asked to by the person. Line feeds and tabs are kept.

Lines are read in a daemon thread and handed to the waiting coroutine, so Inspect's event loop
never waits on the keyboard. At a terminal (stdin and stdout both ttys) `input()` reads them,
with GNU readline's line editing and Tab completion. Otherwise (piped input or output) `input()`
would read through `sys.stdin`'s buffer and hold its lock while it waits; a session stopped
there (Ctrl-C) left the lock held by a daemon thread, and the interpreter aborted at exit
("Fatal Python error: _enter_buffered_busy", exit 134). Piped lines are read from the file
descriptor itself, which holds no lock, and at most MAX_LINE + 1 characters of a line are kept
(a longer line is refused as too long, and the rest of it dropped).
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import weakref
from typing import Any, Callable


EOF_GRACE = 0.5  # seconds a Ctrl-C that came with the end of input has to cancel the session first

_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_INERT = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)] if c not in (0x09, 0x0A)}
_INERT.update({ord(c): f"\\u{ord(c):04x}" for c in _BIDI})


def inert(text: str) -> str:
    """`text` with every control character (C0 but line feed and tab, DEL, C1) and bidi control
    written out visibly: nothing in it acts on the terminal. A CR LF line end is a line end."""
    return text.replace("\r\n", "\n").translate(_INERT)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class Terminal:
    """The person's terminal (a `human.Console`): shows text, inert, and reads lines in a daemon
    thread (with line editing and Tab completion at a terminal), handing each to the waiting
    coroutine."""

    def __init__(self, out: Any = None) -> None:
        self.out = out or sys.stdout
        self.ended_by: str | None = None  # "eof" when input ended
        self.interactive = _isatty(sys.stdin) and _isatty(self.out)
        self._complete: Callable[[], Any] | None = None  # a weak reference to the completions
        self._matches: list[str] = []
        self._requests: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._tty: Any = None
        self._pending = b""  # piped input read but not yet handed out
        self._readline = self._setup_readline() if self.interactive else None

    # ---- line editing and completion
    def _setup_readline(self) -> Any:
        try:
            import readline
        except ImportError:  # no line editing on this platform: plain input still works
            return None
        readline.set_completer(self._completer)
        readline.set_completer_delims(" \t\n")
        if "libedit" in (readline.__doc__ or ""):
            readline.parse_and_bind("bind ^I rl_complete")
        else:
            readline.parse_and_bind("tab: complete")
        return readline

    def _completer(self, text: str, state: int) -> str | None:
        rl = self._readline
        if state == 0:
            buffer = rl.get_line_buffer()[: rl.get_endidx()]
            begin = rl.get_begidx()
            complete = self._complete() if self._complete else None
            full = complete(buffer) if complete else []
            # Python's readline appends nothing to a completion: a candidate carries its own space
            self._matches = [c[begin:] for c in full if c.startswith(buffer[:begin])]
        return self._matches[state] if state < len(self._matches) else None

    # ---- the terminal's state (readline changes it while it reads; a session stopped mid-read
    # would otherwise leave the shell without echo)
    def save(self) -> None:
        try:
            import termios

            if sys.stdin.isatty():
                self._tty = termios.tcgetattr(sys.stdin.fileno())
        except (ImportError, OSError, ValueError):
            self._tty = None

    def restore(self) -> None:
        if self._tty is None:
            return
        try:
            import termios

            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._tty)
        except (ImportError, OSError, ValueError):
            pass

    # ---- Console
    def show(self, text: str) -> None:
        try:
            print(inert(text), file=self.out, flush=True)
        except BrokenPipeError:  # the reader of a piped session has gone (Ctrl-C ends it too)
            self._output_gone()

    def _output_gone(self) -> None:
        """Later output (and the interpreter's flush at exit) goes nowhere, without an error."""
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), self.out.fileno())
        except (OSError, ValueError, AttributeError):
            pass

    def read_line(self, prompt: str, completions: Callable[[str], list[str]] | None = None) -> str:
        """Read a line here and now (before the session starts; no event loop runs yet)."""
        self._complete = _weak(completions)
        try:
            return self._read(prompt)
        finally:
            self._complete = None

    def _read(self, prompt: str) -> str:
        """One line (EOFError at the end of input)."""
        if self.interactive:
            return input(prompt)
        try:
            self.out.write(prompt)
            self.out.flush()
        except BrokenPipeError:
            self._output_gone()
        return self._piped_line()

    def _piped_line(self) -> str:
        # the length a line may have (past it: refused, the rest dropped); imported here, since
        # every `pibench` command imports this module and the parties' module loads Inspect's
        from ..conversation.human import MAX_LINE

        fd = sys.stdin.fileno()
        while b"\n" not in self._pending:
            if len(self._pending) > 4 * MAX_LINE:  # UTF-8: at most 4 bytes a character
                line, self._pending = self._pending, b""
                self._drop_rest_of_line(fd)
                return line.decode("utf-8", "replace")[: MAX_LINE + 1]
            chunk = os.read(fd, 65536)
            if not chunk:
                if not self._pending:
                    raise EOFError
                line, self._pending = self._pending, b""
                return line.decode("utf-8", "replace")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.rstrip(b"\r").decode("utf-8", "replace")[: MAX_LINE + 1]

    def _drop_rest_of_line(self, fd: int) -> None:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            if b"\n" in chunk:
                self._pending = chunk.partition(b"\n")[2]
                return

    async def ask(self, prompt: str, completions: Callable[[str], list[str]] | None = None) -> str:
        import anyio
        import anyio.lowlevel

        done = anyio.Event()
        box: dict[str, Any] = {}
        self._requests.put((prompt, completions, anyio.lowlevel.current_token(), done, box))
        if self._thread is None:
            self._thread = threading.Thread(target=self._reader, name="pibench-play-input", daemon=True)
            self._thread.start()
        await done.wait()
        if "line" not in box:
            # the end of input stops the session as Ctrl-C does: Inspect cancels the run and
            # writes the log as cancelled; this turn waits for that cancellation. A Ctrl-C that
            # also ended the input (`cat | pibench play`: it stops cat too) may be on its way,
            # its cancellation a few loop turns behind: it gets EOF_GRACE to arrive, since a
            # second SIGINT makes asyncio raise KeyboardInterrupt in whatever code is running
            await anyio.sleep(EOF_GRACE)
            self.ended_by = "eof"
            os.kill(os.getpid(), signal.SIGINT)
            await anyio.sleep_forever()
        return box["line"]

    def _reader(self) -> None:
        """Serve `ask`'s requests, one line each. This thread lives as long as the process and
        may be left blocked in a read when the session stops: it holds nothing of the session
        meanwhile (the completions only weakly), or a party's tools, a DuckDB state among them,
        would outlive the session, and DuckDB's bindings report them at exit ("nanobind: leaked")."""
        import anyio.from_thread

        while True:
            request = self._requests.get()
            prompt, token, done, box = request[0], request[2], request[3], request[4]
            self._complete = _weak(request[1])
            del request
            try:
                box["line"] = self._read(prompt)
            except EOFError:
                self.show("")
            except BaseException:  # noqa: BLE001  (anything else ends the input as EOF does)
                pass
            self._complete = None
            try:
                anyio.from_thread.run_sync(done.set, token=token)
            except Exception:  # the loop has gone (the session was stopped): nothing waits
                return
            finally:
                del token, done, box


def _weak(fn: Callable[..., Any] | None) -> Callable[[], Any] | None:
    """A weak reference to `fn` (a bound method's object, or a function), or None."""
    if fn is None:
        return None
    try:
        return weakref.WeakMethod(fn) if hasattr(fn, "__self__") else weakref.ref(fn)
    except TypeError:  # cannot be referenced weakly: it lives as long as the reference does
        return lambda: fn
