"""Cross-site request forgery in a real browser: a page elsewhere cannot touch a user's session.

The victim's tab holds a session with one model. It then opens an attacker's
page served from another port of the same host (``127.0.0.1``: same-site, so
the ``SameSite=Lax`` cookie goes along) or from another site (``localhost``:
no cookie goes along). That page sends an upload with ``fetch(..., {mode:
"no-cors", credentials: "include"})`` and then auto-submits a multipart form
holding a file. Afterwards the victim's cookie and models are unchanged.
"""

from __future__ import annotations

import json
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytestmark = pytest.mark.browser

CSV = "p_a,p_b,label\\n0.2,0.8,b\\n0.7,0.3,a\\n0.4,0.6,b\\n0.9,0.1,a\\n"
ATTACK_PAGE = """<!doctype html><html><body>
<form id="f" method="post" enctype="multipart/form-data" action="__APP__/api/upload">
<input type="file" name="file" id="file"></form>
<script>
const file = () => new File(["__CSV__"], "planted.csv", {type: "text/csv"});
const body = new FormData();
body.append("file", file());
fetch("__APP__/api/upload", {method: "POST", body, mode: "no-cors", credentials: "include"})
  .catch(() => null)
  .then(() => {
    const dt = new DataTransfer();
    dt.items.add(file());
    document.getElementById("file").files = dt.files;
    document.getElementById("f").submit();
  });
</script></body></html>"""


@pytest.fixture
def attacker_site(tmp_path, server):
    """``http://127.0.0.1:<port>``, another port of the app's host, serving ``attack.html``."""
    page = ATTACK_PAGE.replace("__APP__", server.url).replace("__CSV__", CSV)
    (tmp_path / "attack.html").write_text(page)
    handler = partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _session_cookie(context) -> str:
    return next(c["value"] for c in context.cookies() if c["name"] == "calibration_session")


def _model_names(context, server) -> list[str]:
    layout = context.request.get(server.url + "/_dash-layout").text()
    return [name for name in ("mine", "planted") if f'"{name}' in layout]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"], ids=["other-port", "other-site"])
def test_an_attacker_page_can_neither_plant_a_model_nor_replace_the_cookie(
    browser, server, attacker_site, host
):
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(server.url + "/")
        answer = context.request.post(
            server.url + "/api/upload",
            multipart={
                "file": {
                    "name": "mine.csv",
                    "mimeType": "text/csv",
                    "buffer": CSV.replace("\\n", "\n").encode(),
                }
            },
        )
        assert answer.status == 200 and json.loads(answer.text())["models"], answer.text()
        cookie = _session_cookie(context)
        assert _model_names(context, server) == ["mine"]

        # The form's answer is the last navigation: wait for it to land on the app.
        with page.expect_navigation(url=f"{server.url}/api/upload"):
            page.goto(attacker_site.replace("127.0.0.1", host) + "/attack.html")
        assert "not by this dashboard" in page.content()

        assert _session_cookie(context) == cookie
        assert _model_names(context, server) == ["mine"]
    finally:
        context.close()
