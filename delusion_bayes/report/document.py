"""The supplement as a list of blocks, rendered to Markdown and to one self-contained HTML file.

The HTML needs no network and no JavaScript: figures are base64 ``data:`` URIs, the CSS is inline
and a Content-Security-Policy forbids every outside resource (a stray one fails the browser test).
"""

from __future__ import annotations

import base64
import html
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from delusion_bayes.report.table import ReportTable, md_escape, md_text

#: note kinds and their labels
NOTE_LABELS = {
    "info": "Note",
    "notrun": "Not run",
    "warning": "Warning",
    "error": "Error",
    "ok": "Passed",
}


@dataclass
class Paragraph:
    text: str


@dataclass
class Note:
    """A boxed remark: ``notrun`` (a stage or file absent), ``warning`` (failed diagnostics), ..."""

    kind: str
    text: str
    title: str | None = None


@dataclass
class TableBlock:
    table: ReportTable
    #: ``{label: run-relative path}`` of the files written for this table
    links: dict[str, str] = field(default_factory=dict)


@dataclass
class FigureBlock:
    """A figure: ``png`` (absolute path) embedded; ``links`` to the other formats."""

    title: str
    caption: str
    png: Path
    rel_png: str
    links: dict[str, str] = field(default_factory=dict)


@dataclass
class Code:
    text: str
    lang: str = ""


@dataclass
class KeyValues:
    rows: list[tuple[str, str]]


@dataclass
class Bullets:
    items: list[str]


@dataclass
class FileList:
    rows: list[tuple[str, str]]  # (run-relative path, description)


Block = Paragraph | Note | TableBlock | FigureBlock | Code | KeyValues | FileList | Bullets


@dataclass
class Section:
    id: str
    title: str
    blocks: list[Block] = field(default_factory=list)
    level: int = 2

    def add(self, *blocks: Block) -> Section:
        self.blocks.extend(blocks)
        return self


@dataclass
class Document:
    title: str
    subtitle: str = ""
    sections: list[Section] = field(default_factory=list)

    def notes(self, kind: str) -> list[Note]:
        return [
            b for s in self.sections for b in s.blocks if isinstance(b, Note) and b.kind == kind
        ]

    def figures(self) -> list[FigureBlock]:
        return [b for s in self.sections for b in s.blocks if isinstance(b, FigureBlock)]

    def tables(self) -> list[TableBlock]:
        return [b for s in self.sections for b in s.blocks if isinstance(b, TableBlock)]


# Markdown ------------------------------------------------------------------------------------
def to_markdown(doc: Document) -> str:
    """The document as Markdown; figure and file links are relative to the run directory."""
    out = [f"# {md_text(doc.title)}", ""]
    if doc.subtitle:
        out += [md_text(doc.subtitle), ""]
    out += ["## Contents", ""]
    for s in doc.sections:
        indent = "  " * (s.level - 2)
        out.append(f"{indent}- [{md_text(s.title)}](#{html.escape(s.id)})")
    out.append("")
    for s in doc.sections:
        out += [f'{"#" * s.level} {md_text(s.title)} <a id="{html.escape(s.id)}"></a>', ""]
        for b in s.blocks:
            out += [_md_block(b), ""]
    return "\n".join(out).rstrip() + "\n"


def _md_block(b: Block) -> str:
    # every text from the run (model, rater, group names in prose, captions, notes) goes
    # through md_text: Markdown renders raw HTML, the HTML supplement escapes it
    if isinstance(b, Paragraph):
        return md_text(b.text)
    if isinstance(b, Note):
        label = md_text(b.title or NOTE_LABELS.get(b.kind, b.kind))
        mark = "⚠ " if b.kind in ("warning", "error") else ""
        body = f"{mark}**{label}.** {md_text(b.text)}"
        # a line break of the note stays one (two trailing spaces) in the rendered Markdown
        return "  \n".join(f"> {line}" for line in body.splitlines())
    if isinstance(b, TableBlock):
        t = b.table
        text = f"**{md_text(t.title)}**\n\n{t.to_markdown()}"
        extra = [md_text(n) for n in t.notes]
        if t.sources:
            extra.append(f"Source: {', '.join(f'`{s}`' for s in t.sources)}.")
        if b.links:
            extra.append("Files: " + _md_links(b.links) + ".")
        if extra:
            text += "\n\n" + " ".join(extra)
        return text
    if isinstance(b, FigureBlock):
        title = md_text(b.title)
        text = f"![{md_escape(b.title)}]({b.rel_png})\n\n**{title}** {md_text(b.caption)}"
        if b.links:
            text += " (" + _md_links(b.links) + ")"
        return text
    if isinstance(b, Code):
        return f"```{b.lang}\n{b.text.rstrip()}\n```"
    if isinstance(b, KeyValues):
        rows = [f"| {md_escape(k)} | {md_escape(v)} |" for k, v in b.rows]
        return "\n".join(["| | |", "|:---|:---|", *rows])
    if isinstance(b, Bullets):
        return "\n".join(f"- {md_text(x)}" for x in b.items)
    if isinstance(b, FileList):
        return "\n".join(
            f"- [`{p}`]({_md_url(p)})" + (f": {md_text(d)}" if d else "") for p, d in b.rows
        )
    raise TypeError(f"unknown block {type(b).__name__}")


def _md_url(url: str) -> str:
    """A link target that cannot close the link or open markup (spaces, parentheses, <>)."""
    from urllib.parse import quote

    return quote(str(url), safe="/#:.-_~%")


def _md_links(links: dict[str, str]) -> str:
    return ", ".join(f"[{md_text(k)}]({_md_url(v)})" for k, v in links.items())


# HTML ----------------------------------------------------------------------------------------
CSS = """
:root { --ink:#1a1a1a; --muted:#5c5c5c; --rule:#d0d0d0; --bg:#ffffff; --soft:#f5f5f5; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font: 15px/1.55 "DejaVu Serif", Georgia, "Times New Roman", serif; }
main { max-width: 1120px; margin: 0 auto; padding: 28px 32px 64px; }
h1 { font-size: 1.9em; margin: .2em 0 .1em; line-height:1.2; }
.subtitle { color: var(--muted); margin: 0 0 1.2em; }
h2 { font-size: 1.35em; margin: 2.2em 0 .6em; padding-bottom:.2em; border-bottom: 2px solid var(--ink); }
h3 { font-size: 1.1em; margin: 1.6em 0 .5em; }
h2, h3 { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; }
nav.toc { background: var(--soft); border:1px solid var(--rule); padding: 10px 18px; margin: 1em 0 2em;
  font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; font-size: .9em; columns: 2; }
nav.toc ul { margin: 0; padding-left: 1.1em; } nav.toc li.l3 { margin-left: 1.2em; list-style: circle; }
a { color: #1f3f77; }
/* tables fit the column: headers wrap (after "_" too), an interval stays on one line but may go
   below its estimate; a table that still cannot fit scrolls inside its wrapper, never the page */
.table-wrap { overflow-x: auto; max-width: 100%; margin: 1em 0 .3em; }
table { border-collapse: collapse; font: 12.5px/1.35 "DejaVu Sans", Helvetica, Arial, sans-serif; }
th { overflow-wrap: break-word; hyphens: manual; }
td { overflow-wrap: break-word; }
caption { caption-side: top; text-align: left; font-weight: bold; padding: 0 0 .5em;
  font-family: "DejaVu Serif", Georgia, serif; font-size: 14px; }
thead tr:first-child th { border-top: 2px solid var(--ink); }
thead tr:last-child th { border-bottom: 1px solid var(--ink); }
th.group { border-bottom: 1px solid var(--muted); }
tbody tr:last-child td { border-bottom: 2px solid var(--ink); }
th, td { padding: 3px 6px; vertical-align: top; }
.dense table { font-size: 12px; } .dense th, .dense td { padding: 3px 5px; }
th { text-align: left; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; overflow-wrap: normal; }
tbody tr:nth-child(even) td { background: #fafafa; }
.tnote, .files { font-size: .85em; color: var(--muted); margin: .2em 0 1.4em; }
figure { margin: 1.4em 0 2em; }
figure img { max-width: 100%; height: auto; display: block; border: 1px solid #eeeeee; }
figcaption { font-size: .9em; margin-top: .4em; }
.note { border-left: 5px solid #8a8a8a; background: var(--soft); padding: 8px 14px; margin: 1em 0; }
.note .label { font-weight: bold; font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; }
.note.notrun { border-left-color: #9a9a9a; color: #3a3a3a; }
.note.warning, .note.error { border: 2px solid #8a2a00; border-left-width: 8px;
  background: #fff1e6; color: #3b1200; }
.note.ok { border-left-color: #2b6b2b; background: #f1f8f1; }
pre { background: var(--soft); border: 1px solid var(--rule); padding: 10px 12px; overflow-x: auto;
  font: 12px/1.4 "DejaVu Sans Mono", Menlo, Consolas, monospace; }
dl.kv { display: grid; grid-template-columns: max-content auto; gap: 2px 18px; margin: 1em 0; }
dl.kv dt { font-weight: 600; } dl.kv dd { margin: 0; font-family: "DejaVu Sans Mono", monospace;
  font-size: .9em; word-break: break-all; }
ul.files li code { font-size: .9em; }
@media print { main { max-width: none; padding: 0; } nav.toc { display: none; }
  figure, .table-wrap, .note { break-inside: avoid; } h2 { break-before: auto; }
  /* paper cannot scroll: the tables are set smaller to fit the A4 text width (~718 px) */
  table { font-size: 9.5px; } .dense table { font-size: 8.5px; }
  th, td { padding: 2px 4px; } .dense th, .dense td { padding: 2px 3px; } }
"""  # noqa: E501 (CSS text goes into the HTML byte for byte)

#: no outside resource of any kind: images only as data: URIs, CSS only inline, no scripts
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def png_size_dpi(path: Path, default_dpi: float = 150.0) -> tuple[int, float] | None:
    """Pixel width and resolution (dots per inch) of a PNG, None when it is not a PNG (its
    ``IHDR`` width and the ``pHYs`` resolution matplotlib writes; no imaging library needed)."""
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    width = int.from_bytes(data[16:20], "big")
    dpi = default_dpi
    pos = 8
    while pos + 8 <= len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        ctype = data[pos + 4 : pos + 8]
        if ctype == b"pHYs" and length == 9:
            ppu = int.from_bytes(data[pos + 8 : pos + 12], "big")
            if data[pos + 16] == 1 and ppu > 0:  # unit: metre
                dpi = ppu * 0.0254
            break
        if ctype in (b"IDAT", b"IEND"):
            break
        pos += 12 + length
    return width, dpi


def png_css_width(path: Path, default_dpi: float = 150.0) -> int | None:
    """Width in CSS pixels (96 per inch) at which a PNG shows at its physical size."""
    found = png_size_dpi(path, default_dpi)
    return None if found is None else round(found[0] * 96 / found[1])


@dataclass(frozen=True)
class Embed:
    """How figures are embedded in the HTML (the files on disk are never changed): ``colors``,
    a palette of at most this many colours (0: the PNG as written; why:
    ``docs/dev/design-notes.md#reportdocumentpy``); ``max_dpi``, a PNG of higher resolution is
    scaled down to it (0: never). The figure keeps its physical size on the page."""

    colors: int = 0
    max_dpi: float = 0


def embedded_png(path: Path, embed: Embed = Embed()) -> bytes:
    """The bytes of ``path`` as embedded in the HTML: reduced as ``embed`` says, or as written
    when that is not smaller (or the image cannot be read)."""
    raw = Path(path).read_bytes()
    if not (embed.colors or embed.max_dpi):
        return raw
    try:
        from PIL import Image

        with Image.open(io.BytesIO(raw)) as im:
            im.load()
            dpi = (png_size_dpi(path) or (0, 150.0))[1]
            img = im.convert("RGBA")
            if img.getextrema()[3][0] < 255:  # transparency: flatten onto the white page
                white = Image.new("RGBA", img.size, (255, 255, 255, 255))
                img = Image.alpha_composite(white, img)
            img = img.convert("RGB")
            if embed.max_dpi and dpi > embed.max_dpi * 1.01:
                f = embed.max_dpi / dpi
                img = img.resize(
                    (max(1, round(img.width * f)), max(1, round(img.height * f))),
                    Image.Resampling.LANCZOS,
                )
                dpi = embed.max_dpi
            if embed.colors:
                img = img.quantize(
                    min(embed.colors, 256),
                    method=Image.Quantize.MEDIANCUT,
                    dither=Image.Dither.NONE,
                )
            buf = io.BytesIO()
            img.save(buf, "PNG", optimize=True, dpi=(dpi, dpi))
            out = buf.getvalue()
    except Exception:  # noqa: BLE001 - an unreadable PNG is embedded as it is
        return raw
    return out if len(out) < len(raw) else raw


def to_html(doc: Document, embed: Embed = Embed()) -> str:
    """The document as one self-contained HTML page (figures embedded as base64 PNG, reduced as
    ``embed`` says)."""
    esc = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(doc.title)}</title>",
        f"<style>{CSS}</style>",
        "</head><body><main>",
        f"<h1>{esc(doc.title)}</h1>",
    ]
    if doc.subtitle:
        parts.append(f'<p class="subtitle">{_inline(doc.subtitle)}</p>')
    parts.append('<nav class="toc"><ul>')
    for s in doc.sections:
        parts.append(f'<li class="l{s.level}"><a href="#{esc(s.id)}">{esc(s.title)}</a></li>')
    parts.append("</ul></nav>")
    for s in doc.sections:
        parts.append(f'<section id="{esc(s.id)}"><h{s.level}>{esc(s.title)}</h{s.level}>')
        parts += [_html_block(b, embed) for b in s.blocks]
        parts.append("</section>")
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


_CODE_SPAN = re.compile(r"`([^`]+)`")


def _inline(text: str) -> str:
    """Escape ``text`` and turn ```code``` spans into ``<code>``."""
    return _CODE_SPAN.sub(lambda m: f"<code>{m.group(1)}</code>", html.escape(text))


def _links(links: dict[str, str]) -> str:
    return ", ".join(f'<a href="{html.escape(v)}">{html.escape(k)}</a>' for k, v in links.items())


def _html_block(b: Block, embed: Embed = Embed()) -> str:
    esc = html.escape
    if isinstance(b, Paragraph):
        return "".join(f"<p>{_inline(p)}</p>" for p in b.text.split("\n\n"))
    if isinstance(b, Note):
        label = b.title or NOTE_LABELS.get(b.kind, b.kind)
        mark = "⚠ " if b.kind in ("warning", "error") else ""
        role = ' role="alert"' if b.kind in ("warning", "error") else ""
        body = "<br>".join(_inline(x) for x in b.text.splitlines())
        return (
            f'<div class="note {esc(b.kind)}"{role}><span class="label">{mark}{esc(label)}.'
            f"</span> {body}</div>"
        )
    if isinstance(b, TableBlock):
        t = b.table
        out = t.to_html()
        extra = [_inline(n) for n in t.notes]
        if t.sources:
            extra.append("Source: " + ", ".join(f"<code>{esc(s)}</code>" for s in t.sources) + ".")
        if b.links:
            extra.append("Files: " + _links(b.links) + ".")
        if extra:
            out += f'<p class="tnote">{" ".join(extra)}</p>'
        return out
    if isinstance(b, FigureBlock):
        links = f" ({_links(b.links)})" if b.links else ""
        width = png_css_width(b.png)
        size = f' style="width:{width}px"' if width else ""
        uri = "data:image/png;base64," + base64.b64encode(embedded_png(b.png, embed)).decode(
            "ascii"
        )
        return (
            f'<figure><img src="{uri}" alt="{esc(b.title)}"{size}><figcaption><strong>'
            f"{esc(b.title)}</strong> {_inline(b.caption)}{links}</figcaption></figure>"
        )
    if isinstance(b, Code):
        return f"<pre><code>{esc(b.text.rstrip())}</code></pre>"
    if isinstance(b, KeyValues):
        rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in b.rows)
        return f'<dl class="kv">{rows}</dl>'
    if isinstance(b, Bullets):
        return '<ul class="bullets">' + "".join(f"<li>{_inline(x)}</li>" for x in b.items) + "</ul>"
    if isinstance(b, FileList):
        items = "".join(
            f'<li><a href="{esc(p)}"><code>{esc(p)}</code></a>'
            + (f": {esc(d)}" if d else "")
            + "</li>"
            for p, d in b.rows
        )
        return f'<ul class="files">{items}</ul>'
    raise TypeError(f"unknown block {type(b).__name__}")
