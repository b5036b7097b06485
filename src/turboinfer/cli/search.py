"""`turboinfer search …`: the image-search application's verbs (typer sub-app)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from turboinfer.apps.imagesearch.case_study import CaseStudyConfig, run_case_study
from turboinfer.apps.imagesearch.distributed import LOCAL, RayConfig, build_index_ray
from turboinfer.apps.imagesearch.embed import Embedder
from turboinfer.apps.imagesearch.gallery import write_gallery
from turboinfer.apps.imagesearch.index import GalleryIndex, IndexConfig, build_index
from turboinfer.apps.imagesearch.query import index_variant, query_photo
from turboinfer.apps.imagesearch.recall import evaluate_recall
from turboinfer.apps.imagesearch.service import search_server
from turboinfer.cli import render
from turboinfer.cli.groups import grouped, option_group
from turboinfer.cli.options import JsonOption, Listening, settings
from turboinfer.core.errors import InvalidInput
from turboinfer.models.photos import all_photos
from turboinfer.models.variant import VARIANT_SUFFIX, parse_variant
from turboinfer.optimize.artifacts import DECISION_LOG, read_decisions
from turboinfer.report.html import case_study_html
from turboinfer.serve.config import ServeConfig
from turboinfer.serve.run import run_app
from turboinfer.serve.v2.batcher import BatcherConfig

search = typer.Typer(no_args_is_help=True, help="Image search on turboinfer: index a gallery, query it, serve it.")
ModelOption = Annotated[
    str | None, typer.Option("--model", help="Zoo name, card, MODEL@BACKEND or .variant.json (default: the index's).")
]


@search.command("gallery")
def gallery_command(
    dest: Annotated[Path, typer.Argument(help="Folder to write the gallery into.")],
    grid: Annotated[int, typer.Option(min=1, max=4, help="Each photo also cut into grid×grid tiles.")] = 2,
) -> None:
    """A demo gallery from the real photos installed packages ship (each whole and cut into tiles)."""
    written = write_gallery(all_photos(settings(), minimum=4), dest, grid)
    render.console.print(f"wrote {len(written)} gallery photos into {dest}")


@option_group("Ray")
class RayOptions:
    """Embedding as a Ray Data job instead of in this process."""

    ray: Annotated[
        str | None,
        typer.Option(
            metavar="ADDRESS",
            help=f"Embed as a Ray Data job: {LOCAL} (Ray started here), auto, or a cluster head's host:port.",
        ),
    ] = None
    actors: Annotated[int, typer.Option(min=0, help="Ray actors (0: as many as the CPUs allow).")] = 0
    threads_per_actor: Annotated[int, typer.Option(min=1, help="CPUs (decode + model threads) per actor.")] = 2

    def config(self) -> RayConfig | None:
        """Where and how wide the Ray job runs (None: no Ray, embed here)."""
        return None if self.ray is None else RayConfig(self.ray, self.actors, self.threads_per_actor)


@search.command("index")
@grouped
def index_command(
    photos: Annotated[Path, typer.Argument(help="Folder of gallery photos (searched recursively).")],
    out: Annotated[Path, typer.Option(help="Index folder (created; an existing one is updated).")] = Path(
        "search-index"
    ),
    model: Annotated[str, typer.Option(help="Zoo name, card, MODEL@BACKEND or .variant.json.")] = "efficientnet-lite0",
    pca: Annotated[int, typer.Option(min=0, help="PCA dimensions (0: none).")] = 256,
    kind: Annotated[str, typer.Option("--index", help="flat, hnsw or ivf.")] = "flat",
    batch: Annotated[int, typer.Option(min=1)] = 16,
    shards: Annotated[int, typer.Option(min=1, help="FAISS shards searched together (replicas share them).")] = 1,
    train_sample: Annotated[int, typer.Option(min=0, help="Embeddings PCA is fitted on (0: all).")] = 100_000,
    *,
    ray: RayOptions,
    json_path: JsonOption = None,
) -> None:
    """Embed every photo, fit PCA, build a FAISS index; resumes an interrupted run."""
    config = IndexConfig(pca, kind, batch, shards=shards, train_sample=train_sample)
    variant = parse_variant(model, settings())
    render.inferred(variant.card)
    with render.progress_bar("embedding") as advance:
        cluster = ray.config()
        if cluster is None:
            report = build_index(photos, out, variant, config, advance)
        else:
            report = build_index_ray(photos, out, variant, config, cluster, advance)
    render.index_report(report, out)
    if json_path:
        render.write_json(json_path, report.to_dict())


@search.command("query")
def query_command(
    index: Annotated[Path, typer.Argument(help="Index folder.")],
    photo: Annotated[Path, typer.Argument(help="Photo to search with.")],
    k: Annotated[int, typer.Option("-k", min=1, max=100)] = 10,
    model: ModelOption = None,
    json_path: JsonOption = None,
) -> None:
    """The k gallery photos most similar to PHOTO."""
    if not photo.is_file():
        raise InvalidInput(f"photo not found: {photo}")
    gallery = GalleryIndex(index)
    result = query_photo(gallery, Embedder(index_variant(gallery, model, settings())), photo.read_bytes(), k)
    render.query_result(result)
    if json_path:
        hits = [{"path": str(h.path), "score": h.score} for h in result.hits]
        render.write_json(json_path, {"hits": hits, "timings_s": result.timings_s})


@search.command("recall")
def recall_command(
    index: Annotated[Path, typer.Argument(help="Index folder.")],
    queries: Annotated[int, typer.Option(min=1, help="Augmented gallery photos to query with.")] = 200,
    model: ModelOption = None,
    json_path: JsonOption = None,
) -> None:
    """recall@1/@10 on augmented copies of gallery photos, with and without the index's PCA."""
    gallery = GalleryIndex(index)
    report = evaluate_recall(gallery, index_variant(gallery, model, settings()), queries)
    render.recall_report(report)
    if json_path:
        render.write_json(json_path, report.to_dict())


@search.command("serve")
@grouped
def serve_command(
    index: Annotated[Path, typer.Argument(help="Index folder.")],
    model: ModelOption = None,
    preprocess: Annotated[str, typer.Option(help="fast (the data path) or baseline (Pillow full decode).")] = "fast",
    *,
    listening: Listening,
    threads: Annotated[int, typer.Option(min=0, help="Intra-op threads; 0 = the variant's, else the default.")] = 0,
    max_batch: Annotated[int, typer.Option(min=1)] = 8,
    max_delay_ms: Annotated[float, typer.Option(min=0)] = 2.0,
    queue: Annotated[int, typer.Option(min=1)] = 256,
) -> None:
    """The search page at /, POST /v1/search, plus the model's KServe V2 routes, metrics and health; the index
    folder is opened read-only (replicas may share it)."""
    listening.configure_logging()
    gallery = GalleryIndex(index)
    variant = index_variant(gallery, model, settings()).with_threads(threads)
    batching = BatcherConfig(max_batch, max_delay_ms / 1000, queue)
    config = ServeConfig(batching, int(listening.max_body_mb * 2**20), listening.overload_status)
    server, service = search_server(gallery, variant, config, batching, preprocess)
    render.console.print(
        f"searching {gallery.index.ntotal} photos with {variant.label} on http://{listening.host}:{listening.port}/"
    )
    run_app(server, server.app(service.routes()), listening.host, listening.port)


@search.command("case-study")
def case_study_command(
    gallery: Annotated[Path, typer.Argument(help="Gallery folder (see `search gallery`).")],
    optimized: Annotated[str, typer.Option(help="The optimized variant (chosen.variant.json of `optimize`).")],
    out: Annotated[Path, typer.Option(help="Folder for indexes, JSON and the HTML report.")] = Path("out/case-study"),
    p99_target_ms: Annotated[float, typer.Option(min=1)] = 1000.0,
    pca: Annotated[int, typer.Option(min=0, help="PCA dimensions of every index (0: none).")] = 256,
    quick: Annotated[bool, typer.Option(help="Short load steps and fewer queries (for tests).")] = False,
) -> None:
    """Seed-style baseline vs same-model baseline vs the optimized pipeline, under load over HTTP."""
    config = CaseStudyConfig(p99_target_s=p99_target_ms / 1000, quick=quick, pca=pca)
    env = settings()
    log = Path(optimized).with_name(DECISION_LOG)  # read first: a bad log fails before minutes of load, not after
    decisions = read_decisions(log) if optimized.endswith(VARIANT_SUFFIX) and log.is_file() else []
    with render.progress() as step:
        result = run_case_study(gallery, parse_variant(optimized, env), out, config, env, step)
    render.case_study(result)
    render.write_json(out / "case-study.json", result.to_dict())
    render.write_text(out / "report.html", case_study_html(result, decisions))
