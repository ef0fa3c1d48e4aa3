"""report.html: the report as one self-contained page a person opens in a browser and shares.

It is report.md rendered (the same words and tables), with every chart the report wrote inlined
as a PNG data URI, so the one file is the whole report. Text from the logs (agent names, check
details, error messages) is data: raw HTML in it is shown as text, links are not made, and an
image is shown only when it is one of the report's own charts. The page allows no script and
loads nothing from elsewhere (its Content-Security-Policy), whatever the logs held.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

# report.md's one HTML element (the per-sample usage table), which the renderer escapes like any
# other; a log's text cannot make a paragraph of its own (table cells and notes are one line)
DETAILS = {"<p>&lt;details&gt;&lt;summary&gt;per sample&lt;/summary&gt;</p>": "<details><summary>per sample</summary>",
           "<p>&lt;/details&gt;</p>": "</details>"}

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1200px;
       padding: 0 1rem; color: #1b1b1b; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.6rem 0 1.2rem; font-size: 0.9rem; display: block; overflow-x: auto; }
th, td { border: 1px solid #d0d0d0; padding: 0.25rem 0.55rem; text-align: left; vertical-align: top; }
th { background: #f3f4f6; }
tr:nth-child(even) td { background: #fafafa; }
code { background: #f3f4f6; padding: 0 0.2rem; border-radius: 3px; }
blockquote { border-left: 4px solid #e0a800; margin: 0.8rem 0; padding: 0.2rem 0.9rem; background: #fff8e1; }
img { max-width: 100%; height: auto; display: block; margin: 0.6rem 0; }
h1, h2, h3 { line-height: 1.2; } h2 { border-bottom: 1px solid #d0d0d0; padding-bottom: 0.2rem; margin-top: 2.2rem; }
"""
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def _renderer(charts: dict[str, str]) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table").disable(["link", "autolink"])

    def image(renderer: Any, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
        token = tokens[idx]
        alt = html.escape(token.content or "")
        src = charts.get(str(token.attrGet("src") or ""))
        # only the report's own charts, inlined; any other image (a log's text) stays its words
        return f'<img src="{src}" alt="{alt}">' if src else alt

    md.add_render_rule("image", image)
    return md


def inline_png(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def render_html(markdown: str, charts: dict[str, str], title: str = "pi-bench report") -> str:
    """The page for `markdown` (report.md's text); `charts`: file name -> data URI."""
    body = _renderer(charts).render(markdown)
    for escaped, element in DETAILS.items():
        body = body.replace(escaped, element)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n")


def write_html(markdown: str, out: Path, pngs: list[Path]) -> Path:
    """report.html in `out`, beside report.md, with the report's PNG charts inlined."""
    page = render_html(markdown, {p.name: inline_png(p) for p in pngs if p.suffix == ".png" and p.parent == out})
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
