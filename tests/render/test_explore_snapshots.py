"""Snapshots of `attn explore`'s screens at 80 × 24 and 120 × 40 (pytest-textual-snapshot; the SVGs are committed
under __snapshots__/). After a deliberate change of the screens: `pytest tests/render/test_explore_snapshots.py
--snapshot-update`, and look at the new pictures before committing them."""

from __future__ import annotations

from pathlib import Path

import pytest

from attncli.models import load_model
from attncli.pipeline.config import RunConfig
from attncli.render.explore.app import ExploreApp
from attncli.render.explore.state import Explorer

SIZES = [(80, 24), (120, 40)]


@pytest.fixture(autouse=True)
def colour(monkeypatch):
    """The pictures are in colour whatever the environment says (NO_COLOR is tested in tests/cli/test_explore.py)."""
    monkeypatch.delenv("NO_COLOR", raising=False)


def text_app() -> ExploreApp:
    e = Explorer("time flies like an arrow", RunConfig(heads=2))
    e.compute()
    return ExploreApp(e)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_main_screen(snap_compare, size):
    assert snap_compare(text_app(), press=["down", "right", "right"], terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_model_heads_overview(snap_compare, bert, size):
    e = Explorer("time flies like an arrow", RunConfig(), model=bert)
    e.compute()
    assert snap_compare(ExploreApp(e), press=["h", "right"], terminal_size=size)


def test_help(snap_compare):
    assert snap_compare(text_app(), press=["question_mark"], terminal_size=(80, 24))


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_an_encoder_decoders_alignment(snap_compare, size):
    """Marian's cross-attention, target rows over source columns, the mean over the heads (▸: each row's strongest)."""
    golden = Path(__file__).parent.parent / "models" / "golden" / "marian"
    e = Explorer("le chat est assis sur le tapis", RunConfig(), "the cat sat on the mat", model=load_model(golden))
    e.compute()
    assert snap_compare(ExploreApp(e), press=["a", "down", "down"], terminal_size=size)


def generated(model) -> ExploreApp:
    from attncli.models.runs.generate import Generation

    e = Explorer("time flies", RunConfig(), model=model, generate=Generation(3))
    e.compute()
    return ExploreApp(e)


def computed(*keys: str):
    """Press `keys` (here, not as snap_compare's press, which comes after run_before), then wait for the lens or
    the ablation to be computed in its thread and drawn."""

    async def run(pilot) -> None:
        await pilot.press(*keys)
        for worker in pilot.app.screen.workers:
            await worker.wait()
        await pilot.pause()

    return run


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_a_written_token_in_focus(snap_compare, llama, size):
    """The Llama's second written token: the matrix up to it, its row as bars, the token and its probability."""
    assert snap_compare(generated(llama), press=["n", "n", "left"], terminal_size=size)


@pytest.mark.parametrize("key", ["l", "x"], ids=["lens", "ablation"])
def test_the_lens_and_the_ablation(snap_compare, llama, key):
    assert snap_compare(generated(llama), run_before=computed("n", key), terminal_size=(120, 40))
