"""A dragged query-position slider changes the shared position at most once per
DRAG_THROTTLE_MS, first and last value included; a step that is not a drag (a key, a
click on the spin box, code) changes it at once (issue 41, point 6)."""

from detokgui.gui.position import DRAG_THROTTLE_MS, QueryPositionControl
from detokgui.gui.state import AppState


def control(qtbot, layer):
    state = AppState()
    state.set_model(layer)
    ctl = QueryPositionControl(state, slider=True)
    qtbot.addWidget(ctl)
    seen = []
    state.queryPositionChanged.connect(seen.append)
    return state, ctl, seen


def test_a_drag_is_throttled_and_ends_on_its_last_value(qtbot, tiny_layer):
    state, ctl, seen = control(qtbot, tiny_layer)
    ctl.slider.setSliderDown(True)  # pressed, as by the mouse
    for i in range(10, 60):  # one mouse move after another, no event loop between
        ctl.slider.setValue(i)
        assert ctl.spin.value() == i  # the spin box follows at once
    assert seen == [10]  # the first at once, the rest wait
    qtbot.waitUntil(lambda: seen[-1] == 59, timeout=2000)  # the newest, once
    assert seen == [10, 59]
    ctl.slider.setValue(60)
    ctl.slider.setValue(61)
    ctl.slider.setSliderDown(False)  # released within the interval: the last value now
    assert state.query_position == 61
    qtbot.wait(3 * DRAG_THROTTLE_MS)
    assert seen[-1] == 61 and seen.count(61) == 1


def test_steps_that_are_not_drags_pass_at_once(qtbot, tiny_layer):
    state, ctl, seen = control(qtbot, tiny_layer)
    for i in (3, 4, 5):
        ctl.slider.setValue(i)
    ctl.spin.setValue(7)
    assert seen == [3, 4, 5, 7] and ctl.slider.value() == 7
    state.set_query_position(9)
    assert ctl.slider.value() == ctl.spin.value() == 9
