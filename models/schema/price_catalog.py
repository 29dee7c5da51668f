"""An imported price catalog named by an instance (``hardware.price_catalog``) or a portfolio (``price_catalog``).

The field is a path to a price file in the format of ``models/catalog/prices.json`` (``planopt catalog import``
writes one), relative to the instance's (portfolio's) file folder when it is read from a file (the validation
context's ``base_dir``), else to the working directory. It is resolved and read once, when the instance is
validated (``prices.read_price_file``, cached by path, modification time and size): the field then holds the
absolute path, so a copy re-validated alone (a teacher's own job, a dumped instance) reads the same file. While the
model validates, its entries' ``provider`` lookups read the file's rows (``prices.using_rows``); afterwards the cost
model reads them through ``Hardware.price_rows``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from planopt.models.catalog.prices import PriceRow, read_price_file, using_rows


def resolve(path: str, base_dir: Any) -> str:
    """``path`` made absolute: against ``base_dir`` (the file's folder) when given, else the working directory."""
    p = Path(path).expanduser()
    if not p.is_absolute():
        p = (Path(base_dir) if base_dir is not None else Path.cwd()) / p
    return str(p.resolve())


def read(path: str, field: str) -> tuple[PriceRow, ...]:
    """The rows of the price file at ``path``; ValueError ``field: why`` when it cannot be read as one."""
    try:
        return read_price_file(path)
    except ValueError as exc:
        raise ValueError(f"{field}: {exc}") from None


def validating(data: Any, handler: Callable[[Any], Any], context: Optional[dict], at: tuple[str, ...],
               check: Callable[[Any], None], title: str) -> Any:
    """A wrap validator's body: when ``data`` (a dict) names a price file at the keys ``at``, resolve it, read it,
    validate with its rows in force and its absolute path in the field, then ``check`` the model; else validate as
    is. ``title``: the model's class name (the errors' title)."""
    holder = data
    for key in at[:-1]:
        holder = holder.get(key) if isinstance(holder, dict) else None
    path = holder.get(at[-1]) if isinstance(holder, dict) else None
    if not isinstance(path, str):   # absent, or not a string: the field's own type check speaks
        return handler(data)
    field = ".".join(at)
    if not path.strip():
        raise ValueError(f"{field}: expected the path of a price file (.json), got {path!r}")
    absolute = resolve(path, (context or {}).get("base_dir"))
    try:
        rows = read(absolute, field)
    except ValueError as exc:
        raise with_the_rest(str(exc), data, handler, at, title) from None
    data = _with(data, at, absolute)
    with using_rows(rows):
        model = handler(data)
    check(model)
    return model


def with_the_rest(message: str, data: dict, handler: Callable[[Any], Any], at: tuple[str, ...],
                  title: str) -> ValidationError:
    """The file's error first, then every other error of the model read without the field (on the shipped
    catalog), so that ``planopt validate`` lists them all."""
    errors: list = [{"type": PydanticCustomError("value_error", message), "loc": (), "input": data}]
    try:
        handler(_with(data, at, None))
    except ValidationError as exc:
        errors += [{k: e[k] for k in ("type", "loc", "input", "ctx") if k in e} for e in exc.errors()]
    return ValidationError.from_exception_data(title, errors)


def _with(data: dict, at: tuple[str, ...], value: Optional[str]) -> dict:
    """A copy of ``data`` with the value at the keys ``at`` replaced (None: the key left out; the input is not
    changed)."""
    if len(at) == 1:
        return {**{k: v for k, v in data.items() if k != at[0]}, **({} if value is None else {at[0]: value})}
    return {**data, at[0]: _with(data[at[0]], at[1:], value)}


def check_hardware(hw: Any) -> None:
    """Refuse, naming ``hardware.price_catalog``, a price file that prices none of the entries (each has a price
    of its own, or ``hardware.offers`` is ``reference`` and none names a provider), or that has no offer of a GPU
    type an entry buys from it (then which). An entry with a provider is checked by its own lookup
    (``prices.provider_offer``: ``hardware.gpus.N.provider``)."""
    entries = [*hw.gpus, *hw.rollout_gpus]
    readers = [o for o in entries if o.provider is not None
               or (o.price_usd_per_gpu_hour is None and hw.offers == "catalog")]
    where = f"hardware.price_catalog: {hw.price_catalog}"
    if not readers:
        why = ("every entry has a price of its own" if hw.offers == "catalog" else
               "hardware.offers is 'reference' and no entry names a provider")
        raise ValueError(f"{where}: no price is read from it ({why}); expected hardware.offers 'catalog' with an "
                         "entry without a price, or an entry with a provider, or no price_catalog")
    sold = sorted({r.gpu for r in hw.price_rows()})
    missing = list(dict.fromkeys(o.name for o in readers if o.provider is None and o.name not in sold))
    if missing:
        raise ValueError(f"{where}: has no offer of {', '.join(missing)} (it offers {', '.join(sold)}); expected "
                         "an offer of every GPU type of hardware.gpus and rollout_gpus bought from it, or a price "
                         "of the entry's own (price_usd_per_gpu_hour)")


def check_portfolio(portfolio: Any) -> None:
    """Refuse, naming ``price_catalog``, a portfolio price file no ``gpus`` entry reads (none names a provider:
    the file's offers are read through ``gpus.N.provider``)."""
    if not any(g.provider is not None for g in portfolio.gpus):
        raise ValueError(f"price_catalog: {portfolio.price_catalog}: no gpus entry names a provider, so no price is "
                         "read from it; expected gpus entries with a provider of the file, or no price_catalog")
