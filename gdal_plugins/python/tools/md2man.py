#!/usr/bin/env python3
"""md2man: man pages (roff, section 1) from the docs/gdal_*.md program pages.

The pages follow GDAL's program-page style, so a small converter suffices:
``# name`` and its first paragraph give NAME; ``##``/``###`` headings become
.SH/.SS; fenced code blocks .nf/.fi; definition items (a line of inline code,
then lines starting ": ") become .TP; "- " items become bullets; tables become
tbl(1) tables (the page starts with the '\\" t line that tells man(1) to run
tbl; "\\|" in a cell is a literal bar, as in GitHub markdown); inline code is
bold, **bold** bold, *em* italic, and [text](link) keeps the text.  Characters
outside ASCII are written as groff's \\[uXXXX] escapes, so the page renders
the same whether or not the formatter is told the input encoding.

    md2man.py --out <dir> [--version 0.1.0] [--date 2026-11-21] docs/gdal_*.md

Writes <dir>/<name>.1 for each page.  MIT licence.
"""
import argparse
import re
import sys
from pathlib import Path


def esc(text):
    """Escapes roff specials in running text (inline markup handled after)."""
    text = text.replace("\\", "\\e")
    text = text.replace("-", "\\-")
    return text


def inline(text):
    """Markdown inline markup -> roff font changes."""
    out = []
    # split on code spans first: nothing inside them is markup
    parts = re.split(r"(`[^`]*`)", text)
    for p in parts:
        if p.startswith("`") and p.endswith("`") and len(p) >= 2:
            out.append("\\fB" + esc(p[1:-1]) + "\\fR")
            continue
        p = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", p)       # links keep their text
        p = esc(p)
        p = re.sub(r"\*\*([^*]+)\*\*", r"\\fB\1\\fR", p)
        p = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"\\fI\1\\fR", p)
        p = re.sub(r"(?<![\w_])_([^_\s][^_]*)_(?![\w_])", r"\\fI\1\\fR", p)
        out.append(p)
    s = "".join(out)
    return s


def ascii_roff(text):
    """Non-ASCII characters -> \\[uXXXX] (groff reads its input as Latin-1
    unless told otherwise: UTF-8 formulas came out as mojibake)."""
    return "".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in text)


def table_cells(row):
    """Cells of a markdown table row: split on bars not escaped as \\|."""
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)]


def table(rows):
    """A markdown table -> a tbl(1) table with a bold heading row. Columns of
    short cells keep their natural width; a column with a long cell gets text
    blocks in an expanding column, so it wraps inside the column, unjustified."""
    rows = [r for r in rows if not all(re.fullmatch(r":?-+:?", c) for c in r if c)]
    ncol = max(len(r) for r in rows)
    rows = [r + [""] * (ncol - len(r)) for r in rows]
    text = "".join("".join(r) for r in rows)
    tab = next(c for c in "@#^~;%" if c not in text)
    wide = [max(len(r[j]) for r in rows) > 24 for j in range(ncol)]
    out = [".PP", ".na", ".TS", f"tab({tab});", " ".join(["lb"] * ncol),
           " ".join("lx" if w else "l" for w in wide) + "."]
    for k, r in enumerate(rows):
        cells = []
        for j, c in enumerate(r):
            body = inline(c) or "\\&"
            cells.append("T{\n" + line_safe(body) + "\nT}" if wide[j] else body)
        out.append(tab.join(cells))
        if k == 0:
            out.append("_")
    out += [".TE", ".ad"]
    return out


def line_safe(s):
    """A roff text line must not start with . or '."""
    return "\\&" + s if s[:1] in (".", "'") else s


def convert(md, name, version, date):
    lines = md.splitlines()
    out = ["'\\\" t", f'.TH {name.upper()} 1 "{date}" "geogpu {version}" "geogpu manual"']
    i = 0
    # title and summary -> NAME
    while i < len(lines) and not lines[i].startswith("# "):
        i += 1
    title = lines[i][2:].strip() if i < len(lines) else name
    i += 1
    summary = []
    while i < len(lines) and not lines[i].strip():
        i += 1
    while i < len(lines) and lines[i].strip() and not lines[i].startswith("#"):
        summary.append(lines[i].strip())
        i += 1
    out.append(".SH NAME")
    plain = re.sub(r"`([^`]*)`", r"\1", " ".join(summary))
    plain = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", plain).replace("**", "")
    out.append(f"{esc(title)} \\- {esc(plain)}")

    para = []

    def flush():
        if para:
            out.append(".PP")
            out.append(line_safe(inline(" ".join(para))))
            para.clear()

    while i < len(lines):
        ln = lines[i]
        s = ln.strip()
        if s.startswith("```"):
            flush()
            out += [".PP", ".RS 4", ".nf"]
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                out.append(line_safe(esc(lines[i])))
                i += 1
            out += [".fi", ".RE"]
            i += 1
            continue
        if s.startswith("## ") or s.startswith("### "):
            flush()
            level = 2 if s.startswith("## ") else 3
            head = s[level + 1:].strip()
            out.append((".SH " if level == 2 else ".SS ") + f'"{esc(head.upper() if level == 2 else head)}"')
            i += 1
            continue
        if not s:
            flush()
            i += 1
            continue
        # definition item: a term line followed by ": description"
        if i + 1 < len(lines) and lines[i + 1].startswith(": "):
            flush()
            out.append(".TP")
            out.append(line_safe(inline(s)))
            desc = [lines[i + 1][2:].strip()]
            i += 2
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                desc.append(lines[i].strip())
                i += 1
            out.append(line_safe(inline(" ".join(desc))))
            continue
        if re.match(r"^\s*[-*] ", ln):
            flush()
            indent = len(ln) - len(ln.lstrip())
            item = [re.sub(r"^\s*[-*] ", "", ln).strip()]
            i += 1
            while i < len(lines) and lines[i].strip() and not re.match(r"^\s*[-*] ", lines[i]) \
                    and lines[i].startswith(" "):
                item.append(lines[i].strip())
                i += 1
            out.append(f".IP \\(bu {4 + indent}")
            out.append(line_safe(inline(" ".join(item))))
            continue
        if re.match(r"^\s*\d+\. ", ln):
            flush()
            num = re.match(r"^\s*(\d+)\. ", ln).group(1)
            item = [re.sub(r"^\s*\d+\. ", "", ln).strip()]
            i += 1
            while i < len(lines) and lines[i].strip() and lines[i].startswith(" ") \
                    and not re.match(r"^\s*\d+\. ", lines[i]):
                item.append(lines[i].strip())
                i += 1
            out.append(f".IP {num}. 4")
            out.append(line_safe(inline(" ".join(item))))
            continue
        if s.startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(table_cells(lines[i]))
                i += 1
            out += table(rows)
            continue
        para.append(s)
        i += 1
    flush()
    return ascii_roff("\n".join(out) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--version", default="0.1.0")
    ap.add_argument("--date", default="2026-11-21")
    ap.add_argument("pages", nargs="+")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    for page in a.pages:
        p = Path(page)
        name = p.stem
        roff = convert(p.read_text(encoding="utf-8"), name, a.version, a.date)
        dst = out / f"{name}.1"
        tmp = dst.with_name(f".{dst.name}.tmp")
        tmp.write_text(roff, encoding="utf-8")
        tmp.replace(dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
