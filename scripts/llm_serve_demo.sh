#!/usr/bin/env bash
# The last step of `make demo`: serve the LLM over the OpenAI API, measure it with `turboinfer bench --openai`
# (streamed, 1 and 4 concurrent streams), then SIGTERM it and check that it drained and exited 0.
set -euo pipefail
BIN=${1:-.venv/bin}
OUT=${2:-out}
PORT=${PORT:-8765}
mkdir -p "$OUT"
"$BIN/turboinfer" serve smollm2-135m --port "$PORT" --log-level warning --max-new-tokens 256 &
server=$!
trap 'kill -TERM "$server" 2>/dev/null || true' EXIT
"$BIN/python" - "$PORT" "$server" <<'PY'
import os, sys, time, urllib.request
port, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 180
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit("the LLM server exited before it became healthy")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
            if response.status == 200:
                sys.exit(0)
    except OSError:
        pass
    time.sleep(0.5)
sys.exit("the LLM server did not become healthy in 180 s")
PY
"$BIN/turboinfer" bench --openai "http://127.0.0.1:$PORT" --concurrency 1,4 --requests 8 --max-tokens 32 \
  --json "$OUT/llm-serve.json" --html "$OUT/llm-serve.html" --no-history
kill -TERM "$server"
trap - EXIT
wait "$server"
