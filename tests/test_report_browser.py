"""The HTML report in a real browser (issue 45, point 4): headless Chromium (Debian's
`chromium` with its `chromium-driver`, driven by selenium; nothing is downloaded) opens
the page from a file, a token is typed into the search, and the top keys it shows are
those of `detokgui export topk`'s CSV for the same model. The page makes no request but
for its own file (Chrome's performance log: every Network.requestWillBeSent; the figures'
images are data: URLs, inside the page) and logs no
console message of level error. Skipped, with the reason, when the browser, its driver or
selenium is not installed (`.ci/run` installs them)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
import shutil

import pytest

from detokgui.cli import main as cli_main

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                "(pip install -e '.[test]')")
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (BROWSER and DRIVER),
    reason="no chromium and chromedriver on PATH (Debian: apt-get install chromium "
           "chromium-driver)")


@pytest.fixture(scope="module")
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = BROWSER
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,900", "--no-first-run", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-default-apps"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=webdriver.ChromeService(DRIVER), options=opts)
    driver.set_page_load_timeout(120)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def page(small_vocab_ckpt, small_corpus, tmp_path_factory):
    """A report of the 400-token model with the small corpus and every figure, written
    by `detokgui export report`."""
    out = tmp_path_factory.mktemp("browser") / "report.html"
    with contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()) as err:
        rc = cli_main(["report", "--model", str(small_vocab_ckpt), "--corpus",
                       str(small_corpus), "--k", "4", "--out", str(out)])
    assert rc == 0, err.getvalue()
    return out


def open_page(driver, path):
    """Load `path` and wait for the search script to finish; the logs read so far are
    dropped (they belong to an earlier page)."""
    driver.get_log("performance")
    driver.get_log("browser")
    driver.get(path.as_uri())
    WebDriverWait(driver, 60).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-search-ready")
        or d.get_log("browser"))


def requests_and_errors(driver) -> tuple[list[str], list[str]]:
    """(the URL of every request the page made, every console message of level error or
    worse) since the last call."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    return urls, errors


def topk_csv(ckpt, token: str, k: int, tmp_path) -> list[dict]:
    out = tmp_path / "topk.csv"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli_main(["topk", "--model", str(ckpt), "--query", token, "--k", str(k),
                         "--out", str(out)]) == 0
    with open(out, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def shown_keys(driver) -> dict[tuple[int, int], tuple[int, str, float]]:
    """(head, rank) -> (key id, key as shown, score) of the search's result table."""
    cells = driver.find_elements(By.CSS_SELECTOR, "#dg-topk td[data-head]")
    return {(int(c.get_attribute("data-head")), int(c.get_attribute("data-rank"))):
            (int(c.get_attribute("data-key-id")),
             c.find_element(By.CLASS_NAME, "tok").text,
             float(c.get_attribute("data-score"))) for c in cells}


def test_search_shows_the_csv_top_keys_offline(browser, page, small_vocab_ckpt, tmp_path):
    open_page(browser, page)
    vocab = json.loads(browser.find_element(By.ID, "dg-vocab").get_attribute("textContent"))
    words = [t for t in vocab if re.fullmatch("\u2423[a-z]{3,}", t)]
    for shown in (words[0], words[len(words) // 2]):
        token = " " + shown[1:]
        box = browser.find_element(By.ID, "dg-search")
        box.clear()
        box.send_keys(token)
        result = f"#dg-topk[data-query-id='{vocab.index(shown)}']"
        WebDriverWait(browser, 10).until(
            lambda d, css=result: d.find_elements(By.CSS_SELECTOR, css))
        keys = shown_keys(browser)
        rows = topk_csv(small_vocab_ckpt, token, 4, tmp_path)
        assert len(keys) == len(rows) == 4 * 4
        for row in rows:
            key_id, text, score = keys[(int(row["head"]), int(row["rank"]))]
            assert key_id == int(row["key_id"]), row
            assert text == vocab[int(row["key_id"])]
            assert score == pytest.approx(float(row["score"]), rel=2e-3, abs=1e-3)
    assert "not in this report's table" not in browser.find_element(By.ID, "dg-status").text
    figures = browser.find_elements(By.CSS_SELECTOR, "figure svg")
    assert len(figures) >= 10 and all(f.size["width"] > 100 for f in figures[:3])
    urls, errors = requests_and_errors(browser)
    assert [u for u in urls if not u.startswith("data:")] == [page.as_uri()], urls
    assert errors == []


def test_the_checks_see_a_request(browser, page, tmp_path):
    """The same checks on the page with one image from a web address added: the request
    (or the policy refusing it) is seen, so the test above can fail."""
    text = page.read_text(encoding="utf-8").replace(
        "<main>", "<main><img src='http://127.0.0.1:9/x.png' alt=''>", 1)
    leaky = tmp_path / "leaky.html"
    leaky.write_text(text, encoding="utf-8")
    open_page(browser, leaky)
    urls, errors = requests_and_errors(browser)
    assert any("127.0.0.1:9" in e for e in errors) or any("127.0.0.1:9" in u for u in urls)
