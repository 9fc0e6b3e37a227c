"""RabbitMQ's own management UI served from the operator's folders (``--management-ui DIR``):
its files at ``/`` as RabbitMQ's static handler answers them (content types, folders, 404s,
checked on 3.10.8), the console and its API under ``/console/``, and nothing served that the
folders' owner did not put there: no path climbs out, no symlink is followed, a folder or file
others can change refuses the whole UI."""

from __future__ import annotations

import base64
import http.client
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from embroker import Broker
from embroker._hostfiles import UntrustedPath
from embroker.management import _ui
from embroker.management._ui import ManagementUI, resolve
from embroker.server import Server

GUEST = {"authorization": "Basic " + base64.b64encode(b"guest:guest").decode()}
POSIX = os.name == "posix" and hasattr(os, "geteuid")


def _www(root: Path) -> Path:
    """A small stand-in for RabbitMQ's www folder (made here: embroker's tests ship none of
    RabbitMQ's files)."""
    root.mkdir(mode=0o755)
    (root / "index.html").write_text("<!DOCTYPE html><title>RabbitMQ Management</title>")
    for folder in ("js", "js/tmpl", "cli", "api", "img", "css"):
        (root / folder).mkdir(mode=0o755)
    (root / "js" / "main.js").write_text("var main = 1;")
    (root / "js" / "dispatcher.js").write_text("dispatcher_add(function(sammy) {});")
    (root / "js" / "tmpl" / "overview.ejs").write_text("<h1>Overview</h1>")
    (root / "cli" / "index.html").write_text("<p>cli</p>")
    (root / "cli" / "rabbitmqadmin").write_text("#!/usr/bin/env python3\n")
    (root / "api" / "index.html").write_text("<p>the HTTP API</p>")
    (root / "img" / "logo.svg").write_text("<svg/>")
    (root / "css" / "main.css").write_text("body {}")
    (root / "favicon.ico").write_bytes(b"\0\0\1\0")
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


@pytest.fixture
def www(tmp_path: Path) -> Path:
    return _www(tmp_path / "www")


@pytest.fixture
def tracing_www(tmp_path: Path) -> Path:
    root = tmp_path / "tracing"
    (root / "js" / "tmpl").mkdir(parents=True)
    (root / "js" / "tracing.js").write_text("dispatcher_add(function(sammy) {});")
    (root / "js" / "tmpl" / "traces.ejs").write_text("<h1>Traces</h1>")
    for path in (root, *root.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


@pytest.fixture
def ui_server(www: Path, tracing_www: Path) -> Iterator[Server]:
    with Broker().serve(management=True) as server:
        assert server.management is not None
        server.management.ui = ManagementUI([www, tracing_www])
        yield server
        assert server.errors == []


def _get(server: Server, path: str, method: str = "GET",
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.management_port, timeout=10)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        for name, value in (headers or {}).items():
            connection.putheader(name, value)
        connection.endheaders()
        answer = connection.getresponse()
        return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
    finally:
        connection.close()


@pytest.mark.parametrize(("path", "content_type"), [
    ("/", "text/html"), ("/index.html", "text/html"), ("/js/main.js", "application/javascript"),
    ("/css/main.css", "text/css"), ("/favicon.ico", "image/x-icon"),
    ("/img/logo.svg", "image/svg+xml"), ("/js/tmpl/overview.ejs", "application/octet-stream"),
    ("/js/tracing.js", "application/javascript"), ("/api/index.html", "text/html")])
def test_the_ui_answers_at_the_root_with_rabbitmqs_content_types(
        ui_server: Server, www: Path, tracing_www: Path, path: str, content_type: str) -> None:
    """RabbitMQ 3.10.8 answered these kinds so (cowboy's web types; a template is
    application/octet-stream); a file of the second folder (the tracing plugin's) answers too,
    and ``/api/index.html`` (no route of the API) is the UI's file, as RabbitMQ's."""
    status, headers, body = _get(ui_server, path)
    assert (status, headers["content-type"]) == (200, content_type)
    name = resolve(path.strip("/").split("/")) or "index.html"
    source = tracing_www if name.startswith("js/tracing") else www
    assert body == (source / name).read_bytes()
    status, headers, body = _get(ui_server, path, "HEAD")
    assert (status, headers["content-type"], body) == (200, content_type, b"")


def test_folders_redirect_to_their_index_or_are_forbidden_as_rabbitmqs(
        ui_server: Server) -> None:
    """RabbitMQ 3.10.8: ``/cli`` and ``/api`` 301 to their ``index.html``; ``/js``, a folder
    without one, 403; a path that names nothing, its JSON 404."""
    for path, where in (("/cli", "/cli/index.html"), ("/cli/", "/cli/index.html"),
                        ("/api", "/api/index.html"), ("/api/", "/api/index.html")):
        status, headers, _ = _get(ui_server, path)
        assert (status, headers.get("location")) == (301, where), path
    assert _get(ui_server, "/js")[0] == 403
    assert _get(ui_server, "/js/")[0] == 403
    status, _, body = _get(ui_server, "/nothing.html")
    assert (status, body) == (404, b'{"error":"Object Not Found","reason":"Not Found"}')


def test_the_api_is_unchanged_and_the_console_moves_under_console(ui_server: Server) -> None:
    """With RabbitMQ's UI at ``/``, ``/api`` is the same API (its rules: a request without
    credentials is 401), and embroker's console, its files and its API calls, is under
    ``/console/`` (``/console`` redirects there: its files are relative)."""
    assert _get(ui_server, "/api/extensions", headers=GUEST)[2] == (
        b'[{"javascript":"dispatcher.js"},{"javascript":"tracing.js"}]')
    assert _get(ui_server, "/api/overview")[0] == 401
    status, headers, _ = _get(ui_server, "/console")
    assert (status, headers["location"]) == (301, "/console/")
    status, headers, body = _get(ui_server, "/console/")
    assert (status, headers["content-type"]) == (200, "text/html; charset=utf-8")
    assert b"console.js" in body
    assert _get(ui_server, "/console/console.js")[0] == 200
    assert _get(ui_server, "/console/api/whoami", headers=GUEST)[2] == (
        b'{"name":"guest","tags":["administrator"]}')
    assert _get(ui_server, "/console/api/overview")[0] == 401


def test_without_the_ui_the_console_stays_at_the_root(served: Server) -> None:
    status, _, body = _get(served, "/")
    assert status == 200
    assert b"console.js" in body
    assert _get(served, "/console/")[0] == 404


@pytest.mark.parametrize("path", [
    "/../index.html", "/%2e%2e/index.html", "/js/%2e%2e/%2e%2e/etc/passwd",
    "/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "//etc/passwd", "/js/../../www/index.html"])
def test_no_path_climbs_out_of_the_ui(ui_server: Server, www: Path, path: str) -> None:
    """Dot segments resolve as cowboy resolves them, within the top: one that climbs above it
    names nothing (404, RabbitMQ's answer to ``/%2e%2e/etc/passwd``); an absolute path is a
    path under the top."""
    (www.parent / "secret").write_text("not served")
    status, _, body = _get(ui_server, path)
    assert status == 404
    assert b"root:" not in body
    assert b"not served" not in body


@pytest.mark.parametrize("path", ["/js%2fmain.js", "/js%5cmain.js", "/js/main.js%00"])
def test_a_segment_no_file_name_may_hold_is_400(ui_server: Server, path: str) -> None:
    """A ``/``, ``\\`` or NUL inside a segment: cowboy_static's 400, with no body."""
    assert _get(ui_server, path)[:3:2] == (400, b"")


def test_dot_segments_inside_resolve_as_cowboys() -> None:
    assert resolve(["js", "..", "index.html"]) == "index.html"
    assert resolve(["", ".", "js", "", "main.js"]) == "js/main.js"
    assert resolve(["..", "x"]) is None
    assert resolve([]) == ""


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_the_ui_takes_get_and_head_only(ui_server: Server, method: str) -> None:
    status, headers, _ = _get(ui_server, "/index.html", method,
                              headers={"content-length": "0"})
    assert (status, headers["allow"]) == (405, "HEAD, GET, OPTIONS")


@pytest.mark.skipif(not POSIX, reason="symlinks and modes: POSIX")
def test_symlinks_in_the_ui_are_never_followed(tmp_path: Path, www: Path) -> None:
    """A symlink to a file or a folder outside (or inside) is not served: only regular files
    the walk at start found are."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (www / "js" / "secret.txt").symlink_to(outside / "secret.txt")
    (www / "out").symlink_to(outside)
    (www / "again.html").symlink_to(www / "index.html")
    ui = ManagementUI([www])
    for name in ("js/secret.txt", "out/secret.txt", "again.html"):
        assert name not in ui
        assert ui.read(name) is None
    assert not ui.is_folder("out")


@pytest.mark.skipif(not POSIX, reason="modes: POSIX")
@pytest.mark.parametrize("where", ["", "js", "js/main.js", "js/tmpl/overview.ejs"])
def test_a_folder_or_file_others_can_write_refuses_the_ui(www: Path, where: str) -> None:
    """Its pages would run in the operator's browser with the credentials it logs in with:
    one line naming the path and what to do, nothing served."""
    target = www / where
    target.chmod(stat.S_IMODE(target.stat().st_mode) | stat.S_IWOTH)
    with pytest.raises(UntrustedPath, match=r"can be written by others.*cp -r"):
        ManagementUI([www])


@pytest.mark.skipif(not POSIX, reason="modes: POSIX")
def test_a_file_changed_to_a_symlink_after_the_start_is_not_followed(www: Path,
                                                                       tmp_path: Path) -> None:
    ui = ManagementUI([www])
    (tmp_path / "secret").write_text("secret")
    (www / "js" / "main.js").unlink()
    (www / "js" / "main.js").symlink_to(tmp_path / "secret")
    assert ui.read("js/main.js") is None


def test_a_folder_without_index_html_is_no_ui(tmp_path: Path, tracing_www: Path) -> None:
    with pytest.raises(ValueError, match=r"has no index\.html: not a RabbitMQ management UI"):
        ManagementUI([tracing_www])
    with pytest.raises(ValueError, match="no folder given"):
        ManagementUI([])


def test_files_past_the_bound_are_left_out(www: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ui, "MAX_FILE_BYTES", 60)
    (www / "js" / "big.js").write_text("x" * 61)
    ui = ManagementUI([www])
    assert "js/big.js" not in ui
    assert ui.read("js/main.js") is not None
    (www / "js" / "main.js").write_text("x" * 61)  # (grown since the start: not read whole)
    assert ui.read("js/main.js") is None


def test_a_ui_without_a_page_script_the_api_announces_says_so(www: Path,
                                                                tracing_www: Path) -> None:
    """``/api/extensions`` lists ``tracing.js``: RabbitMQ's UI waits for it before it starts,
    so a UI without the tracing plugin's folder is named at start, with the folder to add."""
    (missing,) = ManagementUI([www]).missing()
    assert "no js/tracing.js" in missing
    assert "rabbitmq_tracing-3.10.8/priv/www" in missing
    assert ManagementUI([www, tracing_www]).missing() == []


def test_serve_management_ui_refuses_an_untrusted_folder_in_one_line(tmp_path: Path) -> None:
    """``embroker serve --management-ui DIR`` checks DIR before it listens: a folder that is no
    UI is one line and exit 1."""
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o755)
    done = subprocess.run([sys.executable, "-m", "embroker", "serve", "--port", "0",
                           "--management-port", "0", "--management-ui", str(empty)],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"embroker: cannot serve the management UI: {empty} has no index.html: not a "
        "RabbitMQ management UI (give its www folder, e.g. /usr/lib/rabbitmq/lib/"
        "rabbitmq_server-3.10.8/plugins/rabbitmq_management-3.10.8/priv/www)"]
