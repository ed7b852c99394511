"""`detokgui export terms|sigma|topk|heatmap`: the token side and the six terms."""

from __future__ import annotations

from detokgui.cli.common import CliError, export_command, head_arg, out_path, tokens_of


def _terms_args(p):
    p.add_argument("--text", required=True, help="text to decompose (at most n_positions tokens)")
    p.add_argument("--out", required=True, help="CSV file")


@export_command("terms", "six terms and attention for a text: head,i,j,term,value", _terms_args)
def export_terms(args, layer):
    from detokgui.core.tables import terms_table, write_csv

    out = out_path(args, (".csv",))
    return write_csv(out, terms_table(layer, tokens_of(layer, args.text)))


def _sigma_args(p):
    p.add_argument("--out", required=True, help="CSV file")


@export_command("sigma", "sigma(e_v + p_j) over the vocabulary: position,mean,min,max", _sigma_args)
def export_sigma(args, layer):
    from detokgui.core.tables import sigma_summary_table, write_csv

    out = out_path(args, (".csv",))
    return write_csv(out, sigma_summary_table(layer))


def _topk_args(p):
    p.add_argument("--query", required=True, help="text whose LAST token is the query token")
    p.add_argument("--k", type=int, default=10, help="how many keys per head (default 10)")
    p.add_argument("--head", type=int, default=None, help="only this head (default: all)")
    p.add_argument("--sigma", choices=("mean", "none"), default="mean",
                   help="sigma per token: mean over positions (default) or none (raw)")
    p.add_argument("--out", required=True, help="CSV file")


@export_command("topk", "top-k keys by T_ee for a query token: head,rank,key_id,key_token,score",
                _topk_args)
def export_topk(args, layer):
    from detokgui.core.affinity import SigmaChoice, topk_keys
    from detokgui.core.tables import topk_table, write_csv

    out = out_path(args, (".csv",))
    if args.k < 1:
        raise CliError("--k must be at least 1")
    query = tokens_of(layer, args.query)[-1]
    result = topk_keys(layer, query, args.k, SigmaChoice(args.sigma), head_arg(layer, args.head))
    return write_csv(out, topk_table(layer, result))


def _heatmap_args(p):
    p.add_argument("--tokens", required=True, help="text whose tokens are compared pairwise")
    p.add_argument("--head", type=int, default=0, help="head (default 0)")
    p.add_argument("--sigma", choices=("mean", "none"), default="mean",
                   help="sigma per token: mean over positions (default) or none (raw)")
    p.add_argument("--out", required=True, help="file ending in .csv, .png or .svg")


@export_command("heatmap", "T_ee between all pairs of a text's tokens, as CSV, PNG or SVG",
                _heatmap_args)
def export_heatmap(args, layer):
    from detokgui.core.affinity import SigmaChoice, affinity_block
    from detokgui.core.tables import heatmap_table, write_csv

    out = out_path(args, (".csv", ".png", ".svg"))
    heads = head_arg(layer, args.head)
    ids = tokens_of(layer, args.tokens)
    values = affinity_block(layer, ids, ids, SigmaChoice(args.sigma), heads)
    if out.suffix.lower() == ".csv":
        return write_csv(out, heatmap_table(layer, values, heads, ids, ids))
    from detokgui.gui.figures import heatmap_figure

    heatmap_figure(layer, values[0].cpu().numpy(), ids, heads[0], SigmaChoice(args.sigma), out)
    return None
