"""The standalone HTML map: its encoding and escaping (plain Python), and the page itself in
headless Chromium (skipped where no Chromium is installed: ``apt-get install chromium``)."""

import base64
import io
import json
import re
import time

import numpy as np
import pytest

from unimap.plotting.align import procrustes_align
from unimap.plotting.html_map import html_map, linked_html_map, save_html, save_linked_html

EVIL = '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'


def _data_block(text: str) -> dict:
    match = re.search(r'<script type="application/json" id="unimap-data">(.*?)</script>', text,
                      re.S)
    assert match is not None
    return json.loads(match.group(1))


def _clusters(n, k, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-20, 20, (k, 2))
    labels = rng.integers(0, k, n)
    return (centers[labels] + rng.standard_normal((n, 2))).astype(np.float32), labels


def test_data_are_embedded_compactly_and_decode_exactly():
    emb, labels = _clusters(500, 4)
    many = np.array([f"c{i}" for i in range(300)])[np.arange(500) % 300]
    text = html_map(emb, labels=labels, columns={"value": emb[:, 0] * 1.5, "many": many},
                    ids=np.arange(500) + 1000)
    data = _data_block(text)
    assert len(data["views"]) == 1
    xy = np.frombuffer(base64.b64decode(data["xy"]), dtype="<f4").reshape(-1, 2)
    np.testing.assert_array_equal(xy, emb)
    label, value, wide = data["columns"]
    assert label["kind"] == "cat" and label["width"] == 1
    codes = np.frombuffer(base64.b64decode(label["codes"]), dtype="<u1")
    assert [label["categories"][c] for c in codes] == [str(v) for v in labels]
    assert value["kind"] == "num"
    np.testing.assert_array_equal(np.frombuffer(base64.b64decode(value["data"][0]), "<f4"),
                                  (emb[:, 0] * 1.5).astype(np.float32))
    # the colour scale spans the 1st to 99th percentile, and says that it clips
    assert (value["min"], value["max"]) == tuple(np.percentile(emb[:, 0] * 1.5, [1, 99]))
    assert value["clipLo"] and value["clipHi"]
    assert wide["width"] == 2 and len(wide["categories"]) == 300  # uint16 codes
    assert data["ids"]["kind"] == "int" and data["colorBy"] == "label"


def test_page_is_self_contained():
    emb, labels = _clusters(50, 2)
    text = html_map(emb, labels)
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", text)
    assert "@import" not in text and "fetch(" not in text
    assert text.count("<script") == 2  # the data block and the inlined script


def test_text_from_the_data_cannot_break_out_of_the_page():
    emb, _ = _clusters(20, 2)
    text = html_map(emb, columns={EVIL: np.array([EVIL] * 20)}, ids=[EVIL] * 20,
                    title=EVIL)
    assert "window.__pwned" in text  # it is there, as data...
    assert "<script>window" not in text and "<img" not in text  # ...but never as markup
    assert text.count("</script>") == 2
    assert _data_block(text)["columns"][0]["name"] == EVIL


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"embedding": np.full((3, 2), np.nan)}, "NaN"),
     ({"embedding": np.zeros(3)}, "shape"),
     ({"columns": {"a": np.arange(4)}}, "column 'a' has shape"),
     ({"color_by": "nope"}, "color_by='nope' is not a column"),
     ({"hover": ["nope"]}, "hover columns"),
     ({"labels": [1, 2, 3], "columns": {"label": [1, 2, 3]}}, "both labels")],
)
def test_bad_input_is_a_clear_error_and_writes_nothing(tmp_path, kwargs, message):
    args = {"embedding": np.zeros((3, 2))} | kwargs
    with pytest.raises(ValueError, match=message):
        save_html(tmp_path / "map.html", **args)
    assert list(tmp_path.iterdir()) == []


def test_procrustes_undoes_rotation_reflection_scale_and_shift_only():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(300, 2))
    angle = 0.7
    turn = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    b = 2.5 * (a * [1, -1]) @ turn + [10, -4] + rng.normal(0, 0.01, a.shape)
    aligned = procrustes_align(a, b)
    assert np.abs(aligned - a).max() < 0.05
    # only a similarity: all distances scaled by one factor
    ratio = np.linalg.norm(aligned[1:] - aligned[0], axis=1) / np.linalg.norm(b[1:] - b[0], axis=1)
    assert np.ptp(ratio) < 1e-9
    with pytest.raises(ValueError, match="same shape"):
        procrustes_align(a, b[:-1])


def test_linked_page_holds_two_aligned_views_and_each_ones_trust():
    emb, labels = _clusters(300, 3)
    X = np.c_[emb, np.random.default_rng(1).normal(size=(300, 3))]
    mirrored = 4 * emb[:, ::-1] - 7
    data = _data_block(linked_html_map({"a": emb, "b": mirrored}, labels=labels, X=X,
                                       color_by="trust"))
    first, second = (np.frombuffer(base64.b64decode(block), "<f4").reshape(-1, 2)
                     for block in (data["xy"], data["views"][1]["xy"]))
    assert [v["name"] for v in data["views"]] == ["a", "b (aligned)"]
    np.testing.assert_allclose(second, first, atol=1e-3)
    trust = data["columns"][-1]
    assert trust["name"] == "trust" and len(trust["data"]) == 2
    assert (trust["min"], trust["max"]) == (0.0, 1.0) and data["colorBy"] == "trust"
    raw = _data_block(linked_html_map({"a": emb, "b": mirrored}, align=False))
    assert raw["views"][1]["name"] == "b"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"embeddings": {"a": np.zeros((3, 2))}}, "two names"),
     ({"embeddings": {"a": np.zeros((3, 2)), "b": np.zeros((4, 2))}}, "same points"),
     ({"embeddings": {"a": np.zeros((3, 2)), "b": np.full((3, 2), np.nan)}}, "'b' contains"),
     ({"columns": {"trust": [1, 2, 3]}, "X": np.eye(3)}, "named 'trust'")],
)
def test_linked_bad_input_is_a_clear_error_and_writes_nothing(tmp_path, kwargs, message):
    args = {"embeddings": {"a": np.eye(3)[:, :2], "b": np.eye(3)[:, 1:]}} | kwargs
    with pytest.raises(ValueError, match=message):
        save_linked_html(tmp_path / "pair.html", **args)
    assert list(tmp_path.iterdir()) == []


# ---- in the browser ----

@pytest.fixture(scope="module")
def digits_page(tmp_path_factory):
    from unimap.datasets import load_digits
    from unimap.methods.pca import PCA

    X, y = load_digits()
    emb = PCA(random_state=0).fit_transform(X)
    path = tmp_path_factory.mktemp("html") / "digits.html"
    save_html(path, emb, labels=y,
              columns={"ink": X.mean(axis=1), "note": np.array([EVIL] * len(y))},
              ids=np.array([f"img-{i}" for i in range(len(y))]), title="digits " + EVIL)
    return path, emb, y


def _screen(browser) -> np.ndarray:
    from PIL import Image

    rgb = np.asarray(Image.open(io.BytesIO(browser.screenshot())).convert("RGB"))
    top = int(browser.evaluate("document.getElementById('unimap-canvas')"
                               ".getBoundingClientRect().top"))
    return rgb[top + 1:]


def _settle(browser):
    browser.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def test_page_loads_without_errors_and_draws_the_points(browser, digits_page):
    path, _, _ = digits_page
    browser.open(path)
    _settle(browser)
    assert browser.errors() == []
    assert browser.evaluate("window.unimapMap.n") == 1797
    assert browser.evaluate("document.title") == "digits " + EVIL  # shown as text
    rgb = _screen(browser)
    ink = float((rgb.min(axis=2) < 235).mean())
    assert 0.02 < ink < 0.5, ink
    colours = np.unique((rgb[rgb.min(axis=2) < 235] // 32).reshape(-1, 3), axis=0)
    assert len(colours) > 8
    legend = browser.evaluate("document.getElementById('unimap-legend').innerText")
    assert "0 (178)" in legend and "9 (180)" in legend


def _isolated_points(browser, emb, count):
    """Points whose nearest other point is at least 4 CSS pixels away on screen."""
    screen = np.array(browser.evaluate(
        "Array.from({length: window.unimapMap.n}, (_, i) => {"
        "const p = window.unimapMap.project(i); return [p.x, p.y]; })"))
    d = np.linalg.norm(screen[:, None] - screen[None], axis=2)
    np.fill_diagonal(d, np.inf)
    inside = (screen[:, 0] > 20) & (screen[:, 0] < 1000) & (screen[:, 1] > 60)
    return np.flatnonzero(inside & (d.min(axis=1) > 4))[:count], screen


def test_hover_shows_the_points_id_and_columns(browser, digits_page):
    path, emb, y = digits_page
    browser.open(path)
    points, screen = _isolated_points(browser, emb, 5)
    assert len(points) == 5
    for i in points:
        browser.mouse_move(*screen[i])
        deadline = time.monotonic() + 5
        tip = ""
        while time.monotonic() < deadline:
            _settle(browser)
            tip = browser.evaluate("(() => { const t = document.getElementById("
                                   "window.unimapMap.tooltipId); return t.hidden ? '' : "
                                   "t.innerText; })()")
            if f"id: img-{i}\n" in tip:
                break
        assert f"id: img-{i}\n" in tip
        assert f"label: {y[i]}" in tip and f"note: {EVIL}" in tip
    assert browser.evaluate("window.__pwned") is None  # the text never ran as markup
    browser.mouse_move(2, 790)  # far from every point: the tooltip goes away
    _settle(browser)
    _settle(browser)
    assert browser.evaluate("document.getElementById('unimap-tooltip').hidden") is True
    assert browser.errors() == []


def test_colour_switch_zoom_and_pan(browser, digits_page):
    path, _, _ = digits_page
    browser.open(path)
    browser.evaluate("(() => { const s = document.getElementById('unimap-color');"
                     "s.value = 'ink'; s.dispatchEvent(new Event('change')); })()")
    _settle(browser)
    legend = browser.evaluate("document.getElementById('unimap-legend').innerText")
    assert legend.startswith("ink") and "(" not in legend  # a colour bar, not categories
    before = browser.evaluate("window.unimapMap.project(0)")
    browser.send("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": 600, "y": 400,
                                              "deltaX": 0, "deltaY": -400})
    _settle(browser)
    zoomed = browser.evaluate("window.unimapMap.project(0)")
    # zooming in about (600, 400) moves the point away from it
    assert abs(zoomed["x"] - 600) > 1.5 * abs(before["x"] - 600)
    for kind, x in (("mousePressed", 500), ("mouseMoved", 560), ("mouseReleased", 560)):
        browser.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": 400,
                                                  "button": "left", "clickCount": 1})
    _settle(browser)
    panned = browser.evaluate("window.unimapMap.project(0)")
    assert panned["x"] == pytest.approx(zoomed["x"] + 60, abs=1)
    assert browser.errors() == []


@pytest.mark.slow
def test_a_million_points_load_and_stay_responsive(browser, tmp_path):
    emb, labels = _clusters(1_000_000, 12)
    path = save_html(tmp_path / "big.html", emb, labels=labels, columns={"x": emb[:, 0]})
    assert path.stat().st_size < 20e6
    seconds = browser.open(path)
    assert seconds < 10 and browser.errors() == []
    assert browser.evaluate("window.unimapMap.renderMs") < 1000


def _dark_pixels_near(browser, point, half=30) -> int:
    """Pixels darker than any category colour (the names' ink) within ``half`` CSS pixels."""
    rgb = _screen(browser)
    top = int(browser.evaluate("document.getElementById('unimap-canvas')"
                               ".getBoundingClientRect().top")) + 1
    x, y = int(point["x"]), int(point["y"]) - top
    box = rgb[max(0, y - half):y + half, max(0, x - half):x + half]
    return int((box.max(axis=2) < 60).sum())


def test_category_names_are_written_on_the_map_apart_and_can_be_turned_off(browser, tmp_path):
    rng = np.random.default_rng(0)
    centers = np.array([[-30.0, -30.0], [30.0, -30.0], [-30.0, 30.0], [30.0, 30.0],
                        [30.4, 30.0]])  # the last two groups overlap: one name fits there
    labels = rng.integers(0, 5, 3_000)
    emb = (centers[labels] + 0.5 * rng.standard_normal((3_000, 2))).astype(np.float32)
    names = np.array(["alpha", "beta", "gamma", "delta", "epsilon"])[labels]
    path = save_html(tmp_path / "names.html", emb, labels=names)
    browser.open(path)
    _settle(browser)
    assert browser.errors() == []
    assert browser.evaluate("window.unimapMap.labelsDrawn()") == 4  # delta/epsilon collide
    alpha = browser.evaluate("window.unimapMap.labelAnchor('alpha')")
    assert _dark_pixels_near(browser, alpha) > 20  # the name is written there
    # zooming in on the two overlapping groups spreads their anchors: both names fit
    delta = browser.evaluate("window.unimapMap.labelAnchor('delta')")
    for _ in range(6):
        browser.send("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": delta["x"],
                                                  "y": delta["y"], "deltaX": 0, "deltaY": -400})
        _settle(browser)
    d, e = (browser.evaluate(f"window.unimapMap.labelAnchor('{n}')") for n in ("delta", "epsilon"))
    assert abs(d["x"] - e["x"]) > 60  # far enough apart on screen now
    assert browser.evaluate("window.unimapMap.labelsDrawn()") >= 2
    # the checkbox turns them off
    browser.evaluate("(() => { const c = document.getElementById('unimap-names');"
                     "c.checked = false; c.dispatchEvent(new Event('change')); })()")
    _settle(browser)
    assert browser.evaluate("window.unimapMap.labelsDrawn()") == 0
    browser.evaluate("document.getElementById('unimap-reset').click()")
    _settle(browser)
    assert _dark_pixels_near(browser, browser.evaluate(
        "window.unimapMap.labelAnchor('alpha')")) == 0
    assert browser.errors() == []


def test_names_on_map_can_be_off_from_the_start_and_numbers_have_none(tmp_path, browser):
    emb, labels = _clusters(2_000, 3)
    path = save_html(tmp_path / "off.html", emb, labels=labels, columns={"x": emb[:, 0]},
                     names_on_map=False)
    assert _data_block(path.read_text())["namesOnMap"] is False
    browser.open(path)
    _settle(browser)
    assert browser.evaluate("window.unimapMap.labelsDrawn()") == 0
    browser.evaluate("window.unimapMap.setNamesOnMap(true)")
    _settle(browser)
    assert browser.evaluate("window.unimapMap.labelsDrawn()") == 3
    browser.evaluate("window.unimapMap.setColor('x')")  # a continuous column: no names
    _settle(browser)
    assert browser.evaluate("window.unimapMap.labelsDrawn()") == 0
    assert browser.errors() == []
