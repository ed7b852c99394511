"""`detokgui export bias|neurons`: the position side."""

from __future__ import annotations

import sys

from detokgui.cli.common import export_command, head_arg, head_option


def _bias_args(p):
    from detokgui.core.model.conventions import (
        DEFAULT_POSITION_CONVENTION,
        POSITION_CONVENTIONS,
        POSITION_SIGMAS,
    )

    p.add_argument("--position", type=int, default=None,
                   help="query position i (0-based, below n_positions; default: the paper's "
                        "500, scaled to the model's positions when it has fewer than 1024)")
    p.add_argument("--convention", choices=POSITION_CONVENTIONS,
                   default=DEFAULT_POSITION_CONVENTION,
                   help="paper (default): the authors' figures, key side E_v[1/sigma(e_v+p_j)] "
                        "and --sigma on the query side only; mean-sigma: 1/--sigma on both sides")
    p.add_argument("--sigma", choices=POSITION_SIGMAS, default="mean",
                   help="vocabulary mean (default), max or min of sigma(e_v+p), or none "
                        "(without LayerNorm)")
    head_option(p)
    p.add_argument("--out", required=True, help="CSV file")


def _check_bias(args, shape):
    from detokgui.core.base.checks import check_position
    from detokgui.core.base.errors import InputError

    head_arg(shape, args.head)
    if args.position is None:
        return
    if shape is not None:
        check_position(shape, args.position)
    elif args.position < 0:
        raise InputError(f"The query position {args.position} is outside 0..n_positions-1.")


@export_command(
    "bias", "positional bias at query position i: head,j,t_p,t_pp,total,softmax,t_pp_lo,"
    "t_pp_hi,t_p_lo,t_p_hi,convention,sigma,temperature", _bias_args,
    check=_check_bias,
)
def export_bias(args, layer):
    from detokgui.api.position import bias
    from detokgui.core.base.checks import check_position
    from detokgui.core.base.tables import write_csv
    from detokgui.core.model.conventions import temperature_label

    i = None if args.position is None else check_position(layer, args.position)
    if i is None:
        from detokgui.core.model.conventions import position_text

        print(f"note: query position {position_text(layer.n_positions)} (the default; "
              "--position to choose)", file=sys.stderr)
    result = bias.table(layer, i, sigma=args.sigma, convention=args.convention,
                        heads=head_arg(layer, args.head), progress=False)
    n = write_csv(args.out, result.table)
    print(f"convention: {result.conventions['convention_label']}; softmax / tau, "
          f"{temperature_label(layer, ascii=True)}")
    return n


def _neurons_args(p):
    p.add_argument("--scaled", action="store_true",
                   help="divide P[j] by the vocabulary-mean sigma at j (LayerNorm-scaled)")
    p.add_argument("--out", required=True, help="CSV file")


@export_command(
    "neurons", "position-embedding dimensions: dim,norm,slope,r2,period,group", _neurons_args
)
def export_neurons(args, layer):
    from detokgui.api.position import neurons
    from detokgui.core.base.tables import write_csv

    return write_csv(args.out, neurons.table(layer, scaled=args.scaled, progress=False).table)
