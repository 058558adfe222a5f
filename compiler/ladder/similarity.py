"""Similarity between field names for L1: a pluggable backend, n-grams by default.

The default embeds a name as the counts of its character 2-, 3- and 4-grams (of the name
with case and separators folded, padded with boundary marks) and compares by cosine. It is
deterministic (no hashing seed, no model) and fast: candidates are scored through an
inverted index of their n-grams, so only names sharing an n-gram are ever compared.
"""

import math
from collections.abc import Sequence
from typing import Protocol

from compiler.ladder.model import LadderModel
from compiler.ladder.synonyms import normalize_name
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

_SIZES = (2, 3, 4)


class BackendError(ForgeError, ValueError):
    """A similarity backend answered with something unusable (wrong count, bad vectors)."""

    code = ErrorCode.SIMILARITY_BACKEND


class SimilarityBackend(Protocol):
    def similarities(self, names: Sequence[str], candidates: Sequence[str]) -> list[list[float]]:
        """One row per name, one column per candidate, each in [0, 1]."""
        ...


def ngram_vector(name: str) -> dict[str, float]:
    """The unit-length character n-gram count vector of a field name."""
    text = "^" + normalize_name(name).replace("_", "") + "$"
    counts: dict[str, float] = {}
    for n in _SIZES:
        for i in range(len(text) - n + 1):
            gram = text[i : i + n]
            counts[gram] = counts.get(gram, 0.0) + 1.0
    norm = math.sqrt(sum(c * c for c in counts.values())) or 1.0
    return {g: c / norm for g, c in counts.items()}


class NGramSimilarity:
    """The default backend: cosine of character n-gram vectors.

    `cache` keeps the vectors of candidates (the contract's declared names, so it is
    bounded by the schema); payload names are never cached, so no payload outlives its run.
    """

    def __init__(self, cache: dict[str, dict[str, float]] | None = None) -> None:
        self.cache = cache

    def _candidate(self, name: str) -> dict[str, float]:
        if self.cache is None:
            return ngram_vector(name)
        vector = self.cache.get(name)
        if vector is None:
            vector = self.cache[name] = ngram_vector(name)
        return vector

    def similarities(self, names: Sequence[str], candidates: Sequence[str]) -> list[list[float]]:
        """Score every name against every candidate through an n-gram inverted index."""
        index: dict[str, list[tuple[int, float]]] = {}
        for column, candidate in enumerate(candidates):
            for gram, weight in self._candidate(candidate).items():
                index.setdefault(gram, []).append((column, weight))
        rows = []
        for name in names:
            row = [0.0] * len(candidates)
            for gram, weight in ngram_vector(name).items():
                for column, other in index.get(gram, ()):
                    row[column] += weight * other
            rows.append([min(1.0, s) for s in row])
        return rows


class EmbeddingSimilarity:
    """Cosine similarity of vectors from a `LadderModel`'s `embed`."""

    def __init__(self, model: LadderModel) -> None:
        self.model = model

    def similarities(self, names: Sequence[str], candidates: Sequence[str]) -> list[list[float]]:
        """Embed names and candidates in one call and compare every pair.

        Raises:
            BackendError: the model returned the wrong number of vectors or bad vectors.
        """
        texts = [*names, *candidates]
        vectors = [list(v) for v in self.model.embed(texts)]
        if len(vectors) != len(texts):
            raise BackendError(f"embed returned {len(vectors)} vectors for {len(texts)} names")
        if len({len(v) for v in vectors}) > 1:
            raise BackendError("embed returned vectors of different lengths")
        unit = [_unit(v) for v in vectors]
        head, tail = unit[: len(names)], unit[len(names) :]
        return [
            [max(0.0, min(1.0, sum(a * b for a, b in zip(u, c, strict=True)))) for c in tail]
            for u in head
        ]


def _unit(vector: list[float]) -> list[float]:
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in vector):
        raise BackendError("embed returned a vector with non-finite or non-numeric entries")
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]
