"""Provenance records (issue 45, point 1): the record a layer gives, carried by PNG, SVG
and PDF files and by a CSV's NAME.csv.json sidecar, read back by `detokgui provenance`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from detokgui.core.base import provenance as prov
from detokgui.core.base.errors import InputError
from detokgui.core.base.tables import write_csv
from detokgui.core.model.provenance import layer0_digest, provenance_record

CONVENTIONS = {"sigma": "mean", "sigma_label": "σ = mean over positions", "tau": 4.0}


@pytest.fixture(scope="module")
def record(tiny_layer):
    return provenance_record(tiny_layer, analysis="topk", conventions=CONVENTIONS,
                             options={"heads": (0, 1), "k": 5, "query": " Korea"},
                             corpus={"paths": [{"path": "/data/c.txt", "bytes": 10}]})


def test_record_names_the_model_and_is_plain_json(record, tiny_layer, tiny_ckpt):
    assert json.loads(json.dumps(record)) == record
    assert record["format"] == prov.FORMAT and record["version"] == 1
    model = record["model"]
    assert model["name"] == tiny_layer.name and model["family"] == "gpt2"
    assert model["heads"] == 4 and model["d"] == 64 and model["positions"] == 128
    assert len(model["layer0_sha256"]) == 64
    assert record["options"]["heads"] == [0, 1]
    assert record["conventions"]["sigma_label"] == "σ = mean over positions"
    assert record["created"].endswith("+00:00")
    from detokgui import __version__

    assert record["detokgui"] == __version__


def test_digest_follows_the_tensors_not_the_folder(tiny_layer, tiny_ckpt, tmp_path):
    from detokgui.core import Layer0
    from detokgui.core.model.sources.demo import write_random_checkpoint

    copy = shutil.copytree(tiny_ckpt, tmp_path / "elsewhere")
    again = Layer0.from_pretrained(str(copy), device="cpu")
    assert layer0_digest(again) == layer0_digest(tiny_layer)
    other = Layer0.from_pretrained(str(write_random_checkpoint(tmp_path / "o", seed=9)),
                                   device="cpu")
    assert layer0_digest(other) != layer0_digest(tiny_layer)
    # one tensor that is not in the token-side identity (the MLP) changes it too
    changed = Layer0.from_pretrained(str(copy), device="cpu")
    changed.mlp_out_bias = changed.mlp_out_bias + 1.0
    assert layer0_digest(changed) != layer0_digest(tiny_layer)


def _figure():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1.5))
    fig.add_subplot().plot([0, 1, 2], [1, 0, 2])
    return fig


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_figure_formats_round_trip(record, tmp_path, fmt):
    from detokgui.figures import style

    path = tmp_path / f"fig.{fmt}"
    with style.style():
        style.save(_figure(), path, fmt, metadata={"Title": "a (title) \\ é"},
                   provenance=record)
    assert prov.read_provenance(path) == record
    # the same to a file object
    with open(tmp_path / f"obj.{fmt}", "wb") as f, style.style():
        style.save(_figure(), f, fmt, provenance=record)
    assert prov.read_provenance(tmp_path / f"obj.{fmt}") == record


def test_svg_stays_valid_and_keeps_its_description(record, tmp_path):
    import xml.etree.ElementTree as ET

    from detokgui.figures import style

    path = tmp_path / "fig.svg"
    with style.style():
        style.save(_figure(), path, "svg", metadata={"Description": "footer line"},
                   provenance=record)
    root = ET.parse(path).getroot()
    metadata = root.find("{http://www.w3.org/2000/svg}metadata")
    assert metadata.find(f"{{{prov.SVG_NAMESPACE}}}provenance") is not None
    assert "footer line" in path.read_text()


def test_svg_without_metadata_element_gets_one(record, tmp_path):
    import xml.etree.ElementTree as ET

    svg = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="1"><g/></svg>'
    path = tmp_path / "plain.svg"
    path.write_bytes(prov.svg_with(svg, record))
    ET.parse(path)
    assert prov.read_provenance(path) == record


def test_csv_sidecar_leaves_the_csv_plain(record, tmp_path):
    path = tmp_path / "t.csv"
    n = write_csv(path, (["head", "token", "score"], [(0, " Korea", 1.5), (1, "a,b", -2.0)]),
                  provenance=record)
    assert n == 2
    assert (tmp_path / "t.csv.json").exists()
    df = pd.read_csv(path)
    assert list(df.columns) == ["head", "token", "score"] and len(df) == 2
    assert prov.read_provenance(path) == record
    assert prov.read_provenance(tmp_path / "t.csv.json") == record


def test_files_without_a_record(tmp_path):
    from detokgui.figures import style

    bare = tmp_path / "bare.png"
    with style.style():
        style.save(_figure(), bare, "png")
    assert prov.read_provenance(bare) is None
    csv = tmp_path / "bare.csv"
    write_csv(csv, (["a"], [(1,)]))
    assert prov.read_provenance(csv) is None
    with pytest.raises(InputError, match="not a PNG"):
        (tmp_path / "fake.png").write_text("hello")
        prov.read_provenance(tmp_path / "fake.png")
    with pytest.raises(InputError, match="no such file"):
        prov.read_provenance(tmp_path / "missing.pdf")
    with pytest.raises(InputError, match="not a file detokgui writes"):
        prov.read_provenance(tmp_path / "x.txt")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "detokgui", "provenance", *map(str, args)],
                          check=False, capture_output=True, text=True, timeout=120)


def test_provenance_command(record, tmp_path):
    from detokgui.figures import style

    png = tmp_path / "fig.png"
    with style.style():
        style.save(_figure(), png, "png", provenance=record)
    r = _cli(png)
    assert r.returncode == 0, r.stderr
    assert f"model: {record['model']['name']} (gpt2)" in r.stdout
    assert record["model"]["layer0_sha256"] in r.stdout
    assert "analysis: topk" in r.stdout and "σ = mean over positions" in r.stdout
    r = _cli("--json", png)
    assert json.loads(r.stdout) == record

    bare = tmp_path / "bare.csv"
    write_csv(bare, (["a"], [(1,)]))
    r = _cli(bare)
    assert r.returncode == 1 and r.stdout.strip().count("\n") == 0
    assert "no detokgui provenance record" in r.stdout and not r.stderr
    r = _cli(tmp_path / "gone.svg")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


# --------------------------------------------------------------------------- the library


def test_api_results_carry_the_record_and_save_writes_it(tiny_layer, tmp_path):
    from detokgui.api.sharing import provenance, save
    from detokgui.api.tokens import topk

    df = topk(tiny_layer, " Korea", k=3, heads=[1], progress=False)
    rec = df.attrs["provenance"]
    assert rec["analysis"] == "topk" and rec["model"]["name"] == tiny_layer.name
    assert rec["conventions"]["k"] == 3 and rec["model"]["layer0_sha256"] == \
        layer0_digest(tiny_layer)
    assert df[df["rank"] == 1].attrs["provenance"] == rec  # kept by derived frames
    assert "layer-0 SHA-256" in repr(df.dg)  # shown short, not as a 2 kB dict
    for name in ("t.csv", "t.png", "t.svg", "t.pdf"):
        save(df, tmp_path / name)
        assert provenance(tmp_path / name) == rec, name
    back = pd.read_csv(tmp_path / "t.csv", keep_default_na=False)
    assert list(back.columns) == list(df.columns) and len(back) == len(df)
    assert back["key_token"].tolist() == df["key_token"].tolist()
    # a figure of one's own, with a record given
    fig = _figure()
    save(fig, tmp_path / "own.svg", provenance=rec)
    assert provenance(tmp_path / "own.svg") == rec
    with pytest.raises(InputError, match="not 'x.txt'"):
        save(df, tmp_path / "x.txt")


def test_corpus_results_identify_the_corpus(tiny_layer):
    from detokgui.api.corpus import counts

    df = counts(tiny_layer, "sample", progress=False)
    corpus = df.attrs["provenance"]["corpus"]
    from detokgui.core.model.sources.demo import sample_corpus

    assert corpus["paths"][0]["path"] == str(sample_corpus().absolute())
    assert corpus["paths"][0]["bytes"] == sample_corpus().stat().st_size


# --------------------------------------------------------------------------- the command line


def test_cli_exports_carry_the_record(tiny_ckpt, tmp_path):
    from detokgui.cli import main

    out = tmp_path / "topk.csv"
    assert main(["topk", "--model", str(tiny_ckpt), "--query", " Korea", "--k", "3",
                 "--head", "1", "--out", str(out)]) == 0
    rec = prov.read_provenance(out)
    assert rec["analysis"] == "export topk" and rec["options"]["query"] == [" Korea"]
    assert rec["options"]["k"] == 3 and rec["options"]["head"] == 1
    assert rec["model"]["source"] in (str(tiny_ckpt), None)
    assert len(rec["model"]["layer0_sha256"]) == 64
    assert pd.read_csv(out).shape[0] == 3
    for suffix in ("png", "svg"):
        pic = tmp_path / f"heat.{suffix}"
        assert main(["heatmap", "--model", str(tiny_ckpt), "--tokens", "the cat sat",
                     "--out", str(pic)]) == 0
        rec = prov.read_provenance(pic)
        assert rec["analysis"] == "export heatmap" and rec["options"]["tokens"] == "the cat sat"
    # a second export over the first replaces its record, it does not add one
    assert main(["heatmap", "--model", str(tiny_ckpt), "--tokens", "a b", "--out",
                 str(tmp_path / "heat.png")]) == 0
    data = (tmp_path / "heat.png").read_bytes()
    assert data.count(b"tEXt" + prov.PNG_KEY.encode() + b"\0") == 1
    assert prov.read_provenance(tmp_path / "heat.png")["options"]["tokens"] == "a b"


def test_cli_corpus_export_names_the_corpus(tiny_ckpt, tmp_path):
    from detokgui.cli import main
    from detokgui.core.model.sources.demo import sample_corpus

    out = tmp_path / "counts.csv"
    assert main(["counts", "--model", str(tiny_ckpt), "--corpus", "sample", "--out",
                 str(out)]) == 0
    corpus = prov.read_provenance(out)["corpus"]
    assert corpus["paths"][0]["path"] == str(sample_corpus().absolute())


# --------------------------------------------------------------------------- figures


def test_exported_figures_carry_their_records_and_the_index_says_so(tiny_layer, tmp_path):
    from detokgui.figures.export import export_figures

    report = export_figures(tiny_layer, tmp_path / "figs", keys=["fig03a_tp", "fig02c_roc"],
                            corpus=["sample"], session="/tmp/s.detokgui-session")
    out = tmp_path / "figs"
    built = {r.spec.key: r for r in report.built}
    assert set(built) == {"fig03a_tp", "fig02c_roc"}
    for key, r in built.items():
        records = [prov.read_provenance(out / f) for f in r.files]
        assert all(rec is not None for rec in records), r.files
        assert all(rec == records[0] for rec in records)
        assert records[0]["analysis"] == f"figure {key}"
        assert records[0]["session"] == "/tmp/s.detokgui-session"
        assert records[0]["conventions"]["convention"] == r.convention
        assert (records[0]["corpus"] is not None) == (key == "fig02c_roc")
        assert {f.rsplit(".", 1)[-1] for f in r.files} >= {"png", "svg", "pdf", "csv", "json"}
    index = (out / "index.md").read_text()
    assert "`detokgui provenance FILE`" in index
    assert layer0_digest(tiny_layer) in index
    assert "[json](fig03a_tp.csv.json)" in index
