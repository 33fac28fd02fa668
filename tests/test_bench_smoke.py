"""The benchmark scripts still run, each end to end on a tiny input."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import LOCOMO, TEST_MODEL, llama_server, needs_shared

from bench.memorybank import User, together
from bench.quality import BenchWorkspace

REPO_ROOT = Path(__file__).resolve().parents[1]
MODEL = TEST_MODEL
SECTIONS = ("embed", "index", "resync", "search", "append", "watch", "serve", "rss", "postgres")
MEMORYBANK = LOCOMO.parents[1] / "memorybank" / "memory_bank_cn.json"
needs_locomo = needs_shared(LOCOMO)
needs_model = needs_shared(MODEL)


@needs_model
def test_perf_runs_every_section_on_a_tiny_input(tmp_path: Path) -> None:
    """``perf.py --tiny`` exits 0, prints every section and its table, and writes a metric per section."""
    out = tmp_path / "perf.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "perf.py"), "--tiny", "--model", str(MODEL),
         "--cache-dir", str(tmp_path / "cache"), "--json", str(out)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for section in SECTIONS:
        assert f"== {section} ==" in proc.stdout
    assert "metric" in proc.stdout and "target" in proc.stdout
    result = json.loads(out.read_text())
    assert {m["section"] for m in result["metrics"]} == set(SECTIONS)
    assert all(m["value"] is not None for m in result["metrics"])
    assert result["machine"]["cores"] >= 1


@needs_model
def test_perf_ab_compares_a_commit_with_this_checkout(tmp_path: Path) -> None:
    """``perf_ab.py HEAD`` puts the commit in a worktree, runs both sides' workers in turn and reports a
    ratio per mode, with its interval, in text and JSON; the worktree is gone afterwards."""
    out = tmp_path / "ab.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "perf_ab.py"), "HEAD", "--chunks", "2000", "--files", "50",
         "--queries", "20", "--blocks", "4", "--block", "5", "--model", str(MODEL),
         "--cache-dir", str(tmp_path / "cache"), "--json", str(out)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert set(result["modes"]) == {"keyword", "hybrid"} and result["blocks"] == 4
    for mode, row in result["modes"].items():
        assert f"  {mode}: " in proc.stdout
        low, high = row["interval"]
        assert 0 < low <= high and row["ratio"] > 0, row  # a 4-block interval need not hold the point figure
        assert row["base_p50_ms"] > 0 and row["head_p50_ms"] > 0
    assert len(list((tmp_path / "cache").iterdir())) == 2  # each side indexed its own store
    worktrees = subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "list"], capture_output=True, text=True)
    assert "memdex-ab-" not in worktrees.stdout


@needs_locomo
def test_quality_runs_on_one_locomo_conversation(tmp_path: Path) -> None:
    """``quality.py locomo`` builds one conversation's workspace, searches it and prints the headline row,
    what the agent reads at the defaults and the abstention table."""
    out = tmp_path / "quality.json"
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "quality.py"), "locomo", "--limit-conversations", "1",
         "--mode", "keyword", "--cache-dir", str(tmp_path / "cache"), "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "headline (1-4)" in result.stdout
    assert "What the agent reads" in result.stdout and "ev@2k" in result.stdout
    assert "Abstention" in result.stdout and "random (n=200)" in result.stdout
    (mode,) = json.loads(out.read_text())["modes"]
    headline = next(row for row in mode["rows"] if row["label"] == "headline (1-4)")
    assert 0 < headline["ev@2k"] <= headline["ev@4k"] <= 1 and headline["chars"] > 0
    assert 0 < headline["session_recall@5"] <= headline["session_recall@10"] <= 1
    assert mode["random_queries"] == 200 and mode["abstention"]["random_no_results"] > 0.5
    assert mode["other_topic_queries"] == 200 and 0 <= mode["abstention"]["other_topic_no_results"] <= 1


@needs_locomo
@needs_model
def test_embedder_runs_against_a_second_local_process(tmp_path: Path) -> None:
    """``embedder.py --baseline local`` (no torch needed): rounds, a ratio, and identical vectors."""
    out = tmp_path / "embedder.json"
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "embedder.py"), "--baseline", "local", "--chunks", "4",
         "--reps", "2", "--model", str(MODEL), "--json", str(out)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "round 2/2" in proc.stdout and "ratio local/local2" in proc.stdout
    result = json.loads(out.read_text())
    assert result["chunks"] == 4 and len(result["local"]["chunks_per_s"]) == 2
    assert result["baseline"]["kind"] == "local" and result["ratio_of_medians"] > 0
    assert result["cosine_local_vs_baseline"]["min"] > 0.9999


@needs_locomo
@needs_model
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama-cpp-python[server]")
def test_quality_measures_an_openai_compatible_provider(tmp_path: Path) -> None:
    """``quality.py --provider openai`` against llama_cpp.server: the hybrid row, an index named after it."""
    out = tmp_path / "quality.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")} | {"OPENAI_API_KEY": "unused"}
    with llama_server(MODEL, tmp_path / "llama.log") as url:
        result = subprocess.run(
            [sys.executable, str(REPO_ROOT / "bench" / "quality.py"), "locomo", "--limit-conversations", "1",
             "--mode", "hybrid:0.2/0.8", "--provider", "openai", "--openai-base-url", url,
             "--openai-model", "all-MiniLM-L6-v2", "--cache-dir", str(tmp_path / "cache"), "--json", str(out)],
            env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert "hybrid 0.2/0.8" in result.stdout and "all-MiniLM-L6-v2 at http://127.0.0.1" in result.stdout
    data = json.loads(out.read_text())
    assert data["settings"]["embedder"].startswith("openai-all-MiniLM-L6-v2-")
    assert list((tmp_path / "cache" / "locomo").glob("*/index-t400-o80-k*-openai-all-MiniLM-L6-v2-*.sqlite"))


@needs_shared(MEMORYBANK)
def test_memorybank_runs_in_both_languages(tmp_path: Path) -> None:
    """``memorybank.py`` builds each user's days as logs, asks the 100 probing questions in each language and
    judges the ones that name a day by that day's log (35 each), beside other-topic questions; with
    ``--together``, each language's questions again over the memory holding both languages' chats."""
    out = tmp_path / "memorybank.json"
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "memorybank.py"), "--other", "2", "--together",
         "--cache-dir", str(tmp_path / "cache"), "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {row["lang"]: row for row in json.loads(out.read_text())}
    assert set(rows) == {"en", "cn", "en with cn", "cn with en"}
    for row in rows.values():
        assert row["n"] == 100 and row["dated"] == 35
        assert 0 < row["day_found"] <= 1 and 0 < row["answered"] <= 1 and row["chars"] > 0
        assert 0 <= row["other_topic_nothing"] <= 1
    assert rows["cn"]["weighted_chars"] > rows["cn"]["chars"]  # a CJK character counts more than one
    assert {path.name for path in (tmp_path / "cache").iterdir()} == {"memorybank-en", "memorybank-cn", "memorybank-en+cn"}


def test_a_bilingual_memory_holds_each_days_chats_in_every_language() -> None:
    en = [User(BenchWorkspace("user01", {"memory/a.md": "- hi\n", "memory/b.md": "- bye\n"}, []), ["q en"])]
    cn = [User(BenchWorkspace("user01", {"memory/b.md": "- 再见\n", "memory/c.md": "- 你好\n"}, []), ["q cn"])]
    merged = together({"en": en, "cn": cn})
    files = {"memory/a.md": "- hi\n", "memory/b.md": "- bye\n- 再见\n", "memory/c.md": "- 你好\n"}
    assert [user.workspace.files for user in merged["en"] + merged["cn"]] == [files, files]
    assert [user.questions for user in merged["en"] + merged["cn"]] == [["q en"], ["q cn"]]


@needs_locomo
def test_hints_bench_counts_hints_for_misspelt_queries_and_probes(tmp_path: Path) -> None:
    """``hints.py`` searches the typo variant and the probes of one chat: most misspelt words get a hint,
    the hints that come are nearly all the original word, and the probes are counted."""
    out = tmp_path / "hints.json"
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "hints.py"), "--sets", "locomo", "--limit-conversations", "1",
         "--cache-dir", str(tmp_path / "cache"), "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    (row,) = json.loads(out.read_text())["sets"]
    assert 0 < row["right"] <= row["hinted"] <= row["takes"] <= row["misspelt"]
    assert row["right"] >= 0.9 * row["hinted"] and row["hinted"] >= 0.5 * row["takes"]
    assert row["probes"]["gibberish n"] > 0 and row["probes"]["other-topic nothing"] > 0
