"""The window's tab widgets never lay out the text of pages that are not shown (issue 16:
each tab switch laid out the word-wrapped labels of every panel), and a relayout inside a
page repaints what changed, not the whole tab widget."""

from conftest import wait_idle
from paint_counting import CountingWidget, PaintCounter
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from detokgui.gui.page_tabs import PageTabs


class CountingLabel(QLabel):
    """A word-wrapped label that counts Qt's heightForWidth questions."""

    def __init__(self, text):
        super().__init__(text)
        self.setWordWrap(True)
        self.asked = 0

    def heightForWidth(self, width):
        self.asked += 1
        return super().heightForWidth(width)


def hidden_label_questions(qtbot, tabs_class) -> int:
    """How often a hidden page's wrapped label is asked for its height while the shown
    pages are switched back and forth."""
    root = QWidget()
    lay = QVBoxLayout(root)
    tabs = tabs_class()
    lay.addWidget(tabs)
    pages = []
    for k in range(3):
        page = QWidget()
        label = CountingLabel(f"page {k}: " + "a long explanation that wraps " * 20)
        QVBoxLayout(page).addWidget(label)
        tabs.addTab(page, f"page {k}")
        pages.append(label)
    qtbot.addWidget(root)
    root.resize(500, 400)
    root.show()
    qtbot.waitExposed(root)
    hidden = pages[2]
    before = hidden.asked
    for k in range(10):
        tabs.setCurrentIndex(k % 2)
        qtbot.wait(5)
    return hidden.asked - before


def test_page_tabs_do_not_lay_out_hidden_pages(qtbot):
    assert hidden_label_questions(qtbot, PageTabs) == 0


def test_a_plain_tab_widget_does(qtbot):
    """The cost PageTabs avoids is real in this Qt version (else the test above proves
    nothing)."""
    assert hidden_label_questions(qtbot, QTabWidget) > 0


def test_the_window_uses_page_tabs(window):
    tabs = [window.tabs] + [window.tabs.widget(k) for k in range(window.tabs.count())]
    assert tabs and all(isinstance(t, PageTabs) for t in tabs)


def shown_tabs(qtbot, tabs_class):
    """A tab widget in a window whose first page has a label in a row of controls over a
    counting widget: (window, tabs, label, counting widget)."""
    root = QWidget()
    tabs = tabs_class()
    QVBoxLayout(root).addWidget(tabs)
    page = QWidget()
    lay = QVBoxLayout(page)
    row = QHBoxLayout()
    label = QLabel("query ' North'")
    row.addWidget(label)
    row.addWidget(QPushButton("an option"))
    row.addStretch()
    lay.addLayout(row)
    below = CountingWidget()
    lay.addWidget(below)
    tabs.addTab(page, "page")
    tabs.addTab(QWidget(), "other")
    qtbot.addWidget(root)
    root.resize(500, 400)
    root.show()
    qtbot.waitExposed(root)
    qtbot.wait(50)
    return root, tabs, label, below


def repaints_after_relayout(qtbot, tabs_class) -> int:
    """How often a widget under a row of controls is painted while the row's label
    changes width ten times."""
    _root, _tabs, label, below = shown_tabs(qtbot, tabs_class)
    before = below.painted
    for k in range(10):
        label.setText("query ' Korea'" + " and more" * (k % 3))
        qtbot.wait(10)
    return below.painted - before


def test_a_relayout_in_a_page_repaints_only_what_moved(qtbot):
    assert repaints_after_relayout(qtbot, PageTabs) == 0


def test_a_plain_tab_widget_repaints_all_of_itself(qtbot):
    """The repaints PageTabs avoids are real in this Qt version."""
    assert repaints_after_relayout(qtbot, QTabWidget) > 0


def test_page_tabs_still_place_a_changed_tab_bar_and_corner(qtbot):
    """When the tab bar grows or a corner widget comes, the pages and the corner move as
    in a plain QTabWidget."""
    results = []
    for cls in (PageTabs, QTabWidget):
        _root, tabs, _label, _below = shown_tabs(qtbot, cls)
        font = QFont(tabs.tabBar().font())
        font.setPointSize(font.pointSize() * 3)
        tabs.tabBar().setFont(font)
        corner = QPushButton("a corner button")
        tabs.setCornerWidget(corner)
        corner.show()  # Qt shows corner widgets only at the tab widget's own show
        qtbot.wait(50)
        page = tabs.widget(0)
        assert page.geometry().isValid()
        assert page.mapTo(tabs, page.rect().topLeft()).y() >= tabs.tabBar().geometry().bottom()
        assert corner.isVisible() and corner.geometry().width() > 0
        results.append((tabs.tabBar().geometry(), page.mapTo(tabs, page.rect().topLeft()),
                        corner.geometry()))
    assert results[0] == results[1]



def test_a_view_brought_to_the_front_is_painted_once(window, qtbot):
    """Choosing a view's tab paints its tables and plots once. Qt painted them again for
    the widgets it had just shown, and pyqtgraph once more for the view matrix it had
    moved while painting: three times."""
    views = ("heatmap", "topk", "pattern", "neurons")
    for name in views:  # every view drawn once, its results in
        window.show_view(name)
        wait_idle(qtbot, window)
        qtbot.wait(100)
    for name in views:
        window.show_view("bias")
        qtbot.wait(100)
        panel = window.panel(name)
        watched = [v.viewport() for v in panel.findChildren(QAbstractScrollArea)
                   if v.isVisibleTo(panel) and v.viewport().width() > 50
                   and v.viewport().height() > 50]
        assert watched
        counter = PaintCounter(*watched)
        window.show_view(name)
        qtbot.wait(300)
        assert not window.jobs.busy
        drawn = counter.painted
        tables = [n for w, n in drawn.items() if isinstance(w.parent(), QTableView)]
        plots = [n for w, n in drawn.items() if isinstance(w.parent(), QGraphicsView)]
        assert set(tables) <= {1}, (name, drawn)
        assert set(plots) <= {1}, (name, drawn)
