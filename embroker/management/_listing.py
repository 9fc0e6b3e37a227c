"""RabbitMQ's list options on the management API's listings: filter, sort, columns, pages.

``name`` keeps the items whose name holds it (case-insensitive), or, with ``use_regex=true``,
whose name a regular expression matches (RabbitMQ's ``re:run``); ``sort`` orders them by a
field (dotted for a nested one: ``message_stats.publish``), ``sort_reverse=true`` backwards;
without ``sort``, items with a name are in RabbitMQ's default order, by vhost then name;
``columns`` keeps only the fields listed; ``page`` and ``page_size`` (at most 500, RabbitMQ's
``MAX_PAGE_SIZE``) answer one page in RabbitMQ's page object.

The expression of ``use_regex`` comes from any management user and is matched on the
listener's thread against every name: it runs on :mod:`embroker._regex`, whose matching time is
linear in the name's length whatever the expression (Python's :mod:`re` backtracks:
``^(a+)+$`` took a third of a second on a name of 23 characters, and doubled with each more),
and the filter goes in steps like the rest of a listing (:mod:`._steps`). What a linear engine
cannot match (a back reference, a lookaround) is refused, 400, where RabbitMQ's PCRE would take
it; so is an expression too costly to compile (:class:`embroker._regex.PatternTooCostly`: 450
classes as wide as Unicode took seconds of the loop, 1,000 nested groups a RecursionError),
refused before anything is compiled, the reason naming the bound.

"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Final

from .. import _regex
from . import _steps as steps
from ._routes import bad_request
from ._steps import Steps

__all__ = ["MAX_PAGE_SIZE", "OPTIONS", "apply", "by_vhost_and_name", "truthy"]

#: The query parameters that make a listing more than the rows in their default order.
OPTIONS: Final = ("sort", "columns", "name", "page")
#: RabbitMQ's largest page (``rabbit_mgmt_util``'s ``MAX_PAGE_SIZE``).
MAX_PAGE_SIZE: Final = 500


def _identity(row: Any) -> Any:
    return row


def truthy(value: str | None) -> bool:
    """A query parameter's boolean as RabbitMQ reads it (``true``)."""
    return value is not None and value.lower() in ("true", "1", "yes")


def apply(query: Mapping[str, str], rows: list[Any],
          to_dict: Callable[[Any], dict[str, Any]] | None = None,
          lock: AbstractContextManager[object] | None = None) -> Steps[Any]:
    """``rows`` as the list options of ``query`` ask (the module's documentation), in steps:
    the list of their objects (``to_dict`` of each, under ``lock``), or a page object when
    ``page`` is given. An object is made for what a step needs of it and let go: the filter
    and the sort keep only each row's answer and key, and only the rows answered are kept as
    objects (a listing that kept 5,000 queues' objects between its steps made the garbage
    collector walk them all).

    Raises:
        HttpError: 400 for an expression that does not compile, or a page out of range.
    """
    as_dict = to_dict or _identity
    page = size = 0
    if "page" in query:  # (checked first: a bad page costs no work)
        try:
            page = int(query["page"])
            size = int(query.get("page_size", "100"))
        except ValueError:
            raise bad_request("page and page_size must be integers") from None
        if page < 1 or size < 1 or size > MAX_PAGE_SIZE:
            raise bad_request(f"Invalid page or page_size (page {page}, page_size {size}: "
                              f"pages start at 1, sizes at most {MAX_PAGE_SIZE})")
    name = query.get("name")
    if name:
        if truthy(query.get("use_regex")):
            try:
                pattern = _regex.compile(name)
            except _regex.error as exc:  # (a syntax error, or what a linear engine cannot do)
                raise bad_request(f"invalid regular expression: {exc}") from None
            keep = yield from steps.each(rows, lambda r: pattern.search(_name(as_dict(r))),
                                         lock)
        else:
            needle = name.lower()
            keep = yield from steps.each(rows, lambda r: needle in _name(as_dict(r)).lower(),
                                         lock)
        rows = list(itertools.compress(rows, keep))
    sort = query.get("sort")
    if sort:
        path = sort.split(".")

        def key(item: dict[str, Any]) -> tuple[int, Any]:
            value: Any = item
            for part in path:
                value = value.get(part) if isinstance(value, dict) else None
            if value is None:
                return (0, "")
            return (1, value) if isinstance(value, (int, float)) and not isinstance(
                value, bool) else (2, str(value))
        rows = yield from steps.sort(rows, lambda r: key(as_dict(r)),
                                     reverse=truthy(query.get("sort_reverse")), lock=lock)
    elif rows and "name" in as_dict(rows[0]):
        rows = yield from steps.sort(rows, lambda r: by_vhost_and_name(as_dict(r)),
                                     lock=lock)
    if page:
        total = len(rows)
        pages = max(1, -(-total // size))
        if page > pages:
            raise bad_request(f"page out of range: {page} > {pages}")
        rows = rows[(page - 1) * size: page * size]
    items = rows if to_dict is None else (yield from steps.each(rows, to_dict, lock))
    columns = query.get("columns")
    if columns:
        wanted = columns.split(",")
        items = yield from steps.each(items, lambda item: _columns(item, wanted))
    if not page:
        return items
    return {"filtered_count": total, "item_count": len(items), "items": items,
            "page": page, "page_count": pages, "page_size": size, "total_count": total}


def _name(item: dict[str, Any]) -> str:
    return str(item.get("name", ""))


def by_vhost_and_name(item: dict[str, Any]) -> tuple[str, str]:
    """RabbitMQ's default order: by vhost, then name."""
    return str(item.get("vhost", "")), str(item.get("name", ""))


def _columns(item: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in columns:
        path = column.strip().split(".")
        value: Any = item
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if value is None and not _has(item, path):
            continue
        target = out
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = value
    return out


def _has(item: dict[str, Any], path: list[str]) -> bool:
    value: Any = item
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return True
