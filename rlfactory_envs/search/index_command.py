"""``rlf index``: build a search index over a corpus (``build``: BM25, FAISS or Milvus, resumable) or describe one
(``info``); the search family's own command (declared in ``family.py``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rlfactory_envs.command_errors import DEBUG_HELP
from rlfactory_envs.command_options import positive_int
from rlfactory_envs.kernel.errors import ConfigError
from rlfactory_envs.kernel.families import FamilyCommand


def index(args: argparse.Namespace) -> int:
    """``rlf index build``: build a search index (resumable: the same command resumes a stopped build);
    ``rlf index info``: what an index directory holds."""
    from rlfactory_tool_servers.search.index_build import BuildInterrupted, build_index
    from rlfactory_tool_servers.search.manifest import read_manifest

    if args.index_command == "info":
        manifest = read_manifest(args.dir)
        encoder = manifest.encoder
        print(f"backend: {manifest.backend}\npassages: {manifest.corpus.passages}\n"
              f"model: {encoder.model if encoder else '-'}\ndimensions: {encoder.dimensions if encoder else '-'}\n"
              f"build seconds: {manifest.build_seconds if manifest.build_seconds is not None else '-'}\n"
              f"corpus: {manifest.corpus.path}\ncorpus checksum: {manifest.corpus.checksum}")
        return 0
    try:
        manifest = build_index(args.corpus, args.out, backend=args.backend, model=args.model, preset=args.preset,
                               max_length=args.max_length, faiss_type=args.faiss_type,
                               faiss_params=dict(args.faiss_param), milvus_uri=args.milvus_uri,
                               collection=args.collection, batch_size=args.batch_size,
                               chunk_passages=args.chunk_passages, device=args.device,
                               progress=not args.no_progress, overwrite=args.overwrite)
    except ImportError as missing:  # an extra not installed: its message names it
        raise ConfigError(str(missing)) from missing
    except BuildInterrupted as stopped:
        print(f"rlf index: interrupted after {stopped.done} of the corpus's passages; run the same command again "
              "to resume", file=sys.stderr)
        return 130
    print(f"built a {manifest.backend} index of {manifest.corpus.passages} passages into {args.out} in "
          f"{manifest.build_seconds:.1f} s; serve it with `rlf serve search --corpus {args.corpus} --index-dir "
          f"{args.out}` or gym.make(\"rlf/Search-NQ-v0\", corpus_path=\"{args.corpus}\", index_dir=\"{args.out}\")")
    return 0


def faiss_param(text: str) -> tuple[str, int]:
    """``KEY=INT`` of ``--faiss-param``."""
    key, sep, value = text.partition("=")
    try:
        number = int(value)
    except ValueError:
        number = None
    if not sep or not key or number is None:
        raise argparse.ArgumentTypeError(f"expected KEY=INT (e.g. M=32), got {text!r}")
    return key, number


def add_arguments(ix: argparse.ArgumentParser) -> None:
    """``build`` and ``info``, each with its options."""
    debug = argparse.ArgumentParser(add_help=False)  # `rlf index build --debug` too: set only when given
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
    commands = ix.add_subparsers(dest="index_command", required=True)
    build = commands.add_parser("build", parents=[debug], help="build an index; the same command resumes a stopped "
                                "build", description="Stream a wiki-18 style jsonl corpus into an index directory, "
                                "saving progress every --chunk-passages passages; run the same command again to "
                                "resume a stopped build. The manifest is written last.")
    build.add_argument("--corpus", type=Path, required=True, help="the corpus: jsonl with id and contents (or "
                       "title and text)")
    build.add_argument("--backend", choices=["bm25", "faiss", "milvus"], required=True)
    build.add_argument("--out", type=Path, required=True, metavar="DIR", help="the index directory (new or empty, "
                       "or a stopped build's to resume it)")
    build.add_argument("--model", help="faiss and milvus: the embedding model (a local directory, "
                       "all-MiniLM-L6-v2, or a Hugging Face Hub name such as intfloat/e5-base-v2)")
    build.add_argument("--preset", choices=["auto", "e5", "bge", "plain"], default="auto",
                       help="prefixes and pooling: e5, bge, or the model's own (plain); auto picks by the model's "
                       "name (default)")
    build.add_argument("--max-length", type=positive_int, default=256, help="tokens per passage (default 256)")
    build.add_argument("--faiss-type", choices=["flat", "hnsw", "ivfpq"], default="flat",
                       help="flat: exact (default); hnsw or ivfpq: approximate")
    build.add_argument("--faiss-param", type=faiss_param, action="append", default=[], metavar="KEY=INT",
                       help="hnsw: M, efConstruction, efSearch; ivfpq: nlist, m, nbits, nprobe, train_points; "
                       "repeatable")
    build.add_argument("--milvus-uri", help="a Milvus server (http://HOST:19530) or Lite file (default: a Milvus "
                       "Lite database in --out)")
    build.add_argument("--collection", default="passages", help="the Milvus collection (default passages)")
    build.add_argument("--batch-size", type=positive_int, default=128, help="passages per encoder batch "
                       "(default 128)")
    build.add_argument("--chunk-passages", type=positive_int, default=8192,
                       help="passages between saved checkpoints (default 8192)")
    build.add_argument("--device", help="the encoder's device, e.g. cpu or cuda:1 (default: cuda when present)")
    build.add_argument("--overwrite", action="store_true", help="replace an index, or a stopped build, in --out")
    build.add_argument("--no-progress", action="store_true", help="no progress bar")
    info = commands.add_parser("info", parents=[debug], help="what an index directory holds")
    info.add_argument("dir", type=Path, metavar="DIR")


COMMAND = FamilyCommand("index", "build a search index over a corpus (bm25, faiss or milvus), or describe one",
                        add_arguments, index)
