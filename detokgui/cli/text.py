"""`detokgui export sentence|empirical|kl|neuron|sinks`: layer 0 on real text (C1-C3, C5
and attention sinks: docs/math/text-side.md)."""

from __future__ import annotations

import sys

from detokgui.cli.common import (
    CliError,
    export_command,
    head_arg,
    head_option,
    out_path,
    tokens_of,
)
from detokgui.help_texts import CORPUS_PATHS


def _corpus_args(p, required: bool = True):
    p.add_argument("--corpus", nargs="+", required=required, metavar="PATH",
                   help=CORPUS_PATHS + "; a text is a window of at most n_positions "
                        "tokens of one document")
    p.add_argument("--prepend-bos", "--prepend-eos", action="store_true",
                   help="start every text with the model's BOS token (the tokenizer's "
                        "bos_token, else its eos_token: <|endoftext|> for GPT-2, the "
                        "authors' convention; </s> for OPT)")
    p.add_argument("--max-texts", type=int, default=None, metavar="N",
                   help="use only the first N texts (default: all)")


def _sentence_args(p):
    p.add_argument("--text", required=True, help="text to analyse (at most n_positions tokens)")
    head_option(p)
    p.add_argument("--out", required=True, help="CSV file")


def _check_head(args, shape):
    head_arg(shape, args.head)


@export_command(
    "sentence", "six terms, their sum, predicted and actual attention for a text: "
    "head,i,j,term,value", _sentence_args, check=_check_head)
def export_sentence(args, layer):
    from detokgui.api.text import sentence
    from detokgui.core.base.tables import write_csv

    out = out_path(args, (".csv",))
    return write_csv(out, sentence.table(layer, tokens_of(layer, args.text),
                                         heads=head_arg(layer, args.head)).table)


def _empirical_args(p):
    from detokgui.core.model.conventions import DEFAULT_POSITION_CONVENTION, POSITION_CONVENTIONS

    _corpus_args(p)
    p.add_argument("--position", type=int, default=None,
                   help="query position i (0-based; default: the paper's 500, scaled to the "
                        "model's positions when it has fewer than 1024); texts longer than i "
                        "are averaged")
    p.add_argument("--convention", choices=POSITION_CONVENTIONS,
                   default=DEFAULT_POSITION_CONVENTION,
                   help="sigma of the weight-based prediction: the authors' (default) or "
                        "the vocabulary mean on both sides")
    head_option(p)
    p.add_argument("--out", required=True, help="CSV file")


@export_command(
    "empirical", "mean attention at query position i over corpus texts vs the weight-based "
    "prediction: head,j,empirical,predicted,windows,convention,temperature", _empirical_args,
    check=_check_head)
def export_empirical(args, layer):
    from detokgui.api.text import empirical
    from detokgui.core.base.checks import check_position
    from detokgui.core.base.tables import write_csv

    out = out_path(args, (".csv",))
    i = None if args.position is None else check_position(layer, args.position)
    if i is None:
        from detokgui.core.model.conventions import position_text

        print(f"note: query position {position_text(layer.n_positions)} (the default; "
              "--position to choose)", file=sys.stderr)
    return write_csv(out, empirical.table(layer, args.corpus, i, convention=args.convention,
                                          heads=head_arg(layer, args.head),
                                          prepend_bos=args.prepend_bos,
                                          max_texts=args.max_texts, progress=False).table)


def _kl_args(p):
    from detokgui.core.model.conventions import TEMPERATURE_NOTE

    _corpus_args(p)
    p.add_argument("--definition", choices=("paper", "code"), default="paper",
                   help="paper: KL(P||Q) of softmaxes divided by tau (eq 18-21, default; "
                        f"{TEMPERATURE_NOTE}); code: the authors' script, KL(Q||P) averaged "
                        "over j of the raw scores (tau = 1 for every model)")
    head_option(p)
    p.add_argument("--out", required=True, help="CSV file")


@export_command(
    "kl", "each term's KL contribution per head and query position, averaged over corpus "
    "texts: head,i,term,contribution,texts,definition,temperature", _kl_args,
    check=_check_head)
def export_kl(args, layer):
    from detokgui.api.text import kl
    from detokgui.core.base.tables import write_csv

    out = out_path(args, (".csv",))
    return write_csv(out, kl.table(layer, args.corpus, definition=args.definition,
                                   heads=head_arg(layer, args.head),
                                   prepend_bos=args.prepend_bos, max_texts=args.max_texts,
                                   progress=False).table)


def _neuron_args(p):
    p.add_argument("--neuron", required=True, type=int, help="layer-0 MLP neuron (0-based)")
    p.add_argument("--k", type=int, default=20, help="tokens per side (default 20)")
    p.add_argument("--heads", type=int, nargs="+", default=None, metavar="H",
                   help="heads of the contextual circuit (default: those the B4 "
                        "classification calls contextual)")
    _corpus_args(p, required=False)
    p.add_argument("--out", required=True, help="CSV file")


@export_command(
    "neuron", "a layer-0 MLP neuron's top and bottom tokens through the contextual heads: "
    "rank,token_id,token,contribution,side (normalisation measured on --corpus if given, "
    "else the vocabulary mean)", _neuron_args)
def export_neuron(args, layer):
    from detokgui.api.circuits import neuron
    from detokgui.core.base.checks import check_heads
    from detokgui.core.base.tables import write_csv
    from detokgui.core.text_side import circuits

    out = out_path(args, (".csv",))
    if args.k < 1:
        raise CliError("--k must be at least 1")
    heads = None if args.heads is None else check_heads(layer, args.heads)
    circuits.check_neuron(layer, args.neuron)
    if args.corpus:
        if heads is None:
            heads = circuits.contextual_heads(layer)
            if not heads:
                raise CliError(f"no head of {layer.name} is classified contextual; "
                               "choose them with --heads")
    elif args.prepend_bos or args.max_texts is not None:
        raise CliError("--prepend-bos and --max-texts need --corpus")
    res = neuron.table(layer, args.neuron, args.k, heads=heads, corpus=args.corpus or None,
                       prepend_bos=args.prepend_bos, max_texts=args.max_texts, progress=False)
    rows = write_csv(out, res.table)
    print(res.conventions["circuit"])
    return rows


def _sinks_args(p):
    _corpus_args(p, required=False)
    p.add_argument("--per", choices=("position", "head"), default="position",
                   help="one row per head and query position (default), or one per head "
                        "(means over every text and position)")
    p.add_argument("--texts", type=int, default=16, metavar="N",
                   help="without --corpus: how many random token sequences (default 16)")
    p.add_argument("--length", type=int, default=128, metavar="N",
                   help="without --corpus: tokens per sequence, at most n_positions "
                        "(default 128)")
    p.add_argument("--seed", type=int, default=0, help="without --corpus: the sample's seed")
    head_option(p)
    p.add_argument("--out", required=True, help="CSV file")


@export_command(
    "sinks", "attention to key position 0 and its logit advantage split into the six terms, "
    "averaged over corpus texts (--corpus) or random token sequences: head,i,attention_to_0,"
    "uniform,advantage,adv_ee,adv_pp,adv_pe,adv_ep,adv_e,adv_p,sink_term,entropy,texts,bos,temperature "
    "(--per head: the same per head without i and entropy)", _sinks_args, check=_check_head)
def export_sinks(args, layer):
    from detokgui.api.sinks import sinks
    from detokgui.core.base.tables import write_csv

    out = out_path(args, (".csv",))
    if not args.corpus and args.max_texts is not None:
        raise CliError("--max-texts needs --corpus (without it: --texts)")
    return write_csv(out, sinks.table(layer, args.corpus or None, per=args.per,
                                      heads=head_arg(layer, args.head),
                                      prepend_bos=args.prepend_bos, max_texts=args.max_texts,
                                      n_texts=args.texts, length=args.length, seed=args.seed,
                                      progress=False).table)
