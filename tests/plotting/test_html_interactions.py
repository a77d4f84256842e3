"""The HTML map's interactions, driven in headless Chromium with real mouse and keyboard input:
round points, the legend hiding categories, search, box and lasso selection and their export,
the trust colour layer, and two linked views side by side."""

import json

import numpy as np
import pytest
from _html_browser import (
    center_of,
    click,
    drag,
    isolated,
    pixel,
    projected,
    screen,
    settle,
    type_text,
)

from unimap.plotting import save_html, save_linked_html
from unimap.plotting.trust import neighborhood_preservation

WHITE = 245  # every channel above this: background


def _canvas_area(x, y):
    return (x > 30) & (x < 940) & (y > 70) & (y < 750)


@pytest.fixture(scope="module")
def digits():
    from unimap.datasets import load_digits
    from unimap.methods.pca import PCA

    X, y = load_digits()
    return X, y, PCA(random_state=0).fit_transform(X)


@pytest.fixture(scope="module")
def digits_page(tmp_path_factory, digits):
    X, y, emb = digits
    path = tmp_path_factory.mktemp("html") / "digits.html"
    save_html(path, emb, labels=y, ids=np.array([f"img-{i}" for i in range(len(y))]), X=X,
              title="digits")
    return path


def _legend_item(label):
    return ("[...document.querySelectorAll('.unimap-item')].find(e => e.textContent"
            f".startsWith({json.dumps(label + ' (')}))")


def test_points_are_round_discs(browser, tmp_path):
    angles = np.linspace(0, 2 * np.pi, 12, endpoint=False)
    path = save_html(tmp_path / "few.html", np.c_[np.cos(angles), np.sin(angles)],
                     labels=np.zeros(12, dtype=int), names_on_map=False)  # the discs alone
    browser.open(path)
    rgb = screen(browser)
    for x, y in projected(browser)[:4]:
        # the disc's centre pixel: its centre, rounded on the page's side
        x, y = int(np.floor(x + 0.5)), int(np.floor(y + 0.5))
        assert rgb[y, x].min() < 200  # the centre is drawn
        for dx, dy in ((4, 0), (-4, 0), (0, 4), (0, -4)):
            assert rgb[y + dy, x + dx].min() < WHITE  # the disc reaches 4 pixels out...
        for dx, dy in ((4, 4), (-4, 4), (4, -4), (-4, -4)):
            assert rgb[y + dy, x + dx].min() > WHITE  # ...but not into the square's corners


def test_legend_sits_beside_the_map_and_a_click_hides_a_category(browser, digits_page,
                                                                 digits):
    _, y, _ = digits
    browser.open(digits_page)
    legend = browser.evaluate("(() => { const r = document.getElementById('unimap-legend')"
                              ".getBoundingClientRect(); return [r.left, r.right]; })()")
    xy = projected(browser)
    assert xy[:, 0].max() < legend[0]  # no point under the legend
    threes = [i for i in isolated(xy, 9, _canvas_area) if y[i] == 3][:5]
    assert threes
    before = screen(browser)
    assert all(pixel(before, xy[i]).min() < 200 for i in threes)
    click(browser, *center_of(browser, _legend_item("3")))
    assert browser.evaluate("window.unimapMap.hidden()") == ["3"]
    assert browser.evaluate(_legend_item("3") + ".getAttribute('aria-pressed')") == "false"
    after = screen(browser)
    assert all(pixel(after, xy[i]).min() > WHITE for i in threes)  # gone from the map
    assert browser.evaluate(f"window.unimapMap.pick({xy[threes[0], 0]}, "
                            f"{xy[threes[0], 1]})") == -1  # and from hovering
    click(browser, *center_of(browser, _legend_item("3")))
    assert browser.evaluate("window.unimapMap.hidden()") == []
    assert all(pixel(screen(browser), xy[i]).min() < 200 for i in threes)
    assert browser.errors() == []


def test_search_highlights_an_id_or_a_label(browser, digits_page, digits):
    _, y, _ = digits
    browser.open(digits_page)
    xy = projected(browser)
    others = [i for i in isolated(xy, 9, _canvas_area) if y[i] != 7][:5]
    before = screen(browser)
    click(browser, *center_of(browser, "document.getElementById('unimap-search')"))
    type_text(browser, "img-42")
    assert browser.evaluate("window.unimapMap.selection()") == [42]
    assert browser.evaluate("document.getElementById('unimap-matches').textContent") == \
        "1 found"
    browser.evaluate("document.getElementById('unimap-search').select()")
    type_text(browser, "7")  # a category name: every point of the class
    assert browser.evaluate("window.unimapMap.selection()") == np.flatnonzero(y == 7).tolist()
    assert f"{(y == 7).sum()} selected" in browser.evaluate("document.getElementById('unimap-side')"
                                              ".innerText")
    after = screen(browser)
    for i in others:  # the points that do not match step back: paler than before
        assert pixel(after, xy[i]).min() > pixel(before, xy[i]).min() + 40
    browser.evaluate("document.getElementById('unimap-search').select()")
    type_text(browser, "no such thing")
    assert browser.evaluate("window.unimapMap.selection()") == []
    assert browser.errors() == []


def _inside_polygon(points, polygon):
    x, y = points[:, 0], points[:, 1]
    inside = np.zeros(len(points), dtype=bool)
    for (xa, ya), (xb, yb) in zip(polygon, np.roll(polygon, 1, axis=0), strict=True):
        crosses = (ya > y) != (yb > y)
        with np.errstate(divide="ignore", invalid="ignore"):
            at = (xb - xa) * (y - ya) / (yb - ya) + xa
        inside ^= crosses & (x < at)
    return inside


def _expected(xy, inside, margin_of):
    """Points surely inside and surely outside (those within a pixel of the edge are not
    judged: the page's float32 coordinates may round them either way)."""
    return set(np.flatnonzero(inside & (margin_of > 1))), set(
        np.flatnonzero(~inside & (margin_of > 1)))


def test_box_selection_yields_the_ids_and_exports_them(browser, digits_page):
    browser.open(digits_page)
    xy = projected(browser)
    click(browser, *center_of(browser, "document.querySelector('[data-mode=box]')"))
    x0, y0, x1, y1 = 300, 250, 520, 420
    drag(browser, [(x0, y0), (400, 300), (x1, y1)])
    selected = browser.evaluate("window.unimapMap.selection()")
    inside = (xy[:, 0] > x0) & (xy[:, 0] < x1) & (xy[:, 1] > y0) & (xy[:, 1] < y1)
    margin = np.minimum.reduce([abs(xy[:, 0] - x0), abs(xy[:, 0] - x1), abs(xy[:, 1] - y0),
                                abs(xy[:, 1] - y1)])
    surely_in, surely_out = _expected(xy, inside, margin)
    assert len(surely_in) > 50 and surely_in <= set(selected)
    assert not surely_out & set(selected)
    csv = browser.evaluate("window.unimapMap.exportSelection('csv')").splitlines()
    assert csv == ["id"] + [f"img-{i}" for i in selected]
    assert json.loads(browser.evaluate("window.unimapMap.exportSelection('json')")) == \
        [f"img-{i}" for i in selected]
    click(browser, *center_of(browser, "document.getElementById('unimap-csv')"))  # download
    click(browser, 200, 600)  # a click without a drag clears the selection
    assert browser.evaluate("window.unimapMap.selection()") == []
    assert browser.evaluate("document.getElementById('unimap-selection').hidden") is True
    assert browser.errors() == []


def test_alt_drag_draws_a_lasso_in_pan_mode(browser, digits_page):
    browser.open(digits_page)
    xy = projected(browser)
    triangle = np.array([(250.0, 200.0), (650.0, 260.0), (380.0, 620.0)])
    path = [tuple(triangle[0])]
    for a, b in zip(triangle, np.roll(triangle, -1, axis=0), strict=True):
        path += [tuple(a + (b - a) * t) for t in np.linspace(0.1, 1, 10)]
    start = browser.evaluate("[window.unimapMap.view.cx, window.unimapMap.view.cy]")
    drag(browser, path, modifiers=1)
    selected = set(browser.evaluate("window.unimapMap.selection()"))
    inside = _inside_polygon(xy, triangle)
    edges = [np.abs((b - a)[0] * (xy - a)[:, 1] - (b - a)[1] * (xy - a)[:, 0])
             / np.linalg.norm(b - a)
             for a, b in zip(triangle, np.roll(triangle, -1, axis=0), strict=True)]
    surely_in, surely_out = _expected(xy, inside, np.minimum.reduce(edges))
    assert len(surely_in) > 100 and surely_in <= selected and not surely_out & selected
    assert browser.evaluate("document.querySelector('[data-mode=pan]')"
                            ".getAttribute('aria-pressed')") == "true"
    assert browser.evaluate("[window.unimapMap.view.cx, window.unimapMap.view.cy]") == start
    assert browser.errors() == []


def _viridis(value):
    """The page's colour of ``value`` on a 0-1 scale: viridis's 17 stops, 256 steps."""
    from unimap.plotting.colors import VIRIDIS_STOPS, hex_to_rgb

    f = np.floor(value * 255 + 0.5) / 255 * 16
    j = min(int(f), 15)
    a, b = np.array(hex_to_rgb(VIRIDIS_STOPS[j])), np.array(hex_to_rgb(VIRIDIS_STOPS[j + 1]))
    return "#" + "".join(f"{int(np.floor(c + 0.5)):02x}" for c in a + (b - a) * (f - j))


def test_trust_layer_switches_the_colours(browser, digits_page, digits):
    X, _, emb = digits
    browser.open(digits_page)
    options = browser.evaluate("[...document.getElementById('unimap-color').options]"
                               ".map(o => o.value)")
    assert options == ["", "label", "trust"]
    browser.evaluate("(() => { const s = document.getElementById('unimap-color');"
                     "s.value = 'trust'; s.dispatchEvent(new Event('change')); })()")
    settle(browser)
    legend = browser.evaluate("document.getElementById('unimap-legend').innerText")
    assert legend.startswith("trust: share of the 15 nearest neighbours")
    assert legend.split("\n")[1:] == ["1", "0.5", "0"]  # a fixed 0-1 scale, nothing clipped
    scores = neighborhood_preservation(X, emb[:, :2].astype(np.float32), 15)
    for i in (int(np.argmin(scores)), int(np.argmax(scores))):  # 0 and 11/15 here
        assert browser.evaluate(f"window.unimapMap.colorOf({i})") == _viridis(scores[i])
    colors = [browser.evaluate(f"window.unimapMap.colorOf({i})") for i in np.argsort(scores)]
    assert len(set(colors[:20]) & set(colors[-20:])) == 0  # low and high trust look different
    assert browser.errors() == []


def test_linked_views_are_aligned_and_highlight_the_same_points(browser, tmp_path, digits):
    X, y, emb = digits
    turn = np.array([[0.0, 1.0], [1.0, 0.0]])  # a reflection, which alignment undoes
    path = save_linked_html(tmp_path / "pair.html", {"PCA": emb, "PCA mirrored": 2 * emb @ turn
                                                     + 3}, labels=y, X=X)
    browser.open(path)
    left, right = projected(browser, 0), projected(browser, 1)
    shift = right - left
    assert np.ptp(shift[:, 0]) < 1 and np.ptp(shift[:, 1]) < 1  # same place in each panel
    assert shift[0, 0] > 300
    i = isolated(left, 12, _canvas_area)[0]
    before = screen(browser)
    browser.mouse_move(*left[i])
    deadline = 50
    while browser.evaluate("window.unimapMap.hovered()") != i and deadline:
        settle(browser)
        deadline -= 1
    assert browser.evaluate("window.unimapMap.hovered()") == i
    after = screen(browser)
    x, yy = np.round(right[i]).astype(int)
    ring = np.abs(after - before)[yy - 14:yy + 15, x - 14:x + 15].max(axis=2)
    assert (ring > 100).sum() > 20  # a ring around the same point in the other view
    click(browser, *center_of(browser, "document.querySelector('[data-mode=box]')"))
    drag(browser, [(right[i, 0] - 60, right[i, 1] - 60), (right[i, 0] + 60,
                                                          right[i, 1] + 60)])
    selected = browser.evaluate("window.unimapMap.selection()")
    assert i in selected
    shown = screen(browser)
    panel = slice(45, 770), slice(0, int(left[:, 0].max()) + 10)
    changed = np.abs(shown - after)[panel].max(axis=2) > 60
    assert changed.sum() > 500  # the left view greyed out what was not selected on the right
    assert browser.errors() == []


def test_a_hint_is_shown_and_no_developer_status(browser, digits_page, tmp_path):
    browser.open(digits_page)
    text = browser.evaluate("document.body.innerText")
    assert "scroll to zoom" in text and "drag to pan" in text
    assert " ms" not in text
    path = save_html(tmp_path / "debug.html", np.eye(3)[:, :2], debug=True)
    browser.open(path)
    settle(browser)
    assert " ms" in browser.evaluate("document.getElementById('unimap-status').innerText")
