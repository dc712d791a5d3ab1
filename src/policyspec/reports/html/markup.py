"""The HTML document every report page shares: escaping, the inline style
and script, status words.

Pages are single self-contained files: the style and the one small script
are inline, fonts are the reader's own, and nothing is fetched (a CI
artifact opened offline looks the same). Every status is a word and a
symbol as well as a colour, so the page reads without colour too.
"""

from __future__ import annotations

import html
import re

__all__ = [
    "STATUS_WORDS",
    "document",
    "esc",
    "prose",
    "status_badge",
    "verdict_badge",
]

STATUS_WORDS = {
    "pass": ("PASS", "✓"),
    "fail": ("FAIL", "✗"),
    "n/a": ("N/A", "–"),
    "not-tested": ("NOT TESTED", "?"),
    "xfail": ("XFAIL", "✗"),
}
"""Report status -> (word, symbol)."""

VERDICT_WORDS = {
    "pass": ("PASS", "✓", "conforms"),
    "fail": ("FAIL", "✗", "does not conform"),
    "unjudged": ("UNJUDGED", "?", "no failure found, but a MUST was not judged"),
    "incomplete": ("INCOMPLETE", "?", "the time limit stopped it before its work was done"),
    "error": ("ERROR", "!", "could not run to the end"),
    "interrupted": ("INTERRUPTED", "!", "stopped before the end"),
}

_CODE = re.compile(r"`([^`]+)`")


def esc(value: object) -> str:
    """Text (or a number) for an HTML text node or a quoted attribute."""
    return html.escape(str(value), quote=True)


def prose(text: str) -> str:
    """Spec prose: escaped, with Markdown `code` spans as <code>."""
    return _CODE.sub(r"<code>\1</code>", esc(text))


def status_badge(status: str) -> str:
    word, symbol = STATUS_WORDS.get(status, (status.upper(), ""))
    css = status.replace("/", "").replace(" ", "-")
    return (f'<span class="st st-{esc(css)}"><span aria-hidden="true">{symbol}</span> '
            f"{esc(word)}</span>")


def verdict_badge(verdict: str, *, meaning: bool = True) -> str:
    """"Verdict: FAIL" with its symbol and colour, and what it means."""
    word, symbol, said = VERDICT_WORDS.get(verdict, (verdict.upper(), "", ""))
    badge = (f'<span class="verdict v-{esc(verdict)}"><span aria-hidden="true">{symbol}</span> '
             f"Verdict: {esc(word)}</span>")
    return f'{badge} <span class="meaning">({esc(said)})</span>' if meaning and said else badge


STYLE = """
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #ffffff; --muted: #57606a;
  --line: #d0d7de; --pass: #1a7f37; --fail: #cf222e; --na: #6e7781; --nt: #9a6700;
  --xfail: #8250df; --head: #f6f8fa; --absent: #eef1f4; --flight: #fff1c2; --idle: #d8f5dd;
  --read: #dbe9ff; --victim: #cf222e; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #9198a1;
  --line: #3d444d; --pass: #3fb950; --fail: #ff7b72; --na: #9198a1; --nt: #d29922;
  --xfail: #bc8cff; --head: #161b22; --absent: #1c2128; --flight: #4b3b0a; --idle: #12381e;
  --read: #12294b; --victim: #ff7b72; } }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif;
  color: var(--fg); background: var(--bg); margin: 0 auto; padding: 1rem 1.5rem 3rem;
  max-width: 80rem; line-height: 1.45; }
h1 { font-size: 1.5rem; margin: .5rem 0; overflow-wrap: anywhere; }
h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1.1rem; margin: 0 0 .5rem; overflow-wrap: anywhere; }
h4 { font-size: 1rem; margin: 1rem 0 .25rem; }
code, pre, .mono { font-family: ui-monospace, "DejaVu Sans Mono", "Liberation Mono", Menlo,
  Consolas, monospace; font-size: .9em; }
pre { background: var(--head); border: 1px solid var(--line); padding: .75rem; overflow: auto;
  white-space: pre; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
caption { text-align: left; font-weight: 600; padding: .25rem 0; }
th, td { border: 1px solid var(--line); padding: .25rem .5rem; text-align: left;
  vertical-align: top; }
thead th { background: var(--head); }
th[scope=row] { font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.sub { display: block; font-weight: normal; color: var(--muted); font-size: .85em; }
.verdict { display: inline-block; font-size: 1.3rem; font-weight: 700; padding: .2rem .6rem;
  border: 2px solid currentColor; border-radius: .3rem; }
.meaning { color: var(--muted); }
.v-pass { color: var(--pass); } .v-fail { color: var(--fail); }
.v-error, .v-interrupted, .v-unjudged, .v-incomplete { color: var(--nt); }
.st { font-weight: 700; white-space: nowrap; }
.st-pass { color: var(--pass); } .st-fail { color: var(--fail); } .st-na { color: var(--na); }
.st-not-tested { color: var(--nt); } .st-xfail { color: var(--xfail); }
tr.row-fail th, tr.row-fail td { background: color-mix(in srgb, var(--fail) 8%, transparent); }
.failure { border: 1px solid var(--line); border-left: .35rem solid var(--fail);
  padding: .75rem 1rem; margin: 1rem 0; border-radius: .25rem; }
.failure.should { border-left-color: var(--nt); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem;
  margin: .5rem 0; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; max-width: 100%; }
table.timeline { border-collapse: separate; border-spacing: 2px; }
table.timeline th, table.timeline td { border: none; padding: 0; }
table.timeline thead th { background: none; text-align: center; min-width: 3rem;
  font-weight: 600; padding: 0 .1rem; }
table.timeline thead th a { color: inherit; }
table.timeline th[scope=row] { padding-right: .5rem; white-space: nowrap; }
table.timeline td { width: 3rem; min-width: 3rem; height: 2.4rem; text-align: center;
  vertical-align: middle;
  font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-weight: 700;
  border: 2px solid transparent; border-radius: .2rem; }
.c-absent { background: var(--absent); color: var(--muted); }
.c-in-flight { background: var(--flight); }
.c-idle { background: var(--idle); }
.c-being-read { background: var(--read); }
table.timeline td.named { border-color: var(--fg); }
table.timeline td.protected { background-image: repeating-linear-gradient(45deg, transparent 0 4px,
  color-mix(in srgb, var(--fg) 18%, transparent) 4px 6px); }
table.timeline td.victim { border-color: var(--victim); box-shadow: inset 0 0 0 2px var(--victim); }
.mark-victim { color: var(--victim); margin-left: .1rem; }
td sup { font-size: .7em; margin-left: .05rem; }
th.failing-step { color: var(--fail); }
table.timeline td.failing-step { outline: 2px dashed var(--fail); outline-offset: 1px; }
ol.steps li.failing-step { font-weight: 700; color: var(--fail); }
.legend { display: flex; flex-wrap: wrap; gap: .3rem 1.2rem; padding: 0; list-style: none;
  font-size: .9em; }
.legend .swatch { display: inline-block; min-width: 1.8rem; text-align: center;
  font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-weight: 700;
  border: 2px solid transparent; border-radius: .2rem; margin-right: .3rem; }
.sr { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden;
  clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
button.copy { font: inherit; padding: .15rem .6rem; cursor: pointer; }
.copy-status { margin-left: .5rem; color: var(--muted); }
a { color: inherit; } a:focus-visible, button:focus-visible, .scroll:focus-visible {
  outline: 3px solid #0969da; outline-offset: 2px; }
.muted { color: var(--muted); }
table.matrix td { text-align: center; vertical-align: middle; }
table.matrix th[scope=row] { min-width: 22rem; }
tr.differs th[scope=row] { border-left: .3rem solid var(--nt); }
table.matrix td a { text-decoration: underline; }
ul.plain { padding-left: 1.2rem; }
"""

SCRIPT = """
(function () {
  "use strict";
  var buttons = document.querySelectorAll("button.copy");
  for (var i = 0; i < buttons.length; i++) { buttons[i].hidden = false; }
  function select(pre, status) {
    var range = document.createRange();
    range.selectNodeContents(pre);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    var copied = false;
    try { copied = document.execCommand("copy"); } catch (e) { copied = false; }
    status.textContent = copied ? "Copied." : "Selected: press Ctrl+C (or Cmd+C) to copy.";
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button.copy") : null;
    if (!button) { return; }
    var pre = document.getElementById(button.getAttribute("data-copy"));
    var status = document.getElementById(button.getAttribute("data-status"));
    if (!pre || !status) { return; }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(pre.textContent).then(function () {
        status.textContent = "Copied.";
      }, function () { select(pre, status); });
    } else {
      select(pre, status);
    }
  });
})();
"""


def document(title: str, body: str) -> str:
    """A complete page: inline style and script, no external reference."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="policyspec">\n'
        f"<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n"
        f"<body>\n{body}\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )
