from detokgui.app import main

raise SystemExit(main())
