"""Entry point of the frozen application (PyInstaller runs this file)."""

from detokgui.app import main

raise SystemExit(main())
