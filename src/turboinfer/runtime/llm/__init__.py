"""The engine room: the step-wise Generator and batch BatchEngine protocols, chat templates, and one module per
LLM engine (OpenVINO GenAI, ONNX Runtime GenAI, llama.cpp, transformers as the oracle)."""
