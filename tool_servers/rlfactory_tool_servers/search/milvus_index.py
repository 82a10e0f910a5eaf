"""Dense retrieval over a Milvus collection: a Milvus Lite database in the index directory, or a Milvus server.

One code path for both: pymilvus's ``MilvusClient`` opens a local path ending in ``.db`` as a Milvus Lite database
(the ``milvus-lite`` package, run inside this process) and ``http://host:19530`` as a server.

A collection holds one entity per passage: the primary key ``row`` (INT64, the passage's 0-based row in the corpus)
and ``vector`` (FLOAT_VECTOR, the encoder's L2-normalised float32 embedding, stored as given), searched by inner
product. ``MilvusSink`` writes it during ``rlf index build``: every ``add`` is an upsert, so a resumed build that
adds rows again still leaves one entity per row; ``finish`` flushes, builds the vector index (``FLAT``, exact, by
default; ``IVF_FLAT``, ``HNSW`` or ``AUTOINDEX`` on request), loads the collection and checks it holds exactly the
rows added. ``MilvusRetriever`` searches it with one encoder call and one Milvus search per batch of queries.

Milvus Lite, as found with milvus-lite 3.2.2 and pymilvus 3.0.2:

- A database is opened by one process at a time: the first holds an exclusive lock on it until it exits or
  ``close()`` is called, and a second process's ``MilvusClient`` fails ("Open local milvus failed"), reported here
  as a one-line ``ValueError``. The search server is the only process that opens an index's database; to share one
  collection between processes, serve it from a Milvus server (``--milvus-uri``).
- All clients of one path in a process share one in-process Lite server, which ``MilvusClient.close`` leaves
  running; when the last sink or retriever of this module on a path closes, it stops that server, releasing the
  lock (so the directory can then be moved, or opened by another process).
- Rows upserted are in Lite's write-ahead log when ``add`` returns: a build killed later keeps them.
- A reopened collection starts released; ``MilvusRetriever.load`` loads it.
- Searches from many threads at once give the same results as one at a time.
- Milvus Lite 3 stores a database as a directory (older releases as one file); either moves with its index
  directory, since the manifest records it relative to that directory.

``pymilvus`` (the ``milvus`` extra, with ``milvus-lite``) is imported only when a sink or a retriever is made.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from rlfactory_tool_servers.search.dense_retriever import QueryEncoder
from rlfactory_tool_servers.search.manifest import MilvusRecord
from rlfactory_tool_servers.search.ranking import Ranked

LITE_FILE = "milvus.db"
PRIMARY_FIELD = "row"
VECTOR_FIELD = "vector"
METRIC = "IP"
INDEX_TYPES = ("FLAT", "IVF_FLAT", "HNSW", "AUTOINDEX")
MAX_TOPK = 16384  # the largest search limit a Milvus server accepts
# Vector bytes per upsert request: well under the ~64 MB a Milvus server accepts in one gRPC message.
REQUEST_BYTES = 16 << 20
_COLLECTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}")

# pymilvus starts one in-process server per Milvus Lite path and shares it between clients, but never stops it
# when they close: this module counts its clients of each path and stops the server after the last one.
_lite_clients: dict[str, int] = {}
_lite_lock = threading.Lock()


def import_pymilvus() -> Any:
    try:
        import pymilvus
    except ImportError as exc:
        raise ImportError("the milvus backend needs pymilvus: pip install 'rlfactory-envs[milvus]' "
                          "(pymilvus with milvus-lite)") from exc
    return pymilvus


def is_lite_uri(uri: str) -> bool:
    """Whether pymilvus opens ``uri`` as a Milvus Lite database (a local path ending in ``.db``) and not a server."""
    return uri.endswith(".db") and "://" not in uri


def connect(uri: str, *, timeout: float | None = None) -> Any:
    """A ``MilvusClient`` on ``uri``: a Milvus Lite database (created if absent) or a server; ``disconnect`` it.

    ``ValueError`` naming ``uri`` if it cannot be opened or reached; ``ImportError`` naming the extra if pymilvus,
    or milvus-lite for a Lite database, is not installed.
    """
    pymilvus = import_pymilvus()
    if is_lite_uri(uri):
        try:
            import milvus_lite  # noqa: F401
        except ImportError as exc:
            raise ImportError(f"the Milvus Lite database {uri} needs milvus-lite: "
                              "pip install 'rlfactory-envs[milvus]'") from exc
        if not Path(uri).parent.is_dir():
            raise ValueError(f"cannot open the Milvus Lite database {uri}: its directory does not exist")
    with _lite_lock, _LiteFailures() as failures:
        try:
            client = pymilvus.MilvusClient(uri=uri, timeout=timeout)
        except pymilvus.MilvusException as exc:
            if is_lite_uri(uri):
                reason = failures.reasons[-1] if failures.reasons else exc.message
                raise ValueError(f"cannot open the Milvus Lite database {uri} ({reason}): Milvus Lite lets one "
                                 "process open a database at a time; stop the other process using it, or serve the "
                                 "collection from a Milvus server (--milvus-uri http://HOST:19530)") from None
            raise ValueError(f"cannot reach the Milvus server at {uri} ({exc.message}); start it, or pass the "
                             "right --milvus-uri") from None
        if is_lite_uri(uri):
            key = os.path.abspath(uri)  # milvus-lite's own key: two spellings of a path are one server
            _lite_clients[key] = _lite_clients.get(key, 0) + 1
    return client


class _LiteFailures(logging.Handler):
    """While entered, takes the failures milvus-lite logs (with a traceback) when it cannot open a database, so
    ``connect`` says why in its one-line error instead."""

    _logger = logging.getLogger("milvus_lite.server_manager")

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.reasons: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        self.reasons.append(str(error) if error is not None else record.getMessage())

    def __enter__(self) -> _LiteFailures:
        self._propagate = self._logger.propagate
        self._logger.addHandler(self)
        self._logger.propagate = False
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._logger.removeHandler(self)
        self._logger.propagate = self._propagate


def disconnect(client: Any, uri: str) -> None:
    """Close a ``client`` that ``connect`` made; when it was the last of this module's clients of a Milvus Lite
    database, also stop this process's Lite server for it, which releases the database's lock."""
    client.close()
    if not is_lite_uri(uri):
        return
    key = os.path.abspath(uri)
    with _lite_lock:
        _lite_clients[key] -= 1
        if _lite_clients[key]:
            return
        del _lite_clients[key]
        from milvus_lite.server_manager import server_manager_instance

        release = getattr(server_manager_instance, "release_server", None)
        if release is not None:
            release(uri)


def count_rows(client: Any, collection: str) -> int:
    """Entities in the loaded ``collection`` now (``count(*)``, which, unlike a server's ``num_entities``, does
    not count rows an upsert replaced)."""
    result = client.query(collection, output_fields=["count(*)"], consistency_level="Strong")
    return int(result[0]["count(*)"])


def vector_dimensions(client: Any, collection: str, uri: str) -> int:
    """The size of ``collection``'s vectors; ``ValueError`` if it is not a passage collection of this module."""
    pymilvus = import_pymilvus()
    fields = {field["name"]: field for field in client.describe_collection(collection)["fields"]}
    primary, vector = fields.get(PRIMARY_FIELD), fields.get(VECTOR_FIELD)
    if (primary is None or vector is None or primary["type"] != pymilvus.DataType.INT64
            or vector["type"] != pymilvus.DataType.FLOAT_VECTOR):
        raise ValueError(f"the Milvus collection {collection} at {uri} is not a passage index (fields "
                         f"{sorted(fields)}, expected INT64 '{PRIMARY_FIELD}' and FLOAT_VECTOR '{VECTOR_FIELD}'); "
                         "build into another collection name, or overwrite it")
    return int(vector["params"]["dim"])


class MilvusSink:
    """Writes passage vectors into a Milvus collection during an index build; ``finish`` makes it searchable.

    ``uri`` None: a Milvus Lite database ``milvus.db`` in ``index_dir``. A collection that already exists is
    dropped if ``overwrite``, otherwise continued (a resumed build); ``ValueError`` if its vectors have another
    size. ``index_type`` is the vector index ``finish`` builds (``FLAT``: exact), with ``index_params`` (``nlist``
    for ``IVF_FLAT``, ``M`` and ``efConstruction`` for ``HNSW``) and ``search_params`` recorded in the manifest for
    the server's searches (``nprobe`` for ``IVF_FLAT``, ``ef`` for ``HNSW``).
    """

    def __init__(self, index_dir: str | Path, *, uri: str | None, collection: str, dimensions: int,
                 overwrite: bool = False, index_type: str = "FLAT",
                 index_params: Mapping[str, int] | None = None,
                 search_params: Mapping[str, int] | None = None) -> None:
        if not _COLLECTION_NAME.fullmatch(collection):
            raise ValueError(f"{collection!r} is not a Milvus collection name: use letters, digits and underscores, "
                             "starting with a letter or underscore")
        if index_type not in INDEX_TYPES:
            raise ValueError(f"unknown Milvus index type {index_type!r}; choose one of {', '.join(INDEX_TYPES)}")
        if dimensions < 1:
            raise ValueError(f"dimensions must be at least 1, got {dimensions}")
        self.index_dir = Path(index_dir)
        self.collection = collection
        self.dimensions = dimensions
        self.index_type = index_type
        self.index_params = dict(index_params or {})
        self.search_params = dict(search_params or {})
        self.record_uri, self.uri = _sink_uris(self.index_dir, uri)
        if uri is None:
            self.index_dir.mkdir(parents=True, exist_ok=True)
        self._rows_per_request = max(1, REQUEST_BYTES // (4 * dimensions))
        self._rows_end = 0  # one past the highest row added
        self._client = connect(self.uri)
        try:
            self._open_collection(overwrite)
        except BaseException:
            self.close()
            raise

    def _open_collection(self, overwrite: bool) -> None:
        client = self._client
        if client.has_collection(self.collection):
            if overwrite:
                client.drop_collection(self.collection)
            else:
                stored = vector_dimensions(client, self.collection, self.uri)
                if stored != self.dimensions:
                    raise ValueError(
                        f"the Milvus collection {self.collection} at {self.uri} holds {stored}-d vectors but the "
                        f"encoder gives {self.dimensions}-d ones; overwrite it (rlf index build --overwrite) or "
                        "build into another collection name")
                return
        pymilvus = import_pymilvus()
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field(PRIMARY_FIELD, pymilvus.DataType.INT64, is_primary=True)
        schema.add_field(VECTOR_FIELD, pymilvus.DataType.FLOAT_VECTOR, dim=self.dimensions)
        client.create_collection(self.collection, schema=schema)

    def __enter__(self) -> MilvusSink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def add(self, first_row: int, vectors: np.ndarray) -> None:
        """Upsert ``vectors[i]`` as passage row ``first_row + i``, in requests of bounded size."""
        if self._client is None:
            raise RuntimeError("this Milvus sink is closed")
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dimensions:
            raise ValueError(f"expected vectors of shape (n, {self.dimensions}), got {vectors.shape}")
        if first_row < 0:
            raise ValueError(f"first_row must be at least 0, got {first_row}")
        for start in range(0, len(vectors), self._rows_per_request):
            chunk = vectors[start:start + self._rows_per_request]
            row = first_row + start
            self._client.upsert(self.collection, [{PRIMARY_FIELD: row + i, VECTOR_FIELD: vector}
                                                  for i, vector in enumerate(chunk)])
        if len(vectors):
            self._rows_end = max(self._rows_end, first_row + len(vectors))

    def finish(self, expected_rows: int | None = None) -> MilvusRecord:
        """Flush, build the vector index, load the collection, check it, close the sink; the manifest's record.

        ``ValueError`` unless the collection holds exactly ``expected_rows`` entities (the corpus's passages).
        By default, one per row up to the highest row added by this sink: a resumed build must find the rows of
        the builds before it; a build resumed after its last ``add`` adds nothing, so it must say how many.
        """
        client = self._client
        if client is None:
            raise RuntimeError("this Milvus sink is closed")
        try:
            client.flush(self.collection)
            self._build_vector_index()
            client.load_collection(self.collection)
            stored = count_rows(client, self.collection)
            expected = self._rows_end if expected_rows is None else expected_rows
            if stored != expected:
                raise ValueError(
                    f"the Milvus collection {self.collection} at {self.uri} holds {stored} vectors, expected "
                    f"{expected} (one per passage row); rebuild it with overwrite (rlf index build --overwrite)")
        finally:
            self.close()
        return MilvusRecord(uri=self.record_uri, collection=self.collection, metric=METRIC,
                            index_type=self.index_type, params=self.index_params, search_params=self.search_params)

    def _build_vector_index(self) -> None:
        client = self._client
        if VECTOR_FIELD in client.list_indexes(self.collection):
            built = client.describe_index(self.collection, VECTOR_FIELD)
            if built.get("index_type") == self.index_type and built.get("metric_type") == METRIC:
                return
            client.release_collection(self.collection)
            client.drop_index(self.collection, VECTOR_FIELD)
        index_params = client.prepare_index_params()
        index_params.add_index(field_name=VECTOR_FIELD, index_name=VECTOR_FIELD, index_type=self.index_type,
                               metric_type=METRIC, params=self.index_params)
        client.create_index(self.collection, index_params)

    def close(self) -> None:
        """Let go of the database (for Milvus Lite, release its lock); rows added stay stored. Idempotent."""
        if self._client is not None:
            client, self._client = self._client, None
            disconnect(client, self.uri)


class MilvusRetriever:
    """Top-k passage rows by inner product between encoded queries and a Milvus collection's passage vectors.

    Safe to call from several threads at once: the encoder runs under a lock, and Milvus clients (server or Lite)
    serve concurrent searches.
    """

    def __init__(self, client: Any, uri: str, collection: str, encoder: QueryEncoder, *, num_docs: int,
                 dimensions: int, search_params: Mapping[str, int] | None = None) -> None:
        """Wrap a client on which ``collection`` is loaded; ``search_params`` go to every search (``nprobe`` for
        ``IVF_FLAT``, ``ef`` for ``HNSW``)."""
        self.uri = uri
        self.collection = collection
        self._client = client
        self._encoder = encoder
        self._encoder_lock = threading.Lock()  # model forward passes are not assumed to be thread-safe
        self._num_docs = num_docs
        self._dimensions = dimensions
        self._search_params = {"metric_type": METRIC, "params": dict(search_params or {})}

    @property
    def num_docs(self) -> int:
        return self._num_docs

    @classmethod
    def load(cls, index_dir: str | Path, record: MilvusRecord, encoder: QueryEncoder, *, num_docs: int,
             uri: str | None = None, search_params: Mapping[str, int] | None = None) -> MilvusRetriever:
        """Open the collection ``record`` names, at ``uri`` if given (a server, or a Lite database relative to the
        working directory) or else at ``record.uri`` (a Lite database relative to ``index_dir``), and load it.

        ``ValueError`` if the database is missing or unreachable, lacks the collection or its vector index, or the
        collection does not hold exactly ``num_docs`` vectors: rows and passages must line up one to one.
        """
        target = _retriever_uri(Path(index_dir), record.uri if uri is None else uri, from_manifest=uri is None)
        if is_lite_uri(target) and not Path(target).exists():
            if uri is not None:
                raise ValueError(f"no Milvus Lite database at {target}; give --milvus-uri an existing .db path or "
                                 "a server URI (http://HOST:19530)")
            raise ValueError(f"no Milvus Lite database at {target}: the index in {index_dir} is incomplete; "
                             "rebuild it with rlf index build --backend milvus")
        client = connect(target)
        try:
            collection = record.collection
            if not client.has_collection(collection):
                raise ValueError(f"the Milvus at {target} has no collection {collection}; build it with rlf index "
                                 "build --backend milvus, or pass the --milvus-uri that holds it")
            dimensions = vector_dimensions(client, collection, target)
            if VECTOR_FIELD not in client.list_indexes(collection):
                raise ValueError(f"the Milvus collection {collection} at {target} has no vector index: its build "
                                 "did not finish; run the same rlf index build again to finish it")
            client.load_collection(collection)
            stored = count_rows(client, collection)
            if stored != num_docs:
                raise ValueError(f"the Milvus collection {collection} at {target} holds {stored} vectors but the "
                                 f"corpus holds {num_docs} passages")
        except BaseException:
            disconnect(client, target)
            raise
        return cls(client, target, collection, encoder, num_docs=num_docs, dimensions=dimensions,
                   search_params=search_params)

    def rank(self, queries: list[str], topk: int) -> list[Ranked]:
        """For each query, its best ``topk`` passages by inner product, best first: one encode, one Milvus search.

        ``topk`` is capped at the corpus size and at Milvus's limit of 16384.
        """
        if topk < 1:
            raise ValueError(f"topk must be at least 1, got {topk}")
        if self._client is None:
            raise RuntimeError("this Milvus retriever is closed")
        if not queries:
            return []
        with self._encoder_lock:
            embeddings = np.ascontiguousarray(self._encoder(list(queries)), dtype=np.float32)
        if embeddings.shape != (len(queries), self._dimensions):
            raise ValueError(f"the query encoder gave shape {embeddings.shape}, "
                             f"expected ({len(queries)}, {self._dimensions})")
        results = self._client.search(self.collection, data=embeddings, anns_field=VECTOR_FIELD,
                                      limit=min(topk, MAX_TOPK, self._num_docs), output_fields=[PRIMARY_FIELD],
                                      search_params=self._search_params)
        return [Ranked([int(hit["entity"][PRIMARY_FIELD]) for hit in hits], [float(hit["distance"]) for hit in hits])
                for hits in results]

    def close(self) -> None:
        """Let go of the database (for Milvus Lite, release its lock); the retriever cannot search after this.
        Idempotent."""
        if self._client is not None:
            client, self._client = self._client, None
            disconnect(client, self.uri)


def _sink_uris(index_dir: Path, uri: str | None) -> tuple[str, str]:
    """``(uri for the manifest, uri to connect to)``: a Lite database inside ``index_dir`` is recorded relative to
    it, any other Lite database as an absolute path, a server URI as given."""
    if uri is None:
        uri = str(index_dir / LITE_FILE)
    if not is_lite_uri(uri):
        return uri, uri
    path = Path(uri).resolve()
    try:
        return str(path.relative_to(index_dir.resolve())), str(path)
    except ValueError:
        return str(path), str(path)


def _retriever_uri(index_dir: Path, uri: str, *, from_manifest: bool) -> str:
    """The uri to connect to: a relative Lite path is relative to ``index_dir`` if it comes from the manifest,
    to the working directory if the user gave it."""
    if not is_lite_uri(uri):
        return uri
    path = Path(uri)
    return str((index_dir / path if from_manifest else path).resolve())
