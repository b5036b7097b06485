# turboinfer server image (documented; this project's machines have no Docker engine, so it is not built here).
# Models are not baked in: mount built cards + ONNX files at /models (see deploy/k8s/deployment.yaml).
FROM python:3.11-slim
RUN useradd --uid 10001 --create-home turboinfer
WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir . && rm -rf /root/.cache
USER 10001
ENV TURBOINFER_CACHE=/models
EXPOSE 8000
ENTRYPOINT ["turboinfer", "serve"]
CMD ["efficientnet-lite0", "--host", "0.0.0.0", "--port", "8000"]
