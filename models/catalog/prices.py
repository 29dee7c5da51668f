"""GPU prices by provider, region and tier (``prices.json``), with their sources.

A row is one offer: ``provider`` (of a ``provider_kind``: hyperscaler, gpu_cloud,
marketplace, capacity_block), ``region``, ``gpu`` (a ``gpus.json`` name), ``tier``
and ``usd_per_gpu_hour``, the ``node_gpus`` a node holds and the ``interconnect``
between nodes, the ``source`` of the price and the date it was seen (``as_of``).

Tiers: ``on_demand``, ``spot`` and reservations ``reserved_1m``, ``reserved_1y``,
``reserved_3y``. A reservation is paid for every hour of its term
(``TERM_HOURS``), used or not. Within one (provider, region, GPU) the tiers are
consistent: spot and every reservation cost less per hour than on demand, and a
longer term no more than a shorter one (``inconsistencies``; the shipped catalog
has none, which ``tests/models/catalog/test_prices.py`` checks).
"""

from __future__ import annotations

import contextlib
import functools
import json
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator, Optional

from planopt.models.catalog import CatalogLookupError, find_gpu

PRICES_FILE = Path(__file__).resolve().parent / "prices.json"

HOURS_PER_MONTH = 730.0   # 365 days x 24 h / 12, the month cloud providers bill by
HOURS_PER_YEAR = 8760.0   # 365 days x 24 h
TERM_HOURS = {"reserved_1m": HOURS_PER_MONTH, "reserved_1y": HOURS_PER_YEAR, "reserved_3y": 3 * HOURS_PER_YEAR}
RESERVED_TIERS = tuple(TERM_HOURS)
TIERS = ("on_demand", "spot") + RESERVED_TIERS
PROVIDER_KINDS = ("hyperscaler", "gpu_cloud", "marketplace", "capacity_block")
COLUMNS = ("provider", "region", "gpu", "tier", "usd_per_gpu_hour", "source", "as_of")  # of `planopt catalog --json`


@dataclass(frozen=True)
class PriceRow:
    """One price of the catalog: a GPU's hourly price at one provider, region and tier, with its source and date."""

    provider: str
    provider_kind: str
    region: str
    gpu: str
    tier: str
    usd_per_gpu_hour: float
    node_gpus: int
    interconnect: str
    source: str
    as_of: str

    def to_dict(self) -> dict:
        """The row as a plain dict, one key per field."""
        return asdict(self)


def parse_rows(raw: list[dict]) -> list[PriceRow]:
    """Rows of a price file, GPU names resolved to the catalog's; ValueError naming the row and field."""
    rows = []
    for n, item in enumerate(raw):
        try:
            row = PriceRow(**item)
        except TypeError as exc:
            raise ValueError(f"prices.{n}: {exc}") from None
        if row.tier not in TIERS:
            raise ValueError(f"prices.{n}.tier: expected one of {', '.join(TIERS)}, got {row.tier!r}")
        if row.provider_kind not in PROVIDER_KINDS:
            raise ValueError(f"prices.{n}.provider_kind: expected one of {', '.join(PROVIDER_KINDS)}, got {row.provider_kind!r}")
        if not isinstance(row.usd_per_gpu_hour, (int, float)) or not row.usd_per_gpu_hour > 0:
            raise ValueError(f"prices.{n}.usd_per_gpu_hour: expected a positive number, got {row.usd_per_gpu_hour!r}")
        if not row.source or not row.as_of:
            raise ValueError(f"prices.{n}: every price needs a source and an as_of date")
        try:
            gpu = find_gpu(row.gpu).name
        except CatalogLookupError as exc:
            raise ValueError(f"prices.{n}.gpu: {exc}") from None
        rows.append(PriceRow(**{**item, "gpu": gpu}))
    return rows


def inconsistencies(rows: list[PriceRow]) -> list[str]:
    """Tiers that break the order within a (provider, region, GPU): spot and reservations below
    on demand, a longer reservation term not dearer than a shorter one."""
    groups: dict[tuple, dict[str, float]] = {}
    for row in rows:
        groups.setdefault((row.provider, row.region, row.gpu), {})[row.tier] = row.usd_per_gpu_hour
    out = []
    for (provider, region, gpu), tiers in sorted(groups.items()):
        od = tiers.get("on_demand")
        for tier, price in tiers.items():
            if tier != "on_demand" and od is not None and price >= od:
                out.append(f"{provider} {region} {gpu}: {tier} ${price} is not below on-demand ${od}")
        terms = [(TERM_HOURS[t], tiers[t], t) for t in RESERVED_TIERS if t in tiers]
        for (_, short, ts), (_, long_, tl) in zip(terms, terms[1:]):
            if long_ > short:
                out.append(f"{provider} {region} {gpu}: {tl} ${long_} costs more than {ts} ${short}")
    return out


@functools.lru_cache(maxsize=1)
def load_prices() -> tuple[PriceRow, ...]:
    """The shipped price catalog."""
    data = json.loads(PRICES_FILE.read_text())
    return tuple(parse_rows(data["prices"]))


def read_price_file(path: str) -> tuple[PriceRow, ...]:
    """The rows of a price file in the format of ``prices.json`` (``planopt catalog import``, or one written by hand),
    checked as the shipped catalog is (``parse_rows``); read once per (path, modification time, size). ValueError
    saying why it is not one (missing, unreadable, not JSON, not the format, no rows)."""
    p = Path(path)
    try:
        stat = p.stat()
    except OSError:
        raise ValueError(f"{path}: file not found") from None
    return _read_price_file(str(p.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _read_price_file(path: str, mtime_ns: int, size: int) -> tuple[PriceRow, ...]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except IsADirectoryError:
        raise ValueError(f"{path}: is a directory, expected a price file (.json)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot be read ({type(exc).__name__})") from None
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("prices"), list):
        raise ValueError(f"{path}: expected a price file, an object with a 'prices' list (the format of "
                         "models/catalog/prices.json, as `planopt catalog import` writes it)")
    if not all(isinstance(item, dict) for item in data["prices"]):
        raise ValueError(f"{path}: prices: expected a list of objects, one per offer")
    try:
        rows = tuple(parse_rows(data["prices"]))
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if not rows:
        raise ValueError(f"{path}: prices: expected at least one offer, got none")
    return rows


# The rows in force while an instance or a portfolio that names a ``price_catalog`` is validated (its entries'
# ``provider`` lookups read them); None: the shipped catalog. Set only by :func:`using_rows`.
_ACTIVE: ContextVar[Optional[tuple[PriceRow, ...]]] = ContextVar("planopt_price_rows", default=None)


@contextlib.contextmanager
def using_rows(rows: Optional[tuple[PriceRow, ...]]) -> Iterator[None]:
    """Within the block, the functions below read ``rows`` by default (None: the shipped catalog)."""
    token = _ACTIVE.set(rows)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def active_rows() -> tuple[PriceRow, ...]:
    """The rows of :func:`using_rows` in force, else the shipped catalog."""
    rows = _ACTIVE.get()
    return load_prices() if rows is None else rows


def offers(provider: str, gpu: str, region: str | None = None, rows: tuple[PriceRow, ...] | None = None) -> dict[str, PriceRow]:
    """Tier -> row of one provider's offers for a GPU (in ``region``, or its first region listed) among ``rows``
    (default :func:`active_rows`)."""
    rows = [r for r in (active_rows() if rows is None else rows) if r.provider == provider and r.gpu == gpu]
    if region is None and rows:
        region = rows[0].region
    return {r.tier: r for r in rows if r.region == region}


def provider_offer(provider: str, gpu: str, region: str | None = None) -> dict[str, PriceRow]:
    """Tier -> row of one provider's offer of a GPU (in ``region``, or its first region listed) in the
    :func:`active_rows`; a ValueError starting ``provider:`` when the provider is unknown or does not sell the GPU there."""
    rows = active_rows()
    if provider not in providers(rows):
        raise ValueError(f"provider: expected one of {', '.join(providers(rows))}, got {provider!r}")
    offered = offers(provider, gpu, region, rows)
    if not offered:
        regions = sorted({r.region for r in rows if r.provider == provider and r.gpu == gpu})
        raise ValueError(f"provider: {provider} offers no {gpu}" + (f" in region {region!r}" if region else "")
                         + (f" (regions: {', '.join(regions)})" if regions else ""))
    return offered


def providers(rows: tuple[PriceRow, ...] | None = None) -> list[str]:
    """The providers ``rows`` name (default the shipped catalog's), sorted."""
    return sorted({r.provider for r in (load_prices() if rows is None else rows)})


def select_prices(provider: str | None = None, gpu: str | None = None) -> list[PriceRow]:
    """The catalog's rows of one provider and/or one GPU (a catalog name or alias).

    Raises ``KeyError`` with ``"provider"`` or ``"gpu"`` and a message when the
    provider is unknown or the GPU is not in the catalog, so that the CLI and the
    service name their own field (``--provider`` / ``provider``)."""
    from planopt.models.catalog import CatalogLookupError, find_gpu
    rows = list(load_prices())
    if provider is not None:
        if provider not in providers():
            raise KeyError("provider", f"expected one of {', '.join(providers())}, got {provider!r}")
        rows = [r for r in rows if r.provider == provider]
    if gpu is not None:
        try:
            name = find_gpu(gpu).name
        except CatalogLookupError as exc:
            raise KeyError("gpu", str(exc)) from None
        rows = [r for r in rows if r.gpu == name]
    return rows


def holds(row: PriceRow, count: int) -> bool:
    """Whether an offer can hold a gang of ``count`` GPUs: any count where its nodes are linked by an
    InfiniBand-class fabric, within one node where they are linked by ethernet only."""
    return row.interconnect != "ethernet" or count <= row.node_gpus


def cheapest_offer(gpu: str, tier: str, count: int, rows: tuple[PriceRow, ...] | None = None) -> PriceRow | None:
    """The catalog's (``rows``, default :func:`active_rows`) cheapest offer of ``gpu`` at ``tier`` that holds ``count`` GPUs (the first listed among
    equal prices), None when none does.

    Exact as the choice among offers: every offer of one GPU type has the type's physics (a plan's speed
    comes from ``gpus.json``), so at one tier and count two offers differ only in price, and the cheaper
    one is no worse for any objective or limit."""
    rows = [r for r in (active_rows() if rows is None else rows) if r.gpu == gpu and r.tier == tier and holds(r, count)]
    return min(rows, key=lambda r: r.usd_per_gpu_hour, default=None)
