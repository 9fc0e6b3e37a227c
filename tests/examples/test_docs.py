"""The documentation is tested: code shown from a file (``<!-- file: PATH -->`` before the block)
must equal that file, which runs in this suite; every other Python block runs, in order, page by
page, and a ``text`` block after "prints" must be what the blocks before it printed."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").rglob("*.md"))
BLOCK = re.compile(r"(<!-- file: (?P<file>\S+) -->\n)?```(?P<lang>\w*)\n(?P<code>.*?)```"
                   r"|(?P<prints>\nprints\n)", re.S)


def test_there_are_pages() -> None:
    assert {p.name for p in PAGES} >= {"index.md", "fixtures.md", "assertions.md", "routing.md",
                                       "time.md", "faults.md", "conformance.md", "cli.md"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT / "docs")))
def test_page(page: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    printed = ""
    expect_print = False
    for match in BLOCK.finditer(page.read_text()):
        if match["prints"]:
            expect_print = True
            continue
        code, lang = match["code"], match["lang"]
        if match["file"]:
            assert (ROOT / match["file"]).read_text() == code, f"{match['file']} differs from {page}"
        elif lang == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, str(page), "exec"), namespace)
            printed = out.getvalue()
        elif lang == "text" and expect_print:
            assert printed == code, f"{page.name}: the printed output differs"
        expect_print = False
    mkdocs = (ROOT / "mkdocs.yml").read_text()
    assert str(page.relative_to(ROOT / "docs")) in mkdocs, f"{page} is not in mkdocs.yml's nav"
