"""One layer further (docs/math/composition.md): how layer-1 heads read what layer-0 heads
write, from the weights, and what the first two blocks do, measured.

    scores     Q-, K- and V-composition of every (layer-0 head, layer-1 head) pair with both
               LayerNorms folded, and the same score of random matrices of the same shapes
               (the baseline): `composition_job(layer) -> Composition`
    behaviour  previous-token and induction scores of every head of layers 0 and 1, with
               the model's own forward pass of its first two blocks on repeated random
               tokens: `behaviour_job(layer, sequences=16, length=None, seed=0,
               prepend_bos=True) -> Behaviour`
    first_two  both jobs for the Layer 1 page, or why there is no layer 1:
               `first_two_job(layer, sequences, prepend_bos) -> Layer1Result | Unavailable`
    tables     their CSV tables (`composition_table`: layer0_head,layer1_head,kind,score,
               baseline_mean,baseline_hi; `behaviour_table`; `circuit_table`)
    titles     what the Layer 1 page says of them: `composition_title`, `behaviour_title`,
               `composition_hover`

Both jobs read block 1 first, on demand (`core.model.layer1.layer1_job`: a file read, or
only block 1's byte ranges downloaded from the hub, with progress; closing the job
cancels it), and keep their result on the layer. A model with a single layer raises
InputError when the job starts.

May import: `core.base`, `core.model`.
"""
