"""The figure and report exports' defaults, in a module that imports nothing: the window's
export dialogs show them on the GUI thread, where importing matplotlib (registry, report)
would stall it for a few hundred ms, and the command line's help gives them without
loading torch."""

#: How many corpus windows the text figures (observed attention, KL contributions) read
#: by default: enough for smooth means, seconds per figure on a CPU.
DEFAULT_MAX_TEXTS = 64

#: The report page's size budget, MB (the issue's goal for GPT-2 small with the token
#: table): the token table gets what the figures and the rest leave (`report.table_budget`).
DEFAULT_PAGE_MB = 15.0

#: Keys per head and query token in the report's token search table.
DEFAULT_K = 5
