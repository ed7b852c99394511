"""One layer further (`detokgui export composition`, the window's Layer 1 page;
docs/math/composition.md): how layer-1 heads compose with layer-0 heads, from the weights,
and the previous-token and induction scores measured with the first two blocks. Block 1
is read (or, for a hub model, only its byte ranges downloaded) the first time one of these
is called, and kept on the layer."""

from __future__ import annotations

from detokgui.api.frames import analysis, tabled
from detokgui.api.jobs import ProgressArg, run_job


def baseline_label(comp) -> str:
    """The line the CLI prints and figures show under the scores: what the baseline is."""
    return (f"baseline: the score of random Gaussian matrices of the same shapes (d = "
            f"{comp.d}, d_head = {comp.d_head}), mean {comp.baseline_mean:.4f}, 95% band "
            f"{comp.baseline_lo:.4f}..{comp.baseline_hi:.4f} ({comp.baseline_samples} draws)")


@analysis("composition")
def composition(layer, *, progress: ProgressArg = True):
    """Q-, K- and V-composition of every layer-0 head with every layer-1 head, both
    LayerNorms folded (Elhage et al. 2021; `core.composition.scores`):
    layer0_head,layer1_head,kind,score,baseline_mean,baseline_hi, kind Q, K then V.
    baseline_mean and baseline_hi are the mean and 97.5th percentile of the same score of
    random matrices of the same shapes: a pair above baseline_hi stands out.
    attrs: baseline_lo, baseline_samples, layer1_attention and the baseline's label.
    InputError for a model with a single layer."""
    from detokgui.core.composition.scores import composition_job
    from detokgui.core.composition.tables import composition_table

    comp = run_job(composition_job(layer), "composition", progress)
    return tabled(composition_table(comp), baseline_lo=comp.baseline_lo,
                  baseline_samples=comp.baseline_samples,
                  layer1_attention=comp.layer1_attention, label=baseline_label(comp))


@analysis("behaviour")
def behaviour(layer, *, sequences: int = 16, length: int | None = None, seed: int = 0,
              prepend_bos: bool = True, progress: ProgressArg = True):
    """The previous-token score of every head in layers 0 and 1 (mean attention from i to
    i - 1) and its induction score (mean attention from the second copy of a repeated
    random token sequence to the token after the earlier copy), measured with the
    model's own forward pass of its first two blocks on `sequences` seeded sequences of
    `length` random tokens repeated once, BOS first with `prepend_bos`
    (`core.composition.behaviour`): layer,head,measure,score (measure previous_token or
    induction). attrs: sequences, length, seed, prepend_bos and their label."""
    from detokgui.core.composition.behaviour import behaviour_job
    from detokgui.core.composition.tables import behaviour_table

    beh = run_job(behaviour_job(layer, sequences, length, seed, prepend_bos), "behaviour",
                  progress)
    return tabled(behaviour_table(beh), sequences=beh.sequences, length=beh.length,
                  seed=beh.seed, prepend_bos=beh.bos is not None, label=beh.label(),
                  layer1_attention=beh.layer1_attention)


def composition_plot(df):
    """The figure of a `composition` frame (`dg.plot(df)`, `export composition --out
    F.svg`): the Q, K and V heatmaps of the scores it holds, layer-0 heads as rows, the
    pairs above baseline_hi outlined (`figures.composition.composition_frame_figure`)."""
    from detokgui.figures.composition import composition_frame_figure

    return composition_frame_figure(df)


def behaviour_plot(df):
    """The figure of a `behaviour` frame: the previous-token scores of layer 0's heads
    and the induction scores of layer 1's, as bars
    (`figures.composition.behaviour_frame_figure`)."""
    from detokgui.figures.composition import behaviour_frame_figure

    return behaviour_frame_figure(df)
