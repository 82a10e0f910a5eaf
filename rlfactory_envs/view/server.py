"""``rlf view``'s web server: the page, its assets, and the JSON it reads.

``GET /`` is the page; ``/assets/NAME`` its script, style and worker (shipped in the package, nothing from a
network). The API, every answer JSON:

- ``/api/runs``: each run's ``run_meta`` (how far its index got, among the rest);
- ``/api/columns?run=I``: its table's columns (the page sorts, filters and plots them in a worker);
- ``/api/episode?run=I&row=J``: an episode's page;
- ``/api/search?run=I&q=TEXT``: the rows whose line holds the text (``text_search``), within ``SEARCH_SECONDS``;
- ``/api/bad?run=I``: the run's unreadable lines.

A malformed request gets ``400`` and one line saying what was wrong; a second search of a run while one scans gets
``429``. Handlers that read files run in Starlette's thread pool, so a long scan does not stop the others; while one
of the others is answered, indexing waits (``Foreground``).
"""

from __future__ import annotations

from contextlib import nullcontext
from importlib import resources
from typing import Any

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from rlfactory_envs.view.access import ViewerAccess
from rlfactory_envs.view.foreground import Foreground
from rlfactory_envs.view.run_index import RunIndex
from rlfactory_envs.view.text_search import MAX_QUERY_CHARS, RunSearch
from rlfactory_envs.view.viewer_data import NamedRun, bad_lines, episode, run_columns, run_meta

ASSETS = {"app.js": "text/javascript", "engine.js": "text/javascript", "plots.js": "text/javascript",
          "app.css": "text/css"}
SEARCH_SECONDS = 20.0


class BadRequest(ValueError):
    """A request the API cannot answer; the message says why."""


def asset_text(name: str) -> str:
    """The text of one of the page's files (``index.html`` or one of ``ASSETS``)."""
    return resources.files("rlfactory_envs.view").joinpath("assets", name).read_text(encoding="utf-8")


def build_app(runs: list[NamedRun], *, token: str | None, loopback: bool) -> ViewerAccess:
    """The ASGI app serving ``runs`` behind ``ViewerAccess``."""
    searches = [RunSearch(named.run) if isinstance(named.run, RunIndex) else None for named in runs]
    foreground = shared_foreground(runs)

    def run_of(request: Request) -> int:
        number = int_param(request, "run")
        if not 0 <= number < len(runs):
            raise BadRequest(f"no run {number}: there are {len(runs)}")
        return number

    def api_runs(request: Request) -> Response:
        return json_response([run_meta(i, named) for i, named in enumerate(runs)])

    encoded: dict[int, bytes] = {}  # a complete run's columns, encoded once

    def columns_of(number: int) -> bytes:
        named = runs[number]
        if number in encoded:
            return encoded[number]
        columns = run_columns(named)
        payload = msgspec.json.encode(columns)
        if columns["complete"]:
            encoded[number] = payload
        return payload

    for number, named in enumerate(runs):
        named.run.on_complete = lambda number=number: columns_of(number)

    def api_columns(request: Request) -> Response:
        return Response(columns_of(run_of(request)), media_type="application/json")

    def api_episode(request: Request) -> Response:
        named = runs[run_of(request)]
        try:
            return json_response(episode(named, int_param(request, "row")))
        except IndexError as exc:
            raise BadRequest(str(exc)) from None

    def api_search(request: Request) -> Response:
        number = run_of(request)
        query = request.query_params.get("q", "")
        if not query or len(query) > MAX_QUERY_CHARS:
            raise BadRequest(f"q must be 1 to {MAX_QUERY_CHARS} characters")
        search = searches[number]
        if search is None:
            raise BadRequest("an audit report is searched in the page")
        if not search.busy.acquire(blocking=False):
            return json_response({"error": "a search of this run is still running; try again when it ends"}, 429)
        try:
            found = search.search(query, SEARCH_SECONDS)
        finally:
            search.busy.release()
        return json_response({"rows": found.rows, "complete": found.complete, "scanned_bytes": found.scanned_bytes})

    def api_bad(request: Request) -> Response:
        return json_response(bad_lines(runs[run_of(request)]))

    async def page(request: Request) -> Response:
        return HTMLResponse(asset_text("index.html"))

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return Response("no such asset", status_code=404, media_type="text/plain")
        return Response(asset_text(name), media_type=ASSETS[name])

    routes = [Route("/", page), Route("/assets/{name}", asset)]
    routes += [Route(f"/api/{name}", guarded(handler, foreground)) for name, handler in (
        ("runs", api_runs), ("columns", api_columns), ("episode", api_episode), ("bad", api_bad))]
    routes.append(Route("/api/search", guarded(api_search, None)))  # a scan of seconds: indexing goes on beside it
    return ViewerAccess(Starlette(routes=routes), token=token, loopback=loopback)


def shared_foreground(runs: list[NamedRun]) -> Foreground:
    """One ``Foreground`` for every indexed run: each index waits for any request the server answers."""
    foreground = Foreground()
    for named in runs:
        if isinstance(named.run, RunIndex):
            named.run.foreground = foreground
    return foreground


def guarded(handler: Any, foreground: Foreground | None) -> Any:
    """``handler`` with a ``BadRequest`` answered as ``400`` and its message (a sync handler: it runs in the thread
    pool), counted in ``foreground`` (indexing waits for it) unless that is ``None``."""

    def answer(request: Request) -> Response:
        with foreground.serving() if foreground else nullcontext():
            try:
                return handler(request)
            except BadRequest as exc:
                return json_response({"error": str(exc)}, 400)

    return answer


def int_param(request: Request, name: str) -> int:
    """The query parameter ``name`` as an integer; ``BadRequest`` when it is missing or not one."""
    text = request.query_params.get(name, "")
    if not text.lstrip("-").isdigit() or len(text) > 18:
        raise BadRequest(f"{name} must be an integer, got {text!r}")
    return int(text)


def json_response(data: Any, status: int = 200) -> Response:
    """``data`` as JSON (NaN as ``null``)."""
    return Response(msgspec.json.encode(data), status_code=status, media_type="application/json")
