"""The Qt application. Panels talk only through `state.AppState`."""
