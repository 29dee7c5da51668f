"""The portfolio schema: many jobs over a horizon of time buckets, sharing GPUs.

A portfolio (``"kind": "portfolio"``) holds

- a horizon: ``buckets`` time buckets of ``bucket_hours`` each (e.g. 26 weeks of 168 h);
- ``jobs``: each a single-job :class:`~planopt.models.schema.instance.Instance` (an inline
  object, or a file path relative to the portfolio file) with a
  ``release_bucket`` and a ``deadline_bucket`` (both inclusive, 0-based);
- ``gpus``: the GPU types the jobs may share, each from one ``provider`` of the
  price catalog (``catalog/prices.json``, or the portfolio's ``price_catalog``, a price file
  ``planopt catalog import`` writes: its prices, node size and interconnect
  are the defaults) or with prices of its own, and three pricing tiers:
  *reserved* (a commitment of whole nodes over the horizon, paid for every hour
  of its term -- 1 month, 1 year, 3 years, back to back over the horizon; no
  term: the horizon -- whether used or not; with ``reserved_start_buckets`` the
  MIP also chooses when each contract starts, paid from its start), *on demand* (a price and an
  availability per bucket) and *spot* (a price, an availability and a
  preemption rate per GPU-hour; preemptions act as extra failures in the
  checkpoint model of ``physics.checkpoint_overhead_share``). An offer linked
  by ethernet only holds a job on one node at most. One GPU type may be listed
  once per (provider, region): the offers are then pools of their own, keyed
  ``NAME@provider/region``, and which one each job runs on (and which ones to
  reserve) is the MIP's decision; a job runs on one offer for its whole run
  (its plan's ``gpu`` names it), as moving a run's checkpoints between clouds is
  not modelled. For capacity scenarios
  (``portfolio_capacity.py``) an on-demand pool may fall short in a bucket:
  ``on_demand_shortfall_probability_per_bucket`` and
  ``on_demand_shortfall_share``, both or neither, no default;
- an optional total ``budget_usd``.

Per-bucket fields accept a scalar (the same in every bucket) or a list of one
value per bucket. Units are in the field names; unknown fields are rejected.

Inside a portfolio a job keeps its options and its quality and forgetting
limits; its own ``budget_usd`` and ``deadline_hours`` are replaced by the
portfolio's budget and the job's deadline bucket, its ``objective`` by the
portfolio's least total cost, and its prices by the portfolio's. A job runs
only on the GPU types its own ``hardware.gpus`` lists that the portfolio has,
with the counts it lists (``available_gpus`` caps its size); a job that lists
none of the portfolio's types is refused.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, PrivateAttr, ValidationInfo,
                      model_validator)

from planopt.models.catalog import CatalogLookupError, find_gpu
from planopt.models.catalog import defaults as d
from planopt.models.catalog.prices import TERM_HOURS
from planopt.models.schema import price_catalog
from planopt.models.schema.instance import GpuOption, Instance, Labels, Strict

PerBucketFloat = Union[NonNegativeFloat, list[NonNegativeFloat]]
PerBucketInt = Union[NonNegativeInt, list[NonNegativeInt]]
Share = Annotated[float, Field(ge=0.0, le=1.0)]
PerBucketShare = Union[Share, list[Share]]


# The longest horizon a portfolio plans: ten years of hours. The longest reservation term the price catalog
# sells is three years (``catalog.prices.TERM_HOURS``); a longer horizon only repeats terms, and past this one
# the bucket hours multiply into numbers the MIP cannot tell apart from rounding.
MAX_HORIZON_HOURS = 10 * 8760.0


class Horizon(Strict):
    """The portfolio's time axis: how many buckets and how many hours each."""

    buckets: PositiveInt = Field(description="number of time buckets")
    bucket_hours: PositiveFloat = Field(le=MAX_HORIZON_HOURS, description="hours per bucket, e.g. 168 for weeks")

    @model_validator(mode="after")
    def _horizon_within_ten_years(self) -> "Horizon":
        if self.buckets * self.bucket_hours > MAX_HORIZON_HOURS:
            raise ValueError(f"bucket_hours: {self.buckets} buckets of {self.bucket_hours:g} h are "
                             f"{self.buckets * self.bucket_hours:,.0f} h, over the ten-year horizon of "
                             f"{MAX_HORIZON_HOURS:,.0f} h a portfolio plans")
        return self


class PortfolioGpu(Strict):
    """A GPU type the portfolio may use, from one provider, with its three pricing tiers."""

    name: str = Field(description="catalog GPU name")
    provider: Optional[str] = Field(None, description="a provider of the price catalog (`planopt catalog`): its prices, node size "
                                    "and interconnect become the defaults; none: prices from the GPU catalog, provider 'unspecified'")
    region: Optional[str] = Field(None, description="the provider's region (default: the first one the price catalog lists)")
    reserved_term: Optional[Literal["1m", "1y", "3y"]] = Field(
        None, description="with a provider: the reservation term (1 month, 1 year, 3 years); default: the shortest the provider offers")
    reserved_usd_per_gpu_hour: Optional[PositiveFloat] = Field(
        None, description="reserved price per GPU-hour, paid for every hour of the commitment; default: the provider's price "
                          "for the term, else the GPU catalog's price_reserved_usd_per_gpu_hour")
    max_reserved_gpus: Optional[NonNegativeInt] = Field(None, description="most GPUs that can be reserved (none: no cap)")
    reserved_lead_buckets: NonNegativeInt = Field(0, description="buckets from signing a reservation to its GPUs arriving: "
                                                  "reserved GPUs run jobs from this bucket on, and are paid from bucket 0")
    reserved_start_buckets: Optional[list[NonNegativeInt]] = Field(
        None, min_length=1, description="buckets in which a reservation contract may be signed: a decision, the MIP signs whole "
        "nodes in any of them; a contract's GPUs run from its start + reserved_lead_buckets to the horizon's end and it is paid "
        "for every hour of its term(s) from its start, idle buckets included (none: one contract, signed in bucket 0)")
    on_demand_usd_per_gpu_hour: Optional[PerBucketFloat] = Field(
        None, description="on-demand price per GPU-hour, scalar or one per bucket; default: the provider's (or the GPU catalog's) price")
    on_demand_available_gpus: PerBucketInt = Field(description="on-demand GPUs available, scalar or one per bucket")
    spot_usd_per_gpu_hour: Optional[PerBucketFloat] = Field(
        None, description="spot price per GPU-hour, scalar or one per bucket; default: the provider's (or the GPU catalog's) spot price "
                          "(none there: no spot tier)")
    spot_available_gpus: PerBucketInt = Field(0, description="spot GPUs available, scalar or one per bucket (0: no spot tier)")
    spot_preemptions_per_gpu_hour: Optional[NonNegativeFloat] = Field(
        None, description="spot preemptions per GPU-hour; added to the job's failure rate while it runs on spot (default: "
                          "a node reclaimed at AWS Spot Instance Advisor's 20 % a month, -ln(0.8)/730 h per node-hour, "
                          "shared by the node's GPUs, as a single job's spot entries are: defaults.SPOT_RECLAIMED_SHARE_PER_MONTH)")
    # No published stock-out rate of on-demand GPUs was found (providers document "insufficient
    # capacity" errors, not their frequency), so the shortfall is the instance's to give, with no
    # default: `--scenarios` refuses a GPU type with on-demand GPUs and no shortfall fields.
    on_demand_shortfall_probability_per_bucket: Optional[PerBucketShare] = Field(
        None, description="capacity scenarios: chance that the on-demand pool falls short in a bucket, scalar or one per bucket "
                          "(drawn independently per bucket and GPU type); needed by --scenarios when on-demand GPUs are available")
    on_demand_shortfall_share: Optional[Share] = Field(
        None, description="capacity scenarios: share of on_demand_available_gpus not obtainable in a bucket that falls short "
                          "(the rest, rounded down to whole GPUs, is obtainable)")

    node_gpus: Optional[PositiveInt] = Field(None, description="GPUs per node: reservations come in whole nodes "
                                             "(default: the provider's node size; none: single GPUs)")
    interconnect: Optional[str] = Field(None, description="between nodes (default: the provider's); 'ethernet' holds a job "
                                        "on one node at most: multi-node training needs InfiniBand-class links")
    # Set by Portfolio when its GPU type is listed more than once: "provider/region".
    _offer: Optional[str] = PrivateAttr(None)

    @property
    def key(self) -> str:
        """The pool's name in plans and tables: the GPU name, with ``@provider/region`` when the
        portfolio lists the GPU type more than once."""
        return self.name if self._offer is None else f"{self.name}@{self._offer}"

    @property
    def offer(self) -> Optional[str]:
        """The ``provider/region`` label when the portfolio lists this GPU type more than once, else None."""
        return self._offer

    @model_validator(mode="after")
    def _catalog(self) -> "PortfolioGpu":
        try:
            spec = find_gpu(self.name)
        except CatalogLookupError as exc:
            raise ValueError(str(exc)) from None
        object.__setattr__(self, "name", spec.name)
        if self.provider is not None:
            self._from_price_catalog()
        elif self.region is not None or self.reserved_term is not None:
            raise ValueError(f"{'region' if self.region is not None else 'reserved_term'}: needs a provider "
                             "(one of the price catalog's, see `planopt catalog`)")
        if self.reserved_usd_per_gpu_hour is None and self.provider is None:
            if spec.price_reserved_usd_per_gpu_hour is None:
                raise ValueError(f"reserved_usd_per_gpu_hour: required, the catalog has no reserved price for {spec.name}")
            object.__setattr__(self, "reserved_usd_per_gpu_hour", spec.price_reserved_usd_per_gpu_hour)
        if self.on_demand_usd_per_gpu_hour is None and self.provider is None:
            object.__setattr__(self, "on_demand_usd_per_gpu_hour", spec.price_on_demand_usd_per_gpu_hour)
        if self.spot_usd_per_gpu_hour is None and self.provider is None:
            object.__setattr__(self, "spot_usd_per_gpu_hour", spec.price_spot_usd_per_gpu_hour)
        if self.spot_preemptions_per_gpu_hour is None:  # the single job's sourced rate, per GPU of a node
            node = self.node_gpus or spec.gpus_per_node or 1
            object.__setattr__(self, "spot_preemptions_per_gpu_hour",
                               d.spot_reclaims_per_node_hour(d.SPOT_RECLAIMED_SHARE_PER_MONTH) / node)
        for tier in ("on_demand", "spot"):
            if getattr(self, f"{tier}_usd_per_gpu_hour") is None and any(self._as_list(getattr(self, f"{tier}_available_gpus"), 1)):
                seller = f"provider {self.provider}" if self.provider else "the catalog"
                raise ValueError(f"{tier}_available_gpus: {seller} has no {tier.replace('_', '-')} price for {spec.name}; "
                                 f"set {tier}_usd_per_gpu_hour, or 0 available")
        return self

    def _from_price_catalog(self) -> None:
        """Prices, node size and interconnect of the provider's offer (``models/catalog/prices.json``)."""
        from planopt.models.catalog.prices import provider_offer
        offered = provider_offer(self.provider, self.name, self.region)
        terms = [t.removeprefix("reserved_") for t in ("reserved_1m", "reserved_1y", "reserved_3y") if t in offered]
        if self.reserved_term is not None and self.reserved_term not in terms:
            raise ValueError(f"reserved_term: {self.provider} offers {self.name} reserved for "
                             f"{', '.join(terms) if terms else 'no term'}, got {self.reserved_term!r}")
        term = self.reserved_term or (terms[0] if terms else None)
        row = next(iter(offered.values()))
        object.__setattr__(self, "region", row.region)
        object.__setattr__(self, "reserved_term", term)
        if self.node_gpus is None:
            object.__setattr__(self, "node_gpus", row.node_gpus)
        if self.interconnect is None:
            object.__setattr__(self, "interconnect", row.interconnect)
        if self.reserved_usd_per_gpu_hour is None and term is not None:
            object.__setattr__(self, "reserved_usd_per_gpu_hour", offered[f"reserved_{term}"].usd_per_gpu_hour)
        if self.reserved_usd_per_gpu_hour is None and self.max_reserved_gpus not in (None, 0):
            raise ValueError(f"max_reserved_gpus: {self.provider} offers no reservation of {self.name}")
        if self.reserved_usd_per_gpu_hour is None:
            object.__setattr__(self, "max_reserved_gpus", 0)  # nothing to reserve
        for tier in ("on_demand", "spot"):
            if getattr(self, f"{tier}_usd_per_gpu_hour") is None and tier in offered:
                object.__setattr__(self, f"{tier}_usd_per_gpu_hour", offered[tier].usd_per_gpu_hour)

    @staticmethod
    def _as_list(value, n: int) -> list:
        return list(value) if isinstance(value, list) else [value] * n

    def per_bucket(self, field: str, buckets: int) -> list[float]:
        """The field's value in each of ``buckets`` buckets (one value repeated, or one per bucket); zeros when it is
        unset."""
        value = getattr(self, field)
        if value is None:
            return [0.0] * buckets
        return [float(v) for v in self._as_list(value, buckets)]


class PortfolioJob(Strict):
    """One job of the portfolio: its instance and the window of buckets it may run in."""

    name: Optional[str] = Field(None, description="defaults to the instance's name")
    instance: Union[str, dict] = Field(description="a single-job instance: inline object, or a path relative to the portfolio file")
    release_bucket: NonNegativeInt = Field(0, description="first bucket the job may run in (0-based)")
    deadline_bucket: NonNegativeInt = Field(description="last bucket the job may run in; it finishes by the end of it")

    @model_validator(mode="after")
    def _window(self) -> "PortfolioJob":
        if self.deadline_bucket < self.release_bucket:
            raise ValueError("deadline_bucket must not be before release_bucket")
        return self


class Portfolio(Strict):
    """Many jobs over a horizon of buckets, sharing reserved, on-demand and spot GPUs."""

    name: str = "portfolio"
    kind: Literal["portfolio"] = "portfolio"
    horizon: Horizon
    gpus: list[PortfolioGpu] = Field(min_length=1)
    jobs: list[PortfolioJob] = Field(min_length=1)
    budget_usd: Optional[NonNegativeFloat] = Field(None, description="total budget of the portfolio")
    labels: Labels = Field(Labels(), description="project and team of every job's FOCUS rows (a job's own instance labels "
                                                 "override them; job defaults to the job's name)")
    alert_share: float = Field(0.8, gt=0, le=1, description="the alert line, a share of budget_usd: the report gives the day "
                                                         "the planned spend reaches it")
    price_catalog: Optional[str] = Field(
        None, description="a price file in the shipped catalog's format (`planopt catalog import`): the gpus entries' "
        "provider offers (prices, node size, interconnect, region, terms) are read from it instead of the shipped "
        "catalog; a path relative to the portfolio file's folder (for a portfolio given as an object, the working "
        "directory)")

    @model_validator(mode="wrap")
    @classmethod
    def _price_catalog(cls, data: Any, handler, info: ValidationInfo) -> "Portfolio":
        """``price_catalog`` resolved and read before the entries' provider lookups (``schema/price_catalog.py``)."""
        return price_catalog.validating(data, handler, info.context, ("price_catalog",), price_catalog.check_portfolio,
                                        cls.__name__)

    @model_validator(mode="after")
    def _check(self) -> "Portfolio":
        n = self.horizon.buckets
        self._name_offers()
        for i, g in enumerate(self.gpus):
            for f in ("on_demand_usd_per_gpu_hour", "on_demand_available_gpus", "spot_usd_per_gpu_hour", "spot_available_gpus",
                      "on_demand_shortfall_probability_per_bucket"):
                v = getattr(g, f)
                if isinstance(v, list) and len(v) != n:
                    raise ValueError(f"gpus.{i}.{f}: expected a scalar or {n} values (one per bucket), got {len(v)}")
        for i, g in enumerate(self.gpus):
            given = [f for f in ("on_demand_shortfall_probability_per_bucket", "on_demand_shortfall_share") if getattr(g, f) is not None]
            if len(given) == 1:
                missing = ({"on_demand_shortfall_probability_per_bucket", "on_demand_shortfall_share"} - set(given)).pop()
                raise ValueError(f"gpus.{i}.{missing}: expected with {given[0]} (a shortfall needs both its chance and its size)")
            if g.reserved_lead_buckets >= n:
                raise ValueError(f"gpus.{i}.reserved_lead_buckets: expected fewer than the horizon's {n} buckets, "
                                 f"got {g.reserved_lead_buckets}")
            starts = g.reserved_start_buckets or []
            if len(set(starts)) != len(starts):
                raise ValueError(f"gpus.{i}.reserved_start_buckets: expected distinct buckets, got {starts}")
            late = [s for s in starts if s + g.reserved_lead_buckets >= n]
            if late:
                raise ValueError(f"gpus.{i}.reserved_start_buckets: a contract signed in bucket {late[0]} arrives after "
                                 f"{g.reserved_lead_buckets} lead bucket(s), past the horizon's last bucket {n - 1}")
        for i, j in enumerate(self.jobs):
            if j.deadline_bucket >= n:
                raise ValueError(f"jobs.{i}.deadline_bucket: {j.deadline_bucket} is beyond the horizon's last bucket {n - 1}")
        return self

    def _name_offers(self) -> None:
        """A GPU type listed more than once is one pool per (provider, region), keyed
        ``NAME@provider/region``; a second entry of one offer, or of a type without a provider, is refused."""
        names = [g.name for g in self.gpus]
        seen: dict[tuple, int] = {}
        for i, g in enumerate(self.gpus):
            if names.count(g.name) == 1:
                continue
            if g.provider is None:
                raise ValueError(f"gpus.{i}.provider: {g.name} is listed more than once; give each entry a provider "
                                 "(and region) of the price catalog, so each is one offer")
            where = (g.name, g.provider, g.region)
            if where in seen:
                raise ValueError(f"gpus.{i}: {g.name} from {g.provider} in {g.region} is listed twice (also gpus.{seen[where]}); "
                                 "one entry per offer, its reserved_term chooses the contract")
            seen[where] = i
            g._offer = f"{g.provider}/{g.region}"


class PortfolioData:
    """A validated portfolio with its jobs resolved to Instances restricted to the portfolio's GPU types."""

    def __init__(self, portfolio: Portfolio, instances: list[Instance]):
        self.portfolio = portfolio
        self.instances = instances
        self.names = [j.name or inst.name for j, inst in zip(portfolio.jobs, instances)]
        seen: dict[str, int] = {}
        for k, name in enumerate(self.names):  # unique job names
            if name in seen:
                seen[name] += 1
                self.names[k] = f"{name}#{seen[name]}"
            else:
                seen[name] = 0
        B = portfolio.horizon.buckets
        self.buckets = list(range(B))
        self.bucket_hours = portfolio.horizon.bucket_hours
        self.gpus = [g.key for g in portfolio.gpus]
        self.gpu = {g.key: g for g in portfolio.gpus}
        self.reserved_price = {g.key: g.reserved_usd_per_gpu_hour or 0.0 for g in portfolio.gpus}  # none: max_reserved_gpus is 0
        self.reserved_term = {g.key: g.reserved_term for g in portfolio.gpus}
        # Contracts may be signed in these buckets (a decision of the MIP only when the field is given).
        self.reserved_starts = {g.key: sorted(g.reserved_start_buckets or [0]) for g in portfolio.gpus}
        self.later_starts = any(g.reserved_start_buckets is not None for g in portfolio.gpus)
        self.reserved_from = {g.key: self.reserved_starts[g.key][0] + g.reserved_lead_buckets
                              for g in portfolio.gpus}  # first bucket reserved GPUs can run in
        self.node_gpus = {g.key: g.node_gpus or 1 for g in portfolio.gpus}
        # A reservation is paid for every hour of its term, used or not: back-to-back terms cover
        # the horizon (none: the horizon itself is the term).
        horizon_hours = B * self.bucket_hours
        self.committed_hours = {g.key: (TERM_HOURS[f"reserved_{g.reserved_term}"]
                                         * math.ceil(horizon_hours / TERM_HOURS[f"reserved_{g.reserved_term}"] - 1e-9)
                                         if g.reserved_term else horizon_hours) for g in portfolio.gpus}
        # A contract signed in bucket s runs to the horizon's end: (B - s) H hours, rounded up to
        # whole back-to-back terms, paid whether used or not (s = 0: ``committed_hours``).
        self.committed_hours_from = {g.key: {s: self.contract_hours(g.reserved_term, (B - s) * self.bucket_hours)
                                              for s in self.reserved_starts[g.key]} for g in portfolio.gpus}
        self.od_price = {g.key: g.per_bucket("on_demand_usd_per_gpu_hour", B) for g in portfolio.gpus}
        self.od_avail = {g.key: g.per_bucket("on_demand_available_gpus", B) for g in portfolio.gpus}
        self.spot_price = {g.key: g.per_bucket("spot_usd_per_gpu_hour", B) for g in portfolio.gpus}
        self.spot_avail = {g.key: g.per_bucket("spot_available_gpus", B) if g.spot_usd_per_gpu_hour is not None else [0.0] * B
                           for g in portfolio.gpus}
        self.preempt = {g.key: g.spot_preemptions_per_gpu_hour for g in portfolio.gpus}
        self.provider = {g.key: g.provider or "unspecified" for g in portfolio.gpus}
        self.region = {g.key: g.region for g in portfolio.gpus}
        self.gpu_type = {g.key: g.name for g in portfolio.gpus}    # the catalog GPU of each pool
        self._pool_of = {(self.provider[k], self.region[k], self.gpu_type[k]): k for k in self.gpus}

    def pool_of(self, row: dict) -> str:
        """The pool a result row (``provider``, ``region``, ``gpu``) names; a row without ``region``
        (result version 1.1) names the first pool of its provider and GPU."""
        key = self._pool_of.get((row.get("provider"), row.get("region"), row["gpu"]))
        if key is None and "region" not in row:
            key = next((k for (prov, _, gpu), k in self._pool_of.items() if prov == row.get("provider") and gpu == row["gpu"]), None)
        return key if key is not None else row["gpu"]

    @staticmethod
    def contract_hours(term: Optional[str], hours: float) -> float:
        """Hours a reserved GPU is paid for to cover ``hours``: whole terms back to back (none: ``hours``)."""
        if not term:
            return hours
        t = TERM_HOURS[f"reserved_{term}"]
        return t * math.ceil(hours / t - 1e-9)

    def reserved_in_force(self, g: str, contracts: dict[int, int], b: int) -> int:
        """Reserved GPUs of ``g`` running in bucket ``b`` from ``contracts`` (start bucket -> GPUs)."""
        lead = self.gpu[g].reserved_lead_buckets
        return sum(n for s, n in contracts.items() if s + lead <= b)

    def window(self, j: int) -> range:
        """The buckets job ``j`` may run in, from its release to its deadline bucket."""
        job = self.portfolio.jobs[j]
        return range(job.release_bucket, job.deadline_bucket + 1)


def shared_gpu_types(inst: Instance, portfolio: Portfolio) -> list[str]:
    """The portfolio's GPU types that the job lists and may run on (on an ethernet-only offer, at
    most one node)."""
    own = {o.name: o for o in inst.hardware.gpus}
    return [g.key for g in portfolio.gpus if g.name in own
            and not (g.interconnect == "ethernet" and g.node_gpus and min(own[g.name].counts) > g.node_gpus)]


def restrict_to_portfolio(inst: Instance, portfolio: Portfolio) -> Instance:
    """The job as it runs in the portfolio: the GPU types it lists that the portfolio has, for its training, its
    separate rollout GPUs and a trained teacher's own (on-demand pricing of bucket 0 for the job's own evaluator),
    cost objective, no job budget or deadline."""
    hw = {"gpus": _portfolio_options(inst.hardware.gpus, portfolio), "pricing": "on_demand", "offers": "reference",
          "rollout_gpus": _portfolio_options(inst.hardware.rollout_gpus, portfolio)}  # the portfolio's prices, no catalog
    data = inst.model_dump(mode="python", exclude_none=False)
    data["hardware"] = hw
    teacher = data.get("teacher")
    if teacher and teacher.get("training") and inst.teacher.training.gpus is not None:
        teacher["training"]["gpus"] = _portfolio_options(inst.teacher.training.gpus, portfolio) or None
    data["objective"] = "cost"
    data["constraints"] = {**data["constraints"], "budget_usd": None, "deadline_hours": None}
    data["kind"] = "job"
    return Instance.model_validate(data)


def _portfolio_options(entries, portfolio: Portfolio) -> list[dict]:
    """The entries (``GpuOption``) whose GPU type the portfolio has, one per offer of it, priced at its on-demand
    price of bucket 0; an ethernet-only offer keeps the counts of one node."""
    own = {o.name: o for o in entries}
    options = []
    for g in portfolio.gpus:
        mine = own.get(g.name)
        if mine is None:
            continue  # the job's own hardware list restricts it
        counts = list(mine.counts)
        if g.interconnect == "ethernet" and g.node_gpus:
            counts = [n for n in counts if n <= g.node_gpus]  # no multi-node training without InfiniBand-class links
            if not counts:
                continue
        avail = mine.available_gpus
        price = g.per_bucket("on_demand_usd_per_gpu_hour", portfolio.horizon.buckets)[0]
        spec = {f: getattr(mine, f) for f in GpuOption.SPEC_FIELDS if mine is not None and getattr(mine, f) is not None}
        options.append({"name": g.name, "offer": g.offer, "counts": counts, "available_gpus": avail, "price_usd_per_gpu_hour": price or None, **spec})
    return options
