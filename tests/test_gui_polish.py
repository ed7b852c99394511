"""The rough edges of a first hour (issue #7), through the real window (offscreen): long
texts never widen the window, the status bar's parts never overlap, the load time is the
wall time, the error banner can be dismissed, the vocabulary search has no popup over
its list, exports say where they went, axes show real values."""

import itertools
import time

import pytest
from axes import axis_labels, label_specs
from conftest import close_jobs, open_window, wait_idle
from PySide6.QtCore import QPointF, QRect, QSettings, Qt

from detokgui.core.model.tokens import SPACE_MARK
from detokgui.gui.plots import frame_of, head_color

KOREA, NORTH = 4969, 2258


def disjoint(*widgets) -> bool:
    """No two of the visible widgets' rectangles (in the window) intersect."""
    rects = [QRect(w.mapTo(w.window(), w.rect().topLeft()), w.size())
             for w in widgets if w.isVisible()]
    return all(not a.intersects(b) for k, a in enumerate(rects) for b in rects[k + 1:])


def test_long_texts_never_widen_the_window(window, qtbot):
    win = window
    win.resize(1024, 700)
    qtbot.waitUntil(lambda: win.width() == 1024)
    long_path = "/home/someone/" + "a-very-long-folder-name/" * 12 + "corpus.jsonl"
    win.model_label.setText("a model with a very long name " * 8)
    win.corpus.label.setText(f"corpus: {long_path}")
    tokens = win.panel("tokens")
    tokens.search.setText("((" + "x" * 300)  # an invalid regex: a long error message
    mode = tokens.options.widget("mode")
    mode.setCurrentIndex(mode.findData("regex"))
    qtbot.waitUntil(lambda: "invalid regular expression" in tokens.search_info.text(),
                    timeout=10000)
    tokens.set_text(" Korea" * 401)  # more tokens than positions: a long note
    qtbot.waitUntil(lambda: "only the first" in tokens.text_info.text(), timeout=10000)
    wait_idle(qtbot, win)
    win.show_message(f"Could not read {long_path}: not valid UTF-8")
    for _ in range(3):
        qtbot.wait(30)
    assert win.width() == 1024 and win.height() == 700
    sb = win.statusBar()
    # message, model and corpus: separate widgets side by side, the long texts elided
    assert disjoint(sb.message_label, win.model_label, win.model_facts, win.corpus.label)
    assert win.model_label.shown_text().endswith("…")
    assert win.model_label.toolTip().startswith("a model with a very long name")
    assert sb.currentMessage().startswith("Could not read") and sb.message_label.shown_text() \
        .endswith("…")
    for label in (sb.message_label, win.model_label, win.model_facts, win.corpus.label):
        assert label.geometry().right() <= sb.width()
    # the model's facts stay whole: the long name gives way
    assert win.model_facts.width() >= win.model_facts.sizeHint().width()


def test_status_bar_shows_the_model_facts_at_common_widths(window, qtbot):
    """Device, vocabulary, positions, heads, temperature and load time are seen whole at
    1024 and 1400 pixels, with a corpus open and a progress message shown."""
    win = window
    win.corpus.label.setText("corpus: sample corpus (1 file, 1.1 MB)")
    win.show_message("whole-vocabulary pass: heads 0-7, 246/50257 tokens — 33 s left")
    for width in (1024, 1400):
        win.resize(width, 700)
        qtbot.waitUntil(lambda w=width: win.width() == w)
        qtbot.wait(30)
        facts = win.model_facts
        assert facts.isVisible() and facts.width() >= facts.sizeHint().width(), width
        assert facts.geometry().right() <= win.statusBar().width()
        for part in ("CPU", "V=50,257", "L=128", "4 heads", "τ = √d′ = 4", "loaded in"):
            assert part in facts.text()


def test_default_size_fits_and_size_is_remembered(qtbot, tiny_ckpt):
    from detokgui.gui.main_window import DEFAULT_SIZE, MainWindow
    from detokgui.gui.options import flush_settings

    flush_settings()
    QSettings().clear()
    win = MainWindow(device="cpu")
    qtbot.addWidget(win)
    area = win.screen().availableGeometry()
    assert (win.width(), win.height()) == (min(DEFAULT_SIZE[0], area.width()),
                                          min(DEFAULT_SIZE[1], area.height()))
    win.show()
    win.resize(770, 650)  # within the offscreen screen (800 x 800)
    qtbot.waitUntil(lambda: win.width() == 770)
    win.close()
    again = MainWindow(device="cpu")
    qtbot.addWidget(again)
    assert (again.width(), again.height()) == (770, 650)
    again.close()


def test_load_time_is_the_wall_time_and_loading_is_said(qtbot, tiny_ckpt):
    from detokgui.gui.main_window import MainWindow
    from detokgui.gui.options import flush_settings

    flush_settings()
    QSettings().clear()
    win = MainWindow(device="cpu")
    qtbot.addWidget(win)
    win.show()
    t0 = time.perf_counter()
    win.load_model(str(tiny_ckpt))
    text = win.model_label.text()
    assert text.startswith("loading ") and "no model" not in text
    assert "Loaded" not in win.statusBar().currentMessage()
    qtbot.waitUntil(lambda: win.state.layer is not None, timeout=60000)
    wall = time.perf_counter() - t0
    layer = win.state.layer
    # from the request to a model ready with its sigma table: more than the weights' load
    assert layer.load_seconds <= win.load_seconds <= wall
    assert f"loaded in {win.load_seconds:.1f} s" in win.model_facts.text()
    assert "loading" not in win.model_label.text()
    wait_idle(qtbot, win)
    close_jobs(win)


def test_error_banner_can_be_dismissed_and_goes_with_a_new_model(qtbot, tmp_path, tiny_ckpt):
    win = open_window(qtbot, tiny_ckpt)
    win.load_model(str(tmp_path / "missing"))
    qtbot.waitUntil(lambda: win.load_error is not None, timeout=20000)
    assert win.banner.isVisible() and "There is no folder" in win.banner.text()
    assert win.state.layer is not None  # the previous model stays
    qtbot.mouseClick(win.banner.close_button, Qt.LeftButton)
    assert not win.banner.isVisible()
    win.load_model(str(tmp_path / "missing"))
    qtbot.waitUntil(lambda: win.banner.isVisible(), timeout=20000)
    win.load_model(str(tiny_ckpt))
    assert not win.banner.isVisible()  # cleared as soon as another model is asked for
    qtbot.waitUntil(lambda: win.loading_name is None, timeout=60000)
    assert not win.banner.isVisible()
    wait_idle(qtbot, win)
    close_jobs(win)


def test_search_has_no_popup_and_the_list_follows_the_query(window, qtbot):
    win, layer = window, window.state.layer
    tokens = win.panel("tokens")
    qtbot.waitUntil(lambda: len(tokens.strings) == layer.n_vocab, timeout=10000)
    assert tokens.search.completer() is None  # nothing covers the result list
    mode = tokens.options.widget("mode")
    mode.setCurrentIndex(mode.findData("substring"))
    win.state.set_query_token(NORTH)
    tokens.search.setFocus()
    qtbot.keyClicks(tokens.search, " Korea")
    qtbot.keyClick(tokens.search, Qt.Key_Return)  # the exact match becomes the query
    qtbot.waitUntil(lambda: win.state.query_token == KOREA, timeout=10000)
    results = tokens.results
    selected = [i.row() for i in results.selectionModel().selectedRows()]
    assert [results.model().record(r)[1] for r in selected] == [KOREA]
    # another query token, not in the list: no highlight stays behind
    win.state.set_query_token(NORTH)
    assert results.selectionModel().selectedRows() == []
    # a new search that lists it: highlighted there
    tokens.search.setText(f"{SPACE_MARK}North")
    qtbot.waitUntil(lambda: tokens.channel("search").shown is not None
                    and tokens.channel("search").shown.query == f"{SPACE_MARK}North",
                    timeout=10000)
    rows = [i.row() for i in results.selectionModel().selectedRows()]
    assert [results.model().record(r)[1] for r in rows] == [NORTH]
    # Down moves into the list
    tokens.search.setFocus()
    qtbot.keyClick(tokens.search, Qt.Key_Down)
    assert results.hasFocus() or not win.isActiveWindow()
    assert [i.row() for i in results.selectionModel().selectedRows()] == [0]


def test_export_says_where_it_was_saved(window, qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    win = window
    win.show_view("topk")
    wait_idle(qtbot, win)
    target = tmp_path / "bars.png"
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (str(target), "")))
    win.export_current("png")
    assert target.exists()
    assert f"to {target}" in win.statusBar().currentMessage()
    table = tmp_path / "neurons.csv"
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (str(table), "")))
    win.show_view("neurons")
    wait_idle(qtbot, win)
    win.panel("neurons").export_table_button.click()
    assert table.exists() and f"to {table}" in win.statusBar().currentMessage()


@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)])
def test_every_view_fits_the_window(vocab_window, qtbot, size):
    """On the 400-token model: the vocabulary views' whole-vocabulary passes take
    milliseconds there (minutes on a 50,257-token model with both cores busy)."""
    win = vocab_window
    win.resize(*size)
    for name in win.view_names():
        win.show_view(name)
        wait_idle(qtbot, win)
        assert (win.width(), win.height()) == size, name


def all_axes(win):
    import pyqtgraph as pg

    for view in win.findChildren(pg.GraphicsView):
        for item in view.scene().items():
            if isinstance(item, pg.AxisItem):
                item.frame_name = getattr(view.parent(), "name", type(view.parent()).__name__)
                yield item


def test_no_axis_uses_si_multipliers(vocab_window, qtbot):
    win = vocab_window  # 400 tokens: every view computes in seconds (see above)
    win.corpus.use_sample()
    qtbot.waitUntil(lambda: bool(win.state.corpus), timeout=20000)
    seen = 0
    for name in win.view_names():
        win.show_view(name)
        wait_idle(qtbot, win, timeout=120000)
        for ax in all_axes(win):
            seen += 1
            assert not ax.autoSIPrefix, (name, ax.frame_name, ax.orientation, ax.labelText,
                                         type(ax.parentItem()).__name__)
            assert "(x" not in ax.labelString(), (name, ax.labelString())
    assert seen > 50


def spaced(axis, pixels_per_unit: float, size) -> bool:
    """Consecutive tick labels of `axis` lie at least their size (px) apart."""
    ticks = sorted(axis_labels(axis))
    return all((b - a) * pixels_per_unit >= size(ta, tb) - 1.0
               for (a, ta), (b, tb) in itertools.pairwise(ticks))


def test_heatmap_labels_thinned_colour_bar_labelled_selection_marked(window, qtbot):
    from PySide6.QtGui import QFontMetrics

    win, layer = window, window.state.layer
    win.resize(1024, 700)
    hm_panel = win.panel("heatmap")
    win.show_view("heatmap")
    source = hm_panel.options.widget("source")
    source.setCurrentIndex(source.findData("sample"))
    for n in (30, 60):
        hm_panel.options.widget("size").setValue(n)
        wait_idle(qtbot, win)
        qtbot.wait(50)
        hm = hm_panel.single
        vb = hm.getViewBox()
        fm = QFontMetrics(hm.getAxis("left").style.get("tickFont") or hm.font())
        line = fm.height()
        assert spaced(hm.getAxis("left"), vb.height() / n, lambda a, b, h=line: h)

        def half_widths(a, b, fm=fm):
            return (fm.horizontalAdvance(a) + fm.horizontalAdvance(b)) / 2

        for name in ("bottom", "top"):
            assert spaced(hm.getAxis(name), vb.width() / n, half_widths)
        shown = len(axis_labels(hm.getAxis("bottom"))) + len(axis_labels(hm.getAxis("top")))
        assert 2 <= shown <= n
        assert "T_ee" in hm.colorbar.getAxis("right").labelText
        title = hm_panel.frame.title_text()
        assert "Fig 2-B" in title and "A3" not in title
    # the key alone in the set: its column is outlined; with the query too, their cell
    tokens = hm_panel.tokens
    win.state.set_query_token(next(t for t in range(layer.n_vocab) if t not in tokens))
    win.state.set_key_token(tokens[5])
    hm = hm_panel.single
    assert hm.highlight.isVisible() and hm.highlight.rect().getRect() == (5, 0, 1, 60)
    win.state.set_query_token(tokens[7])
    assert hm.highlight.rect().getRect() == (5, 7, 1, 1)
    # without LayerNorm: said once
    hm_panel.options.widget("layernorm").setChecked(False)
    wait_idle(qtbot, win)
    title = hm_panel.frame.title_text()
    assert "Fig 12" in title and title.count("LayerNorm") == 1 and "(raw)" not in title
    # all heads: the selected head's map stands out
    hm_panel.options.widget("all_heads").setChecked(True)
    wait_idle(qtbot, win)
    win.state.set_head(2)
    mosaic = hm_panel.mosaic
    assert mosaic.selected.isVisible()
    assert (mosaic.selected.rect().x(), mosaic.selected.rect().y()) == mosaic.origin(2)


def bars_at_1024(win, qtbot, view: str, k: int):
    """`view`'s panel, shown with k bars in a 1024 x 700 window."""
    win.resize(1024, 700)
    panel = win.panel(view)
    win.show_view(view)
    panel.options.widget("k").setValue(k)
    wait_idle(qtbot, win)
    qtbot.wait(50)
    return panel


def bar_labels_apart(plot) -> bool:
    """The bar chart's labels on its left axis are at least a text line apart."""
    from PySide6.QtGui import QFontMetrics

    axis = plot.getAxis("left")
    fm = QFontMetrics(axis.style.get("tickFont") or plot.font())
    (y0, y1) = plot.getViewBox().viewRange()[1]
    return spaced(axis, plot.getViewBox().height() / (y1 - y0), lambda a, b: fm.height())


def test_topk_bars_at_k50_labels_apart_and_selected_key_marked(window, qtbot):
    win = window
    topk = bars_at_1024(win, qtbot, "topk", 50)
    bars = topk.bars
    axis = bars.getAxis("left")
    assert bar_labels_apart(bars)
    res = topk.result
    col = res.heads.index(win.state.head)
    key = int(res.ids[col, 17])
    win.state.set_key_token(key)
    item = next(i for i in bars.items if hasattr(i, "opts") and "brushes" in i.opts)
    reds = [k for k, b in enumerate(item.opts["brushes"]) if b.color().name() == "#d62728"]
    assert reds == [17]
    assert 17 in [round(v) for v, _ in axis_labels(axis)]  # its label is kept
    assert "Fig 2-A" in frame_of(bars).title_text()


def test_neighbours_in_a_1024_pixel_window_tables_above_the_bars(window, qtbot):
    """Beside the bar chart, the two tables of a 1024-pixel window had their token column
    cut to two letters: the chart goes under them, its labels thinned to fit."""
    win = window
    panel = bars_at_1024(win, qtbot, "neighbours", 20)
    assert panel.near.model().rowCount() == 20
    table_bottom = panel.near.mapTo(panel, panel.near.rect().bottomLeft()).y()
    assert panel.frame.mapTo(panel, panel.frame.rect().topLeft()).y() >= table_bottom
    for table in (panel.near, panel.analogy):
        assert table.columnWidth(1) >= 80  # the token column
    assert 1 < len(axis_labels(panel.plot.getAxis("left"))) < 20
    assert bar_labels_apart(panel.plot)
    win.resize(1400, 900)
    wait_idle(qtbot, win)
    qtbot.wait(50)
    assert panel.frame.mapTo(panel, panel.frame.rect().topLeft()).x() > \
        panel.analogy.mapTo(panel, panel.analogy.rect().topRight()).x()  # beside them again


def drawn_tick_texts(axis) -> list[tuple[float, str]]:
    """(width in px, text) of the tick labels the axis would draw now."""
    return [(rect.width(), text) for rect, _flags, text in label_specs(axis)]


def test_small_softmax_values_keep_their_tick_labels(window, qtbot):
    win = window
    win.show_view("bias")
    panel = win.panel("bias")
    qtbot.waitUntil(lambda: panel.result is not None and panel.settled(), timeout=10000)
    grid = panel.grids["softmax"]
    left = grid.plot.getAxis("left")
    for top in (0.00042, 0.0000031, 0.9):
        grid.set_ranges((-0.5, 60.0), (0.0, top))
        qtbot.wait(20)
        texts = drawn_tick_texts(left)
        assert len(texts) >= 2, (top, texts)
        assert all(w <= left.width() for w, _ in texts), (top, texts, left.width())
        assert all("e" not in t or "e-" in t for _, t in texts)  # real values, no multiplier
        values = sorted({float(t) for _, t in texts})
        assert values[0] >= 0 and values[-1] <= top
        step = values[1] - values[0]
        inner = [k * step for k in range(1, int(top / step + 1e-9))]  # all but the ends
        assert all(any(abs(v - x) < step / 10 for v in values) for x in inner), (top, texts)


def test_sigma_at_positions_clamps_j_to_i_and_says_so(window, qtbot):
    from detokgui.core.token_side import affinity
    from detokgui.gui.sigma_controls import SigmaControls

    win, layer = window, window.state.layer
    win.show_view("topk")
    topk = win.panel("topk")
    controls = topk.findChild(SigmaControls)
    controls.combo.setCurrentIndex(controls.combo.findData("at"))
    controls.i_spin.setValue(10)
    controls.j_spin.setValue(40)  # a key after the query: not attended to
    assert win.state.sigma == affinity.SigmaChoice("at", (10, 10))
    assert controls.j_spin.value() == 10
    assert controls.note.isVisible() and "j ≤ i" in controls.note.text()
    wait_idle(qtbot, win)
    expected = affinity.topk_keys(layer, win.state.query_token, topk.options.widget("k").value(),
                                  affinity.SigmaChoice("at", (10, 10)))
    assert topk.result.ids.tolist() == expected.ids.tolist()
    controls.j_spin.setValue(3)
    assert win.state.sigma == affinity.SigmaChoice("at", (10, 3))
    assert not controls.note.isVisible()


def test_selected_head_framed_in_position_grids(window, qtbot):
    win = window
    panel = win.panel("bias")
    win.show_view("bias")
    panel.heads_box.set_mode("all")
    qtbot.waitUntil(lambda: panel.result is not None and len(panel.result.heads) > 1
                    and panel.settled(), timeout=10000)

    def framed(grid):
        """The head whose cell the selection frame outlines, and the frame's colour."""
        if not grid.selected.isVisible():
            return None
        rect = grid.selected.rect()
        head = grid.at(grid.vb.mapViewToScene(rect.center()))[0]
        corner = grid.at(grid.vb.mapViewToScene(rect.topLeft() + QPointF(0.01, 0.01)))
        assert corner is not None and corner[0] == head  # it frames that one cell
        assert (rect.width(), rect.height()) == (1.0, 1.0)
        return head, grid.selected.pen().color().name()

    for h in (3, 1):
        win.state.set_head(h)
        for grid in panel.grids.values():
            assert framed(grid) == (h, head_color(h))
    panel.heads_box.set_mode("selected")
    qtbot.waitUntil(lambda: panel.result.heads == [1] and panel.settled(), timeout=10000)
    assert framed(panel.grids["tp"]) is None  # alone: no frame


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no overflow from the old range
def test_log_axes_say_so_and_show_real_values(window, qtbot):
    win = window
    for view, box, plot in (("slopes", "log", "hist_plot"),
                            ("position-stats", "log", "var_plot"),
                            ("pattern", "log", "line_plot")):
        win.show_view(view)
        panel = win.panel(view)
        wait_idle(qtbot, win)
        check = panel.options.widget(box)
        check.setChecked(True)
        wait_idle(qtbot, win)
        axis = getattr(panel, plot).getAxis("left")
        assert axis.logMode and "(log scale)" in axis.labelString(), view
        assert "(x" not in axis.labelString() and not axis.autoSIPrefix
        check.setChecked(False)
        assert "(log scale)" not in axis.labelString()


@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)])
def test_pe_neuron_summaries_are_shown_whole(window, qtbot, size):
    win = window
    win.resize(*size)
    win.show_view("neurons")
    panel = win.panel("neurons")
    wait_idle(qtbot, win)
    qtbot.wait(50)
    status, info = panel.status, panel.overlap_view.info
    assert "dims" in status.text() and "mean overlap" in info.text()
    # the table's summary wraps within its label; the overlap's fits on its one line
    assert status.heightForWidth(status.width()) <= status.height()
    lines = info.text().split("\n")
    assert len(lines) * info.fontMetrics().lineSpacing() <= info.contentsRect().height()
    assert all(info.fontMetrics().horizontalAdvance(t) <= info.contentsRect().width()
               for t in lines)


def test_a_row_of_head_boxes_wraps_inside_an_option_row(qtbot):
    """A model with many heads (gpt2-xl: 25, opt-66b: 72) gives the contextual circuit's
    HeadSet a box per head; inside an option row (a FlowLayout) they wrap onto lines of
    the row's width instead of setting the window's least width (1024 px was out of reach
    with 25 heads)."""
    from PySide6.QtWidgets import QComboBox, QWidget

    from detokgui.gui.flow_layout import FlowLayout
    from detokgui.gui.head_controls import HeadSet

    box = QWidget()
    qtbot.addWidget(box)
    row = FlowLayout(box)
    heads, combo = HeadSet(), QComboBox()
    heads.set_count(72)
    combo.addItem("k")
    row.addWidget(heads)
    row.addWidget(combo)
    width = 600
    assert heads.sizeHint().width() > 3 * width  # one line would not fit
    assert row.minimumSize().width() < width
    box.show()
    row.setGeometry(QRect(0, 0, width, row.heightForWidth(width)))
    assert heads.geometry().width() <= width
    qtbot.waitUntil(lambda: heads.boxes[-1].geometry().top() > 0)  # its own layout's pass
    assert all(b.geometry().right() < width for b in heads.boxes)
    assert heads.boxes[-1].geometry().top() > heads.boxes[0].geometry().bottom()  # wrapped
    assert combo.geometry().top() >= heads.geometry().bottom()  # on the line after
    assert row.heightForWidth(width) >= heads.geometry().height()


def test_a_label_wraps_with_the_control_it_names(qtbot):
    from PySide6.QtWidgets import QComboBox, QLabel, QSpinBox, QWidget

    from detokgui.gui.flow_layout import FlowLayout

    box = QWidget()
    qtbot.addWidget(box)
    row = FlowLayout(box)
    combo, label, spin = QComboBox(), QLabel("texts"), QSpinBox()
    combo.addItem("a rather long choice of convention")
    for w in (combo, label, spin):
        row.addWidget(w)
    width = combo.sizeHint().width() + label.sizeHint().width() + 20  # spin cannot fit
    row.setGeometry(QRect(0, 0, width, row.heightForWidth(width)))
    assert label.geometry().top() > combo.geometry().bottom()  # not alone at a line's end
    assert label.geometry().left() == 0 and spin.geometry().left() > label.geometry().right()
    assert abs(label.geometry().center().y() - spin.geometry().center().y()) <= 1
    wide = width + spin.sizeHint().width() + 20
    row.setGeometry(QRect(0, 0, wide, row.heightForWidth(wide)))
    assert label.geometry().left() > combo.geometry().right()  # one line when it fits
