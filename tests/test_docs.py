"""Every fenced code block of the README, docs/ and the families' pages (rlfactory_envs/*/README.md) is checked by its
language: Python runs, shell commands run, JSON and YAML parse (an mcpServers document loads, an env spec builds),
text is output shown as it is. A block that cannot run here carries ``<!-- not run: REASON -->`` right above its
fence and gets a weaker check instead: the commands' flags exist in their ``--help``, the repository paths it names
exist, the JSON in its comments parses. ``<!-- reference data: NAME ... -->`` runs a block beside the folders of
../shared/data it names (skipped, saying so, where they are absent)."""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import pytest
import yaml

import rlfactory_envs  # noqa: F401  registers the rlf/* ids that blocks name
from rlfactory_envs.env_spec import load_spec, make_env
from rlfactory_envs.kernel.mcp.config import load_mcp_config
from tests.conftest import SHARED_DATA

REPO_ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = ["README.md", *(str(p.relative_to(REPO_ROOT)) for p in sorted((REPO_ROOT / "docs").rglob("*.md"))),
             *(str(p.relative_to(REPO_ROOT)) for p in sorted((REPO_ROOT / "rlfactory_envs").glob("*/README.md")))]
SHELL = {"bash", "sh", "shell", "console"}
RUN_ELSEWHERE = {"calc_server.py": "tests/test_readme.py", "questions.jsonl": "tests/test_readme.py",
                 "rewards.py": "tests/test_readme.py", "env.yaml": "tests/test_readme.py",
                 "python": "tests/test_readme.py", "shell": "tests/test_readme.py",
                 "toolbox": "tests/examples/test_docs_toolbox.py"}
"""The ``<!-- example: NAME -->`` blocks another test already runs (test_readme checks the 5-minute section's files
against examples/custom_env/ and runs its Python and shell blocks; test_docs_toolbox runs the Toolbox block of
docs/tool-servers.md and checks what it prints): not run twice."""
ENV_SPEC_KEYS = {"env", "tool_servers", "tools", "qwen_agent_tools", "data_path", "reward", "max_turns"}
TIMEOUT_S = 120


@dataclass(frozen=True)
class Block:
    """One fenced block: its file, its index in the file, the fence's language, its text and the HTML comments
    right above the fence."""

    path: str
    index: int
    language: str
    code: str
    notes: tuple[str, ...]

    def note(self, key: str) -> str | None:
        """The text of the ``<!-- key: text -->`` comment above the block, or None."""
        found = [text.strip() for name, _, text in (n.partition(":") for n in self.notes) if name.strip() == key]
        return found[0] if found else None


def read_blocks(path: str) -> list[Block]:
    """The fenced blocks of ``path`` in order (fences start at the line's first column)."""
    lines, blocks, i = (REPO_ROOT / path).read_text(encoding="utf-8").splitlines(), [], 0
    while i < len(lines):
        if lines[i].startswith("```"):
            end = lines.index("```", i + 1)
            blocks.append(Block(path, len(blocks), lines[i][3:].strip(), "\n".join(lines[i + 1:end]) + "\n",
                                notes_above(lines, i)))
            i = end
        i += 1
    return blocks


def notes_above(lines: list[str], fence: int) -> tuple[str, ...]:
    """The ``<!-- ... -->`` lines right above line ``fence``, inner text only."""
    notes, i = [], fence - 1
    while i >= 0 and re.fullmatch(r"<!--.*-->", lines[i].strip()):
        notes.append(lines[i].strip()[4:-3].strip())
        i -= 1
    return tuple(notes)


ALL_BLOCKS = [block for path in DOC_FILES for block in read_blocks(path)]


def block_id(block: Block) -> str:
    return f"{block.path}#{block.index}"


# -- the sandbox: a folder that looks like the checkout, where the blocks write their files ---------------------------


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """A folder holding a link to every entry of the checkout git does not ignore, so that a block's relative
    paths resolve as in the checkout while what it writes stays in the temporary folder."""
    for entry in checkout_entries():
        (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


@functools.cache
def checkout_folders() -> frozenset[str]:
    return frozenset(entry.name for entry in checkout_entries() if entry.is_dir())


@functools.cache
def checkout_entries() -> tuple[Path, ...]:
    """The entries of the checkout's root that git does not ignore (without git: those not hidden)."""
    entries = [p for p in REPO_ROOT.iterdir() if p.name != ".git"]
    done = subprocess.run(["git", "check-ignore", "--stdin"], cwd=REPO_ROOT, capture_output=True, text=True,
                          input="\n".join(p.name for p in entries), check=False)
    ignored = set(done.stdout.split()) if done.returncode in (0, 1) else {p.name for p in entries
                                                                          if p.name.startswith(".")}
    return tuple(p for p in entries if p.name not in ignored)


def link_reference_data(block: Block, sandbox: Path) -> None:
    """Link the folders of ../shared/data the block names into the sandbox, or skip saying which is absent."""
    for name in (block.note("reference data") or "").split():
        source = SHARED_DATA / name
        if not source.exists():
            pytest.skip(f"reference data {source} is absent (it ships beside the repository in ../shared/data)")
        (sandbox / name).symlink_to(source)


# -- the checks, by language -------------------------------------------------------------------------------------------


def check_python(block: Block, sandbox: Path) -> None:
    if block.note("not run"):
        check_python_statically(block)
        return
    done = subprocess.run([sys.executable, "-c", block.code], cwd=sandbox, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{block_id(block)} exited {done.returncode}:\n{done.stderr[-3000:]}"


def check_python_statically(block: Block) -> None:
    """A block that cannot run: it compiles, and every rlf/* id it names is registered."""
    tree = ast.parse(block.code)
    ids = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
           and re.fullmatch(r"rlf/[\w.-]+-v\d+", node.value)}
    assert all(env_id in gym.registry for env_id in ids), sorted(ids - set(gym.registry))


def check_shell(block: Block, sandbox: Path) -> None:
    """Each command runs in the sandbox and exits 0 (or as its comment says); a block marked not run gets the static
    checks. The README's first block is marked not run: tests/examples/test_readme_main_job.py runs its command 1
    (the main job, about 75 s), and its command 2 is CI itself."""
    for payload in re.findall(r"#[^{\n]*(\{.*\})[ \t]*$", block.code, re.MULTILINE):   # JSON shown in comments
        check_payload(json.loads(payload))
    if block.note("not run"):
        for command in shell_commands(block.code):
            check_command_statically(command, sandbox)
        return
    for command in shell_commands(block.code):
        environment, words = parse_command(command)
        assert words[0] == sys.executable, f"only rlf and python commands run here; mark the block not run: {command}"
        assert not set(words) & {"&&", "||", "|", ";", ">", "<"}, f"run without a shell: {command}"
        done = subprocess.run(words, cwd=sandbox, env={**os.environ, **environment}, capture_output=True, text=True,
                              timeout=TIMEOUT_S, check=False)
        assert done.returncode == expected_exit(command), (command, done.stdout[-2000:], done.stderr[-3000:])


def check_json(block: Block, sandbox: Path) -> None:
    if (block.note("example") or "").endswith(".jsonl"):
        assert all(isinstance(json.loads(line), dict) for line in block.code.splitlines() if line.strip())
        return
    check_payload(json.loads(block.code))


def check_yaml(block: Block, sandbox: Path) -> None:
    """YAML parses; an env spec (a mapping of env settings) resolves and builds, from a file in the sandbox (the
    example spec of the README is test_readme's, with its files in examples/custom_env/)."""
    data = yaml.safe_load(block.code)
    if isinstance(data, dict) and set(data) & ENV_SPEC_KEYS and not block.note("example"):
        spec_path = sandbox / "spec.yaml"
        spec_path.write_text(block.code, encoding="utf-8")
        assert load_spec(spec_path).env_id in gym.registry
        make_env(spec_path).close()


def check_text(block: Block, sandbox: Path) -> None:
    """Output, tables and trees are shown as they are; they must not be empty."""
    assert block.code.strip(), f"{block_id(block)} is empty"


CHECKS = {"python": check_python, "json": check_json, "yaml": check_yaml, "yml": check_yaml, "text": check_text,
          **{language: check_shell for language in SHELL}}


# -- shell commands ----------------------------------------------------------------------------------------------------


def shell_commands(code: str) -> list[str]:
    """The block's commands: continuation lines joined, comment lines left out (trailing comments stay)."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def parse_command(command: str) -> tuple[dict[str, str], list[str]]:
    """Leading NAME=VALUE assignments, and the words with ``rlf`` and ``python`` run by this interpreter."""
    words = shlex.split(command, comments=True)
    environment = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        name, value = words.pop(0).split("=", 1)
        environment[name] = value
    return environment, program(words[:1]) + words[1:]


def program(first: list[str]) -> list[str]:
    name = first[0].rsplit("/", 1)[-1] if first else ""
    if name == "rlf":
        return [sys.executable, "-m", "rlfactory_envs.cli"]
    return [sys.executable] if name in ("python", "python3") else first


def expected_exit(command: str) -> int:
    """0, or the status a command's comment says it exits with (``# exits 1: ...``)."""
    found = re.search(r"#.*\bexits (\d+)\b", command)
    return int(found.group(1)) if found else 0


def check_command_statically(command: str, sandbox: Path) -> None:
    """A command that cannot run here: every flag it gives exists in its program's ``--help``, and every repository
    path it names exists."""
    for piece in command.split(" && "):
        _, words = parse_command(piece)
        words = words[:words.index("--")] if "--" in words else words
        check_paths(words, sandbox)
        check_flags(words)
        if words[0] == "bash" and (REPO_ROOT / words[1]).is_file():
            subprocess.run(["bash", "-n", words[1]], cwd=REPO_ROOT, check=True)


def check_paths(words: list[str], sandbox: Path) -> None:
    for word in words:
        path = word.split("=", 1)[-1]
        if "/" in path and path.split("/")[0] in checkout_folders():
            assert (sandbox / path).exists(), f"{path}: no such path in the checkout"


def check_flags(words: list[str]) -> None:
    text = help_text(tuple(words))
    if text is None:
        return
    arguments = words[3:] if words[1] == "-m" else words[2:]
    flags = {word.split("=", 1)[0] for word in arguments if re.fullmatch(r"--?[A-Za-z][\w.-]*(=.*)?", word)}
    missing = sorted(flag for flag in flags if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text))
    assert not missing, f"{' '.join(words[:4])}: {missing} not in its --help"


@functools.cache
def help_text(words: tuple[str, ...]) -> str | None:
    """The ``--help`` of the command, for this project's programs (rlf, python -m MODULE, python SCRIPT); None for
    other programs or a module that is not installed here (a trainer)."""
    if words[0] != sys.executable or not runnable_here(list(words[1:])):
        return None
    start = 3 if words[1] == "-m" else 2
    end = next((i for i in range(start, len(words)) if words[i].startswith("-")), len(words))
    head = [word for word in words[:end] if word != "..."]
    done = subprocess.run([*head, "--help"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=TIMEOUT_S,
                          check=False)
    assert done.returncode == 0, (head, done.stderr[-2000:])
    return done.stdout


def runnable_here(arguments: list[str]) -> bool:
    if arguments[:1] == ["-m"]:
        try:
            return importlib.util.find_spec(arguments[1]) is not None
        except ModuleNotFoundError:
            return False
    return bool(arguments) and (REPO_ROOT / arguments[0]).is_file()


def check_payload(data: object) -> None:
    """JSON in a block or a comment: an ``mcpServers`` document must load as the toolbox reads it."""
    if isinstance(data, dict) and "mcpServers" in data:
        load_mcp_config(data)


# -- the tests ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=block_id)
def test_code_block(block: Block, sandbox: Path):
    assert block.language in CHECKS, (f"{block_id(block)}: fence language {block.language!r}; every block names one "
                                      f"of {sorted(CHECKS)} (text for output, tables and trees)")
    assert block.note("not run") != "", f"{block_id(block)}: a block that does not run says why"
    if block.note("example") in RUN_ELSEWHERE and block.language not in ("json", "yaml"):
        pytest.skip(f"{RUN_ELSEWHERE[block.note('example')]} runs it")
    link_reference_data(block, sandbox)
    CHECKS[block.language](block, sandbox)


def test_every_fence_is_found():
    """A fence indented inside a list would be missed by read_blocks: the pages have none."""
    for path in DOC_FILES:
        text = (REPO_ROOT / path).read_text(encoding="utf-8")
        assert not re.search(r"^[ \t]+```", text, re.MULTILINE), path
        assert len(re.findall(r"^```", text, re.MULTILINE)) == 2 * len(read_blocks(path)), path


@pytest.mark.parametrize("path", DOC_FILES)
def test_every_marker_sits_right_above_a_fence(path):
    """A marker with a blank line under it marks nothing: its block would run (or not) unannounced."""
    lines = (REPO_ROOT / path).read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if re.fullmatch(r"<!-- (not run|reference data|example):.*-->", line.strip()):
            following = next(rest for rest in lines[i + 1:] if not rest.strip().startswith("<!--"))
            assert following.startswith("```"), f"{path}:{i + 1}: {line.strip()}"


@pytest.mark.parametrize("path", DOC_FILES)
def test_the_files_and_modules_the_pages_name_exist(path):
    """A repository path in backquotes (``tool_servers/.../http_guard.py``) is a file or folder of the checkout, and
    a dotted name of the project's packages (``rlfactory_reward_models.sql.execution``) a module, or an attribute of
    one."""
    for quoted in re.findall(r"`([^`\s]+)`", (REPO_ROOT / path).read_text(encoding="utf-8")):
        name = re.split(r"[:(]", quoted.rstrip(",.;"))[0]
        if re.search(r"[<>*{}]|\.\.\.", name):
            continue
        if "/" in name and name.split("/")[0] in checkout_folders():
            assert (REPO_ROOT / name).exists(), f"{path}: {name} does not exist"
        elif re.fullmatch(r"rlfactory_\w+(\.\w+)+", name):
            assert resolves(name), f"{path}: no module or attribute {name}"


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or attributes of the longest module it starts with."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        try:
            found = importlib.util.find_spec(".".join(parts[:end])) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            owner = importlib.import_module(".".join(parts[:end]))
            return functools.reduce(lambda obj, name: getattr(obj, name, None), parts[end:], owner) is not None
    return False


def test_every_family_has_a_page():
    families = {p.parent.name for p in (REPO_ROOT / "rlfactory_envs").glob("*/family.py")}
    assert families <= {Path(p).parent.name for p in DOC_FILES if p.startswith("rlfactory_envs/")}


def test_the_readme_stays_short():
    assert len((REPO_ROOT / "README.md").read_bytes()) <= 12_500, "the reference goes to docs/"
