"""A view says what it is doing: a corpus view computing its result says so (not "Choose a
corpus"), its empty bar chart is laid out over the heads, and a stopped computation says
where to read why."""

from conftest import wait_idle

from detokgui.core.model.sources.demo import sample_corpus
from detokgui.gui.plots import frame_of


def _title(plot) -> str:
    return frame_of(plot).title_text()


def test_auroc_view_says_it_computes(window, qtbot):
    win = window
    panel = win.panel("auroc")
    win.show_view("auroc")
    wait_idle(qtbot, win)
    assert "Choose a corpus" in _title(panel.bars)
    (x0, x1), _ = panel.bars.viewRange()  # laid out over the heads, not 0..1
    assert (x0, x1) == (-0.6, win.state.layer.n_heads - 0.4)

    win.corpus.open([str(sample_corpus())])
    qtbot.waitUntil(lambda: panel.channel().pending is not None, timeout=10000)
    assert "Counting the corpus's bigrams" in _title(panel.bars)
    assert "Choose a corpus" not in _title(panel.bars)
    win.cancel_jobs()
    qtbot.waitUntil(lambda: panel.channel().pending is None, timeout=10000)
    assert "Not computed" in _title(panel.bars)
    assert "cancelled" in panel.status.text()
    panel.status.retry.emit("")  # "compute again"
    wait_idle(qtbot, win, timeout=300000)
    assert _title(panel.bars).startswith("Mean bigram AUROC per head")
