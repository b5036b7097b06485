"""The KServe V2 front-end: codec, routes, batcher, worker, padding, repository, traffic split, metrics, health."""
