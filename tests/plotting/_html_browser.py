"""Helpers of the HTML map's browser tests: real mouse and keyboard input through CDP, the
screen as pixels, and where things are on the page."""

from __future__ import annotations

import io

import numpy as np


def settle(browser) -> None:
    """Wait two animation frames (a scheduled render has run)."""
    browser.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def screen(browser) -> np.ndarray:
    from PIL import Image

    settle(browser)
    return np.asarray(Image.open(io.BytesIO(browser.screenshot())).convert("RGB")).astype(int)


def center_of(browser, selector_js: str) -> tuple[float, float]:
    """The centre of the element that the JavaScript expression ``selector_js`` returns."""
    rect = browser.evaluate(f"(() => {{ const r = ({selector_js}).getBoundingClientRect();"
                            " return [r.left + r.width / 2, r.top + r.height / 2]; })()")
    return rect[0], rect[1]


def click(browser, x: float, y: float) -> None:
    for kind in ("mousePressed", "mouseReleased"):
        browser.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y,
                                                  "button": "left", "clickCount": 1})
    settle(browser)


def drag(browser, points, modifiers: int = 0) -> None:
    """Press at the first point, move through the others, release at the last (1: alt)."""
    (x, y), *rest = points
    browser.send("Input.dispatchMouseEvent", {"type": "mousePressed", "x": x, "y": y,
                                              "button": "left", "buttons": 1, "clickCount": 1,
                                              "modifiers": modifiers})
    for x, y in rest:
        browser.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y,
                                                  "button": "left", "buttons": 1,
                                                  "modifiers": modifiers})
    browser.send("Input.dispatchMouseEvent", {"type": "mouseReleased", "x": x, "y": y,
                                              "button": "left", "buttons": 0, "clickCount": 1,
                                              "modifiers": modifiers})
    settle(browser)


def type_text(browser, text: str, enter: bool = True) -> None:
    browser.send("Input.insertText", {"text": text})
    if enter:
        for kind in ("keyDown", "keyUp"):
            browser.send("Input.dispatchKeyEvent", {"type": kind, "key": "Enter",
                                                    "code": "Enter",
                                                    "windowsVirtualKeyCode": 13})
    settle(browser)


def projected(browser, view: int = 0) -> np.ndarray:
    """Client coordinates of every point in one view, shape (n, 2)."""
    return np.array(browser.evaluate(
        f"Array.from({{length: window.unimapMap.n}}, (_, i) => {{"
        f"const p = window.unimapMap.project(i, {view}); return [p.x, p.y]; }})"))


def isolated(screen_xy: np.ndarray, gap: float, inside) -> np.ndarray:
    """Points at least ``gap`` CSS pixels from every other point, within ``inside(x, y)``."""
    d = np.linalg.norm(screen_xy[:, None] - screen_xy[None], axis=2)
    np.fill_diagonal(d, np.inf)
    keep = (d.min(axis=1) >= gap) & inside(screen_xy[:, 0], screen_xy[:, 1])
    return np.flatnonzero(keep)


def pixel(rgb: np.ndarray, xy) -> np.ndarray:
    return rgb[int(round(xy[1])), int(round(xy[0]))]
