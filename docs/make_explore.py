"""Regenerate docs/explore.svg, the picture of `attn explore` in docs/explore.md: python docs/make_explore.py

Textual's own screenshot of the app (the SVG `s` saves), run headless at 100 × 30 in truecolor after the keys
a user would press: the cursor to 'flies' → 'like', then the next head.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

os.environ["TEXTUAL_COLOR_SYSTEM"] = "truecolor"  # read when Textual is imported: the picture has every colour
os.environ.pop("NO_COLOR", None)

from attncli.io.formats import offline_svg
from attncli.pipeline.config import RunConfig
from attncli.render.explore.app import ExploreApp
from attncli.render.explore.state import Explorer

TEXT, SIZE, KEYS = "time flies like an arrow", (100, 30), ["down", "right", "right", "right_square_bracket"]
OUT = Path(__file__).resolve().parent / "explore.svg"


async def picture() -> str:
    explorer = Explorer(TEXT, RunConfig(heads=2))
    explorer.compute()
    app = ExploreApp(explorer)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*KEYS)
        await pilot.pause()
        return offline_svg(app.export_screenshot(title=f'attn explore "{TEXT}" --heads 2   ({SIZE[0]} columns)'))


if __name__ == "__main__":
    OUT.write_text(asyncio.run(picture()), encoding="utf-8")
    print(f"wrote {OUT}")
