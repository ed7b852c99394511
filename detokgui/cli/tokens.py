"""`detokgui export terms|sigma|topk|heatmap`: the token side and the six terms."""

from __future__ import annotations

from detokgui.cli.common import (
    CliError,
    at_least,
    export_command,
    head_arg,
    head_option,
    read_texts,
    single_token,
    text_arguments,
    tokens_of,
)


def _terms_args(p):
    text_arguments(p, "text", "text to decompose (at most n_positions tokens)")
    head_option(p)
    p.add_argument("--out", required=True, help="CSV file")


def _read_text(args, shape):
    head_arg(shape, args.head)
    args.text_value = read_texts(args, "text")[0]


@export_command("terms", "six terms and attention for a text: head,i,j,term,value", _terms_args,
                check=_read_text)
def export_terms(args, layer):
    from detokgui.api.tokens import terms
    from detokgui.core.base.tables import write_csv

    return write_csv(args.out, terms.table(layer, tokens_of(layer, args.text_value),
                                           heads=head_arg(layer, args.head)).table)


def _sigma_args(p):
    p.add_argument("--out", required=True, help="CSV file")


@export_command("sigma", "sigma(e_v + p_j) over the vocabulary: position,mean,min,max", _sigma_args)
def export_sigma(args, layer):
    from detokgui.api.tokens import sigma
    from detokgui.core.base.tables import write_csv

    return write_csv(args.out, sigma.table(layer, progress=False).table)


def _topk_args(p):
    p.add_argument("--direction", choices=("keys", "queries"), default="keys",
                   help="keys: the keys with the highest T_ee for each query token (default); "
                        "queries: the queries with the highest T_ee for each key token")
    anchors = p.add_mutually_exclusive_group(required=True)
    anchors.add_argument("--query", action="append",
                         help="(--direction keys) a query token: a text that is exactly one "
                              "token (' Korea' with its leading space; 'Korea' is two tokens "
                              "and is refused); repeat for several; '-' reads it from "
                              "standard input")
    anchors.add_argument("--queries-file", metavar="PATH",
                         help="(--direction keys) UTF-8 file, one query token per line ('-': "
                              "stdin)")
    anchors.add_argument("--key", action="append",
                         help="(--direction queries) a key token: a text that is exactly one "
                              "token, as --query; repeat for several; '-' reads it from "
                              "standard input")
    anchors.add_argument("--keys-file", metavar="PATH",
                         help="(--direction queries) UTF-8 file, one key token per line ('-': "
                              "stdin)")
    p.add_argument("--k", type=int, default=10, help="how many tokens per head (default 10)")
    head_option(p)
    p.add_argument("--sigma", choices=("mean", "none"), default="mean",
                   help="sigma per token: mean over positions (default) or none (raw)")
    p.add_argument("--out", required=True, help="CSV file")


def _check_topk(args, shape):
    at_least(args.k, "--k")
    head_arg(shape, args.head)
    keys = args.direction == "keys"
    given = "query" if (args.query or args.queries_file) else "key"
    wanted = "query" if keys else "key"
    if given != wanted:
        raise CliError(
            f"--direction {args.direction} ranks {'keys' if keys else 'queries'} for a "
            f"{wanted} token: give it with --{wanted} or --{'queries' if keys else 'keys'}-file"
        )
    args.anchor_texts = read_texts(args, wanted, lines=True, blank_ok=True,
                                   file_flag="queries-file" if keys else "keys-file")


@export_command(
    "topk",
    "top-k keys by T_ee for query tokens (or queries for key tokens): "
    "query_id,query_token,head,rank,key_id,key_token,score",
    _topk_args, check=_check_topk,
)
def export_topk(args, layer):
    from detokgui.api.tokens import topk
    from detokgui.core.base.tables import write_csv

    flag = "--query" if args.direction == "keys" else "--key"
    anchors = [single_token(layer, text, flag) for text in args.anchor_texts]
    return write_csv(args.out, topk.table(layer, anchors, args.k, heads=head_arg(layer, args.head),
                                          sigma=args.sigma, direction=args.direction,
                                          progress=False).table)


def _heatmap_args(p):
    text_arguments(p, "tokens", "text whose tokens are compared pairwise")
    p.add_argument("--head", type=int, default=0, help="head (default 0)")
    p.add_argument("--sigma", choices=("mean", "none"), default="mean",
                   help="sigma per token: mean over positions (default) or none (raw)")
    p.add_argument("--out", required=True, help="file ending in .csv, .png or .svg")


def _check_heatmap(args, shape):
    head_arg(shape, args.head)
    args.tokens_value = read_texts(args, "tokens")[0]


@export_command("heatmap", "T_ee between all pairs of a text's tokens, as CSV "
                "(head,query_index,query_id,query_token,key_index,key_id,key_token,value), "
                "PNG or SVG",
                _heatmap_args, outputs=(".csv", ".png", ".svg"), check=_check_heatmap)
def export_heatmap(args, layer):
    from detokgui.api.tokens import heatmap
    from detokgui.core.base.tables import write_csv
    from detokgui.core.model.conventions import SigmaChoice
    from detokgui.core.token_side.affinity import MAX_HEATMAP_TOKENS, affinity_block

    heads = head_arg(layer, args.head)
    ids = tokens_of(layer, args.tokens_value)
    if len(ids) > MAX_HEATMAP_TOKENS:
        raise CliError(
            f"the text has {len(ids)} tokens; the heatmap takes at most {MAX_HEATMAP_TOKENS} "
            f"({MAX_HEATMAP_TOKENS}^2 cells): shorten the text"
        )
    if args.out.lower().endswith(".csv"):
        return write_csv(args.out, heatmap.table(layer, ids, heads=heads, sigma=args.sigma,
                                                 progress=False).table)
    values = affinity_block(layer, ids, ids, SigmaChoice(args.sigma), heads)
    from detokgui.figures.token_heatmap import save_token_heatmap

    save_token_heatmap(layer, values[0].cpu().numpy(), ids, heads[0],
                       SigmaChoice(args.sigma), args.out)
    return None
