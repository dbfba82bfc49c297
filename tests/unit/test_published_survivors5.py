"""The MosaicML MPT (llm-foundry) reader against the benchmark tables it reads (survivors of a
mutation run of ``scaleout.plan.published._mpt``, batch m4).

The source is llm-foundry's ``scripts/train/benchmarking/README.md`` ("MPT Training
Benchmarks", tables of commit 5e85bd62), copied row by row into
``data/published/mpt_llm_foundry_2024.toml``. What is checked, each expected value typed from
the table or the file's notes, or a property that must hold:

* each row's plan: data parallelism over all its GPUs (no tensor or pipeline parallelism),
  ZeRO-3 for PyTorch FSDP's ``FULL_SHARD`` and ZeRO-2 for ``SHARD_GRAD_OP`` (the six
  SHARD_GRAD_OP rows are the 1B and 3B models of the Large Scale H100 table), the table's
  micro-batch and global batch (gradient accumulation included: 70B on 64 H100 runs micro-batch
  8 with 4 steps of accumulation, 2,048 sequences), its sequence length (the 30B sweep at 512
  to 8,192 tokens), full recomputation exactly where the table says Activation Checkpointing,
  and a fused attention kernel on every row;
* each row's model: the MPT shape of its yaml, the 50,368-token vocabulary and no dropout
  (MPTConfig's dropout probabilities default to 0.0 and the yamls set none);
* each row's network: 8 GPUs a node; the A100 tables' "1600 Gbps node-node interconnect" as
  200 Gb/s (25 GB/s) a GPU between nodes and A100 NVLink (300 GB/s a direction) inside; the
  H100 rows on the DGX H100's NDR port (400 Gb/s, 50 GB/s, a GPU) and NVLink 4 (450 GB/s a
  direction);
* each row's parameters: biases in every linear layer and LayerNorm, as the table's NumParams
  counts them (to the parameter on every row), and a row whose shapes disagree refused;
* the reader's one assumption (8 GPUs a node) word for word.
"""

from __future__ import annotations

import pytest
from scaleout import catalog, memory
from scaleout.plan import published

SOURCE = "mpt_llm_foundry_2024"
H100, A100_40, A100_80 = "H100-SXM5-80GB", "A100-SXM4-40GB", "A100-SXM4-80GB"


def _mpt():
    """The MPT cases, keyed by (model, GPU, GPUs, sequence length): unique in the table."""
    got = [c for c in published.cases()[0] if c.source == SOURCE]
    out = {(c.model.name, c.gpu, c.plan.n_gpus, c.model.seq_len): c for c in got}
    assert len(out) == len(got)
    return out


def _runs():
    return catalog.published(SOURCE)["run"]


# ------------------------------------------------------------------- plans
def test_mpt_full_shard_is_zero3_and_shard_grad_op_is_zero2():
    """FSDP's FULL_SHARD shards parameters, gradients and optimizer states (ZeRO-3);
    SHARD_GRAD_OP only gradients and optimizer states (ZeRO-2). The README's Large Scale
    H100 table runs mpt-1b and mpt-3b with SHARD_GRAD_OP on 128, 256 and 512 GPUs; every other
    kept row (70 of 76) is FULL_SHARD."""
    cases = _mpt()
    assert len(cases) == 76
    zero2 = {(m, H100, n, 2048) for m in ("mpt-1b", "mpt-3b") for n in (128, 256, 512)}
    for key, c in cases.items():
        assert c.plan.zero_stage == (2 if key in zero2 else 3), key
    assert sum(c.plan.zero_stage == 3 for c in cases.values()) == 70


def test_mpt_plans_are_data_parallel_over_every_gpu_with_the_tables_batches():
    """No tensor or pipeline parallelism (fsdp = gpus, no HSDP): dp is the row's GPU count.
    Micro-batch and global batch as printed; rows with gradient accumulation: 70B on 64 H100
    (MicroBatchSize 8, GradAccum 4, GlobalBatchSize 2,048) and on 32 (2, 16, 1,024), 30B on 8
    H100 at 8,192 tokens (1, 21, 168), 3B on 16 H100 (10, 3, 480); without: 125M on 128
    A100 40GB (26, 1, 3,328), 1B on 512 H100 (12, 1, 6,144)."""
    cases = _mpt()
    want = {("mpt-70b", H100, 64, 2048): (8, 2048), ("mpt-70b", H100, 32, 2048): (2, 1024),
            ("mpt-30b", H100, 8, 8192): (1, 168), ("mpt-3b", H100, 16, 2048): (10, 480),
            ("mpt-125m", A100_40, 128, 2048): (26, 3328),
            ("mpt-1b", H100, 512, 2048): (12, 6144)}
    for key, (micro, batch) in want.items():
        p = cases[key].plan
        assert (p.dp, p.tp, p.pp, p.cp) == (key[2], 1, 1, 1)
        assert (p.micro_batch, p.global_batch) == (micro, batch)
    # every row: the file's numbers (GlobalBatchSize = gpus x micro x accum on every kept row)
    for run in _runs():
        p = cases[(run["model"], run["gpu"], run["gpus"], run["seq_len"])].plan
        assert p.dp == run["gpus"] and (p.tp, p.pp) == (1, 1)
        assert p.micro_batch == run["micro_batch"]
        assert p.global_batch == run["global_batch"] == (run["gpus"] * run["micro_batch"]
                                                         * run["grad_accum"])


def test_mpt_plans_state_the_tables_sequence_length_recompute_and_fused_attention():
    """SeqLen as printed (the 30B sweep on 8 GPUs at 512, 1,024, 4,096 and 8,192 tokens);
    Activation Checkpointing True as full recomputation (70B and 30B rows of the Large Scale
    table), False as none (7B and below there); FlashAttention-2 or flash-attn's Triton
    kernel on every row, both fused (no score matrix stored)."""
    cases = _mpt()
    for gpu in (H100, A100_80):
        for s in (8192, 4096, 1024):
            assert cases[("mpt-30b", gpu, 8, s)].plan.seq_len == s
    assert cases[("mpt-30b", A100_80, 8, 512)].plan.seq_len == 512
    for n in (128, 256, 512):
        for m in ("mpt-70b", "mpt-30b", "mpt-13b"):
            assert cases[(m, H100, n, 2048)].plan.recompute == "full"
        for m in ("mpt-7b", "mpt-3b", "mpt-1b"):
            assert cases[(m, H100, n, 2048)].plan.recompute == "none"
    for run in _runs():
        c = cases[(run["model"], run["gpu"], run["gpus"], run["seq_len"])]
        assert c.plan.seq_len == run["seq_len"]
        assert c.plan.recompute == run["recompute"]
        assert c.plan.flash_attention is True


# ------------------------------------------------------------------- models
def test_mpt_models_have_the_yamls_shapes_and_no_dropout():
    """scripts/train/yamls/pretrain/mpt-*.yaml: 7B is 32 x 4096 x 32 heads, 70B 80 x 8192 x 64,
    125M 12 x 768 x 12, vocabulary 50,368, a 4h GELU MLP of two matrices; MPTConfig's
    resid_pdrop, emb_pdrop and attn_pdrop default to 0.0 and no yaml sets them: no dropout,
    so no dropout masks among the stored activations."""
    cases = _mpt()
    shapes = {"mpt-7b": (32, 4096, 32), "mpt-70b": (80, 8192, 64), "mpt-125m": (12, 768, 12)}
    for (name, *_), c in cases.items():
        m = c.model
        if name in shapes:
            assert (m.n_layers, m.hidden, m.n_heads) == shapes[name]
        assert m.vocab == 50368
        assert m.ffn == 4 * m.hidden and not m.gated_mlp
        assert m.dropout is False
    assert {"mpt-7b", "mpt-70b", "mpt-125m"} <= {k[0] for k in cases}


# ------------------------------------------------------------------- networks
def test_mpt_a100_rows_run_on_1600_gbps_a_node_and_h100_rows_on_ndr():
    """A100 tables: "1600 Gbps node-node interconnect (RoCE)" over 8 GPUs is 200 Gb/s, 25 GB/s,
    a GPU; inside a node A100 NVLink, 600 GB/s both ways, 300 a direction. H100 rows: 3200
    Gbps a node (llm-foundry issue #1584) over 8 GPUs, 400 Gb/s = 50 GB/s a GPU; NVLink 4,
    900 GB/s both ways, 450 a direction. 8 GPUs a node for both."""
    cases = _mpt()
    seen = set()
    for c in cases.values():
        net = c.network
        assert net.gpus_per_node == 8
        if c.gpu.startswith("A100"):
            assert net.inter.gbytes_s == 1600 / 8 / 8
            assert net.intra.gbytes_s == 600 / 2
        else:
            assert c.gpu == H100
            assert net.inter.gbytes_s == 3200 / 8 / 8
            assert net.intra.gbytes_s == 900 / 2
        seen.add(c.gpu)
    assert seen == {H100, A100_40, A100_80}


# ------------------------------------------------------------------- assumptions
def test_mpt_cases_state_the_node_assumption_word_for_word():
    """Every MPT case says how its network is read: "8 GPUs per node" (the file's note: 8 GPUs
    a node is the MosaicML platform's node, assumed), and nothing about biases: those are read
    from the table itself (next test)."""
    for c in _mpt().values():
        assert c.assumed == ("8 GPUs per node",)
        assert c.quantity == "tokens/s per GPU"
        assert c.framework == "pytorch-fsdp"
        assert c.network.gpus_per_node == 8


def test_mpt_models_have_biases_and_match_the_tables_numparams():
    """The table's NumParams (Composer's logged n_params) counts biases in every linear layer
    and LayerNorm, with learned positions: l(12h^2 + 13h) + (V + s)h + 2h. MPT-7B at s = 2048:
    32 x (12 x 4096^2 + 13 x 4096) + (50,368 + 2,048) x 4096 + 2 x 4096 = 6,658,859,008, the
    printed figure (the bias-free count would be 6,657,413,120)."""
    l, h, v, s = 32, 4096, 50_368, 2048
    assert l * (12 * h * h + 13 * h) + (v + s) * h + 2 * h == 6_658_859_008
    for run in _runs():
        assert run["params"] == (run["layers"] * (12 * run["hidden"] ** 2 + 13 * run["hidden"])
                                 + (50_368 + run["seq_len"]) * run["hidden"]
                                 + 2 * run["hidden"]), run["model"]
    for c in _mpt().values():
        assert c.model.biases
    seven = [c for k, c in _mpt().items() if k[0] == "mpt-7b" and k[3] == 2048]
    assert seven and all(memory.param_count(c.model) == 6_658_859_008 for c in seven)


def test_mpt_row_whose_shapes_do_not_give_its_params_is_refused():
    """A row whose NumParams disagrees with its shapes (a typo in the file) is refused with the
    file, the run and both counts, never read as another model."""
    raw = catalog.published(SOURCE)
    raw["run"] = [dict(raw["run"][0], params=raw["run"][0]["params"] + 1)]
    with pytest.raises(ValueError, match=r"mpt_llm_foundry_2024\.toml: run 'mpt-70b'.*params="):
        published._mpt(raw)
