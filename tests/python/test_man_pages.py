"""The man pages generated from docs/gdal_*.md (gdal_plugins/python/tools/md2man.py)
render as text: tables as aligned columns, formulas with their bars and symbols,
no markdown table syntax and no roff or encoding garbage.

The pages are generated here from the docs (the build does the same), and
formatted with groff as man(1) does (tbl for the tables)."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MD2MAN = REPO / "gdal_plugins" / "python" / "tools" / "md2man.py"
PAGES = sorted((REPO / "docs").glob("gdal_*.md"))

pytestmark = pytest.mark.skipif(shutil.which("groff") is None, reason="groff not installed")


@pytest.fixture(scope="module")
def man_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("man1")
    subprocess.run([sys.executable, str(MD2MAN), "--out", str(out), *map(str, PAGES)],
                   check=True)
    return out


def render(page):
    """The page as man(1) shows it on an 80-column UTF-8 terminal, and groff's complaints."""
    p = subprocess.run(["groff", "-t", "-man", "-Tutf8", "-rLL=80n", str(page)],
                       capture_output=True)
    assert p.returncode == 0, p.stderr.decode()
    text = re.sub(r".\x08", "", p.stdout.decode("utf-8"))   # overstrike bold/underline
    return text, p.stderr.decode()


@pytest.mark.parametrize("md", PAGES, ids=lambda p: p.stem)
def test_page_renders_clean(man_dir, md):
    roff = (man_dir / f"{md.stem}.1").read_text(encoding="ascii")   # ASCII only
    assert roff.startswith("'\\\" t\n"), "tbl preprocessor line missing"
    text, err = render(man_dir / f"{md.stem}.1")
    assert not [e for e in err.splitlines() if "error" in e.lower()], err
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        # markdown table syntax: rows between bars, the |---|---| rule, escaped bars
        assert not (s.startswith("|") and s.endswith("|") and s.count("|") >= 3), (n, line)
        assert not re.search(r"\|\s*:?-{3,}:?\s*\|", s), (n, line)
        assert "\\|" not in s, (n, line)
        # roff escapes that leaked (\fB, \e, \-, \[u..]) and LaTeX
        assert not re.search(r"\\(f[BIRP]|e|-|\[u[0-9A-F]+\]|frac|sqrt|sum|cdot)", s), (n, line)
        # UTF-8 read as Latin-1 (mojibake of ·, ², ×, Σ, −)
        assert not re.search("[ÂÃÎâ][\u0080-\u00ff]", s), (n, line)
    # every table heading row of the page comes out as one line of its cells
    md_text = md.read_text(encoding="utf-8").splitlines()
    for k, ln in enumerate(md_text[:-1]):
        if ln.startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", md_text[k + 1].strip()):
            cells = [c.strip().strip("`*") for c in ln.strip().strip("|").split("|")]
            if all(len(c) < 12 for c in cells):
                heading = re.compile(r"\s+".join(re.escape(c) for c in cells))
                assert any(heading.search(t) for t in text.splitlines()), (md.stem, cells)


def test_coherence_formula(man_dir):
    """gdal_insar's product table: the coherence formula whole, in its row."""
    text, _ = render(man_dir / "gdal_insar.1")
    flat = re.sub(r"\s+", " ", text)
    assert "|Σ s1 · conj(s2)| / sqrt(Σ|s1|² · Σ|s2|²)" in flat
    assert "sqrt(sqrt(Σ|s1|²/n · Σ|s2|²/n))" in flat
    row = next(ln for ln in text.splitlines() if ln.strip().startswith("coherence"))
    assert re.match(r"\s*coherence\s+Float32\s+\|Σ s1", row), row
