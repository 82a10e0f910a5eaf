"""The stdio server transport on the loop's own pipes: lines of any length, split across reads anywhere (in a
multi-byte character too), the last one without its newline; and a server run over it answers a real client."""

from __future__ import annotations

import asyncio
import os
import sys

from mcp import Client, StdioServerParameters

from rlfactory_tool_servers.stdio_pipes import READ_CHUNK_BYTES, PipeLines, are_pipes
from tests.conftest import REPO_ROOT


async def lines_of(chunks: list[bytes]) -> list[str]:
    reader = asyncio.StreamReader()
    for chunk in chunks:
        reader.feed_data(chunk)
    reader.feed_eof()
    return [line async for line in PipeLines(reader)]


async def test_lines_split_anywhere_come_out_whole():
    text = 'one\n{"é": "ü"}\n\n' + "x" * (3 * READ_CHUNK_BYTES) + "\nlast without newline"
    data = text.encode()
    cut = data.index("é".encode()) + 1  # inside the two bytes of é
    assert await lines_of([data[:cut], data[cut:cut + 7], data[cut + 7:]]) == [
        "one\n", '{"é": "ü"}\n', "\n", "x" * (3 * READ_CHUNK_BYTES) + "\n", "last without newline"]
    assert await lines_of([]) == []
    assert await lines_of([b"\xff\n"]) == ["\ufffd\n"]  # undecodable bytes are replaced, as the SDK's reader does


def test_only_pipes_and_sockets_are_read_by_the_loop(tmp_path):
    read_end, write_end = os.pipe()
    try:
        assert are_pipes(read_end, write_end)
    finally:
        os.close(read_end)
        os.close(write_end)
    with open(tmp_path / "file", "w") as regular:
        assert not are_pipes(regular.fileno())
    assert not are_pipes(10_000)  # not open


def noisy(x: int) -> int:
    """``x`` back, after printing to stdout (which must not reach the wire)."""
    print(f"stray output {x}")
    return x


async def test_a_server_over_the_pipes_answers_many_requests_and_keeps_stray_output_off_the_wire():
    params = StdioServerParameters(command=sys.executable, cwd=str(REPO_ROOT),
                                   args=["-m", "rlfactory_tool_servers.functions", f"{__name__}:noisy"])
    async with Client(params) as client:
        results = await asyncio.gather(*(client.call_tool("noisy", {"x": i}) for i in range(300)))
    assert [(r.is_error, r.content[0].text) for r in results] == [(False, str(i)) for i in range(300)]
