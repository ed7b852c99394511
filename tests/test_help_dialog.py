"""Help in the window: the views with what they show and their shortcuts, every shortcut,
and the conventions in brief, with the model's own values."""

from PySide6.QtGui import QKeySequence

from detokgui.core.model.conventions import position_text, temperature_label


def test_help_menu_lists_views_shortcuts_and_conventions(window, qtbot):
    win = window
    help_menu = next(a.menu() for a in win.menuBar().actions() if "Help" in a.text())
    texts = [a.text() for a in help_menu.actions() if not a.isSeparator()]
    assert texts == ["Views and shortcuts", "Conventions", "About detokgui"]
    f1 = help_menu.actions()[0]
    assert f1.shortcut() == QKeySequence(QKeySequence.HelpContents)

    f1.trigger()
    dialog = win.help_dialog
    assert dialog.isVisible() and not dialog.isModal()
    views = dialog.text("views")
    for panel in win.panels:  # every view, with its line
        assert panel.title in views and panel.tooltip.split("(")[0].strip()[:40] in views
    assert "Ctrl+1" in views
    shortcuts = dialog.text("shortcuts")
    for key in ("Ctrl+L", "Ctrl+D", "Esc", "F1", "Ctrl+Shift+P"):
        assert key in shortcuts, key

    win.show_help("conventions")
    assert dialog.tabs.currentIndex() == 2
    layer = win.state.layer
    conventions = dialog.text("conventions")
    for part in ("mean over positions", "mean-sigma", "red < 0 < blue",
                 temperature_label(layer), position_text(layer.n_positions),
                 "docs/math/sigma.md"):
        assert part in conventions, part
    dialog.close()
