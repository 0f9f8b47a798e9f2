"""A small W3C WebDriver client for Debian's chromium + chromium-driver (test-only peers the
Makefile installs): enough to open our SVGs headless, click, type into prompts, run scripts and
take screenshots. Plain HTTP + JSON, no Python package beyond the standard library."""
import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference


def missing():
    """The reason a browser cannot run here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return "%s is not installed (make deps installs chromium and chromium-driver)" % path
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriverError(Exception):
    pass


class Browser:
    """One headless Chromium session; use as a context manager."""

    def __init__(self, width=1400, height=1000):
        self.port = free_port()
        self.profile = tempfile.mkdtemp(prefix="pp-chromium-")
        self.log = open(os.path.join(self.profile, "chromedriver.log"), "w")
        self.driver = subprocess.Popen([CHROMEDRIVER, "--port=%d" % self.port], stdout=self.log,
                                       stderr=subprocess.STDOUT)
        self.base = "http://127.0.0.1:%d" % self.port
        deadline = time.time() + 20
        while True:
            try:
                self._call("GET", "/status")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.time() > deadline or self.driver.poll() is not None:
                    self.close()
                    raise WebDriverError("chromedriver did not start")
                time.sleep(0.1)
        # The flags keep Chromium off the network this machine does not have, and out of any
        # sandbox root cannot use.
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--user-data-dir=" + os.path.join(self.profile, "data"),
                "--window-size=%d,%d" % (width, height), "--force-device-scale-factor=1"]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "unhandledPromptBehavior": "ignore",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        }}}
        value = self._call("POST", "/session", caps)
        self.session = "/session/" + value["sessionId"]

    def _call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read() or b"{}").get("value")
        except urllib.error.HTTPError as e:
            raise WebDriverError("%s %s: %s" % (method, path, e.read().decode(errors="replace")[:500]))

    def cmd(self, method, path, body=None):
        return self._call(method, self.session + path, body)

    def open(self, url):
        self.cmd("POST", "/url", {"url": url})

    def run(self, script, *args):
        """Runs `script` (a function body; `arguments` holds args) in the page and returns its value."""
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css):
        return self.cmd("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def find_all(self, css):
        return [e[ELEMENT] for e in self.cmd("POST", "/elements", {"using": "css selector", "value": css})]

    def click(self, element):
        """A real pointer click at the element's centre, through the browser's input pipeline."""
        self.cmd("POST", "/actions", {"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [
                {"type": "pointerMove", "origin": {ELEMENT: element}, "x": 0, "y": 0},
                {"type": "pointerDown", "button": 0},
                {"type": "pointerUp", "button": 0},
            ]}]})
        try:
            self.cmd("DELETE", "/actions")
        except WebDriverError as e:
            # A click that opened a prompt: the input state is released with it.
            if "alert open" not in str(e):
                raise

    def hover(self, element):
        self.cmd("POST", "/actions", {"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [{"type": "pointerMove", "origin": {ELEMENT: element}, "x": 0, "y": 0}]}]})

    def answer_prompt(self, text):
        deadline = time.time() + 10
        while True:
            try:
                self.cmd("GET", "/alert/text")
                break
            except WebDriverError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        self.cmd("POST", "/alert/text", {"text": text})
        self.cmd("POST", "/alert/accept", {})

    def resize(self, width, height):
        """Makes the page's viewport width x height (the window adds its own frame to that)."""
        self.cmd("POST", "/window/rect", {"width": width, "height": height})
        inner = self.run("return [window.innerWidth, window.innerHeight]")
        self.cmd("POST", "/window/rect", {"width": 2 * width - inner[0], "height": 2 * height - inner[1]})

    def screenshot(self, path):
        png = base64.b64decode(self.cmd("GET", "/screenshot"))
        with open(path, "wb") as f:
            f.write(png)
        return path

    def logs(self):
        """The page's console messages (errors included), where chromedriver keeps them."""
        try:
            return self.cmd("POST", "/se/log", {"type": "browser"}) or []
        except WebDriverError:
            return []

    def flame_frames(self):
        """The frames of the flame graph open in the window, in document order: name, width, x,
        shown, dimmed (an ancestor of the zoomed frame), hit (a search match), fill (computed
        rgb()) and data-n."""
        return self.run("""
            var out = [];
            document.querySelectorAll('#frames > g').forEach(function (g) {
                var r = g.querySelector('rect'), box = r.getBoundingClientRect();
                out.push({name: g.firstElementChild.textContent.replace(/ \\([^(]*$/, ''),
                          width: +r.getAttribute('width'), x: +r.getAttribute('x'),
                          shown: getComputedStyle(g).display !== 'none' && box.width > 0,
                          dim: g.classList.contains('p'), hit: r.classList.contains('m'),
                          fill: getComputedStyle(r).fill, n: +g.getAttribute('data-n')});
            });
            return out;""")

    def close(self):
        try:
            if getattr(self, "session", None):
                self._call("DELETE", self.session)
        except Exception:
            pass
        if self.driver.poll() is None:
            self.driver.terminate()
            try:
                self.driver.wait(10)
            except subprocess.TimeoutExpired:
                self.driver.kill()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
