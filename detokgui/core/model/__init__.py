"""The model: a checkpoint's layer 0 with LayerNorm folded in (`weights.Layer0`), the
LayerNorm scale sigma (`sigma`), the six-term decomposition (`terms`), the conventions
every view shares (`conventions`: sigma, temperature, colour sign, default position),
tokenizers and the display form of tokens (`tokens`, `encode`), seeded token samples
(`sample`), content identities for caches (`identity`), the provenance record of an
export (`provenance`), one adapter per model family (`families`), where checkpoints
come from (`sources`: local folders, the hub, the demo models, the default model),
opening one for the window (`loading`) and the texts that name a loaded model (`titles`).

May import: `core.base`.
"""
