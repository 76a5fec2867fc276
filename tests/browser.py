"""Headless Chromium driven over the DevTools protocol, for tests that point at a page as a user does.

Chromium's ``--remote-debugging-pipe`` reads protocol commands from its file descriptor 3 and writes replies
and events to 4, each message JSON ended by a NUL byte: no websocket library, no port. :class:`Browser` opens
a page, moves the real mouse pointer (``Input.dispatchMouseEvent``: the page gets the pointer events a user's
mouse makes) and evaluates JavaScript in the page to read back what it shows.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import time


class Browser:
    """``with Browser(chromium, profile) as browser: browser.open(url); browser.move_to(selector) ...``"""

    def __init__(self, chromium: str, profile, timeout: float = 60.0):
        self.timeout = timeout
        # our ends and Chromium's, numbered from 10 so that the child's dup2 onto 3 and 4 overwrites neither
        commands_read, commands_write = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in os.pipe())
        replies_read, replies_write = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in os.pipe())

        def onto_3_and_4():
            os.dup2(commands_read, 3)
            os.dup2(replies_write, 4)

        self.process = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "--window-size=1280,900",
                "--allow-file-access-from-files",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=onto_3_and_4,
            pass_fds=(3, 4),
        )
        os.close(commands_read)
        os.close(replies_write)
        self._write, self._read = commands_write, replies_read
        self._buffer, self._next_id, self.session = b"", 0, None
        self.events: list[dict] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False)
        except (OSError, TimeoutError, RuntimeError):
            pass
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._write, self._read):
            try:
                os.close(fd)
            except OSError:
                pass

    def _message(self) -> dict:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._read, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the pipe: " + self.process.stderr.read().decode()[-1000:])
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, session: bool = True, **params) -> dict:
        """Send one command (to the page's session unless ``session`` is false); its result."""
        self._next_id += 1
        command = {"id": self._next_id, "method": method, "params": params}
        if session and self.session:
            command["sessionId"] = self.session
        os.write(self._write, json.dumps(command).encode() + b"\0")
        while True:
            message = self._message()
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, event: str) -> dict:
        for i, message in enumerate(self.events):
            if message.get("method") == event:
                return self.events.pop(i)
        while True:
            message = self._message()
            if message.get("method") == event:
                return message
            self.events.append(message)

    def open(self, url: str) -> None:
        """Open ``url`` in a new tab and wait until it has loaded."""
        target = self.send("Target.createTarget", session=False, url="about:blank")["targetId"]
        self.session = self.send("Target.attachToTarget", session=False, targetId=target, flatten=True)[
            "sessionId"
        ]
        self.send("Page.enable")
        self.send("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        reply = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{expression!r} threw: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def move_to(self, selector: str) -> None:
        """Move the mouse pointer onto the middle of the element ``selector`` (scrolled into view)."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: "
            "'center'}); const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        self.move(*box)

    def move(self, x: float, y: float) -> None:
        """Move the mouse pointer to the point (x, y) of the window."""
        self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)

    def click(self, selector: str) -> None:
        """A tap: the pointer onto ``selector``, then a left click there."""
        self.move_to(selector)
        box = self.evaluate(
            f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect(); "
            "return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def tap(self, selector: str) -> None:
        """A finger's tap on ``selector`` (touch emulated: no hover before it, the pointer leaves after it)."""
        self.send("Emulation.setTouchEmulationEnabled", enabled=True, maxTouchPoints=1)
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: "
            "'center'}); const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        self.send("Input.dispatchTouchEvent", type="touchStart", touchPoints=[{"x": box[0], "y": box[1]}])
        self.send("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[])
