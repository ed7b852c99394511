"""`detokgui export bias|neurons`: the position side."""

from __future__ import annotations

from detokgui.cli.common import export_command


def _bias_args(p):
    p.add_argument("--position", required=True, type=int,
                   help="query position i (0-based, below n_positions)")
    p.add_argument("--sigma", choices=("mean", "max", "min", "none"), default="mean",
                   help="sigma per position: vocabulary mean (default), max, min, or none (raw)")
    p.add_argument("--out", required=True, help="CSV file")


def _check_bias(args, shape):
    from detokgui.core.checks import check_position
    from detokgui.core.errors import InputError

    if shape is not None:
        check_position(shape, args.position)
    elif args.position < 0:
        raise InputError(f"The query position {args.position} is outside 0..n_positions-1.")


@export_command(
    "bias", "positional bias at query position i: head,j,t_p,t_pp,total,softmax", _bias_args,
    check=_check_bias,
)
def export_bias(args, layer):
    from detokgui.core.checks import check_position
    from detokgui.core.tables import bias_table, write_csv

    return write_csv(args.out, bias_table(layer, check_position(layer, args.position), args.sigma))


def _neurons_args(p):
    p.add_argument("--scaled", action="store_true",
                   help="divide P[j] by the vocabulary-mean sigma at j (LayerNorm-scaled)")
    p.add_argument("--out", required=True, help="CSV file")


@export_command(
    "neurons", "position-embedding dimensions: dim,norm,slope,r2,period,group", _neurons_args
)
def export_neurons(args, layer):
    from detokgui.core.tables import neurons_table, write_csv

    return write_csv(args.out, neurons_table(layer, scaled=args.scaled))
