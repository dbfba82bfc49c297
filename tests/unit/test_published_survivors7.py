"""The Megatron Bridge reader against its two tables, row by row (survivors of a mutation run
of ``scaleout.plan.published._bridge``, batch g5).

The sources are NVIDIA's Megatron Bridge performance summary pages, copied into
``data/published/megatron_bridge_perf_2511.toml`` (25.11 NeMo container, plus the 25.09
DGX-H100 DeepSeek-V3 row) and ``megatron_bridge_perf_2602.toml`` (26.02 and its patch
container 26.02.01). What is checked, each expected value typed from the page as the file
copies it, or from the file's header:

* every kept row of both files: its label (the model, the precision unless BF16, GPUs × GPU,
  and the release where it is not the file's own: 26.02.01), the printed tokens/s per GPU,
  the recipe of its precision column (the headers: BF16 as mixed precision with Adam,
  FP8-CS / "FP8" as FP8 with current scaling, FP8-MX / MXFP8 as MXFP8), its plan as printed
  (TP, PP, CP, VP as interleave with "n/a" as 1, EP with "n/a" as 1, dp = GPUs / (TP PP CP),
  MBS, GBS, sequence length) with Megatron-Core's distributed optimizer (ZeRO-1), sequence
  parallelism exactly where TP > 1, selective recomputation and flash attention, and its
  model's multi-token prediction (the 25.11 page's "w/ MTP" / "w/o MTP", the 25.09 row not
  stated, the 26.02 recipe's ``mtp_num_layers = 1``);
* every kept row's assumptions in order: the four sentences of every Bridge run, the
  precision's sentence (MXFP8's block scales; the 26.02 table's bare "FP8" read as current
  scaling; none for the 25.11 page's explicit FP8-CS), the MoE footnote's force-balanced
  dropless routing with expert tensor parallelism 1 and the recipe's settings (their words
  are checked by ``test_published_survivors4.py``; here only where they stand and the
  dispatcher they name), the unstated MTP of the 25.09 row, the recipe's MTP of the 26.02
  rows and ring attention for CP > 1;
* the 25.11 file's ten skipped rows word for word: eight DGX-GB300 rows (not in
  data/gpus.toml) and two FSDP = 1 rows (Megatron FSDP); the 26.02 file skips nothing (its
  header: the other 39 printed rows are left out of the file);
* made-up rows shaped like the files' where their rows cannot show a difference: a model the
  catalog lacks (the 26.02.01 table's Nemotron_3_Nano), NVFP4, Megatron FSDP = 64, a row with
  no ``fsdp`` field (DDP, like FSDP = 0) and a MoE row without recipe settings (the 25.11
  file's GB300 MoE rows record none) on a GPU of the catalog.
"""

from __future__ import annotations

import pytest
from scaleout import catalog
from scaleout.plan import published

S2511, S2602 = "megatron_bridge_perf_2511", "megatron_bridge_perf_2602"
H100 = "H100-SXM5-80GB"

#: the four sentences of every Bridge case (the reader's own)
BASE = ("distributed optimizer (ZeRO-1)", "SP with TP", "selective recomputation",
        "the system's datasheet network")
MX = "MXFP8 at the FP8 peak; its block scales in the casts only"
CS = "FP8 with current scaling (the recipe's fp8_cs; the table says FP8)"
NOMTP = "no multi-token prediction (not stated for this row)"
MTPON = "multi-token prediction on (the recipe's; not stated for this row)"
CP = "context parallelism as ring attention (Megatron-Core's p2p)"
FORCED = "force-balanced (random scores), dropless routing"
ETP = "expert tensor parallelism 1"
SENTENCES = {"MX": MX, "CS": CS, "NOMTP": NOMTP, "MTPON": MTPON, "CP": CP}
RECIPES = {"bf16": "mixed-adam", "cs": "fp8-te-cs", "mx": "fp8-te-mx"}

# label: (tokens/s/GPU, recipe, TP, PP, CP, VP, EP, dp, MBS, GBS, seq, MTP layers,
#         dispatcher (None: a dense row), the extra sentences besides the MoE ones, in order)
ROWS_2511 = {
    # DGX-GB200
    "llama3-8b FP8-CS on 8 × GB200": (31508, "cs", 1, 1, 1, 1, 1, 8, 2, 128, 8192, 0, None, ""),
    "llama3-405b FP8-CS on 256 × GB200": (813, "cs", 4, 16, 1, 4, 1, 4, 1, 1536, 8192, 0, None,
                                          ""),
    "deepseek-v3 on 256 × GB200": (3139, "bf16", 1, 4, 1, 4, 64, 64, 1, 4096, 4096, 0,
                                   "hybridep", ""),
    "deepseek-v3 FP8-MX on 256 × GB200": (4018, "mx", 1, 8, 1, 4, 32, 32, 1, 4096, 4096, 0,
                                          "hybridep", "MX"),
    "gpt-oss-120b on 64 × GB200": (15876, "bf16", 1, 1, 1, 1, 64, 64, 1, 1280, 8192, 0,
                                   "alltoall", ""),
    "qwen3-30b-a3b FP8-MX on 8 × GB200": (23766, "mx", 1, 1, 1, 1, 8, 8, 4, 512, 4096, 0,
                                          "hybridep", "MX"),
    "qwen3-235b-a22b on 256 × GB200": (4916, "bf16", 1, 8, 1, 3, 32, 32, 1, 8192, 4096, 0,
                                       "hybridep", ""),
    # DGX-B200
    "llama3-8b FP8-CS on 8 × B200": (30624, "cs", 1, 1, 1, 1, 1, 8, 2, 128, 8192, 0, None, ""),
    "llama3-405b FP8-CS on 128 × B200": (661, "cs", 4, 8, 2, 8, 1, 2, 1, 64, 8192, 0, None,
                                         "CP"),
    "deepseek-v3 FP8-MX on 256 × B200": (2139, "mx", 1, 16, 1, 1, 8, 16, 1, 2048, 4096, 1,
                                         "alltoall", "MX"),  # "w/ MTP"
    "gpt-oss-120b on 64 × B200": (8213, "bf16", 1, 1, 1, 1, 8, 64, 4, 512, 4096, 0,
                                  "alltoall", ""),
    "qwen3-30b-a3b FP8-MX on 8 × B200": (9299, "mx", 1, 1, 1, 1, 8, 8, 1, 512, 4096, 0,
                                         "alltoall", "MX"),
    "qwen3-235b-a22b FP8-MX on 64 × B200": (3269, "mx", 1, 8, 1, 2, 8, 8, 1, 1024, 4096, 0,
                                            "alltoall", "MX"),
    # DGX-H100
    f"llama3-70b FP8-CS on 64 × {H100}": (1602, "cs", 4, 8, 1, 5, 1, 2, 1, 128, 8192, 0, None,
                                          ""),
    f"llama3-405b FP8-CS on 1024 × {H100}": (292, "cs", 8, 8, 2, 8, 1, 8, 1, 512, 8192, 0,
                                             None, "CP"),
    f"gpt-oss-120b on 64 × {H100}": (5630, "bf16", 1, 4, 1, 1, 8, 16, 4, 512, 4096, 0,
                                     "alltoall", ""),
    f"qwen3-30b-a3b FP8-CS on 16 × {H100}": (5275, "cs", 1, 2, 1, 24, 8, 8, 2, 512, 4096, 0,
                                             "alltoall", ""),
    f"qwen3-235b-a22b FP8-CS on 256 × {H100}": (1575, "cs", 2, 8, 1, 4, 32, 16, 1, 2048, 4096,
                                                0, "alltoall", ""),
    # the 25.09 table's row (no label suffix: the 25.11 file records no file-wide release),
    # "dropless", MTP not stated
    f"deepseek-v3 FP8-CS on 1024 × {H100}": (1297, "cs", 2, 8, 1, 4, 64, 64, 1, 8192, 4096, 0,
                                             "deepep", "NOMTP"),
}

ROWS_2602 = {
    # 26.02
    "llama3-70b MXFP8 on 64 × GB200": (3613, "mx", 2, 4, 1, 5, 1, 8, 1, 256, 8192, 0, None,
                                       "MX"),
    f"llama3-70b FP8 on 64 × {H100}": (1621, "cs", 4, 8, 1, 5, 1, 2, 1, 256, 8192, 0, None,
                                       "CS"),
    "llama3-405b MXFP8 on 256 × GB200": (786, "mx", 4, 16, 1, 8, 1, 4, 1, 1536, 8192, 0, None,
                                         "MX"),
    "llama3-405b FP8 on 256 × GB200": (793, "cs", 4, 16, 1, 4, 1, 4, 1, 1536, 8192, 0, None,
                                       "CS"),
    f"llama3-405b FP8 on 1024 × {H100}": (311, "cs", 8, 8, 2, 8, 1, 8, 1, 1536, 8192, 0, None,
                                          "CS CP"),
    "deepseek-v3 MXFP8 on 256 × GB200": (3955, "mx", 1, 4, 1, 4, 64, 64, 1, 4096, 4096, 1,
                                         "hybridep", "MX MTPON"),
    "deepseek-v3 MXFP8 on 256 × B200": (2689, "mx", 1, 16, 1, 1, 8, 16, 1, 4096, 4096, 1,
                                        "hybridep", "MX MTPON"),
    "gpt-oss-120b on 64 × GB200": (15784, "bf16", 1, 1, 1, 1, 64, 64, 4, 1280, 4096, 0,
                                   "alltoall", ""),
    "gpt-oss-120b on 64 × B200": (8047, "bf16", 1, 1, 1, 1, 64, 64, 4, 1280, 4096, 0,
                                  "alltoall", ""),
    f"gpt-oss-120b on 64 × {H100}": (5993, "bf16", 1, 4, 1, 1, 8, 16, 1, 1280, 4096, 0,
                                     "alltoall", ""),
    "qwen3-30b-a3b MXFP8 on 8 × GB200": (26084, "mx", 1, 1, 1, 1, 8, 8, 4, 512, 4096, 0,
                                         "hybridep", "MX"),
    "qwen3-30b-a3b MXFP8 on 8 × B200": (9691, "mx", 1, 1, 1, 1, 8, 8, 1, 512, 4096, 0,
                                        "alltoall", "MX"),
    f"qwen3-30b-a3b FP8 on 16 × {H100}": (5113, "cs", 1, 2, 1, 12, 8, 8, 1, 1024, 4096, 0,
                                          "deepep", "CS"),
    "qwen3-235b-a22b MXFP8 on 256 × GB200": (5448, "mx", 1, 8, 1, 1, 32, 32, 1, 8192, 4096, 0,
                                             "hybridep", "MX"),
    "qwen3-235b-a22b MXFP8 on 256 × B200": (3805, "mx", 1, 8, 1, 1, 8, 32, 1, 8192, 4096, 0,
                                            "alltoall", "MX"),
    f"qwen3-235b-a22b FP8 on 256 × {H100}": (1633, "cs", 2, 8, 1, 4, 32, 16, 1, 8192, 4096, 0,
                                             "alltoall", "CS"),
    # 26.02.01
    "llama3-70b MXFP8 on 64 × GB200 (26.02.01)": (3837, "mx", 2, 4, 1, 5, 1, 8, 1, 256, 8192,
                                                  0, None, "MX"),
    f"llama3-70b FP8 on 64 × {H100} (26.02.01)": (1639, "cs", 4, 8, 1, 5, 1, 2, 1, 256, 8192,
                                                  0, None, "CS"),
    "llama3-405b MXFP8 on 256 × GB200 (26.02.01)": (775, "mx", 4, 16, 1, 8, 1, 4, 1, 1536,
                                                    8192, 0, None, "MX"),
    "llama3-405b FP8 on 256 × GB200 (26.02.01)": (818, "cs", 4, 16, 1, 4, 1, 4, 1, 1536, 8192,
                                                  0, None, "CS"),
    "deepseek-v3 MXFP8 on 256 × GB200 (26.02.01)": (4021, "mx", 1, 4, 1, 4, 64, 64, 1, 4096,
                                                    4096, 1, "hybridep", "MX MTPON"),
    "deepseek-v3 MXFP8 on 256 × B200 (26.02.01)": (2790, "mx", 1, 16, 1, 1, 8, 16, 1, 4096,
                                                   4096, 1, "hybridep", "MX MTPON"),
    "gpt-oss-120b on 64 × GB200 (26.02.01)": (15754, "bf16", 1, 1, 1, 1, 64, 64, 4, 1280, 4096,
                                              0, "alltoall", ""),
    "gpt-oss-120b on 64 × B200 (26.02.01)": (13722, "bf16", 1, 1, 1, 1, 8, 64, 4, 1280, 4096,
                                             0, "alltoall", ""),
    f"gpt-oss-120b on 64 × {H100} (26.02.01)": (5984, "bf16", 1, 4, 1, 1, 8, 16, 1, 1280,
                                                4096, 0, "alltoall", ""),
    "qwen3-30b-a3b MXFP8 on 8 × GB200 (26.02.01)": (26373, "mx", 1, 1, 1, 1, 8, 8, 4, 512,
                                                    4096, 0, "hybridep", "MX"),
    "qwen3-30b-a3b MXFP8 on 8 × B200 (26.02.01)": (26695, "mx", 1, 1, 1, 1, 8, 8, 4, 512, 4096,
                                                   0, "hybridep", "MX"),
    f"qwen3-30b-a3b FP8 on 16 × {H100} (26.02.01)": (9058, "cs", 1, 2, 1, 12, 8, 8, 1, 1024,
                                                     4096, 0, "hybridep", "CS"),
    "qwen3-235b-a22b MXFP8 on 256 × GB200 (26.02.01)": (5530, "mx", 1, 8, 1, 1, 32, 32, 1,
                                                        8192, 4096, 0, "hybridep", "MX"),
    f"qwen3-235b-a22b FP8 on 256 × {H100} (26.02.01)": (1611, "cs", 2, 8, 1, 4, 32, 16, 1,
                                                        8192, 4096, 0, "alltoall", "CS"),
}

#: the 25.11 file's skipped rows, in the file's order: "model on GPUs × GPU: why"
SKIPPED_2511 = [
    "llama3-8b on 8 × GB300: GB300 is not in the catalog",
    "llama3-70b on 64 × GB300: GB300 is not in the catalog",
    "llama3-405b on 256 × GB300: GB300 is not in the catalog",
    "deepseek-v3 on 256 × GB300: GB300 is not in the catalog",
    "deepseek-v3 on 256 × GB300: GB300 is not in the catalog",
    "gpt-oss-120b on 64 × GB300: GB300 is not in the catalog",
    "qwen3-30b-a3b on 8 × GB300: GB300 is not in the catalog",
    "qwen3-235b-a22b on 256 × GB300: GB300 is not in the catalog",
    "llama3-70b on 64 × GB200: Megatron FSDP rows are not modelled",
    f"llama3-8b on 8 × {H100}: Megatron FSDP rows are not modelled",
]


def _cases(source):
    """One file's cases by label (per test: mutmut credits the calls to each test)."""
    return {c.label: c for c in published.cases()[0] if c.source == source}


def _expected_assumed(dispatcher, extra):
    """The assumptions a row's spec gives, the recipe's four settings as one marker."""
    words = [SENTENCES[k] for k in extra.split()]
    precision = [w for w in words if w in (MX, CS)]
    rest = [w for w in words if w not in (MX, CS)]
    moe = [FORCED, ETP, f"<settings: the {dispatcher} token dispatcher>"] if dispatcher else []
    return (*BASE, *precision, *moe, *rest)


def _folded(assumed):
    """A case's assumptions with the four recipe settings (from the dispatcher's on) folded
    into one marker naming the dispatcher's sentence."""
    out, i = [], 0
    while i < len(assumed):
        a = assumed[i]
        if a.endswith(" token dispatcher (the recipe's)"):
            graphs, modules, overlap = assumed[i + 1:i + 4]
            assert graphs.startswith("CUDA graphs of ") and graphs.endswith(" (the recipe's)")
            assert modules.startswith("the recipe's recompute modules: ")
            assert overlap.startswith("no all-to-all overlap (")
            out.append(f"<settings: {a.removesuffix(' (the recipe' + chr(39) + 's)')}>")
            i += 4
        else:
            out.append(a)
            i += 1
    return tuple(out)


def _check_case(c, spec, gpu):
    (tokens, recipe, tp, pp, cp, vp, ep, dp, mbs, gbs, seq, mtp, dispatcher, extra) = spec
    assert c.published == tokens and c.quantity == "tokens/s per GPU"
    assert c.recipe == RECIPES[recipe]
    p = c.plan
    assert (p.tp, p.pp, p.cp, p.interleave, p.ep, p.dp) == (tp, pp, cp, vp, ep, dp)
    assert (p.micro_batch, p.global_batch, p.seq_len) == (mbs, gbs, seq)
    assert p.zero_stage == 1 and p.zero_shard is None
    assert p.sp is (tp > 1)
    assert p.recompute == "selective" and p.flash_attention is True
    assert c.gpu == gpu
    assert c.model.mtp_layers == mtp
    assert _folded(c.assumed) == _expected_assumed(dispatcher, extra)
    if dispatcher is None:
        assert c.framework == "megatron-core"
    else:
        assert c.framework.moe_dispatcher == dispatcher


def _gpu(label):
    return label.split(" × ")[1].split(" (")[0]


@pytest.mark.parametrize("source, rows", [(S2511, ROWS_2511), (S2602, ROWS_2602)])
def test_every_kept_row_reads_as_printed(source, rows):
    """Each kept row's label, number, recipe, plan, MTP and assumptions (the specs above)."""
    cases = _cases(source)
    assert sorted(cases) == sorted(rows)
    for label, spec in rows.items():
        _check_case(cases[label], spec, _gpu(label))


def test_the_25_11_files_skipped_rows_word_for_word():
    """Eight DGX-GB300 rows (GB300 not in the catalog) and the two FSDP = 1 rows; the 26.02
    file's rows are all kept."""
    title = "Megatron Bridge 25.11 (dense, MoE, FP8, CP)"
    skipped = published.cases()[1]
    assert [s for s in skipped if s.startswith(title + ": ")] == [
        f"{title}: {why}" for why in SKIPPED_2511]
    assert not [s for s in skipped if s.startswith("Megatron Bridge 26.02")]


def test_the_25_11_reader_alone_gives_the_skips_without_a_title():
    """The reader on the 25.11 file: 19 cases and the ten reasons, each 'what: why'."""
    got, skipped = published._bridge(catalog.published(S2511), S2511)
    assert len(got) == 19 and {c.source for c in got} == {S2511}
    assert skipped == SKIPPED_2511


# --------------------------------------------------------------- made-up rows
def _row(**change):
    """The 26.02 table's DGX-H100 Llama 3 70B FP8 row with ``change`` (None drops a field)."""
    run = {"release": "26.02", "system": "DGX-H100", "gpu": H100, "model": "llama3-70b",
           "gpus": 64, "precision": "FP8", "global_batch": 256, "micro_batch": 1,
           "seq_len": 8192, "fsdp": 0, "tp": 4, "pp": 8, "cp": 1, "vp": 5, "dp": 2,
           "tokens_per_s_per_gpu": 1621, "model_tflops_per_gpu": 728}
    for key, value in change.items():
        if value is None:
            del run[key]
        else:
            run[key] = value
    return run


def _read(*runs):
    return published._bridge({"release": "26.02", "run": list(runs)}, S2602)


def test_made_up_rows_the_reader_skips_with_their_reasons():
    """The 26.02.01 table's Nemotron_3_Nano (DGX-H100 FP8, 16 GPUs: not in data/models.toml),
    an NVFP4 row and an FSDP = 64 row (both Llama 3 70B on DGX-GB200, left out of the file)."""
    nano = _row(model="nemotron-3-nano", gpus=16, tp=1, pp=1, vp=None, dp=16)
    nvfp4 = _row(gpu="GB200", precision="NVFP4")
    fsdp = _row(gpu="GB200", fsdp=64)
    got, skipped = _read(nano, nvfp4, fsdp)
    assert got == []
    assert skipped == [f"nemotron-3-nano on 16 × {H100}: nemotron-3-nano is not in the catalog",
                       "llama3-70b on 64 × GB200: NVFP4: no recipe for it",
                       "llama3-70b on 64 × GB200: Megatron FSDP rows are not modelled"]


def test_a_row_without_an_fsdp_field_is_kept_as_ddp():
    """No ``fsdp``: Megatron's DDP with the distributed optimizer, as FSDP = 0; the plan and
    the assumptions those of the printed row."""
    got, skipped = _read(_row(fsdp=None))
    assert skipped == [] and len(got) == 1
    _check_case(got[0], ROWS_2602[f"llama3-70b FP8 on 64 × {H100}"], H100)
    assert got[0].label == f"llama3-70b FP8 on 64 × {H100}"


def test_a_made_up_row_without_vp_is_plain_1f1b_and_with_vp_interleaved():
    """VP "n/a" (no ``vp``) is one model chunk a GPU; VP 5 five."""
    a, b = _read(_row(vp=None), _row(vp=5))[0]
    assert a.plan.interleave == 1 and b.plan.interleave == 5


def test_a_moe_row_without_recipe_settings_says_megatron_cores_default_overlap():
    """A MoE row recording no dispatcher (like the 25.11 file's GB300 MoE rows) on a GPU of the
    catalog: the megatron-core preset, and the only recipe sentence Megatron-Core's default
    of no all-to-all overlap; BF16, so no precision sentence."""
    run = _row(model="qwen3-30b-a3b", gpu="B200", gpus=8, precision="BF16",
               global_batch=512, micro_batch=4, seq_len=4096, tp=1, pp=1, vp=None, ep=8,
               dp=8, tokens_per_s_per_gpu=20000)
    got, skipped = _read(run)
    assert skipped == [] and len(got) == 1
    c = got[0]
    assert c.label == "qwen3-30b-a3b on 8 × B200" and c.recipe == "mixed-adam"
    assert c.framework == "megatron-core"
    assert c.assumed == (*BASE, FORCED, ETP, "no all-to-all overlap (Megatron-Core's default)")
    assert c.plan.ep == 8 and c.plan.sp is False


def test_made_up_mxfp8_moe_row_keeps_its_precision_sentence_before_the_routing():
    """MXFP8 (the 26.02 name) and FP8-MX (the 25.11 name) on the same MoE row without recipe
    settings: the block-scale sentence first, then the MoE ones."""
    for precision in ("MXFP8", "FP8-MX"):
        run = _row(model="qwen3-30b-a3b", gpu="B200", gpus=8, precision=precision,
                   global_batch=512, micro_batch=1, seq_len=4096, tp=1, pp=1, vp=None,
                   ep=8, dp=8)
        (c,), _ = _read(run)
        assert c.recipe == "fp8-te-mx"
        assert c.assumed == (*BASE, MX, FORCED, ETP,
                             "no all-to-all overlap (Megatron-Core's default)")
