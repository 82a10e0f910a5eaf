"""The TravelPlanner sandbox, loaded once into an in-memory SQLite database with an index per lookup.

Layout of ``database_dir`` (TravelPlanner's ``database/``): ``accommodations/clean_accommodations_2022.csv``,
``attractions/attractions.csv``, ``restaurants/clean_restaurant_2022.csv``, ``googleDistanceMatrix/distance.csv``,
``background/citySet_with_states.txt`` and, when the user has it, ``flights/clean_Flights_2022.csv``. Flights come
from ``flights_path``: that CSV, or a reference-information JSONL (``train_ref_info.jsonl``) whose
``"Flight from A to B on DATE"`` entries hold the flights of its queries.

The official tools and evaluator read these files with ``pandas.read_csv(...).dropna()``: a row with any missing
field (pandas' default missing-value strings included) is not in the sandbox, and the distance matrix keeps such
rows. Lookups return rows as dicts keyed by the files' own column names, in file order, so "the first match" means
what ``.values[0]`` means there.
"""

from __future__ import annotations

import csv
import functools
import json
import math
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PANDAS_NA = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                       "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
"""The strings ``pandas.read_csv`` reads as missing by default."""


@dataclass(frozen=True)
class Table:
    """One sandbox table: its file under ``database_dir``, the columns it keeps, the numeric ones, the lookup keys."""

    name: str
    file: str
    columns: tuple[str, ...]
    numeric: frozenset[str]
    indexed: tuple[tuple[str, ...], ...]
    drop_incomplete: bool = True


RESTAURANTS = Table("restaurants", "restaurants/clean_restaurant_2022.csv",
                    ("Name", "Average Cost", "Cuisines", "Aggregate Rating", "City"),
                    frozenset({"Average Cost", "Aggregate Rating"}), (("City",),))
ATTRACTIONS = Table("attractions", "attractions/attractions.csv",
                    ("Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City"),
                    frozenset({"Latitude", "Longitude"}), (("City",),))
ACCOMMODATIONS = Table("accommodations", "accommodations/clean_accommodations_2022.csv",
                       ("NAME", "price", "room type", "house_rules", "minimum nights", "maximum occupancy",
                        "review rate number", "city"),
                       frozenset({"price", "minimum nights", "maximum occupancy", "review rate number"}), (("city",),))
DISTANCES = Table("distances", "googleDistanceMatrix/distance.csv", ("origin", "destination", "cost", "duration",
                                                                     "distance"),
                  frozenset({"cost"}), (("origin", "destination"),), drop_incomplete=False)
FLIGHTS = Table("flights", "flights/clean_Flights_2022.csv",
                ("Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime", "FlightDate", "OriginCityName",
                 "DestCityName", "Distance"),
                frozenset({"Price", "Distance"}), (("OriginCityName", "DestCityName", "FlightDate"), ("Flight Number",)))
CITY_STATES_FILE = "background/citySet_with_states.txt"
FLIGHT_KEY_RE = re.compile(r"^Flight from (.+) to (.+) on (\d{4}-\d{2}-\d{2})$")
"""A reference-information key that holds flights: ``"Flight from A to B on YYYY-MM-DD"``."""


ROUTE_MODES = ("self-driving", "taxi")
"""The distance matrix's modes: driving yourself costs 0.05 per km, a taxi 1 per km."""


def route_cost(route: Mapping[str, Any] | None, mode: str) -> int | None:
    """The cost of ``route`` (a ``TravelSandbox.route`` row) by ``mode``, with the official rule: the distance's
    kilometres (``"1,144 km"`` is 1144.0) times 0.05 for ``"self-driving"``, times 1 for ``"taxi"``, cut to an
    int. ``None`` when there is no valid information: no route, no duration or distance, a duration of a day or
    more (``"1 day 2 hours"``), or a distance that is not a number of km. ``ValueError`` for another mode."""
    if mode not in ROUTE_MODES:
        raise ValueError(f"mode must be one of {', '.join(ROUTE_MODES)}, got {mode!r}")
    if route is None:
        return None
    duration, distance = route.get("duration"), route.get("distance")
    if duration is None or distance is None or "day" in str(duration):
        return None
    try:
        km = float(str(distance).replace("km", "").replace(",", ""))
    except ValueError:
        return None
    if not math.isfinite(km):
        return None
    return int(km * 0.05) if mode == "self-driving" else int(km)


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def _csv_rows(path: Path, table: Table) -> Iterator[tuple[Any, ...]]:
    """The kept columns of each row of a CSV file, with pandas' missing-value reading (``None``) and, for tables
    read with ``dropna()``, without the rows missing any field."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = next(reader, None) or []
        missing = [column for column in table.columns if column not in header]
        if missing:
            raise ValueError(f"{path}: no column {missing[0]!r} (columns: {', '.join(header)})")
        positions = [header.index(column) for column in table.columns]
        for fields in reader:
            if not fields:
                continue
            fields += [""] * (len(header) - len(fields))
            if table.drop_incomplete and any(field.strip() in PANDAS_NA for field in fields[: len(header)]):
                continue
            values = []
            for column, position in zip(table.columns, positions):
                text = fields[position]
                if text.strip() in PANDAS_NA:
                    values.append(None)
                elif column in table.numeric:
                    try:
                        values.append(_number(text))
                    except ValueError:
                        raise ValueError(f"{path}: line {reader.line_num}: {column} is not a number: {text!r}") from None
                else:
                    values.append(text)
            yield tuple(values)


def reference_flights(path: Path) -> Iterator[tuple[Any, ...]]:
    """The flight rows of a reference-information JSONL (one dict per query), each distinct row once."""
    seen: set[tuple[Any, ...]] = set()
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {number}: not JSON ({exc.msg})") from None
            if not isinstance(entry, dict):
                raise ValueError(f"{path}: line {number}: expected an object of reference entries")
            for key, rows in entry.items():
                if not FLIGHT_KEY_RE.match(str(key)) or not isinstance(rows, list):
                    continue  # "There is no flight from A to B on DATE." or another kind of entry
                for row in rows:
                    values = tuple(row.get(column) for column in FLIGHTS.columns)
                    if None not in values and values not in seen:
                        seen.add(values)
                        yield values


class TravelSandbox:
    """The sandbox's tables in one read-only SQLite database in memory; safe to share between threads.

    Build it with ``open_sandbox`` (one per files, per process). ``FileNotFoundError`` / ``ValueError`` name the
    file that is missing or malformed."""

    def __init__(self, database_dir: str | os.PathLike[str], flights_path: str | os.PathLike[str] | None = None):
        self.database_dir = Path(database_dir).resolve()
        if not self.database_dir.is_dir():
            raise FileNotFoundError(f"no sandbox folder {self.database_dir} (database_dir= is TravelPlanner's "
                                    "database/ folder: accommodations/, attractions/, restaurants/, ...)")
        default_flights = self.database_dir / FLIGHTS.file
        self.flights_path = Path(flights_path).resolve() if flights_path else (
            default_flights if default_flights.is_file() else None)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        for table in (RESTAURANTS, ATTRACTIONS, ACCOMMODATIONS, DISTANCES):
            self._load(table, _csv_rows(self._file(table.file), table))
        if self.flights_path is None:
            flight_rows: Iterable[tuple[Any, ...]] = ()
        elif not self.flights_path.is_file():
            raise FileNotFoundError(f"no flights file {self.flights_path} (flights_path= is clean_Flights_2022.csv "
                                    "or a reference-information JSONL such as train_ref_info.jsonl)")
        elif self.flights_path.suffix == ".jsonl":
            flight_rows = reference_flights(self.flights_path)
        else:
            flight_rows = _csv_rows(self.flights_path, FLIGHTS)
        self._load(FLIGHTS, flight_rows)
        self.state_cities: dict[str, list[str]] = {}
        self.city_state: dict[str, str] = {}
        for line in self._file(CITY_STATES_FILE).read_text(encoding="utf-8").splitlines():
            city, sep, state = line.partition("\t")
            if sep:
                self.city_state.setdefault(city, state)
                self.state_cities.setdefault(state, []).append(city)
        self._db.execute("PRAGMA query_only = ON")

    def _file(self, relative: str) -> Path:
        path = self.database_dir / relative
        if not path.is_file():
            raise FileNotFoundError(f"the sandbox folder {self.database_dir} has no {relative}")
        return path

    def _load(self, table: Table, rows: Iterable[tuple[Any, ...]]) -> None:
        columns = ", ".join(f'"{c}"' for c in table.columns)
        self._db.execute(f"CREATE TABLE {table.name} ({columns})")
        self._db.executemany(f"INSERT INTO {table.name} VALUES ({', '.join('?' * len(table.columns))})", rows)
        for i, key in enumerate(table.indexed):
            self._db.execute(f"CREATE INDEX {table.name}_{i} ON {table.name} ({', '.join(f'{c!r}' for c in key)})"
                             .replace("'", '"'))
        self._db.commit()

    def _rows(self, table: Table, where: str, params: tuple[Any, ...], limit: int | None = None) -> list[dict[str, Any]]:
        sql = f"SELECT * FROM {table.name} WHERE {where} ORDER BY rowid" + (f" LIMIT {int(limit)}" if limit else "")
        with self._lock:
            found = self._db.execute(sql, params).fetchall()
        return [dict(zip(table.columns, row)) for row in found]

    def count(self, table: Table) -> int:
        with self._lock:
            return int(self._db.execute(f"SELECT count(*) FROM {table.name}").fetchone()[0])

    # -- what the tools show -----------------------------------------------------------------------------------

    def restaurants(self, city: str) -> list[dict[str, Any]]:
        return self._rows(RESTAURANTS, '"City" = ?', (city,))

    def attractions(self, city: str) -> list[dict[str, Any]]:
        return self._rows(ATTRACTIONS, '"City" = ?', (city,))

    def accommodations(self, city: str) -> list[dict[str, Any]]:
        return self._rows(ACCOMMODATIONS, '"city" = ?', (city,))

    def flights(self, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
        return self._rows(FLIGHTS, '"OriginCityName" = ? AND "DestCityName" = ? AND "FlightDate" = ?',
                          (origin, destination, date))

    def flights_between(self, origin: str, destination: str, limit: int = 64) -> list[dict[str, Any]]:
        """The flights from ``origin`` to ``destination`` on any date (at most ``limit``), in file order."""
        return self._rows(FLIGHTS, '"OriginCityName" = ? AND "DestCityName" = ?', (origin, destination), limit=limit)

    def route(self, origin: str, destination: str) -> dict[str, Any] | None:
        """The distance matrix's first row from ``origin`` to ``destination`` (duration and distance as text)."""
        found = self._rows(DISTANCES, '"origin" = ? AND "destination" = ?', (origin, destination), limit=1)
        return found[0] if found else None

    def cities(self, state: str) -> list[str] | None:
        """The cities of ``state`` in the benchmark's list, ``None`` for a state not in it."""
        cities = self.state_cities.get(state)
        return list(cities) if cities is not None else None

    # -- what the evaluation looks up --------------------------------------------------------------------------

    @staticmethod
    def _named(table: Table, exact: bool) -> str:
        name_column, city_column = table.columns[0], table.columns[-1]
        test = f'trim("{name_column}") = trim(?)' if exact else f'instr("{name_column}", ?) > 0'
        return f'"{city_column}" = ? AND {test}'

    def find_named(self, table: Table, name: str, city: str, *, exact: bool = False) -> dict[str, Any] | None:
        """The first row of ``table`` in ``city`` whose name contains ``name`` (the official evaluator's
        ``Name.str.contains(re.escape(name))``: case-sensitive, any part of the name) or, with ``exact``, equals
        it but for surrounding spaces."""
        found = self._rows(table, self._named(table, exact), (city, name), limit=1)
        return found[0] if found else None

    def count_named(self, table: Table, name: str, city: str, *, exact: bool = False) -> int:
        """How many rows ``find_named`` chooses among."""
        with self._lock:
            row = self._db.execute(f"SELECT count(*) FROM {table.name} WHERE {self._named(table, exact)}",
                                   (city, name)).fetchone()
        return int(row[0])

    def flight_numbered(self, number: str, origin: str | None = None, destination: str | None = None,
                        date: str | None = None) -> dict[str, Any] | None:
        """The first flight with this number (and, when given, this origin and destination, and this date)."""
        where, params = '"Flight Number" = ?', (number,)
        if origin is not None and destination is not None:
            where += ' AND "OriginCityName" = ? AND "DestCityName" = ?'
            params = (number, origin, destination)
        if date is not None:
            where += ' AND "FlightDate" = ?'
            params = (*params, date)
        found = self._rows(FLIGHTS, where, params, limit=1)
        return found[0] if found else None


@functools.lru_cache(maxsize=4)
def _cached_sandbox(database_dir: str, flights_path: str | None, versions: tuple[Any, ...]) -> TravelSandbox:
    return TravelSandbox(database_dir, flights_path)


def _version(path: Path | None) -> tuple[Any, ...]:
    if path is None or not path.exists():
        return (None,)
    stat = path.stat()
    return (stat.st_mtime_ns, stat.st_size)


def open_sandbox(database_dir: str | os.PathLike[str],
                 flights_path: str | os.PathLike[str] | None = None) -> TravelSandbox:
    """The sandbox of these files, loaded once per process (again only when a file changes)."""
    root = Path(database_dir).resolve()
    flights = Path(flights_path).resolve() if flights_path else None
    versions = tuple(_version(root / table.file) for table in (RESTAURANTS, ATTRACTIONS, ACCOMMODATIONS, DISTANCES,
                                                                   FLIGHTS)) + (_version(flights),)
    return _cached_sandbox(str(root), str(flights) if flights else None, versions)
