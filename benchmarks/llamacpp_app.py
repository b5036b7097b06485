"""llama.cpp's own server (the `xllamacpp` wheel: prebuilt, continuous batching) on the GGUF turboinfer serves, as
the peer of benchmarks/llm_serve.py. Install it for the benchmark only: `.venv/bin/pip install xllamacpp`.

Run: python benchmarks/llamacpp_app.py PORT SLOTS THREADS [MODEL]   (a zoo name or a .gguf; serves until SIGTERM)
"""

from __future__ import annotations

import signal
import sys

import xllamacpp

from turboinfer.llm.card import llm_source

CONTEXT_PER_SLOT = 2048


def main() -> None:
    port, slots, threads = (int(v) for v in sys.argv[1:4])
    params = xllamacpp.CommonParams()
    params.model.path = str(llm_source(sys.argv[4] if len(sys.argv) > 4 else "smollm2-135m")[1])
    params.port, params.n_parallel, params.n_ctx = port, slots, CONTEXT_PER_SLOT * slots
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    params.cont_batching = True
    server = xllamacpp.Server(params)
    print(f"llama.cpp server on {server.listening_address}", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})


if __name__ == "__main__":
    main()
