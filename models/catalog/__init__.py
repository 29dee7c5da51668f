"""Sourced default catalog of accelerators and model presets.

Data files (next to this module, read with the standard library only):

``gpus.json``
    ``{"as_of": ..., "gpus": [...]}``. One entry per accelerator (per GPU, or per
    chip for TPUs): dense peak compute (``bf16_tflops``, ``fp8_tflops``,
    ``int8_tops``), memory (``hbm_gb``, ``hbm_tbps``), scale-up and scale-out
    bandwidth per GPU (``intra_node_gb_per_s``, ``inter_node_gb_per_s``, both in
    GB/s), ``gpus_per_node``, ``nvlink_domain_gpus`` (GPUs that reach each other
    over the scale-up link: the node for HGX/DGX, 72 for a GB200 NVL72 rack) and prices in USD per GPU-hour (on-demand low and
    high, spot, reserved; ``null`` where no price was found).
``models.json``
    ``{"as_of": ..., "models": [...]}``. Model presets: total and active
    parameters in billions, the shapes needed for KV-cache sizing (``layers``,
    ``hidden``, ``heads``, ``kv_heads``, ``head_dim``), ``vocab``,
    ``context_tokens`` and ``moe``.
``reference/``
    Verbatim copies of the reference notes the entries cite (``gpus.csv``,
    ``hardware.md``, ``post-training.md``). They are documentation: nothing here
    reads them at run time.

Every entry carries a ``source`` string naming where each number came from.
Arithmetic on a source (for example an instance price divided by its GPU count)
and assumptions that no source states are marked INFERRED there. ``as_of`` is
the date of the price source, or the catalog version when only that is known.

Look-ups accept the canonical name or any alias, ignoring case, spaces,
hyphens and underscores::

    >>> find_gpu("h100 sxm").name
    'H100-SXM'
    >>> find_model("Qwen/Qwen3-8B").kv_heads
    8
"""

from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping, TypeVar

__all__ = [
    "CatalogLookupError",
    "GpuSpec",
    "ModelSpec",
    "find_gpu",
    "find_model",
    "load_gpus",
    "load_models",
    "normalize_name",
]

_DATA_DIR = Path(__file__).resolve().parent
GPUS_FILE = _DATA_DIR / "gpus.json"
MODELS_FILE = _DATA_DIR / "models.json"


class CatalogLookupError(ValueError):
    """Raised when a GPU or model name matches no catalog entry or alias."""


@dataclass(frozen=True)
class GpuSpec:
    """One accelerator of ``gpus.json``; units are in the field names."""

    name: str
    aliases: tuple[str, ...]
    vendor: str
    bf16_tflops: float
    fp8_tflops: float | None
    int8_tops: float | None
    hbm_gb: float
    hbm_tbps: float
    intra_node_gb_per_s: float
    inter_node_gb_per_s: float
    gpus_per_node: int
    price_on_demand_usd_per_gpu_hour: float
    price_on_demand_high_usd_per_gpu_hour: float | None
    price_spot_usd_per_gpu_hour: float | None
    price_reserved_usd_per_gpu_hour: float | None
    source: str
    as_of: str
    # GPUs one scale-up (NVLink) domain spans; None = the node (``gpus_per_node``),
    # as for a custom GPU an instance describes.
    nvlink_domain_gpus: int | None = None

    @property
    def scale_up_domain_gpus(self) -> int:
        """GPUs that reach each other over ``intra_node_gb_per_s`` (at least the node)."""
        return max(self.gpus_per_node, self.nvlink_domain_gpus or self.gpus_per_node)


@dataclass(frozen=True)
class HostLinkedGpuSpec(GpuSpec):
    """A GPU with its own host-link figure, as an instance's GPU option gives it (``gpus.json`` has no such
    field: the catalog's figures are ``defaults.HOST_LINK_GB_PER_S_PER_GPU``, by name)."""

    # one direction of the link between one GPU and host memory, GB/s
    host_link_gb_per_s: float | None = None


@dataclass(frozen=True)
class ModelSpec:
    """One model preset of ``models.json``; parameters are in billions."""

    name: str
    aliases: tuple[str, ...]
    params_b: float
    active_params_b: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    context_tokens: int
    moe: bool
    source: str


_Spec = TypeVar("_Spec", GpuSpec, ModelSpec)


def normalize_name(name: str) -> str:
    """Lower-case ``name`` and drop spaces, hyphens and underscores."""
    return "".join(ch for ch in name.casefold() if ch not in " -_\t")


def _build(cls: type[_Spec], entry: Mapping[str, Any], path: Path) -> _Spec:
    expected = {f.name for f in fields(cls)}
    got = set(entry)
    if got != expected:
        missing = sorted(expected - got)
        extra = sorted(got - expected)
        raise ValueError(
            f"{path.name}: entry {entry.get('name')!r} has missing keys {missing} "
            f"and unexpected keys {extra}"
        )
    values = dict(entry)
    values["aliases"] = tuple(values["aliases"])
    return cls(**values)


def _load(cls: type[_Spec], path: Path, list_key: str) -> dict[str, _Spec]:
    with path.open(encoding="utf-8") as handle:
        document = json.load(handle)
    specs: dict[str, _Spec] = {}
    for entry in document[list_key]:
        spec = _build(cls, entry, path)
        if spec.name in specs:
            raise ValueError(f"{path.name}: duplicate entry {spec.name!r}")
        specs[spec.name] = spec
    return specs


@functools.lru_cache(maxsize=None)
def load_gpus() -> dict[str, GpuSpec]:
    """All accelerators of ``gpus.json``, keyed by canonical name (cached)."""
    return _load(GpuSpec, GPUS_FILE, "gpus")


@functools.lru_cache(maxsize=None)
def load_models() -> dict[str, ModelSpec]:
    """All model presets of ``models.json``, keyed by canonical name (cached)."""
    return _load(ModelSpec, MODELS_FILE, "models")


def _index(specs: Mapping[str, _Spec]) -> dict[str, str]:
    """Normalized canonical name or alias -> canonical name."""
    index: dict[str, str] = {}
    for canonical, spec in specs.items():
        for label in (canonical, *spec.aliases):
            key = normalize_name(label)
            owner = index.setdefault(key, canonical)
            if owner != canonical:
                raise ValueError(
                    f"catalog name {label!r} is ambiguous: it matches {owner!r} and {canonical!r}"
                )
    return index


@functools.lru_cache(maxsize=None)
def _gpu_index() -> dict[str, str]:
    return _index(load_gpus())


@functools.lru_cache(maxsize=None)
def _model_index() -> dict[str, str]:
    return _index(load_models())


def _find(kind: str, name: str, specs: Mapping[str, _Spec], index: Mapping[str, str]) -> _Spec:
    if not isinstance(name, str):
        raise CatalogLookupError(f"unknown {kind} {name!r}: expected a name (str)")
    key = normalize_name(name)
    if key in index:
        return specs[index[key]]
    # Only a canonical name or a listed alias resolves ('H100' is a listed alias of H100-SXM); a shorthand
    # is never completed, even when one name alone starts with it ('MI300' -> MI300X is a suggestion).
    # One that starts several names ('A100') is ambiguous: those names are the suggestions. Otherwise
    # the names close to it (difflib) are.
    prefixed: list[str] = []
    for k in index:
        if key and k.startswith(key) and index[k] not in prefixed:
            prefixed.append(index[k])
    if len(prefixed) > 1:
        quoted = " or ".join(repr(s) for s in prefixed)
        raise CatalogLookupError(f"{kind} {name!r} is ambiguous: did you mean {quoted}?")
    close = difflib.get_close_matches(key, list(index), n=5, cutoff=0.6)
    suggestions: list[str] = []
    for match in [*(p for p in prefixed), *(index[c] for c in close)]:
        if match not in suggestions:
            suggestions.append(match)
    if suggestions:
        quoted = " or ".join(repr(s) for s in suggestions[:3])
        raise CatalogLookupError(f"unknown {kind} {name!r}: did you mean {quoted}?")
    known = ", ".join(repr(s) for s in specs)
    raise CatalogLookupError(f"unknown {kind} {name!r}: known {kind}s are {known}")


def find_gpu(name: str) -> GpuSpec:
    """The accelerator whose canonical name or alias matches ``name``.

    Matching ignores case, spaces, hyphens and underscores. Raises
    :class:`CatalogLookupError` with close suggestions on a miss.
    """
    return _find("GPU", name, load_gpus(), _gpu_index())


def find_model(name: str) -> ModelSpec:
    """The model preset whose canonical name or alias matches ``name``.

    Matching ignores case, spaces, hyphens and underscores. Raises
    :class:`CatalogLookupError` with close suggestions on a miss.
    """
    return _find("model", name, load_models(), _model_index())
