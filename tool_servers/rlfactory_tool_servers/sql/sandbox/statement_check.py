"""What a SQL text is, read with ``sqlglot`` (never with a hand-rolled tokenizer).

- ``parse_read_query``: the one read-only statement of a text (``SELECT``, ``WITH ... SELECT``, ``UNION`` and the
  other set operations), or ``UnsafeQuery`` saying why not: empty, unparsable, several statements, or anything
  that writes, attaches, sets a pragma or is not a query (also inside a CTE).
- ``has_top_level_order_by``: whether the query's own result is ordered (an ``ORDER BY`` of a subquery does not
  order the outer result).
- ``without_distinct``: the query with every ``DISTINCT`` removed, as the official Spider evaluator does unless
  told to keep it.

This is the first wall; the database connection itself is read-only and refuses writes (see ``engine``).
"""

from __future__ import annotations

import logging
import threading

import cachetools
import sqlglot
from sqlglot import expressions as exp

__all__ = ["MAX_SQL_CHARS", "UnsafeQuery", "has_top_level_order_by", "parse_read_query", "without_distinct"]

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # "falling back to parsing as a Command" chatter

MAX_SQL_CHARS = 100_000
DIALECT = "sqlite"

_READ_ROOTS = (exp.Select, exp.SetOperation)
_FORBIDDEN_NODES = tuple(getattr(exp, name) for name in (
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "AlterTable", "Command", "Pragma",
    "Attach", "Detach", "Transaction", "Commit", "Rollback", "Set", "Use", "LoadData", "Copy", "Analyze",
) if isinstance(getattr(exp, name, None), type))


_EMPTY = tuple(getattr(exp, name) for name in ("Semicolon",) if isinstance(getattr(exp, name, None), type))
"""What sqlglot makes of a lone ``;`` or a comment after the last statement: no statement."""


class UnsafeQuery(ValueError):
    """The text is not exactly one read-only query; the message says why, in words a model can act on."""


def _first_line(text: str, limit: int = 160) -> str:
    line = str(text).strip().splitlines()[0] if str(text).strip() else ""
    return line if len(line) <= limit else line[:limit] + "..."


_CACHED_CHARS = 4096  # short texts (every gold query, most predictions) are parsed once
PARSE_CACHE_BYTES = 64 * 2**20
"""What the parsed trees kept for texts seen again may hold, about: a tree holds some 250 bytes per character of its
text (a 4 KB query's, 0.8 MB), so a count of entries would not bound it."""
_TREE_BYTES_PER_CHAR = 256
_TREE_BYTES_BASE = 8192


def _parse(sql: str) -> exp.Expression:
    if len(sql) > MAX_SQL_CHARS:
        raise UnsafeQuery(f"the query is {len(sql):,} characters long; at most {MAX_SQL_CHARS:,} are allowed")
    if not sql.strip():
        raise UnsafeQuery("the query is empty")
    try:
        statements = [s for s in sqlglot.parse(sql, read=DIALECT) if s is not None and not isinstance(s, _EMPTY)]
    except RecursionError:
        raise UnsafeQuery("the query is nested too deeply to read") from None
    except Exception as exc:  # sqlglot's ParseError/TokenError, and anything odd input may provoke
        raise UnsafeQuery(f"the query could not be parsed: {_first_line(exc)}") from None
    if not statements:
        raise UnsafeQuery("the query is empty")
    if len(statements) > 1:
        raise UnsafeQuery(f"exactly one statement is allowed per query, got {len(statements)}")
    root = statements[0]
    if not isinstance(root, _READ_ROOTS):
        raise UnsafeQuery(f"only a read-only SELECT query (WITH ... SELECT included) is allowed, got "
                          f"{_statement_kind(root)}")
    for node in root.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            raise UnsafeQuery(f"only reads are allowed; the query contains {_statement_kind(node)}")
    return root


def _statement_kind(node: exp.Expression) -> str:
    if isinstance(node, exp.Command):
        return f"the command {str(node.this).upper()}"
    return f"{type(node).__name__.upper()}"


def parse_read_query(sql: str) -> exp.Expression:
    """The parsed query (cached: do not modify it); ``UnsafeQuery`` unless ``sql`` is exactly one read query."""
    if not isinstance(sql, str):
        raise UnsafeQuery(f"the query must be text, got {type(sql).__name__}")
    if len(sql) > _CACHED_CHARS:
        return _parse(sql)
    with _parsed_lock:
        hit = _parsed.get(sql)
    if hit is not None:
        return hit[0]
    tree = _parse(sql)
    with _parsed_lock:
        _parsed[sql] = (tree, _TREE_BYTES_BASE + _TREE_BYTES_PER_CHAR * len(sql))
    return tree


_parsed: cachetools.LRUCache[str, tuple[exp.Expression, int]] = cachetools.LRUCache(
    PARSE_CACHE_BYTES, getsizeof=lambda entry: entry[1])
"""Parsed trees by text, each with the bytes it is reckoned to hold."""
_parsed_lock = threading.Lock()


def has_top_level_order_by(sql: str) -> bool:
    """True when the query's own result rows are ordered: an ``ORDER BY`` on the outermost SELECT or set
    operation. ``UnsafeQuery`` as ``parse_read_query``."""
    return parse_read_query(sql).args.get("order") is not None


def without_distinct(sql: str) -> str:
    """``sql`` with every ``DISTINCT`` removed (``SELECT DISTINCT a`` -> ``SELECT a``, ``count(DISTINCT a)`` ->
    ``count(a)``), re-written by sqlglot; ``sql`` itself when it has none. ``UnsafeQuery`` as ``parse_read_query``,
    and for a query nested too deeply to write again (sqlglot's writer recurses deeper than its parser)."""
    root = parse_read_query(sql)
    if not any(True for _ in root.find_all(exp.Distinct)):
        return sql
    try:
        return _distinct_removed(root)
    except RecursionError:
        raise UnsafeQuery("the query is nested too deeply to remove its DISTINCT") from None


def _distinct_removed(root: exp.Expression) -> str:
    tree = root.copy()
    for node in list(tree.find_all(exp.Distinct)):
        parent = node.parent
        if isinstance(parent, exp.Select) and parent.args.get("distinct") is node:
            parent.set("distinct", None)
        elif len(node.expressions) == 1:
            node.replace(node.expressions[0])
    return tree.sql(dialect=DIALECT)
