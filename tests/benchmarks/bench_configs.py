"""Import, plan and export from the command line: a 405B dense config.json on 16,384 GPUs.

Target: under 2 s for the whole ``python -m scaleout plan`` process on the 2-core reference
machine, Python start-up and imports included, so an engineer can iterate on a cluster.
The config.json is written here from Llama 3.1 405B's shape (the catalog's ``llama3-405b``,
from the Llama 3 paper's Table 3) in the Hugging Face format the importer reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from scaleout import catalog

TARGET_S = 2.0
TITLE = "Framework configs"
HEADER = ("case", "seconds", "target")


def _config(path: Path) -> Path:
    m = catalog.model("llama3-405b")
    path.write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": m.hidden, "intermediate_size": m.ffn, "num_hidden_layers": m.n_layers,
        "num_attention_heads": m.n_heads, "num_key_value_heads": m.kv_heads,
        "vocab_size": m.vocab, "max_position_embeddings": 131072, "tie_word_embeddings": False,
        "rope_scaling": {"factor": 8.0, "original_max_position_embeddings": m.seq_len,
                         "rope_type": "llama3"}, "hidden_act": "silu"}), encoding="utf-8")
    return path


def test_import_plan_export_405b_on_16384_gpus(benchmark, results_table, tmp_path: Path):
    config = _config(tmp_path / "config.json")
    out = tmp_path / "best.txt"
    command = [sys.executable, "-m", "scaleout", "plan", "--model", str(config), "--gpu",
               "H100-SXM5-80GB", "--gpus", "16384", "--batch", "2048", "--seq", "8192",
               "--export", "megatron", "-o", str(out)]

    def once() -> float:
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return time.perf_counter() - start

    benchmark.pedantic(once, rounds=3, iterations=1)
    assert out.read_text().count("--tensor-model-parallel-size") == 1
    median = benchmark.stats.stats.median
    results_table(TITLE, HEADER).rows.append(
        ("plan: 405B config.json, 16,384 H100, export Megatron-LM", f"{median:.2f}",
         f"< {TARGET_S:g} s"))
    assert median < TARGET_S
