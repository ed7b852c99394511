"""`detokgui export --help` and `detokgui export WHAT --help` (issue 40, point 7): every
column a command's CSV really has (read from the file it writes on a small model) is
named whole in its help, in `export --help`'s list, at any terminal width; help lines
are broken at spaces and commas, never inside a name; every command that writes per-head
rows takes --head, checked against the model."""

from __future__ import annotations

import contextlib
import csv
import io
import re

import pytest

from detokgui.cli import help_width, wrap_help
from detokgui.cli import main as cli_main
from detokgui.cli.common import EXPORTS
from detokgui.core.model.sources.demo import write_random_checkpoint

WIDTHS = (50, 80, 120)


def help_text(capsys, monkeypatch, width: int, *what: str) -> str:
    """What `detokgui export [WHAT] --help` prints in a terminal `width` columns wide."""
    monkeypatch.setenv("COLUMNS", str(width))
    with pytest.raises(SystemExit) as e:
        cli_main([*what, "--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


def words(text: str) -> set[str]:
    return set(re.split(r"[\s,:;()\[\]{}|'\"]+", text))


#: Each command (and variant) with arguments that run in a second on the 400-token model;
#: {m} is the model folder, {c} the corpus. `figures` writes a folder of figures, not one
#: CSV; `series` and `compare` take their models otherwise (below).
RUNS = {
    "terms": ["--text", " the house"],
    "sigma": [],
    "topk": ["--query", " the", "--k", "2"],
    "topk queries": ["--direction", "queries", "--key", " the", "--k", "2"],
    "heatmap": ["--tokens", " the house"],
    "bias": ["--position", "5"],
    "neurons": [],
    "counts": ["--corpus", "{c}"],
    "counts bigrams": ["--corpus", "{c}", "--bigrams"],
    "stats": [],
    "auroc": ["--corpus", "{c}"],
    "frequency": ["--corpus", "{c}"],
    "neighbours": ["--token", " the", "--k", "3"],
    "sentence": ["--text", " the house"],
    "empirical": ["--corpus", "{c}", "--position", "5", "--max-texts", "4"],
    "kl": ["--corpus", "{c}", "--max-texts", "2"],
    "neuron": ["--neuron", "0", "--heads", "0", "--k", "2"],
    "sinks": ["--texts", "2", "--length", "12"],
    "sinks per-head": ["--corpus", "{c}", "--max-texts", "2", "--per", "head"],
}


@pytest.fixture(scope="module")
def columns(small_vocab_ckpt, small_corpus, tmp_path_factory):
    """Command -> the columns of every CSV it writes, read from real runs; "NAME --FLAG":
    the columns of a second file, named where its flag is described."""
    tmp = tmp_path_factory.mktemp("help-runs")

    def run(name, args, out="out.csv"):
        path = tmp / out
        with contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()) as err:
            rc = cli_main([name, *args, "--out", str(path)])
        assert rc == 0, err.getvalue()
        return header(path)

    found: dict[str, set[str]] = {}
    for key, args in RUNS.items():
        name = key.split()[0]
        args = [a.format(c=small_corpus) for a in args]
        found.setdefault(name, set()).update(run(name, ["--model", str(small_vocab_ckpt), *args]))
    found["compare"] = set(run("compare", ["--model", str(small_vocab_ckpt), "--compare",
                                           str(small_vocab_ckpt), "--queries", "8"],
                               out="cmp.csv"))
    found["compare --metrics-out"] = set(header(tmp / "cmp-metrics.csv"))
    two = write_random_checkpoint(tmp / "two-layers", n_embd=32, n_head=4, n_layer=2,
                                  n_positions=64, seed=8)
    found["composition"] = set(run("composition", ["--model", str(two), "--behaviour",
                                                   str(tmp / "beh.csv"), "--sequences", "2",
                                                   "--length", "4"], out="comp.csv"))
    found["composition --behaviour"] = set(header(tmp / "beh.csv"))
    found["series"] = set(run("series", ["--models", str(small_vocab_ckpt),
                                         str(small_vocab_ckpt), "--queries", "8",
                                         "--workers", "1"]))
    return found


def header(path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as f:
        return next(csv.reader(f))


def test_every_command_is_run_here(columns):
    assert {name.split()[0] for name in columns} | {"figures", "report"} == set(EXPORTS)


def listing_entry(text: str, name: str) -> str:
    """The lines of `export --help`'s command list that describe `name`."""
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if re.match(rf"  {name}(\s|$)", line))
    end = next((k for k in range(start + 1, len(lines)) if not lines[k].startswith("    ")),
               len(lines))
    return "\n".join(lines[start:end])


def description(text: str) -> str:
    """The paragraph of `export NAME --help` after its usage: what the command writes."""
    return text.split("\n\n")[1]


@pytest.mark.parametrize("width", WIDTHS)
def test_every_column_is_named_whole_in_the_help(columns, capsys, monkeypatch, width):
    listing = help_text(capsys, monkeypatch, width)
    for name, cols in columns.items():
        if " " in name:  # a second file: its columns where its option is described
            name, flag = name.split()
            text = help_text(capsys, monkeypatch, width, name)
            own = words(text[text.index(f"  {flag}"):])
            assert not cols - own, f"export {name} {flag} at {width} columns lacks {cols - own}"
            continue
        own = words(description(help_text(capsys, monkeypatch, width, name)))
        assert not cols - own, f"export {name} --help at {width} columns lacks {cols - own}"
        entry = words(listing_entry(listing, name))
        assert not cols - entry, \
            f"export --help at {width} columns lacks {name}'s {cols - entry}"
    assert all(len(line) <= width - 2 for line in listing.splitlines()), listing


def test_topk_help_shows_its_column_list_unbroken(capsys, monkeypatch):
    lines = help_text(capsys, monkeypatch, 80, "topk").splitlines()
    assert "query_id,query_token,head,rank,key_id,key_token,score" in lines


def test_help_lines_break_at_spaces_and_commas():
    names = ["head", "j", "t_p", "t_pp", "total", "softmax", "t_pp_lo", "t_pp_hi", "t_p_lo",
             "t_p_hi", "convention", "sigma", "temperature"]
    text = "positional bias at query position i: " + ",".join(names)
    for width in range(12, 90):
        lines = wrap_help(text, width)
        assert all(len(line) <= width for line in lines), (width, lines)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")  # nothing lost
        assert set(names) <= words("\n".join(lines)), (width, lines)  # no name cut
    assert wrap_help("a " + "x" * 30, 10) == ["a", "x" * 30]  # a name longer than a line
    assert wrap_help("", 10) == []


def test_help_width_follows_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "77")
    assert help_width() == 75


# --------------------------------------------------------------------------- --head


PER_HEAD = {
    "terms": ["--text", " the house"],
    "bias": ["--position", "5"],
    "sentence": ["--text", " the house"],
    "empirical": ["--corpus", "{c}", "--position", "5", "--max-texts", "4"],
    "kl": ["--corpus", "{c}", "--max-texts", "2"],
    "sinks": ["--texts", "2", "--length", "12"],
    "topk": ["--query", " the", "--k", "2"],
    "stats": [],
}


def read_rows(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def same_rows(a: list[dict], b: list[dict]) -> bool:
    """Equal rows, numbers within float32 rounding (the head's rows of a run of all heads
    against a run of that head alone)."""
    def close(x, y):
        try:
            return abs(float(x) - float(y)) <= 1e-5 * max(1.0, abs(float(y)))
        except ValueError:
            return x == y
    return len(a) == len(b) and all(r.keys() == s.keys() and all(close(r[k], s[k]) for k in r)
                                    for r, s in zip(a, b))


@pytest.mark.parametrize("name", PER_HEAD)
def test_per_head_exports_take_head(name, small_vocab_ckpt, small_corpus, tmp_path, capsys):
    args = ["--model", str(small_vocab_ckpt), *(a.format(c=small_corpus) for a in PER_HEAD[name])]
    one, every = tmp_path / "one.csv", tmp_path / "all.csv"
    assert cli_main([name, *args, "--head", "2", "--out", str(one)]) == 0, \
        capsys.readouterr().err
    assert cli_main([name, *args, "--out", str(every)]) == 0, capsys.readouterr().err
    rows = read_rows(one)
    assert rows and {r["head"] for r in rows} == {"2"}
    assert same_rows(rows, [r for r in read_rows(every) if r["head"] == "2"])
    capsys.readouterr()
    rc = cli_main([name, *args, "--head", "4", "--out", str(tmp_path / "bad.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and "--head 4 is outside 0..3" in err and err.count("\n") == 1
    assert not (tmp_path / "bad.csv").exists()


def test_every_per_head_export_has_head(columns, capsys, monkeypatch):
    """A command of one model whose CSV has a head column offers --head."""
    for name, cols in columns.items():
        if " " not in name and "head" in cols and EXPORTS[name].one_model:
            assert "--head" in words(help_text(capsys, monkeypatch, 100, name)), name


def test_export_help_loads_neither_torch_nor_matplotlib():
    """`detokgui export --help` and `export report --help` answer at once: building the
    parser reads the defaults from `figures.defaults`, not from the modules that compute
    (which load torch and matplotlib, ~2 s). In a process of its own (this one has both)."""
    import subprocess
    import sys

    script = ("import sys\nfrom detokgui.cli import main\n"
              "for what in ([], ['report'], ['figures']):\n"
              "    try:\n        main([*what, '--help'])\n    except SystemExit:\n        pass\n"
              "print(sorted(m for m in ('torch', 'matplotlib') if m in sys.modules), "
              "file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Keys per head" in out.stdout or "keys per head" in out.stdout  # report's help
    assert out.stderr.strip().splitlines()[-1] == "[]", out.stderr[-2000:]
