"""`oneflow.hub` (OneFlow 0.9): the cache folder, hubconf entry points from a local folder and from a GitHub archive
(served here by a local HTTP server standing in for github.com and its API), downloads with hash checks, and
`load_state_dict_from_url` of a zipped `flow.save` folder."""
import hashlib
import http.server
import io
import json
import os
import sys
import threading
import zipfile

import numpy as np
import pytest

import oneflow_compat as flow
from oneflow_compat import hub

HUBCONF = '''
"""a hub repository for the tests"""
dependencies = ["numpy"]
import oneflow_compat as flow
from helper_module import WIDTH


def linear(out_features=3, bias=True):
    """A Linear layer of WIDTH inputs."""
    return flow.nn.Linear(WIDTH, out_features, bias=bias)


def _private():
    return None


def needs_missing():
    return None
'''


@pytest.fixture
def hub_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "_hub_dir", None)
    # each test's repository has its own helper_module: another test's must not be taken for it
    monkeypatch.delitem(sys.modules, "helper_module", raising=False)
    hub.set_dir(tmp_path / "hub")
    return tmp_path / "hub"


def _write_repo(folder):
    folder.mkdir(parents=True)
    (folder / "hubconf.py").write_text(HUBCONF)
    (folder / "helper_module.py").write_text("WIDTH = 4\n")
    return folder


class _Server:
    """A local HTTP server answering GET for the paths in `routes` (bytes, or (status,) for an error)."""

    def __init__(self):
        self.routes, self.requests = {}, []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                body = server.routes.get(self.path)
                if body is None or isinstance(body, tuple):
                    self.send_response(body[0] if body else 404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


def _zip_of(folder, top):
    """A zip archive whose one top folder `top` holds `folder`'s files, as GitHub and the model zoo ship them."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(top + "/", "")
        for root, _, files in os.walk(folder):
            for name in sorted(files):
                path = os.path.join(root, name)
                z.write(path, os.path.join(top, os.path.relpath(path, folder)))
    return out.getvalue()


def test_get_dir_follows_set_dir_then_oneflow_home_then_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.delenv("ONEFLOW_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.get_dir() == str(tmp_path / "xdg" / "oneflow" / "hub")
    monkeypatch.setenv("ONEFLOW_HOME", str(tmp_path / "home"))
    assert hub.get_dir() == str(tmp_path / "home" / "hub")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("ONEFLOW_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert hub.get_dir() == str(tmp_path / "user" / ".cache" / "oneflow" / "hub")
    hub.set_dir(tmp_path / "mine")
    assert hub.get_dir() == str(tmp_path / "mine")
    assert flow.hub is hub


def test_load_from_a_local_folder_calls_the_entry_point_with_its_arguments(tmp_path, hub_dir):
    repo = _write_repo(tmp_path / "repo")
    path_before = list(sys.path)
    layer = hub.load(str(repo), "linear", 5, source="local", bias=False)
    assert isinstance(layer, flow.nn.Linear)
    assert tuple(layer.weight.shape) == (5, 4) and layer.bias is None
    assert sys.path == path_before  # the repository's folder was on the path only while the hubconf ran
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(layer(flow.tensor(x)).numpy(), x @ layer.weight.numpy().T, rtol=1e-6)
    assert not hub_dir.exists()  # a local source downloads nothing and needs no cache


def test_load_errors_name_what_was_wrong(tmp_path, hub_dir):
    repo = _write_repo(tmp_path / "repo")
    with pytest.raises(ValueError, match='^Unknown source: "svn". Allowed values: "github" \\| "local".$'):
        hub.load(str(repo), "linear", source="SVN")
    with pytest.raises(RuntimeError, match="^Cannot find callable resnet18 in hubconf$"):
        hub.load(str(repo), "resnet18", source="local")
    with pytest.raises(ValueError, match="^Invalid input: model should be a string of function name$"):
        hub.load(str(repo), 3, source="local")
    with pytest.raises(FileNotFoundError, match="has no hubconf.py"):
        hub.load(str(tmp_path), "linear", source="local")
    (repo / "hubconf.py").write_text(HUBCONF.replace('["numpy"]', '["numpy", "no_such_module_x", "nor_this_y"]'))
    with pytest.raises(RuntimeError, match="^Missing dependencies: no_such_module_x, nor_this_y$"):
        hub.load(str(repo), "linear", source="local")
    with pytest.raises(ValueError, match='Invalid GitHub repository "a/b/c"'):
        hub.list("a/b/c")


def test_list_help_and_load_from_github_download_the_archive_once(hub_dir, server, tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "GITHUB", server.url)
    monkeypatch.setattr(hub, "GITHUB_API", server.url)
    repo = _write_repo(tmp_path / "src")
    server.routes["/someone/models/zipball/v1"] = _zip_of(repo, "someone-models-0123abc")
    server.routes["/repos/someone/models/branches?per_page=100&page=1"] = json.dumps(
        [{"name": "main", "commit": {"sha": "ffff"}}]).encode()
    server.routes["/repos/someone/models/branches?per_page=100&page=2"] = b"[]"
    server.routes["/repos/someone/models/tags?per_page=100&page=1"] = json.dumps(
        [{"name": "v1", "commit": {"sha": "0123abc"}}]).encode()

    with pytest.warns(UserWarning, match="untrusted repository"):
        names = hub.list("someone/models:v1")
    # the hubconf's public callables (not `_private`, nor the module and the number it imported)
    assert names == ["linear", "needs_missing"]
    cached = hub_dir / "someone_models_v1"
    assert (cached / "hubconf.py").read_text() == HUBCONF and (cached / "helper_module.py").exists()
    downloads = [r for r in server.requests if "zipball" in r]
    assert downloads == ["/someone/models/zipball/v1"]
    assert not [p for p in os.listdir(hub_dir) if p.startswith(".")]  # no staging folder left behind

    assert hub.help("someone/models:v1", "linear") == "A Linear layer of WIDTH inputs."
    layer = hub.load("someone/models:v1", "linear", out_features=2)
    assert tuple(layer.weight.shape) == (2, 4)
    assert [r for r in server.requests if "zipball" in r] == downloads  # served from the cache

    # force_reload downloads again and replaces the cached copy only once the new one is complete
    (repo / "helper_module.py").write_text("WIDTH = 6\n")
    server.routes["/someone/models/zipball/v1"] = _zip_of(repo, "someone-models-0123abc")
    layer = hub.load("someone/models:v1", "linear", force_reload=True, skip_validation=True)
    assert tuple(layer.weight.shape) == (3, 6)
    assert len([r for r in server.requests if "zipball" in r]) == 2


def test_a_ref_that_is_not_the_repositorys_own_is_refused(hub_dir, server, monkeypatch):
    monkeypatch.setattr(hub, "GITHUB", server.url)
    monkeypatch.setattr(hub, "GITHUB_API", server.url)
    for kind in ("branches", "tags"):
        server.routes["/repos/someone/models/%s?per_page=100&page=1" % kind] = b"[]"
    with pytest.raises(ValueError, match="^Cannot find deadbeef in https://github.com/someone/models. If it's a "
                                         "commit from a forked repo"):
        hub.load("someone/models:deadbeef", "linear", trust_repo=True)
    assert not [r for r in server.requests if "zipball" in r]
    assert not (hub_dir / "someone_models_deadbeef").exists()


def test_default_branch_is_main_if_it_exists_else_master(hub_dir, server, monkeypatch):
    monkeypatch.setattr(hub, "GITHUB", server.url)
    assert hub._parse_repo("a/b") == ("a", "b", "master")  # /a/b/tree/main/ answers 404
    server.routes["/a/b/tree/main/"] = b"<html></html>"
    assert hub._parse_repo("a/b") == ("a", "b", "main")
    assert hub._parse_repo("a/b:feature/x") == ("a", "b", "feature/x")


def test_trust_prompt_answers(hub_dir, monkeypatch):
    hub_dir.mkdir(parents=True)
    answers = iter(["no", "maybe", "y"])
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    with pytest.raises(Exception, match="^Untrusted repository.$"):
        hub._check_trust("x", "y", "x_y_main", False, "load")
    with pytest.raises(ValueError, match="^Unrecognized response maybe.$"):
        hub._check_trust("x", "y", "x_y_main", "check", "load")
    hub._check_trust("x", "y", "x_y_main", "check", "load")
    assert (hub_dir / "trusted_list").read_text() == "x_y\n"
    hub._check_trust("x", "y", "x_y_main", "check", "load")  # trusted now: no question asked
    hub._check_trust("Oneflow-Inc", "vision", "Oneflow-Inc_vision_main", "check", "load")  # OneFlow's own


def test_download_url_to_file_checks_the_hash_and_never_leaves_a_partial_file(tmp_path, server):
    payload = os.urandom(50000)
    digest = hashlib.sha256(payload).hexdigest()
    server.routes["/w.bin"] = payload
    dst = tmp_path / "w.bin"
    hub.download_url_to_file(server.url + "/w.bin", str(dst), hash_prefix=digest[:10], progress=True)
    assert dst.read_bytes() == payload

    dst.write_bytes(b"the good copy")
    with pytest.raises(RuntimeError, match='^invalid hash value \\(expected "00000000", got "%s"\\)$' % digest):
        hub.download_url_to_file(server.url + "/w.bin", str(dst), hash_prefix="00000000", progress=False)
    assert dst.read_bytes() == b"the good copy"
    assert sorted(os.listdir(tmp_path)) == ["w.bin"]  # the temporary file is gone

    from urllib.error import HTTPError
    with pytest.raises(HTTPError):
        hub.download_url_to_file(server.url + "/missing.bin", str(tmp_path / "m.bin"))
    assert sorted(os.listdir(tmp_path)) == ["w.bin"]


def test_load_state_dict_from_url_unzips_a_saved_folder_once(hub_dir, server, tmp_path):
    net = flow.nn.Linear(3, 2)
    flow.save(net.state_dict(), str(tmp_path / "saved" / "linear"))
    archive = _zip_of(tmp_path / "saved" / "linear", "linear")
    name = "linear-%s.zip" % hashlib.sha256(archive).hexdigest()[:8]
    server.routes["/zoo/" + name] = archive

    state = hub.load_state_dict_from_url(server.url + "/zoo/" + name, check_hash=True, progress=False)
    other = flow.nn.Linear(3, 2)
    other.load_state_dict(state)
    np.testing.assert_array_equal(other.weight.numpy(), net.weight.numpy())
    np.testing.assert_array_equal(other.bias.numpy(), net.bias.numpy())
    checkpoints = hub_dir / "checkpoints"
    assert sorted(os.listdir(checkpoints)) == ["linear", name]
    assert server.requests == ["/zoo/" + name]

    again = hub.load_state_dict_from_url(server.url + "/zoo/" + name, check_hash=True)
    np.testing.assert_array_equal(again["weight"].numpy(), net.weight.numpy())
    assert server.requests == ["/zoo/" + name]  # cached: not downloaded again

    # a hash in the name that the contents do not match: nothing is kept
    server.routes["/zoo/bad-00000000.zip"] = archive
    with pytest.raises(RuntimeError, match="invalid hash value"):
        hub.load_state_dict_from_url(server.url + "/zoo/bad-00000000.zip", model_dir=str(tmp_path / "m"),
                                     check_hash=True, progress=False)
    assert os.listdir(tmp_path / "m") == []
    # file_name names the cached copy
    state = hub.load_state_dict_from_url(server.url + "/zoo/bad-00000000.zip", model_dir=str(tmp_path / "m"),
                                         file_name="mine.zip", progress=False)
    assert sorted(os.listdir(tmp_path / "m")) == ["linear", "mine.zip"]
    np.testing.assert_array_equal(state["bias"].numpy(), net.bias.numpy())
