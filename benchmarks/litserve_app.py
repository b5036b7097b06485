"""The LitServe peer for benchmarks/serve.py: the same ONNX model, session options and image data path as
turboinfer's image route, batched by LitServe (max batch 8, 5 ms). LitServe is installed by the benchmark only.

Run: python benchmarks/litserve_app.py CARD_JSON PORT   (POST multipart/form-data with a "file" to /predict)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import litserve as ls
import numpy as np

from turboinfer.core.card import load_card
from turboinfer.core.types import ImagePreprocess
from turboinfer.models.image_pipeline import ImagePipeline
from turboinfer.models.postprocess import softmax_top5
from turboinfer.runtime.session import SessionOptions, open_session


class ImageAPI(ls.LitAPI):
    """decode (our ImagePipeline) → batch → ORT → top-5, as turboinfer's image route does."""

    def __init__(self, card_path: Path) -> None:
        super().__init__(max_batch_size=8, batch_timeout=0.005)
        self.card_path = card_path

    def setup(self, device: str) -> None:
        self.card = load_card(self.card_path)
        assert isinstance(self.card.preprocess, ImagePreprocess), "the LitServe baseline serves an image model"
        self.pipeline = ImagePipeline(self.card.preprocess)
        self.session = open_session(self.card.onnx_path, "ort", SessionOptions(intra_threads=2))

    def decode_request(self, request):  # unannotated: LitServe then passes the parsed form (an annotation
        # such as Any would make FastAPI look for a query parameter)
        return self.pipeline(request["file"].file.read())

    def batch(self, inputs: list[np.ndarray]) -> np.ndarray:
        return np.stack(inputs)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.session.run({self.card.inputs[0].name: x})[self.card.outputs[0].name]

    def unbatch(self, output: np.ndarray) -> list[np.ndarray]:
        return list(output)

    def encode_response(self, output: np.ndarray) -> dict[str, Any]:
        return {"top5": [{"class": c, "probability": p} for c, p in softmax_top5({"logits": output[None]})]}


if __name__ == "__main__":
    server = ls.LitServer(ImageAPI(Path(sys.argv[1])), accelerator="cpu", workers_per_device=1)
    server.run(host="127.0.0.1", port=int(sys.argv[2]), generate_client_file=False, log_level="warning")
