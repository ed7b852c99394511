"""The axis ranges and tick steps the panels import from here (`core.base.plot_axes`)."""

from detokgui.core.base.plot_axes import (
    data_range,
    growing_x_range,
    nice_step,
    smaller_nice_step,
    stable_range,
)

__all__ = ["data_range", "growing_x_range", "nice_step", "smaller_nice_step", "stable_range"]
