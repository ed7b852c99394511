"""What every analysis stands on, and nothing of the analysis itself: errors meant for a
person (`errors`), progress and cancellation of long jobs (`progress`), atomic file writes
(`atomic`), the on-disk cache and where it lives (`diskcache`, `paths`), the checks of
indices and counts every analysis takes (`checks`), the generic table with its CSV
writer (`tables`), the provenance records exported files carry (`provenance`),
session files (`session`), lines reduced to a plot's pixel columns (`decimation`), a
plot's ranges, ticks, colour levels and wrapped footer lines (`plot_axes`), and numbers
as people read them (`numbers.num`: labels, hover text, table cells).

May import: the standard library and numpy only (no torch: every CSV writer of the CLI,
the API, the figures and the window imports this package), and nothing else of detokgui.
"""
