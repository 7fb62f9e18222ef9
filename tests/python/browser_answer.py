"""Answers toolweave's approval page in a real headless Chromium, as a person would.

Usage: browser_answer.py CHROMIUM URL BUTTON [SCOPE]

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: fds 3 and 4,
messages ending in NUL), so nothing but the standard library is needed. The script loads URL,
prints the page's text as JSON ({"before": ...}), picks SCOPE's radio button when given, clicks
the button whose id is BUTTON (approve or deny) with a real mouse click at its place on the
page, waits for the answer page, and prints its text ({"after": ...}).
"""

import json
import os
import subprocess
import sys
import tempfile
import time


class Browser:
    def __init__(self, chromium):
        to_browser_r, to_browser_w = os.pipe()
        from_browser_r, from_browser_w = os.pipe()
        self.profile = tempfile.TemporaryDirectory()

        def wire():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.process = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--remote-debugging-pipe",
                f"--user-data-dir={self.profile.name}",
                "about:blank",
            ],
            preexec_fn=wire,
            # Kept open in the child: the pipe ends wire() puts there.
            pass_fds=(3, 4),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.writer = os.fdopen(to_browser_w, "wb", buffering=0)
        self.reader = os.fdopen(from_browser_r, "rb", buffering=0)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def _message(self):
        while b"\0" not in self.buffer:
            chunk = self.reader.read(65536)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, params=None, session=None):
        self.next_id += 1
        request = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            request["sessionId"] = session
        self.writer.write(json.dumps(request).encode() + b"\0")
        while True:
            message = self._message()
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_event(self, method, session, deadline):
        while time.time() < deadline:
            for index, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    del self.events[index]
                    return event
            self.events.append(self._message())
        raise RuntimeError(f"no {method} in time")

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.profile.cleanup()


def main():
    chromium, url, button = sys.argv[1:4]
    scope = sys.argv[4] if len(sys.argv) > 4 else None
    browser = Browser(chromium)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send(
            "Target.attachToTarget", {"targetId": target, "flatten": True}
        )["sessionId"]
        browser.send("Page.enable", session=session)
        browser.send("Page.navigate", {"url": url}, session=session)
        browser.wait_event("Page.loadEventFired", session, time.time() + 30)

        def evaluate(expression):
            return browser.send(
                "Runtime.evaluate",
                {"expression": expression, "returnByValue": True},
                session=session,
            )["result"].get("value")

        print(json.dumps({"before": evaluate("document.body.innerText")}), flush=True)
        if scope:
            picked = evaluate(
                f"(() => {{ const r = document.querySelector('input[name=scope][value={json.dumps(scope)}]');"
                " if (!r) return false; r.checked = true; return true; })()"
            )
            if not picked:
                raise RuntimeError(f"the page offers no scope {scope}")
        box = evaluate(
            f"(() => {{ const b = document.getElementById({json.dumps(button)}).getBoundingClientRect();"
            " return [b.x + b.width / 2, b.y + b.height / 2]; })()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            browser.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": box[0], "y": box[1], "button": "left", "clickCount": 1},
                session=session,
            )
        browser.wait_event("Page.loadEventFired", session, time.time() + 30)
        print(json.dumps({"after": evaluate("document.body.innerText")}), flush=True)
    finally:
        browser.close()


if __name__ == "__main__":
    main()
