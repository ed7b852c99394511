"""Reading and clicking table views as a person would (tests' helpers)."""

from PySide6.QtCore import Qt


def row_count(view) -> int:
    return view.model().rowCount()


def cell_text(view, row: int, col: int) -> str:
    """The text shown in a cell."""
    return view.model().index(row, col).data()


def column_texts(view, col: int) -> list[str]:
    return [cell_text(view, r, col) for r in range(row_count(view))]


def click_cell(qtbot, view, row: int, col: int = 0, modifier=Qt.NoModifier) -> None:
    """A real mouse click on a cell (scrolled into view first)."""
    index = view.model().index(row, col)
    view.scrollTo(index)
    qtbot.mouseClick(view.viewport(), Qt.LeftButton, modifier, view.visualRect(index).center())
