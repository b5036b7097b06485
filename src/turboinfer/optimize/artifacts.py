"""What an optimization run leaves behind: the chosen variant (ready for `turboinfer serve`), the decision log
(JSON) and the HTML report with the Pareto plot."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from turboinfer.core.errors import InvalidInput
from turboinfer.core.settings import Settings
from turboinfer.models.catalog import resolve_model
from turboinfer.models.variant import VARIANT_SUFFIX, Variant, save_variant
from turboinfer.optimize.plan import Outcome
from turboinfer.optimize.run import OptimizeResult

DECISION_LOG = "decision-log.json"


def chosen_variant(result: OptimizeResult, settings: Settings) -> Variant:
    """The chosen candidate as a Variant over its cached card (or the bare ONNX file it was given as)."""
    chosen = result.chosen
    card = resolve_model(chosen.card_path, settings)
    return Variant(card, chosen.candidate.backend, chosen.candidate.options)


def save(
    result: OptimizeResult, out_dir: Path, settings: Settings, page: Callable[[OptimizeResult], str]
) -> dict[str, str]:
    """Write chosen.variant.json, decision-log.json and report.html (the page the caller draws:
    turboinfer.report.html.optimize_html) into out_dir; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "variant": str(save_variant(chosen_variant(result, settings), out_dir / f"chosen{VARIANT_SUFFIX}")),
        "decision_log": str(out_dir / DECISION_LOG),
        "report": str(out_dir / "report.html"),
    }
    result.files = files
    data = result.to_dict()
    Path(files["decision_log"]).write_text(json.dumps(data, indent=2, default=str))
    Path(files["report"]).write_text(page(result))
    return files


def read_decisions(path: Path) -> list[Outcome]:
    """The outcomes of the decision log an optimize run wrote (InvalidInput for a file that is not one)."""
    try:
        return [Outcome.from_dict(o) for o in json.loads(path.read_text())["outcomes"]]
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise InvalidInput(f"{path} is not a decision log optimize wrote: {err}") from None
