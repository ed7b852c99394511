"""detokgui: the first attention layer of GPT-2, GPT-Neo and OPT models, from the weights alone."""

__version__ = "0.1.0"
