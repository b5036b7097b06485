"""A user's own LLM served over the OpenAI API on real sockets, with no zoo entry: a tiny Llama GGUF (Q4_0) on OpenVINO
GenAI, a Gemma 3 folder on ONNX Runtime GenAI and a Gemma 3 GGUF on llama.cpp, driven by the official `openai`
client; a file without a chat template answers chats with a 400 that says what to do; a context the KV cache cannot
hold is refused at start."""

from __future__ import annotations

import json
import shutil

import openai
import pytest

from tests.support.http import running
from tests.support.llm_server import CONFIG, LIMITS, wait_healthy
from turboinfer.core.errors import InvalidInput
from turboinfer.llm.variant import GeneratorVariant, open_generator
from turboinfer.runtime.llm.generate import GenerationRequest
from turboinfer.serve.run import OpenAiModels, compose, llm_serving

PROMPT = "The standard library's documentation says that"


@pytest.mark.parametrize(
    ("family", "engine", "weights"),
    [("llama", "openvino-genai", "q8_0"), ("gemma3", "ort-genai", "int8"), ("gemma3", "llama.cpp", "q4_0")],
)
def test_the_openai_client_chats_with_a_users_model(own_llms, settings, family, engine, weights):
    gguf = engine != "ort-genai"
    path = str(own_llms.gguf(family, "q4_0") if gguf else own_llms.folder(family))
    serving = llm_serving(f"{path}@{engine}", settings, LIMITS, threads=2, cache_gb=0.25)
    assert serving.facts.startswith(family) and serving.name == (f"{family}.q4_0" if gguf else family)
    server = compose(CONFIG, openai=OpenAiModels({serving.name: (serving.engine, serving.scheduler)}))
    with running(server) as base:
        wait_healthy(base)
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
        answer = client.chat.completions.create(model=serving.name, messages=[{"role": "user", "content": "Hi."}],
                                                max_tokens=6, temperature=0)  # fmt: skip
        assert answer.choices[0].message.content and answer.usage.completion_tokens <= 6
        text = client.completions.create(model=serving.name, prompt=PROMPT, max_tokens=8, temperature=0)
        assert [m.id for m in client.models.list().data] == [serving.name]
    local = open_generator(GeneratorVariant(path, engine, weights, threads=2), settings)
    expected = local.generate(GenerationRequest(PROMPT, max_tokens=8))
    assert text.choices[0].text == expected.text  # the server answers as the engine does on its own


def test_a_model_without_a_chat_template_answers_chats_with_a_400(own_llms, settings, tmp_path):
    folder = tmp_path / "plain"
    shutil.copytree(own_llms.folder("gemma3"), folder)
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    serving = llm_serving(str(folder), settings, LIMITS, threads=2)
    server = compose(CONFIG, openai=OpenAiModels({serving.name: (serving.engine, serving.scheduler)}))
    with running(server) as base:
        wait_healthy(base)
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="plain has no chat template: send a completion"):
            client.chat.completions.create(model="plain", messages=[{"role": "user", "content": "Hi."}], max_tokens=4)
        assert client.completions.create(model="plain", prompt=PROMPT, max_tokens=4).choices[0].text is not None


def test_a_context_the_kv_cache_cannot_hold_is_refused_at_start(own_llms, settings, tmp_path):
    folder = tmp_path / "vast"
    shutil.copytree(own_llms.folder("qwen2"), folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 2**31}))
    with pytest.raises(InvalidInput, match=r"vast: 4 streams × 2147483648 tokens need .* cap the context in .*vast/"
                                           r"turboinfer.llm.json"):  # fmt: skip
        llm_serving(f"{folder}@ort-genai", settings, LIMITS)
