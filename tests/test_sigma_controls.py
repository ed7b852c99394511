"""SigmaControls built while a model is already loaded: its position spin boxes take the
model's range at once, as a later model change would set it, not Qt's default 0-99."""

from detokgui.core.model.conventions import SigmaChoice
from detokgui.gui.sigma_controls import SigmaControls
from detokgui.gui.state import AppState


def built_after_load(qtbot, layer, sigma=None):
    state = AppState()
    state.set_model(layer)
    if sigma is not None:
        state.set_sigma(sigma)
    controls = SigmaControls(state)
    qtbot.addWidget(controls)
    return state, controls


def test_ranges_match_a_model_change(qtbot, tiny_layer):
    top = tiny_layer.n_positions - 1
    assert top > 99  # past Qt's default maximum
    _, controls = built_after_load(qtbot, tiny_layer)
    later = SigmaControls(AppState())  # built first, the model loaded after
    qtbot.addWidget(later)
    later.state.set_model(tiny_layer)
    for spin, ref in ((controls.i_spin, later.i_spin), (controls.j_spin, later.j_spin)):
        assert (spin.minimum(), spin.maximum()) == (ref.minimum(), ref.maximum()) == (0, top)


def test_positions_past_99_are_accepted_and_shown(qtbot, tiny_layer):
    top = tiny_layer.n_positions - 1
    state, controls = built_after_load(qtbot, tiny_layer)
    controls.combo.setCurrentIndex(controls.combo.findData("at"))
    controls.i_spin.setValue(top)
    controls.j_spin.setValue(top - 1)
    assert (controls.i_spin.value(), controls.j_spin.value()) == (top, top - 1)
    assert controls.i_spin.text() == str(top)
    assert state.sigma == SigmaChoice("at", (top, top - 1))


def test_a_choice_past_99_already_set_is_shown(qtbot, tiny_layer):
    top = tiny_layer.n_positions - 1
    choice = SigmaChoice("at", (top, 110))
    state, controls = built_after_load(qtbot, tiny_layer, choice)
    assert (controls.i_spin.value(), controls.j_spin.value()) == (top, 110)
    assert state.sigma == choice


def test_without_a_model_the_range_is_left_as_before(qtbot):
    controls = SigmaControls(AppState())
    qtbot.addWidget(controls)
    assert (controls.i_spin.maximum(), controls.j_spin.maximum()) == (99, 99)
