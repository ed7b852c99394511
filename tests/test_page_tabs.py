"""The window's tab widgets never lay out the text of pages that are not shown (issue 16:
each tab switch laid out the word-wrapped labels of every panel)."""

from PySide6.QtWidgets import QLabel, QTabWidget, QVBoxLayout, QWidget

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
