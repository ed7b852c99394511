"""`Layer0`: the first transformer block of a model with LayerNorm folded in (any family
of `detokgui.core.model.families`, mapped onto the canonical tensors).

Notation: docs/math/folding.md#the-folded-tensors. With C = I - (1/d) 1 1^T and ln_1's gamma, beta:

    Wq_h = C diag(gamma) W^Q_h          bq_h = beta W^Q_h + b^Q_h       (same for K, V)
    b^QK_h = bq_h Wk_h^T
    W^VO_h = Wv_h W^O_h                 b^VO = (beta W^V + b^V) W^O + b^O

so that for x_i = e_{t_i} + p_i and s_i = sigma(x_i) the model's query is
q_i = x_i Wq_h / s_i + bq_h (and likewise k_j). Only the rank-d' factors are stored.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from detokgui.core.base.checks import token_tensor
from detokgui.core.base.errors import InputError, ModelLoadError
from detokgui.core.base.progress import run
from detokgui.core.model import conventions, families
from detokgui.core.model.families import family_label
from detokgui.core.model.sources import checkpoint, demo
from detokgui.core.model.terms import attention, six_terms
from detokgui.core.model.tokens import load_tokenizer as _load_tok

ProgressFn = Callable[[float, str], None]


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass(eq=False)
class Layer0:
    """Folded layer-0 tensors of a model of any supported family, on one device.

    V tokens, L positions, width d, H heads of d' = d / H, MLP width d_mlp.
    As stored in the checkpoint (HF Conv1D layout, x @ W + b), all heads together:
        E [V, d], P [L, d]                               wte, wpe
        ln1_weight, ln1_bias [d]                         ln_1's gamma, beta (ln2_*, lnf_* too)
        qkv_weight [d, 3d], qkv_bias [3d]                attn.c_attn: W^Q | W^K | W^V, biases
        attn_out_weight [d, d], attn_out_bias [d]        attn.c_proj: W^O, b^O
        mlp_in_weight [d, d_mlp], mlp_in_bias [d_mlp]    mlp.c_fc
        mlp_out_weight [d_mlp, d], mlp_out_bias [d]      mlp.c_proj
    Per head, with ln_1 folded in (module docstring):
        Wq, Wk, Wv [H, d, d'], bq, bk, bv [H, d'], bQK [H, d]
        Wo [H, d', d]                    W^O_h: attn_out_weight's rows of head h (nothing folded)
        bVO [d]                          b^VO, the constant all heads add to the output
    """

    name: str
    E: torch.Tensor
    P: torch.Tensor
    ln1_weight: torch.Tensor
    ln1_bias: torch.Tensor
    qkv_weight: torch.Tensor  # [d, 3d], HF Conv1D layout (x @ W + b)
    qkv_bias: torch.Tensor  # [3d]
    attn_out_weight: torch.Tensor  # [d, d]
    attn_out_bias: torch.Tensor  # [d]
    ln2_weight: torch.Tensor
    ln2_bias: torch.Tensor
    mlp_in_weight: torch.Tensor  # [d, d_mlp]
    mlp_in_bias: torch.Tensor
    mlp_out_weight: torch.Tensor  # [d_mlp, d]
    mlp_out_bias: torch.Tensor
    n_heads: int
    eps: float
    scale_attn_weights: bool = True
    activation: str = "gelu_new"
    tokenizer: Any = None
    load_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    lnf_weight: torch.Tensor | None = None  # final LayerNorm (ln_f), when the checkpoint has it
    lnf_bias: torch.Tensor | None = None
    #: The model family the checkpoint came from ("gpt2", "gpt_neo", "opt"): its layer 0
    #: was mapped onto the canonical tensors above by `detokgui.core.model.families`.
    family: str = "gpt2"
    #: The hub commit (40 hex digits) the weights are of, for a hub model (`name` stays as
    #: typed, e.g. "gpt2@main") or a folder written by `detokgui download` (its record,
    #: `hub.recorded_commit`); None for any other folder or a demo model.
    revision: str | None = None
    #: Where the weights were read from: the folder, or the hub name as given (a demo
    #: model's folder); later blocks are read from there on demand (`core.model.layer1`).
    #: None for a layer built from tensors or from a loaded model.
    source: str | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._fold()

    def __repr__(self) -> str:
        """One line: name, family, sizes (V tokens, L positions, d, H heads of d', MLP
        width), dtype and device; never the tensors."""
        return (f"Layer0({self.name!r}, family={self.family!r}, V={self.n_vocab}, "
                f"L={self.n_positions}, d={self.d}, H={self.n_heads}, d_head={self.d_head}, "
                f"d_mlp={self.mlp_in_weight.shape[1]}, dtype={str(self.dtype).removeprefix('torch.')}, "
                f"device={self.device})")

    # ------------------------------------------------------------------ shape

    @property
    def d(self) -> int:
        return self.E.shape[1]

    @property
    def d_head(self) -> int:
        return self.d // self.n_heads

    @property
    def n_vocab(self) -> int:
        return self.E.shape[0]

    @property
    def n_positions(self) -> int:
        return self.P.shape[0]

    @property
    def device(self) -> torch.device:
        return self.E.device

    @property
    def dtype(self) -> torch.dtype:
        return self.E.dtype

    @property
    def family_label(self) -> str:
        """The family's name as people write it: "GPT-2", "GPT-Neo", "OPT"."""

        return family_label(self.family)

    @property
    def summary(self) -> str:
        """One line for status bars and footers: "OPT architecture, d=768, 12 heads" (the
        architecture, so that a model that is not GPT-2 does not read as GPT-2)."""
        return f"{self.family_label} architecture, d={self.d}, {self.n_heads} heads"

    @property
    def temperature(self) -> float:
        """Scores are divided by this before the softmax: sqrt(d') (1 if the model
        was trained with scale_attn_weights=False); `conventions.temperature`."""
        return conventions.temperature(self.d_head, self.scale_attn_weights)

    # ------------------------------------------------------------------ folding

    def _fold(self) -> None:
        f = fold_attention(self.ln1_weight, self.ln1_bias, self.qkv_weight, self.qkv_bias,
                           self.attn_out_weight, self.attn_out_bias, self.n_heads)
        self.Wq, self.Wk, self.Wv, self.bq, self.bk, self.bv, self.bQK, self.Wo, self.bVO = f

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_tensors(
        cls,
        tensors: dict[str, torch.Tensor],
        *,
        n_heads: int,
        eps: float,
        name: str = "model",
        scale_attn_weights: bool = True,
        activation: str = "gelu_new",
        tokenizer: Any = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
        family: str = "gpt2",
    ) -> Layer0:
        """Build from the canonical layer-0 tensors (`families.base`: keys as
        `families.LAYER0_KEYS`, GPT-2's layout, whatever the family).

        With a tokenizer of fewer tokens than E has rows, the rows beyond it (padding, as
        OPT's 50272 rows for 50265 tokens) are left out, with a note: no token maps to
        them, and whole-vocabulary views and rankings must not list them."""
        dev = _device(device, name)
        if dtype not in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
            raise ModelLoadError(f"{name}: dtype must be a floating-point torch dtype, not {dtype}.")
        n_heads, eps = _check_hyper(n_heads, eps, name)
        missing = [k for k in families.LAYER0_KEYS if k not in tensors]
        if missing:
            raise ModelLoadError(f"{name}: layer-0 tensors are missing: {', '.join(missing)}.")
        check_layer0_shapes(tensors, name)
        notes: list[str] = []
        tensors = _without_padding_rows(tensors, tokenizer, notes)
        keys = families.LAYER0_KEYS + tuple(k for k in families.OPTIONAL_KEYS if k in tensors)
        try:
            moved = {k: tensors[k].to(device=dev, dtype=dtype) for k in keys}
        except torch.cuda.OutOfMemoryError:
            notes.append(f"Not enough {dev.type.upper()} memory; using the CPU instead.")
            dev = torch.device("cpu")
            moved = {k: tensors[k].to(device=dev, dtype=dtype) for k in keys}
        except RuntimeError as exc:
            raise ModelLoadError(f"{name}: the weights cannot be moved to {dev}: {exc}") from exc
        _check_finite(moved, name, dtype, tensors)
        t = moved
        d = t["wte.weight"].shape[1]
        if d % n_heads:
            raise ModelLoadError(f"{name}: hidden size {d} is not divisible by {n_heads} heads.")
        return cls(
            name=name,
            E=t["wte.weight"],
            P=t["wpe.weight"],
            ln1_weight=t["h.0.ln_1.weight"],
            ln1_bias=t["h.0.ln_1.bias"],
            qkv_weight=t["h.0.attn.c_attn.weight"],
            qkv_bias=t["h.0.attn.c_attn.bias"],
            attn_out_weight=t["h.0.attn.c_proj.weight"],
            attn_out_bias=t["h.0.attn.c_proj.bias"],
            ln2_weight=t["h.0.ln_2.weight"],
            ln2_bias=t["h.0.ln_2.bias"],
            mlp_in_weight=t["h.0.mlp.c_fc.weight"],
            mlp_in_bias=t["h.0.mlp.c_fc.bias"],
            mlp_out_weight=t["h.0.mlp.c_proj.weight"],
            mlp_out_bias=t["h.0.mlp.c_proj.bias"],
            n_heads=n_heads,
            eps=eps,
            scale_attn_weights=scale_attn_weights,
            activation=activation,
            tokenizer=tokenizer,
            notes=notes,
            lnf_weight=t.get("ln_f.weight"),
            lnf_bias=t.get("ln_f.bias"),
            family=family,
        )

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
        *,
        progress: ProgressFn | None = None,
        load_tokenizer: bool = True,
    ) -> Layer0:
        """Load layer 0 of a hub model (`gpt2`, `distilgpt2`, ...; `NAME@REVISION` for a
        branch, tag or commit: only layer 0's bytes are downloaded,
        `core.model.sources.hub`), a local folder, or a demo model ("demo": trained, shipped in
        the package; "random-demo").
        A hub model's `revision` is the commit it resolved to.

        Raises ModelLoadError with an actionable message on any failure."""

        start = time.perf_counter()
        report = progress or (lambda f, m: None)
        source, name = demo.resolve(str(name_or_path), report)
        try:
            shape, tensors, tok, revision = _read_checkpoint(source, name, report,
                                                             load_tokenizer)
        except ModelLoadError as exc:
            if str(name_or_path) != demo.RANDOM_DEMO:
                raise
            source = str(demo.rewrite_random_demo(str(exc), report))  # a damaged cache entry
            shape, tensors, tok, revision = _read_checkpoint(source, name, report,
                                                             load_tokenizer)
        report(0.85, "Folding LayerNorm")
        layer = cls.from_tensors(
            tensors,
            n_heads=shape.n_head,
            eps=shape.layer_norm_epsilon,
            name=name,
            scale_attn_weights=shape.scale_attn_weights,
            activation=shape.activation_function,
            tokenizer=tok,
            device=device,
            dtype=dtype,
            family=shape.family,
        )
        layer.revision = revision
        layer.source = source
        if demo.description(str(name_or_path)):
            layer.notes.append(demo.description(str(name_or_path)))
        layer.load_seconds = time.perf_counter() - start
        report(1.0, f"Loaded {name}")
        return layer

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any = None, name: str | None = None) -> Layer0:
        """Take layer 0 of an already loaded transformers model of a supported family
        (GPT2Model / GPT2LMHeadModel, GPTNeoForCausalLM, OPTForCausalLM, ...)."""

        cfg = getattr(model, "config", None)
        if cfg is None or getattr(cfg, "model_type", None) is None:
            raise ModelLoadError("from_model expects a transformers model with a config.")
        label = name or cfg.name_or_path or "model"
        cfg_dict = cfg.to_dict()
        family = families.family_for(cfg_dict, label)
        shape = family.shape(cfg_dict, label)
        state = {k: v.detach() for k, v in model.state_dict().items()}
        stored = {k: state[v] for k, v in family.resolve(state, shape, label).items()
                  if v in state}
        tensors = family.canonical(stored, shape, label)
        first = next(iter(model.parameters()))
        return cls.from_tensors(
            tensors,
            n_heads=shape.n_head,
            eps=shape.layer_norm_epsilon,
            name=label,
            scale_attn_weights=shape.scale_attn_weights,
            activation=shape.activation_function,
            tokenizer=tokenizer,
            device=first.device,
            dtype=first.dtype if first.dtype.is_floating_point else torch.float32,
            family=shape.family,
        )

    def to(self, device: torch.device | str) -> Layer0:
        """A copy on another device (folded tensors recomputed there)."""
        tensors = {
            "wte.weight": self.E, "wpe.weight": self.P,
            "h.0.ln_1.weight": self.ln1_weight, "h.0.ln_1.bias": self.ln1_bias,
            "h.0.attn.c_attn.weight": self.qkv_weight, "h.0.attn.c_attn.bias": self.qkv_bias,
            "h.0.attn.c_proj.weight": self.attn_out_weight, "h.0.attn.c_proj.bias": self.attn_out_bias,
            "h.0.ln_2.weight": self.ln2_weight, "h.0.ln_2.bias": self.ln2_bias,
            "h.0.mlp.c_fc.weight": self.mlp_in_weight, "h.0.mlp.c_fc.bias": self.mlp_in_bias,
            "h.0.mlp.c_proj.weight": self.mlp_out_weight, "h.0.mlp.c_proj.bias": self.mlp_out_bias,
        }
        if self.lnf_weight is not None and self.lnf_bias is not None:
            tensors.update({"ln_f.weight": self.lnf_weight, "ln_f.bias": self.lnf_bias})
        moved = Layer0.from_tensors(
            tensors, n_heads=self.n_heads, eps=self.eps, name=self.name,
            scale_attn_weights=self.scale_attn_weights, activation=self.activation,
            tokenizer=self.tokenizer, device=device, dtype=self.dtype, family=self.family,
        )
        moved.revision, moved.source = self.revision, self.source
        return moved

    # ------------------------------------------------------------------ analyses

    def check_token_ids(self, token_ids) -> torch.Tensor:
        """Validate a token sequence and return it as a LongTensor on the layer's device."""

        ids = token_tensor(self, token_ids, "token sequence")
        if ids.numel() == 0:
            raise InputError("The token sequence is empty.")
        if ids.numel() > self.n_positions:
            raise InputError(
                f"{ids.numel()} tokens is more than the model's {self.n_positions} positions; "
                f"shorten the text to at most {self.n_positions} tokens."
            )
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= self.n_vocab:
            bad = lo if lo < 0 else hi
            raise InputError(f"Token id {bad} is outside the vocabulary (0..{self.n_vocab - 1}).")
        return ids

    def six_terms(self, token_ids) -> dict[str, torch.Tensor]:
        """The six terms (docs/math/terms.md#the-six-terms) for one sequence:
        {"ee","pp","pe","ep","e","p"},
        each [H, n, n] (query i, key j)."""

        return six_terms(self, token_ids)

    def attention(self, token_ids) -> torch.Tensor:
        """alpha[h, i, j] = softmax_{j<=i}(sum of six terms / sqrt(d')), zero above the diagonal."""

        return attention(self, token_ids)

    def sigma_table(self, progress: ProgressFn | None = None) -> torch.Tensor:
        """S[v, j] = sigma(e_v + p_j), [V, L]; computed once and cached."""
        return self.sigma_stats(progress).table

    def sigma_stats(self, progress: ProgressFn | None = None):
        """The sigma table and its summaries (`sigma.SigmaStats`), cached (the table of
        `conventions.sigma_stats_job`, under the same key)."""

        cb = (lambda p: progress(p.fraction, p.message)) if progress else None
        return run(conventions.sigma_stats_job(self), cb)

    # ------------------------------------------------------------------ cache
    # Everything derived from the weights is kept on the layer under a key: a str named
    # after the module that owns it ("positional.factors"), or a tuple starting with one.

    def cached(self, key, compute: Callable[[], Any]):
        """The value kept under `key`, computing it with `compute()` the first time."""
        try:
            return self._cache[key]
        except KeyError:
            value = compute()
            self._cache[key] = value
            return value

    def cached_job(self, key, job: Callable[[], Any]):
        """Generator job: the value kept under `key`, or `yield from job()` the first time
        (its Progress passes through; stopped before it returns, nothing is kept)."""
        try:
            return self._cache[key]
        except KeyError:
            pass
        value = yield from job()
        self._cache[key] = value
        return value

    def is_cached(self, key) -> bool:
        """Whether a value is kept under `key`."""
        return key in self._cache

    def forget(self, prefix: str) -> None:
        """Drop every value whose key is `prefix`, starts with `prefix + "."`, or is a tuple
        whose first item is one of those."""
        def under(key) -> bool:
            head = key[0] if isinstance(key, tuple) and key else key
            return isinstance(head, str) and (head == prefix or head.startswith(prefix + "."))

        for key in [k for k in self._cache if under(k)]:
            self._cache.pop(key, None)


def fold_attention(ln_weight, ln_bias, qkv_weight, qkv_bias, out_weight, out_bias,
                   n_heads: int) -> tuple[torch.Tensor, ...]:
    """The folded attention of one block whose LayerNorm before it has gamma `ln_weight`
    and beta `ln_bias` (module docstring; docs/math/folding.md): (Wq, Wk, Wv [H, d, d'],
    bq, bk, bv [H, d'], b^QK [H, d], Wo [H, d', d], b^VO [d])."""
    d = qkv_weight.shape[0]
    H, dh = n_heads, d // n_heads
    # C diag(gamma) W: scale rows by gamma, then centre each column.
    Wg = ln_weight[:, None] * qkv_weight
    Wg = Wg - Wg.mean(dim=0, keepdim=True)
    b = ln_bias @ qkv_weight + qkv_bias  # [3d]

    def heads(M: torch.Tensor) -> torch.Tensor:  # [d, d] -> [H, d, d']
        return M.reshape(d, H, dh).permute(1, 0, 2).contiguous()

    Wq, Wk, Wv = (heads(Wg[:, i * d : (i + 1) * d]) for i in range(3))
    bq, bk, bv = (b[i * d : (i + 1) * d].reshape(H, dh) for i in range(3))
    bQK = torch.einsum("hk,hdk->hd", bq, Wk).contiguous()
    Wo = out_weight.reshape(H, dh, d).contiguous()
    bVO = b[2 * d :] @ out_weight + out_bias
    return Wq, Wk, Wv, bq, bk, bv, bQK, Wo, bVO


def _device(device, name: str) -> torch.device:
    """`device` (None: CUDA when available) as a torch.device that this machine has."""
    if device is None:
        return default_device()
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ModelLoadError(
            f"{name}: unknown device {device!r}; use 'cpu' or 'cuda' (or None for the default)."
        ) from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(
            f"{name}: CUDA was asked for but no CUDA device is available; use the CPU."
        )
    if dev.type not in ("cpu", "cuda"):
        raise ModelLoadError(f"{name}: device {device!r} is not supported; use 'cpu' or 'cuda'.")
    return dev


def _check_hyper(n_heads, eps, name: str) -> tuple[int, float]:
    import operator

    try:
        h = operator.index(n_heads)
    except TypeError:
        raise ModelLoadError(f"{name}: n_heads must be a whole number, not {n_heads!r}.") from None
    if h < 1:
        raise ModelLoadError(f"{name}: n_heads must be at least 1, not {h}.")
    try:
        e = float(eps)
    except (TypeError, ValueError):
        raise ModelLoadError(f"{name}: eps must be a number, not {eps!r}.") from None
    if not (math.isfinite(e) and e > 0):
        raise ModelLoadError(f"{name}: the LayerNorm eps must be positive, not {eps!r}.")
    return h, e


def check_layer0_shapes(t: dict[str, torch.Tensor], name: str, d: int | None = None) -> None:
    """Every layer-0 tensor has the shape GPT-2 gives it for hidden size d (from wte when
    None) and MLP width n_inner (from c_fc): ModelLoadError naming the first that does not."""
    E = t["wte.weight"]
    if E.dim() != 2 or E.shape[0] < 1 or E.shape[1] < 1:
        raise ModelLoadError(f"{name}: wte.weight has shape {list(E.shape)}; expected [V, d].")
    d = E.shape[1] if d is None else d
    fc = t["h.0.mlp.c_fc.weight"]
    n_inner = fc.shape[1] if fc.dim() == 2 and fc.shape[1] >= 1 else -1
    L = t["wpe.weight"].shape[0] if t["wpe.weight"].dim() == 2 else -1
    want = {
        "wte.weight": (E.shape[0], d),
        "wpe.weight": (max(L, 1), d),
        "h.0.ln_1.weight": (d,), "h.0.ln_1.bias": (d,),
        "h.0.attn.c_attn.weight": (d, 3 * d), "h.0.attn.c_attn.bias": (3 * d,),
        "h.0.attn.c_proj.weight": (d, d), "h.0.attn.c_proj.bias": (d,),
        "h.0.ln_2.weight": (d,), "h.0.ln_2.bias": (d,),
        "h.0.mlp.c_fc.weight": (d, max(n_inner, 1)), "h.0.mlp.c_fc.bias": (max(n_inner, 1),),
        "h.0.mlp.c_proj.weight": (max(n_inner, 1), d), "h.0.mlp.c_proj.bias": (d,),
    }
    for key, expected in want.items():
        got = tuple(t[key].shape)
        if got != expected:
            raise ModelLoadError(
                f"{name}: {key} has shape {list(got)} but the other layer-0 tensors imply "
                f"{list(expected)}; the checkpoint is corrupt or not a GPT-2 model."
            )


def _without_padding_rows(tensors: dict[str, torch.Tensor], tokenizer,
                          notes: list[str]) -> dict[str, torch.Tensor]:
    """`tensors` with E cut to the tokenizer's length when it has more rows (a note says
    how many were left out)."""
    rows = tensors["wte.weight"].shape[0]
    n = len(tokenizer) if tokenizer is not None else rows
    if n >= rows:
        return tensors
    notes.append(f"The token embedding has {rows} rows but the tokenizer {n} tokens: rows "
                 f"{n}..{rows - 1} are padding, left out of every view.")
    return {**tensors, "wte.weight": tensors["wte.weight"][:n]}


def all_finite(x: torch.Tensor, chunk_bytes: int = 4 << 20) -> bool:
    """True when no entry of x is NaN or infinite.

    Per slice of x along its first dimension (about `chunk_bytes`): a NaN or infinity
    makes the slice's sum NaN or infinite, so a finite sum clears the slice; an infinite
    one (finite values can overflow) is settled by isfinite on that slice alone. No copy
    of x is made: x.sum(dtype=float64) would first convert all of x to float64, twice
    the size of a float32 E [V, d]."""
    if x.dim() == 0 or x.numel() == 0:
        return bool(torch.isfinite(x).all())
    rows = max(1, chunk_bytes // max(1, x[0].numel() * x.element_size()))
    for a in range(0, x.shape[0], rows):
        part = x[a : a + rows]
        if not bool(torch.isfinite(part.sum())) and not bool(torch.isfinite(part).all()):
            return False
    return True


def _check_finite(t: dict[str, torch.Tensor], name: str, dtype: torch.dtype,
                  stored: dict[str, torch.Tensor]) -> None:
    """Refuse weights holding NaN or infinity: every score they touch would be NaN (and
    rank first), so no view could be trusted. Names the tensor and the first bad entry.
    `stored`: the tensors before conversion to `dtype` (to tell overflow from corruption)."""
    for key, x in t.items():
        if all_finite(x):
            continue
        bad = ~torch.isfinite(x)
        n = int(bad.sum())
        first = [int(i) for i in bad.nonzero()[0].tolist()]
        if bool(torch.isfinite(stored[key]).all()):
            raise ModelLoadError(
                f"{name}: {key} holds {n} value{'s' if n > 1 else ''} too large for {dtype} "
                f"(the first at {first}); load it in float32."
            )
        raise ModelLoadError(
            f"{name}: {key} holds {n} NaN or infinite value{'s' if n > 1 else ''}, the first "
            f"at {first}; the checkpoint is corrupt (or training diverged) and cannot be "
            "analysed."
        )


def _read_checkpoint(source: str, name: str, report, load_tokenizer: bool):
    """(config shape, layer-0 tensors, tokenizer or None, hub commit or None) of a
    checkpoint folder or hub name; ModelLoadError on any failure."""

    report(0.0, f"Locating {name}")
    files = checkpoint.locate(source, progress=report)
    shape = checkpoint.read_config(files.config, name)
    report(0.3, f"Reading layer-0 weights of {name}")
    tensors = checkpoint.read_layer0_tensors(files, shape, name)
    _check_shapes(tensors, shape, name)
    tok = None
    if load_tokenizer:
        report(0.7, "Loading tokenizer")
        tok = _load_tok(files.folder, name, shape.vocab_size)
    return shape, tensors, tok, files.revision


def _check_shapes(t: dict[str, torch.Tensor], shape: checkpoint.ModelShape, name: str) -> None:
    """The tensors agree with config.json (hidden size, positions, vocabulary, MLP width)
    and with each other."""
    d, V, L = shape.n_embd, shape.vocab_size, shape.n_positions
    want = {
        "wte.weight": (V, d),
        "wpe.weight": (L, d),
        "h.0.mlp.c_fc.weight": (d, shape.n_inner),
    }
    for key, expected in want.items():
        got = tuple(t[key].shape)
        if key == "wte.weight" and got[1:] == (d,) and got[0] >= 1:
            continue  # embedding rows may be padded beyond config.vocab_size
        if got != expected:
            raise ModelLoadError(
                f"{name}: {key} has shape {list(got)} but config.json implies "
                f"{list(expected)}; the checkpoint and its config do not match."
            )
    check_layer0_shapes(t, name, d)
