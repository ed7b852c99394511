"""detokgui: the first attention layer of GPT-2-family models, from the weights alone."""

__version__ = "0.1.0"
