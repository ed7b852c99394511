"""Provenance of the window's exports (issue 45, point 1): a plot exported as PNG (the
window's own drawing, its record set with QImage.setText), SVG and PDF (the matplotlib
figure of its table) and CSV (the record in NAME.csv.json) carries what the window shows:
the model with its layer-0 digest, the view, the panel's options, the selection, the
conventions and the session file."""

import pytest
from conftest import wait_idle

from detokgui.core.base.provenance import read_provenance
from detokgui.core.model.provenance import has_digest, layer0_digest

pytestmark = pytest.mark.gui


def test_every_format_of_a_view_carries_the_record(window, qtbot, tmp_path):
    win = window
    assert has_digest(win.state.layer)  # computed by the loading job, not at export
    win.state.session_path = str(tmp_path / "mine.detokgui.json")
    win.show_view("topk")
    panel = win.panel("topk")
    frame = panel.plot_frames()[0]
    qtbot.waitUntil(frame.has_data, timeout=60000)
    wait_idle(qtbot, win)
    records = {}
    for fmt in ("png", "svg", "pdf", "csv"):
        frame.export(tmp_path / f"topk.{fmt}")
        records[fmt] = read_provenance(tmp_path / f"topk.{fmt}")
    assert (tmp_path / "topk.csv.json").exists()
    for fmt, rec in records.items():
        assert rec is not None, fmt
        assert rec["model"]["layer0_sha256"] == layer0_digest(win.state.layer)
        assert rec["view"] == panel.title and rec["plot"] == frame.name
        assert rec["analysis"] == frame.analysis
        assert rec["options"]["k"] == panel.options.value.k
        assert rec["options"]["selection"]["head"] == win.state.head
        assert rec["options"]["selection"]["query_token"] == win.state.query_token
        assert rec["session"] == win.state.session_path
        assert rec["conventions"]["labels"] == panel.result_conventions()
    # the options as they were when exported: another k, another record
    panel.options.set(k=panel.options.value.k + 1)
    qtbot.waitUntil(lambda: panel.settled(), timeout=60000)
    frame.export(tmp_path / "again.png")
    assert read_provenance(tmp_path / "again.png")["options"]["k"] == \
        records["png"]["options"]["k"] + 1
