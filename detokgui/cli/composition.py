"""`detokgui export composition`: layer 0 -> layer 1 (docs/math/composition.md)."""

from __future__ import annotations

from detokgui.cli.common import CliError, export_command

FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def _composition_args(p):
    p.add_argument("--out", required=True,
                   help="file ending in .csv (the table), .png, .svg or .pdf (the Q/K/V "
                        "heatmaps)")
    p.add_argument("--behaviour", default=None, metavar="FILE",
                   help="also measure the previous-token and induction scores of every head "
                        "of layers 0 and 1 (the first two blocks' forward pass on repeated "
                        "random tokens) and write them to FILE (.csv: layer,head,measure,"
                        "score; .png, .svg or .pdf: bars)")
    p.add_argument("--sequences", type=int, default=16,
                   help="repeated random sequences measured (default 16)")
    p.add_argument("--length", type=int, default=None,
                   help="random tokens per copy (default 50, or as many as fit twice in the "
                        "model's positions)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random tokens (default 0)")
    p.add_argument("--no-bos", action="store_true",
                   help="do not put the BOS token before each sequence")


def _check_composition(args, shape):
    from pathlib import Path

    if args.behaviour is not None:
        target = Path(args.behaviour)
        if target.suffix.lower() not in (".csv", *FIGURE_SUFFIXES):
            raise CliError(f"--behaviour must end in .csv, .png, .svg or .pdf, not "
                           f"{target.name!r}")
        if target.parent and not target.parent.exists():
            raise CliError(f"the folder {target.parent} does not exist")
        if target.is_dir():
            raise CliError(f"--behaviour {target} is a folder; give a file name")
        if target.resolve() == Path(args.out).resolve():
            raise CliError("--behaviour must name another file than --out")
    elif (args.sequences, args.length, args.seed, args.no_bos) != (16, None, 0, False):
        raise CliError("--sequences, --length, --seed and --no-bos choose what --behaviour "
                       "measures: give --behaviour FILE")
    if args.sequences < 1:
        raise CliError(f"--sequences must be at least 1, not {args.sequences}")
    if args.length is not None and args.length < 2:
        raise CliError(f"--length must be at least 2, not {args.length}")


@export_command(
    "composition", "Q-, K- and V-composition of every layer-0 head with every layer-1 head, "
    "LayerNorms folded, against random matrices of the same shapes, as CSV "
    "(layer0_head,layer1_head,kind,score,baseline_mean,baseline_hi), PNG, SVG or PDF; "
    "--behaviour FILE adds the measured previous-token and induction scores",
    _composition_args, outputs=(".csv", *FIGURE_SUFFIXES), check=_check_composition,
)
def export_composition(args, layer):
    from detokgui.api.composition import baseline_label, behaviour, composition
    from detokgui.core.base.progress import run
    from detokgui.core.composition.behaviour import behaviour_job
    from detokgui.core.composition.scores import composition_job

    comp = run(composition_job(layer))
    n = _write(args.out, composition.table(layer, progress=False), "composition", layer)
    print(baseline_label(comp))
    K = comp.of("K")
    partners = ", ".join(f"{g} <- {comp.partner('K', g)} ({float(K[:, g].max()):.3f})"
                         for g in range(K.shape[1]))
    print(f"strongest K-composition per layer-1 head (layer-1 head <- layer-0 head): "
          f"{partners}")
    if args.behaviour is not None:
        beh = behaviour.table(layer, sequences=args.sequences, length=args.length,
                              seed=args.seed, prepend_bos=not args.no_bos, progress=False)
        _write(args.behaviour, beh, "behaviour", layer)
        print(f"wrote {args.behaviour} ({beh.conventions['label']})")
        print(circuit_line(comp, run(behaviour_job(layer, args.sequences, args.length,
                                                   args.seed, not args.no_bos))))
    return n


def circuit_line(comp, beh) -> str:
    """The measured induction head beside the weights: "previous-token head 1 (0.99);
    induction head 2 (0.93): K-composition with head 1 0.245, its strongest partner 1,
    baseline 97.5th percentile 0.139"."""
    from detokgui.core.composition.tables import circuit_rows

    prev, ind = beh.previous_token_head(), beh.induction_head()
    row = circuit_rows(comp, beh)[ind]
    return (f"previous-token head {prev} ({row.previous_token:.2f}); induction head {ind} "
            f"({row.induction:.2f}): K-composition with head {prev} {row.k_composition:.3f}, "
            f"its strongest partner {row.k_partner}, baseline 97.5th percentile "
            f"{row.baseline_hi:.3f}")


def _write(path: str, result, analysis: str, layer) -> int | None:
    """`result` (an analysis' `Tabled`) as CSV, or its figure with its conventions in the
    footer when `path` ends in .png, .svg or .pdf."""
    from detokgui.core.base.tables import write_csv

    if path.lower().endswith(".csv"):
        return write_csv(path, result.table)
    from detokgui.api.composition import behaviour_plot, composition_plot
    from detokgui.api.frames import frame
    from detokgui.core.base.atomic import atomic_open
    from detokgui.figures import style

    draw = composition_plot if analysis == "composition" else behaviour_plot
    fig = draw(frame(result.table, analysis, layer, **result.conventions))
    with atomic_open(path, "wb") as f:
        style.save(fig, f, path.rsplit(".", 1)[-1].lower())
    return None
