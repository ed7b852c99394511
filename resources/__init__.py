"""Icons and desktop files; installed as the package `detokgui.resources`."""
