"""The project documents its own mathematics (docs/): no citation of an outside document is
left in the code, and every link to a docs page, from a docstring, a comment, the README or
another docs page, reaches an existing file and, when it names one, an existing heading
(anchors as GitHub makes them)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Built from parts so that this file does not match itself.
OUTSIDE_CITATIONS = re.compile(r"\b" + "SP" + r"EC\b|" + "\u00a7")
CODE_DIRS = ("detokgui", "tests", "benchmarks")
MARKDOWN = [ROOT / "README.md", ROOT / "benchmarks" / "README.md",
            *sorted((ROOT / "docs").rglob("*.md"))]
# A docs page named in code or prose, relative to the repository root.
DOCS_MENTION = re.compile(r"(?<![\w/.-])(docs/[\w./-]*?\.md)(#[\w-]+)?")
MD_LINK = re.compile(r"\]\(\s*([^)\s]+)\s*\)|(?:href|src)=\"([^\"]+)\"")
FENCE = re.compile(r"^\s*(```|~~~)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: its text as rendered (code spans and links reduced
    to their text), lower-cased, every character that is not a letter, digit, underscore,
    hyphen or space removed, spaces turned into hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a markdown file; a repeated anchor gets -1, -2, ... as on
    GitHub. Lines inside fenced code blocks are not headings."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = github_anchor(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _code_files():
    for d in CODE_DIRS:
        for p in sorted((ROOT / d).rglob("*")):
            text = p.suffix in (".py", ".md", ".txt", ".toml", ".cfg", ".ini")
            if p.is_file() and text and "__pycache__" not in p.parts:
                yield p


def _check_target(target: Path, anchor: str | None, where: str, problems: list[str]) -> None:
    if not target.is_file():
        problems.append(f"{where}: {target.relative_to(ROOT)} does not exist")
    elif anchor and target.suffix == ".md" and anchor not in anchors(target):
        problems.append(f"{where}: {target.relative_to(ROOT)} has no heading #{anchor}")


def test_anchor_rules():
    assert github_anchor("A2 Top-k affinity") == "a2-top-k-affinity"
    assert github_anchor("Rank-d' factors") == "rank-d-factors"
    assert github_anchor("The text side (C1-C5) and the OV circuit") == \
        "the-text-side-c1-c5-and-the-ov-circuit"
    assert github_anchor("`T_ee` and [links](x.md)") == "t_ee-and-links"
    assert github_anchor("Views and CSV columns") == "views-and-csv-columns"


def test_repeated_and_fenced_headings(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# Notes\n\n## Notes\n\n```\n# not a heading\n```\n### Notes\n",
                    encoding="utf-8")
    assert anchors(page) == {"notes", "notes-1", "notes-2"}


def test_no_citation_of_an_outside_document():
    hits = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
            for p in [*_code_files(), ROOT / "README.md"]
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if OUTSIDE_CITATIONS.search(line)]
    assert not hits, "cite a docs/ page instead:\n" + "\n".join(hits)


def test_docs_mentions_in_code_exist():
    problems: list[str] = []
    count = 0
    for p in [*_code_files(), ROOT / "README.md"]:
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            for m in DOCS_MENTION.finditer(line):
                count += 1
                anchor = m.group(2)[1:] if m.group(2) else None
                _check_target(ROOT / m.group(1), anchor, f"{p.relative_to(ROOT)}:{n}", problems)
    assert not problems, "\n".join(problems)
    assert count >= 50  # the core modules cite the docs throughout


@pytest.mark.parametrize("page", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_markdown_links_exist(page):
    problems: list[str] = []
    fenced = False
    for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
        if fenced:
            continue
        for m in MD_LINK.finditer(line):
            link = m.group(1) or m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # http:, https:, mailto: ...
                continue
            path, _, anchor = link.partition("#")
            target = (page.parent / path).resolve() if path else page
            _check_target(target, anchor or None, f"{page.relative_to(ROOT)}:{n}", problems)
    assert not problems, "\n".join(problems)


def test_every_math_page_is_indexed():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    for page in sorted((ROOT / "docs" / "math").glob("*.md")):
        assert f"(math/{page.name})" in index, f"docs/README.md does not link {page.name}"
