"""A browser-like HTTP client of the dashboard (standard library only).

One :class:`DashSession` is one browser tab: its own cookie jar, the page's
``_dash-config`` (with the server-signed ``end_id`` the renderer echoes on
every callback request), the initial component values read from
``/_dash-layout`` and the callback signatures from ``/_dash-dependencies``.
Callbacks are called the way ``dash-renderer`` calls them::

    POST /_dash-update-component?endId=<signed>
    {"output": "..a.b...c.d..", "outputs": [{"id", "property"}, ...],
     "inputs": [{"id", "property", "value"}, ...], "changedPropIds": ["a.b"],
     "state": [...]}

Background callbacks answer the first POST with signed ``cacheKey``/``job``
handles; the client then polls with ``?cacheKey=..&job=..`` (input values
cleared, as the renderer does) every ``background.interval`` ms until the
answer carries ``response``.

Every request opens a fresh connection (no stale keep-alive sockets to
retry), so a failure is always the server's answer, never a client artefact.
Used by ``benchmarks/load_test.py`` and ``tests/hosting/test_container_e2e.py``.
"""

from __future__ import annotations

import http.client
import json
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

CONFIG_PATTERN = re.compile(
    r'<script id="_dash-config" type="application/json">(.*?)</script>', re.S
)


class DashHTTPError(RuntimeError):
    """A request that did not get the expected answer (status, body excerpt)."""

    def __init__(self, what: str, status: int, body: bytes) -> None:
        excerpt = body[:300].decode("utf-8", "replace")
        super().__init__(f"{what}: HTTP {status}: {excerpt}")
        self.status = status
        self.body = body


@dataclass
class Response:
    """One HTTP answer with its wall-clock duration (send to last body byte)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    seconds: float

    def json(self):
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass
class Callback:
    """A callback signature from ``/_dash-dependencies``."""

    output: str
    outputs: list[dict]
    multi: bool
    inputs: list[dict]
    state: list[dict]
    background: dict | None = None

    @classmethod
    def from_dependency(cls, dep: dict) -> Callback:
        output = dep["output"]
        multi = output.startswith("..")
        parts = output[2:-2].split("...") if multi else [output]
        outputs = []
        for part in parts:
            cid, _, prop = part.rpartition(".")
            outputs.append({"id": cid, "property": prop.split("@")[0]})
        return cls(
            output=output,
            outputs=outputs,
            multi=multi,
            inputs=[dict(d) for d in dep.get("inputs", [])],
            state=[dict(d) for d in dep.get("state", [])],
            background=dep.get("background"),
        )

    def writes(self, key: str) -> bool:
        """Whether ``key`` (``"id.prop"``) is one of the outputs."""
        return any(f"{o['id']}.{o['property']}" == key for o in self.outputs)


@dataclass
class DashSession:
    """One browser tab talking to the dashboard at ``base_url``.

    Attributes
    ----------
    cookies : dict
        The tab's cookie jar (name -> value), filled from ``Set-Cookie``.
    values : dict
        ``"id.prop" -> value`` of every component, as the page holds them.
    """

    base_url: str
    timeout: float = 120.0
    cookies: dict[str, str] = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    values: dict[str, object] = field(default_factory=dict)
    callbacks: list[Callback] = field(default_factory=list)

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 80
        self._origin = f"{parts.scheme}://{parts.netloc}"

    # ---------------------------------------------------------------- HTTP
    def request(self, method: str, path: str, body=None, headers: dict | None = None) -> Response:
        """One request on a fresh connection, with the tab's cookies."""
        hdrs = {"Accept": "*/*", "Origin": self._origin, "Referer": self._origin + "/"}
        if self.cookies:
            hdrs["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        token_name = self.config.get("csrf_token_name")
        if token_name and token_name in self.cookies:
            hdrs[self.config.get("csrf_header_name", "X-CSRFToken")] = self.cookies[token_name]
        hdrs.update(headers or {})
        conn = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
        start = time.perf_counter()
        try:
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            data = resp.read()
            seconds = time.perf_counter() - start
            header_list = resp.getheaders()
        finally:
            conn.close()
        for name, value in header_list:
            if name.lower() == "set-cookie":
                pair = value.split(";", 1)[0]
                key, _, val = pair.partition("=")
                if "max-age=0" in value.lower() or not val:
                    self.cookies.pop(key.strip(), None)
                else:
                    self.cookies[key.strip()] = val.strip()
        return Response(resp.status, header_list, data, seconds)

    def get(self, path: str) -> Response:
        return self.request("GET", path)

    # ---------------------------------------------------------------- page
    def load_page(self) -> float:
        """GET the page, its layout and its callbacks, like a browser tab; returns seconds."""
        start = time.perf_counter()
        page = self.get("/")
        if page.status != 200:
            raise DashHTTPError("GET /", page.status, page.body)
        match = CONFIG_PATTERN.search(page.body.decode("utf-8", "replace"))
        if not match:
            raise DashHTTPError("GET / has no _dash-config", page.status, page.body)
        self.config = json.loads(match.group(1))
        layout = self.get("/_dash-layout")
        if layout.status != 200:
            raise DashHTTPError("GET /_dash-layout", layout.status, layout.body)
        self.values = {}
        _collect_values(layout.json(), self.values)
        deps = self.get("/_dash-dependencies")
        if deps.status != 200:
            raise DashHTTPError("GET /_dash-dependencies", deps.status, deps.body)
        self.callbacks = [Callback.from_dependency(d) for d in deps.json()]
        return time.perf_counter() - start

    def callback(self, writes: str, *, background: bool = False) -> Callback:
        """The callback whose outputs include ``writes`` (``"id.prop"``).

        By default the foreground callback that is not a duplicate-output one;
        with ``background=True`` the background callback writing it.
        """
        for cb in self.callbacks:
            if not cb.writes(writes):
                continue
            if background and cb.background:
                return cb
            if not background and not cb.background and "@" not in cb.output:
                return cb
        raise KeyError(f"no {'background ' if background else ''}callback writes {writes}")

    # ----------------------------------------------------------- callbacks
    def _payload(self, cb: Callback, changed: list[str], blank: bool = False) -> dict:
        def deps(items):
            out = []
            for d in items:
                key = f"{d['id']}.{d['property']}"
                out.append({**d, "value": None if blank else self.values.get(key)})
            return out

        return {
            "output": cb.output,
            "outputs": cb.outputs if cb.multi else cb.outputs[0],
            "inputs": deps(cb.inputs),
            "changedPropIds": list(changed),
            "state": deps(cb.state),
        }

    def _update_url(self, **args) -> str:
        url = "/_dash-update-component"
        params = []
        if self.config.get("end_id"):
            params.append(("endId", self.config["end_id"]))
        params += [(k, v) for k, v in args.items() if v]
        if params:
            url += "?" + "&".join(f"{k}={quote(str(v), safe='~')}" for k, v in params)
        return url

    def _post_update(self, url: str, payload: dict) -> Response:
        return self.request(
            "POST",
            url,
            body=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )

    def _apply(self, answer: dict) -> dict:
        """Store the outputs of an answer in :attr:`values`; returns ``{"id.prop": value}``."""
        out = {}
        for cid, props in (answer.get("response") or {}).items():
            for prop, value in props.items():
                out[f"{cid}.{prop}"] = value
        for cid, props in (answer.get("sideUpdate") or {}).items():
            for prop, value in (props or {}).items():
                out.setdefault(f"{cid}.{prop}", value)
        self.values.update(out)
        return out

    def call(self, writes: str, changed: list[str]) -> tuple[dict, float]:
        """Call the (foreground) callback that writes ``writes``; returns (outputs, seconds).

        A 204 (PreventUpdate) gives empty outputs; other non-200 answers raise.
        """
        cb = self.callback(writes)
        resp = self._post_update(self._update_url(), self._payload(cb, changed))
        if resp.status == 204:
            return {}, resp.seconds
        if resp.status != 200:
            raise DashHTTPError(f"callback {writes}", resp.status, resp.body)
        return self._apply(resp.json()), resp.seconds

    def call_background(
        self, writes: str, changed: list[str], *, timeout: float = 600.0
    ) -> tuple[dict, float, int]:
        """Start a background callback and poll it to the end.

        Returns
        -------
        (outputs, seconds, polls)
            ``seconds`` from the first POST to the answer with the result.
        """
        cb = self.callback(writes, background=True)
        interval = ((cb.background or {}).get("interval") or 500) / 1000.0
        start = time.perf_counter()
        first = self._post_update(self._update_url(), self._payload(cb, changed))
        if first.status != 200:
            raise DashHTTPError(f"background callback {writes}", first.status, first.body)
        handles = first.json()
        if "response" in handles:  # answered at once (e.g. no manager)
            return self._apply(handles), time.perf_counter() - start, 0
        if not handles.get("cacheKey") or not handles.get("job"):
            raise DashHTTPError(f"background callback {writes}: no job", first.status, first.body)
        blank = self._payload(cb, changed, blank=True)
        url = self._update_url(cacheKey=handles["cacheKey"], job=handles["job"])
        polls = 0
        deadline = start + timeout
        while True:
            time.sleep(interval)
            polls += 1
            resp = self._post_update(url, blank)
            if resp.status == 204:
                return {}, time.perf_counter() - start, polls
            if resp.status != 200:
                raise DashHTTPError(f"polling {writes}", resp.status, resp.body)
            answer = resp.json()
            if "response" in answer:
                return self._apply(answer), time.perf_counter() - start, polls
            if time.perf_counter() > deadline:
                raise TimeoutError(
                    f"background callback {writes} still running after {timeout:.0f} s"
                )

    def fit(self, changed: list[str], *, timeout: float = 600.0) -> tuple[dict, float, int]:
        """The dashboard's two-step fit, as a tab runs it after ``changed`` settings.

        The planner (``fit-request.data``) answers at once; only when it asks
        for work is the background fit started and polled to the end.

        Returns
        -------
        (outputs, seconds, polls)
            Outputs of both steps; ``"fit-state.data"`` is among them unless
            the planner had nothing to report.
        """
        start = time.perf_counter()
        out, _ = self.call("fit-request.data", changed)
        polls = 0
        if "fit-request.data" in out:
            done, _, polls = self.call_background(
                "fit-state.data", ["fit-request.data"], timeout=timeout
            )
            out.update(done)
        return out, time.perf_counter() - start, polls

    # --------------------------------------------------------------- upload
    def upload(self, path: Path, name: str | None = None) -> Response:
        """POST one file to ``/api/upload`` as multipart/form-data (field ``file``)."""
        boundary = "----calib" + uuid.uuid4().hex
        filename = name or Path(path).name
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{filename}"\r\nContent-Type: text/csv\r\n\r\n'
        ).encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        body = head + Path(path).read_bytes() + tail
        return self.request(
            "POST",
            "/api/upload",
            body=body,
            headers={
                "Content-Type": f"multipart/form-data; boundary={boundary}",
                "Accept": "application/json",
            },
        )

    def upload_result(self, file_name: str, resp: Response) -> dict:
        """The ``upload-result`` store value ``assets/upload.js`` writes after an upload."""
        body = resp.json()
        failed = resp.status >= 400 or bool(body.get("errors"))
        return {
            "nonce": int(time.time() * 1000),
            "results": [
                {
                    "file": file_name,
                    "status": resp.status,
                    "models": body.get("models", []),
                    "error": body.get("error") if failed else None,
                }
            ],
        }


def _collect_values(node, out: dict) -> None:
    """``"id.prop" -> value`` of every component with a string id in a layout tree."""
    if isinstance(node, list):
        for item in node:
            _collect_values(item, out)
        return
    if not isinstance(node, dict):
        return
    props = node.get("props")
    if isinstance(props, dict) and "type" in node:
        cid = props.get("id")
        if isinstance(cid, str):
            for prop, value in props.items():
                if prop not in ("id", "children"):
                    out[f"{cid}.{prop}"] = value
            if "children" in props and not isinstance(props["children"], (dict, list)):
                out[f"{cid}.children"] = props["children"]
        for value in props.values():
            if isinstance(value, (dict, list)):
                _collect_values(value, out)


def text_of(children) -> list[str]:
    """The plain texts in rendered Dash children (e.g. the message area)."""
    out: list[str] = []
    if children is None:
        return out
    if isinstance(children, str):
        return [children]
    if isinstance(children, (int, float)):
        return [str(children)]
    if isinstance(children, list):
        for c in children:
            out.extend(text_of(c))
        return out
    if isinstance(children, dict):
        return text_of((children.get("props") or {}).get("children"))
    return out
