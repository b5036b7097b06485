"""How far a candidate's outputs are from the original's on the same inputs: pure numpy measures shared by the
optimizer's budget (optimize.accuracy) and the data path's fidelity check (bench.decode).

classify → top-1 agreement overall and on the decisive inputs, top-5 overlap, and true accuracy with labels;
embed → mean/min cosine and the overlap of each input's 10 nearest neighbours.
"""

from __future__ import annotations

import numpy as np

DECISIVE_P = 0.5
"""An input is decisive when the original's top-1 softmax probability is at least this (docs/benchmarks.md,
"decisive agreement": below it, quantized and BF16 variants flip among near-ties the model itself cannot tell
apart; above it, they agree)."""


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise probabilities of [N, classes] scores (already probabilities when rows are ≥ 0 and sum to 1)."""
    x = logits.astype(np.float64)
    if np.all(x >= 0) and np.allclose(x.sum(axis=1), 1, atol=1e-3):
        return x
    x = np.exp(x - x.max(axis=1, keepdims=True))
    return x / x.sum(axis=1, keepdims=True)


def classify_metrics(reference: np.ndarray, candidate: np.ndarray, decisive: float = DECISIVE_P) -> dict[str, float]:
    """Top-1 agreement overall and on the decisive inputs (the original's top-1 probability ≥ decisive), and the
    mean top-5 overlap, of two [N, classes] score arrays."""
    same = reference.argmax(1) == candidate.argmax(1)
    confident = softmax(reference).max(axis=1) >= decisive
    ref5 = np.argsort(-reference, axis=1)[:, :5]
    cand5 = np.argsort(-candidate, axis=1)[:, :5]
    overlap = np.mean([len(set(r) & set(c)) / 5 for r, c in zip(ref5, cand5, strict=True)])
    return {"top1_agreement": float(same.mean()), "top5_overlap": float(overlap),
            "decisive_agreement": float(same[confident].mean()) if confident.any() else float("nan"),
            "decisive_n": float(confident.sum()), "decisive_threshold": decisive}  # fmt: skip


def label_metrics(reference: np.ndarray, candidate: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """True top-1 accuracy of the original and the candidate on labelled inputs, their ratio and difference, and
    95% CIs of both from a paired bootstrap over the inputs."""
    right_ref = (reference.argmax(1) == labels).astype(np.float64)
    right = (candidate.argmax(1) == labels).astype(np.float64)
    rng = np.random.default_rng(0)
    draws = rng.integers(0, len(labels), size=(2000, len(labels)))
    ref_acc, acc = right_ref[draws].mean(axis=1), right[draws].mean(axis=1)
    ratio = acc / np.maximum(ref_acc, 1e-12)
    base = float(right_ref.mean())
    return {
        "accuracy": float(right.mean()), "accuracy_reference": base, "labelled_n": float(len(labels)),
        "accuracy_ratio": float(right.mean() / base) if base else float("nan"),
        "accuracy_ratio_low": float(np.percentile(ratio, 2.5)),
        "accuracy_ratio_high": float(np.percentile(ratio, 97.5)),
        "accuracy_drop": float(base - right.mean()),
        "accuracy_drop_low": float(np.percentile(ref_acc - acc, 2.5)),
        "accuracy_drop_high": float(np.percentile(ref_acc - acc, 97.5)),
    }  # fmt: skip


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (float64)."""
    v = vectors.astype(np.float64).reshape(len(vectors), -1)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def neighbours(unit: np.ndarray, k: int) -> np.ndarray:
    """Indices [N, k] of each row's k nearest other rows by cosine."""
    similarity = unit @ unit.T  # [N, N]
    np.fill_diagonal(similarity, -np.inf)
    return np.argsort(-similarity, axis=1)[:, :k]


def embed_metrics(reference: np.ndarray, candidate: np.ndarray, k: int = 10) -> dict[str, float]:
    """Mean and min cosine of paired embeddings, and the mean overlap of each row's k nearest neighbours."""
    ref, cand = unit_rows(reference), unit_rows(candidate)
    cosine = np.sum(ref * cand, axis=1)  # [N]
    k = min(k, len(ref) - 1)
    if k < 1:
        return {"cosine_mean": float(cosine.mean()), "cosine_min": float(cosine.min())}
    ref_nn, cand_nn = neighbours(ref, k), neighbours(cand, k)
    overlap = np.mean([len(set(a) & set(b)) / k for a, b in zip(ref_nn, cand_nn, strict=True)])
    return {
        "cosine_mean": float(cosine.mean()),
        "cosine_min": float(cosine.min()),
        f"recall{k}_overlap": float(overlap),
    }


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise log probabilities of [T, vocab] scores (float64)."""
    x = logits.astype(np.float64)
    x = x - x.max(axis=1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=1, keepdims=True))


def next_token_metrics(reference: np.ndarray, candidate: np.ndarray, text: np.ndarray) -> dict[str, float]:
    """A candidate LM against the reference, teacher-forced on a real text: logits [T, vocab] of both at every
    position of the same token ids `text` [T]. Top-1 agreement of the next-token guesses, mean KL(reference ‖
    candidate), and the perplexity of each on the text's actual next tokens, with their ratio."""
    ref, cand = log_softmax(reference[:-1]), log_softmax(candidate[:-1])
    targets = np.asarray(text[1:])
    rows = np.arange(len(targets))
    kl = np.sum(np.exp(ref) * (ref - cand), axis=1)
    ppl_ref = float(np.exp(-ref[rows, targets].mean()))
    ppl_cand = float(np.exp(-cand[rows, targets].mean()))
    return {"next_token_agreement": float(np.mean(ref.argmax(1) == cand.argmax(1))), "kl_mean": float(kl.mean()),
            "perplexity_reference": ppl_ref, "perplexity": ppl_cand, "perplexity_ratio": ppl_cand / ppl_ref,
            "tokens": float(len(targets))}  # fmt: skip


def path_agreement(reference_on_path: np.ndarray, prompt_tokens: int, generated: list[int]) -> float:
    """For an engine whose logits are not exposed: the share of its greedy tokens that the reference would have
    chosen too, given the same prefix (reference logits [T, vocab] over prompt + generated tokens)."""
    if not generated:
        return float("nan")
    choices = reference_on_path[prompt_tokens - 1 : prompt_tokens - 1 + len(generated)].argmax(1)
    return float(np.mean(choices == np.asarray(generated)))


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common start of two token lists (greedy exact-match length)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))
