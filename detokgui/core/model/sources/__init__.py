"""Where a checkpoint comes from: a local folder (`checkpoint_files`, `checkpoint`), the
Hugging Face hub, layer 0 only (`hub`, `hub_download`), the demo models shipped with
detokgui (`demo`), the default model and whether it can be opened (`default_model`), and
the model names this machine knows (`model_names`).

May import: `core.base`, `core.model.families`, `core.model.tokens`.
"""
