"""One headless Chromium for all the HTML map tests (skipped where none is installed)."""

import pytest
from _cdp import Browser, find_chromium


@pytest.fixture(scope="session")
def browser():
    executable = find_chromium()
    if executable is None:
        pytest.skip("Chromium is not installed (apt-get install chromium), or set "
                    "UNIMAP_CHROMIUM to a Chrome/Chromium executable")
    pytest.importorskip("websocket", reason="the browser tests need websocket-client (in the "
                        "'test' extra)")
    with Browser(executable) as b:
        yield b
