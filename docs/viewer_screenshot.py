"""Take docs/viewer-header.png (the viewer's header at 1400 px) in headless Chromium, and check
that Inspect's viewer shows every metric name whole: in the header and in the "All scoring..."
dialog, at 1400 and 1920 px wide, no name cut and no table past the dialog's edge.

    inspect eval pibench_inspect/pibench_retail -T agent=nothing -T user=scripted --model none \\
        --log-dir /tmp/shot                      # the README's second keyless demo
    python docs/viewer_screenshot.py /tmp/shot   # writes docs/viewer-header.png

It runs `inspect view` on the folder (the first log in it) on a free local port. It needs
Playwright's Python package (`pip install playwright`; not a dependency of pi-bench) and a
Chromium: Debian's `chromium` (/usr/bin/chromium), or the one PIBENCH_CHROMIUM names, started
with the flags a machine without network needs. Exit 1, naming what is cut, when something is.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHROMIUM = os.environ.get("PIBENCH_CHROMIUM", "/usr/bin/chromium")
# no sandbox (root in a container), and nothing that reaches for the network at start-up
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
WIDTHS = (1400, 1920)
# the header cells of the page's tables (before the dialog opens: the header's) or of the
# dialog's, whose text is wider than their box (the viewer cuts it with an ellipsis); and the
# dialog's tables wider than its body
DIALOG = "(document.querySelector('.modal-body') || document.querySelector('[role=dialog]'))"
CUT_CELLS = """(inDialog) => { const root = inDialog ? %s : document;
    if (!root) return ['no dialog'];
    return Array.from(root.querySelectorAll('thead th')).filter(c => c.scrollWidth > c.clientWidth + 1)
        .map(c => c.innerText.trim()).filter(t => t); }""" % DIALOG
WIDE_TABLES = """() => { const body = %s;
    if (!body) return ['no dialog'];
    const edge = body.getBoundingClientRect().right;
    return Array.from(body.querySelectorAll('table')).filter(t => t.getBoundingClientRect().right > edge + 1)
        .map(t => t.querySelector('thead').innerText.replace(/\\s+/g, ' ').trim()); }""" % DIALOG


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(log_dir: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    inspect = Path(sys.executable).with_name("inspect")
    proc = subprocess.Popen([str(inspect), "view", "--log-dir", str(log_dir), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit(f"inspect view did not listen on port {port} within 60 s")


def open_log(page, url: str) -> None:
    page.goto(url)
    page.wait_for_timeout(3000)
    links = page.locator("a[href*='.eval']")
    if links.count():  # the log list: open the first log
        links.first.click()
    page.get_by_text("All scoring...").wait_for(timeout=30000)
    page.wait_for_timeout(1000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log_dir", type=Path, help="a folder of pi-bench logs (the first one is shown)")
    parser.add_argument("--out", type=Path, default=HERE / "viewer-header.png")
    args = parser.parse_args(argv)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("error: needs Playwright's Python package: pip install playwright", file=sys.stderr)
        return 2
    if not Path(CHROMIUM).is_file():
        print(f"error: no Chromium at {CHROMIUM} (apt-get install chromium, or set PIBENCH_CHROMIUM)", file=sys.stderr)
        return 2
    proc, url = serve(args.log_dir)
    problems = []
    try:
        with sync_playwright() as p:  # each launch gets a new empty profile (Playwright's)
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
            for width in WIDTHS:
                page = browser.new_page(viewport={"width": width, "height": 900})
                open_log(page, url)
                problems += [f"{width} px, header: {t}" for t in page.evaluate(CUT_CELLS, False)]
                if width == WIDTHS[0]:
                    box = page.locator("text=All scoring...").bounding_box()
                    page.screenshot(path=str(args.out), clip={"x": 0, "y": 0, "width": width,
                                                              "height": box["y"] + box["height"] + 100})
                page.get_by_text("All scoring...").click()
                page.wait_for_timeout(1000)
                problems += [f"{width} px, dialog: {t}" for t in page.evaluate(CUT_CELLS, True)]
                problems += [f"{width} px, dialog table past the edge: {t}" for t in page.evaluate(WIDE_TABLES)]
                page.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    for problem in problems:
        print(f"cut: {problem}")
    print(f"wrote {args.out}" + ("" if problems else "; every metric name shows whole"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
