"""`oneflow.hub` (OneFlow 0.9, `python/oneflow/hub.py`): models published through a `hubconf.py`, and weights
fetched by URL into a local cache.

* A *hub repository* is a folder with a `hubconf.py` whose public callables are the entry points (`list`, `help`,
  `load`) and whose optional `dependencies` list names the modules it needs. `load(dir, model, source="local")`
  uses a folder as it is; `"owner/name[:ref]"` (source "github") is the GitHub repository's zip archive of `ref`
  (default branch `main` if it exists, else `master`), downloaded once into `get_dir()/owner_name_ref` and reused.
* The cache folder is `set_dir(d)`'s, else `$ONEFLOW_HOME/hub`, `$ONEFLOW_HOME` defaulting to
  `$XDG_CACHE_HOME/oneflow` and that to `~/.cache/oneflow`. Weights go to its `checkpoints` folder.
* Trust: as in OneFlow 0.9, `trust_repo=None` only warns for a repository not trusted yet; `False` always asks,
  `"check"` asks unless trusted, `True` trusts; a repository answered "yes" is appended to `get_dir()/trusted_list`.

Nothing a download or an extraction writes is visible half-done: files are written under a temporary name beside
their destination and renamed into place once complete (and, with a hash prefix, verified), and a repository is
unpacked into a temporary folder before it replaces the cached one.
"""
import builtins
import errno
import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import warnings
import zipfile
from urllib.error import HTTPError
from urllib.parse import urlparse
from urllib.request import Request, urlopen

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

# Where archives and the branch lists come from; module attributes so that a test can serve them locally.
GITHUB = "https://github.com"
GITHUB_API = "https://api.github.com"
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # `name-<sha256 prefix>.ext`, OneFlow 0.9's convention
MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"
# OneFlow's own organisations: their repositories are trusted without asking
TRUSTED_OWNERS = ("oneflow", "Oneflow-Inc")
_CHUNK = 8192

_hub_dir = None


# --- the cache folder -------------------------------------------------------------------------------------------
def get_dir():
    """The folder downloaded repositories and weights are kept in (see the module docstring)."""
    if os.getenv("ONEFLOW_HUB"):
        warnings.warn("ONEFLOW_HUB is deprecated, please use env ONEFLOW_HOME instead")
    if _hub_dir is not None:
        return _hub_dir
    home = os.getenv("ONEFLOW_HOME",
                     os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "oneflow"))
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d):
    """Keep downloaded repositories and weights in folder `d` from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


# --- repositories -----------------------------------------------------------------------------------------------
def _parse_repo(github):
    """("owner", "name", "ref") of "owner/name[:ref]"; without a ref, the default branch as GitHub has it."""
    repo, sep, ref = str(github).partition(":")
    parts = repo.split("/")
    if len(parts) != 2 or not all(parts) or (sep and not ref):
        raise ValueError('Invalid GitHub repository "%s": expected "repo_owner/repo_name[:ref]", e.g. '
                         '"Oneflow-Inc/vision:main"' % (github,))
    owner, name = parts
    if not ref:
        try:
            with urlopen("%s/%s/%s/tree/main/" % (GITHUB, owner, name)):
                ref = "main"
        except HTTPError as e:
            if e.code != 404:
                raise
            ref = "master"
    return owner, name, ref


def _read_json(url):
    headers = {"Accept": "application/vnd.github.v3+json"}
    if os.environ.get("GITHUB_TOKEN") is not None:
        headers["Authorization"] = "token " + os.environ["GITHUB_TOKEN"]
    with urlopen(Request(url, headers=headers)) as r:
        return json.loads(r.read().decode(r.headers.get_content_charset("utf-8")))


def _validate_ref(owner, name, ref):
    """`ref` must be a branch, a tag or a commit of the repository itself (not of a fork: GitHub serves a fork's
    commits under the parent's name too)."""
    for kind in ("branches", "tags"):
        page = 1
        while True:
            found = _read_json("%s/repos/%s/%s/%s?per_page=100&page=%d" % (GITHUB_API, owner, name, kind, page))
            if not found:
                break
            if any(item["name"] == ref or item["commit"]["sha"].startswith(ref) for item in found):
                return
            page += 1
    raise ValueError("Cannot find %s in https://github.com/%s/%s. If it's a commit from a forked repo, please call "
                     "hub.load() with forked repo directly." % (ref, owner, name))


def _check_trust(owner, name, cached_name, trust_repo, calling_fn):
    hub_dir = get_dir()
    trusted_file = os.path.join(hub_dir, "trusted_list")
    trusted = ()
    if os.path.exists(trusted_file):
        with open(trusted_file) as f:
            trusted = tuple(line.strip() for line in f)
    owner_name = owner + "_" + name
    # a repository already downloaded was trusted once (OneFlow 0.9 keeps that rule for caches older than the list)
    is_trusted = (owner_name in trusted or owner in TRUSTED_OWNERS
                  or os.path.isdir(os.path.join(hub_dir, cached_name)))
    if trust_repo is None:
        if not is_trusted:
            warnings.warn(
                "You are about to download and run code from an untrusted repository. To add the repository to "
                "your trusted list, change the command to {0}(..., trust_repo=False) and a command prompt will "
                "appear asking for an explicit confirmation of trust, or {0}(..., trust_repo=True), which will "
                "assume that the prompt is to be answered with 'yes'. You can also use {0}(..., "
                "trust_repo='check') which will only prompt for confirmation if the repo is not already "
                "trusted.".format(calling_fn))
        return
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        answer = input("The repository %s does not belong to the list of trusted repositories and as such cannot "
                       "be downloaded. Do you trust this repository and wish to add it to the trusted list of "
                       "repositories (y/N)?" % owner_name).strip().lower()
        if answer in ("n", "no", ""):
            raise Exception("Untrusted repository.")
        if answer not in ("y", "yes"):
            raise ValueError("Unrecognized response %s." % answer)
    if not is_trusted:
        os.makedirs(hub_dir, exist_ok=True)
        with open(trusted_file, "a") as f:
            f.write(owner_name + "\n")


def _repo_dir(github, force_reload, trust_repo, calling_fn, verbose=True, skip_validation=False):
    """The cached folder of a GitHub repository at a ref, downloaded (again, with `force_reload`) if needed."""
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    owner, name, ref = _parse_repo(github)
    # a branch name may hold "/", which a folder name cannot
    cached_name = "_".join([owner, name, ref.replace("/", "_")])
    repo_dir = os.path.join(hub_dir, cached_name)
    _check_trust(owner, name, cached_name, trust_repo, calling_fn)
    if not force_reload and os.path.isdir(repo_dir):
        if verbose:
            sys.stderr.write("Using cache found in {}\n".format(repo_dir))
        return repo_dir
    if not skip_validation:
        _validate_ref(owner, name, ref)
    staging = tempfile.mkdtemp(prefix="." + cached_name + ".", dir=hub_dir)
    try:
        archive = os.path.join(staging, "archive.zip")
        url = "%s/%s/%s/zipball/%s" % (GITHUB, owner, name, ref)
        sys.stderr.write('Downloading: "{}" to {}\n'.format(url, archive))
        try:
            download_url_to_file(url, archive, progress=False)
        except HTTPError as e:
            if e.code != 300:
                raise
            # 300 Multiple Choices: the ref is both a branch and a tag; like git, take the branch
            warnings.warn("The ref %s is ambiguous. Perhaps it is both a tag and a branch in the repo? OneFlowhub "
                          "will now assume that it's a branch. You can disambiguate tags and branches by "
                          "explicitly passing refs/heads/branch_name or refs/tags/tag_name as the ref. That might "
                          "require using skip_validation=True." % ref)
            download_url_to_file("%s/%s/%s/zipball/refs/heads/%s" % (GITHUB, owner, name, ref), archive,
                                 progress=False)
        with zipfile.ZipFile(archive) as z:
            # GitHub names the archive's one top folder owner-name-<commit>
            top = z.infolist()[0].filename.split("/")[0]
            z.extractall(os.path.join(staging, "x"))
        unpacked = os.path.join(staging, "x", top)
        if os.path.isdir(repo_dir):  # force_reload: the old copy goes only once the new one is complete
            old = os.path.join(staging, "old")
            os.rename(repo_dir, old)
        os.rename(unpacked, repo_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return repo_dir


def _import_hubconf(repo_dir):
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError("oneflow.hub: %s has no %s" % (repo_dir, MODULE_HUBCONF))
    # the hubconf imports the repository's own modules: its folder goes first on the path while it runs, and
    # modules imported from it earlier are forgotten (after force_reload they would be the old copy's)
    inside = os.path.realpath(repo_dir) + os.sep
    for name, mod in builtins.list(sys.modules.items()):
        if os.path.realpath(getattr(mod, "__file__", None) or os.sep).startswith(inside):
            del sys.modules[name]
    sys.path.insert(0, repo_dir)
    try:
        spec = importlib.util.spec_from_file_location(MODULE_HUBCONF, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_dir)
    return module


def _entry(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    missing = [m for m in getattr(module, VAR_DEPENDENCY, None) or ()
               if importlib.util.find_spec(m) is None]
    if missing:
        raise RuntimeError("Missing dependencies: {}".format(", ".join(missing)))
    func = getattr(module, model, None)
    if func is None or not callable(func):
        raise RuntimeError("Cannot find callable {} in hubconf".format(model))
    return func


def list(github, force_reload=False, skip_validation=False, trust_repo=None):  # noqa: A001 (OneFlow's name)
    """The entry points (public callables of `hubconf.py`) of GitHub repository "owner/name[:ref]"."""
    module = _import_hubconf(_repo_dir(github, force_reload, trust_repo, "list", True, skip_validation))
    return [f for f in dir(module) if not f.startswith("_") and callable(getattr(module, f))]


def help(github, model, force_reload=False, skip_validation=False, trust_repo=None):  # noqa: A001
    """The docstring of entry point `model` of GitHub repository "owner/name[:ref]"."""
    module = _import_hubconf(_repo_dir(github, force_reload, trust_repo, "help", True, skip_validation))
    return _entry(module, model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo=None, force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """What entry point `model` of a hub repository returns when called with `*args, **kwargs`: of GitHub
    repository "owner/name[:ref]" (source "github") or of a local folder (source "local")."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError('Unknown source: "%s". Allowed values: "github" | "local".' % source)
    if source == "github":
        repo_or_dir = _repo_dir(repo_or_dir, force_reload, trust_repo, "load", verbose, skip_validation)
    repo_or_dir = os.fspath(repo_or_dir)
    entry = _entry(_import_hubconf(repo_or_dir), model)
    # the entry point may import the repository's modules lazily: its folder stays on the path while it runs
    sys.path.insert(0, repo_or_dir)
    try:
        return entry(*args, **kwargs)
    finally:
        sys.path.remove(repo_or_dir)


# --- files by URL -----------------------------------------------------------------------------------------------
class _Progress:
    """Bytes received so far on stderr, one line rewritten in place (tqdm is not a dependency)."""

    def __init__(self, total, enabled):
        self.total, self.enabled, self.done, self.shown = total, enabled, 0, -1

    def update(self, n):
        self.done += n
        if not self.enabled:
            return
        if self.total:
            percent = 100 * self.done // self.total
            if percent != self.shown:
                self.shown = percent
                sys.stderr.write("\r%3d%% %s/%s" % (percent, _size(self.done), _size(self.total)))
        else:
            sys.stderr.write("\r%s" % _size(self.done))

    def close(self):
        if self.enabled:
            sys.stderr.write("\n")


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d%s" if unit == "B" else "%.1f%s") % (n, unit)
        n /= 1024.0


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download `url` to file `dst`. With `hash_prefix`, the file's SHA-256 (hex) must start with it, else
    RuntimeError and `dst` is left as it was. The download goes to a temporary file beside `dst`, renamed into
    place once complete, so an interrupted download never replaces a good file."""
    dst = os.path.expanduser(os.fspath(dst))
    with urlopen(Request(url, headers={"User-Agent": "oneflow.hub"})) as response:
        length = response.info().get_all("Content-Length")
        bar = _Progress(int(length[0]) if length else None, progress)
        sha256 = hashlib.sha256()
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(dst) + ".", suffix=".partial",
                                   dir=os.path.dirname(dst) or ".")
        try:
            with os.fdopen(fd, "wb") as f:
                while True:
                    chunk = response.read(_CHUNK)
                    if not chunk:
                        break
                    f.write(chunk)
                    sha256.update(chunk)
                    bar.update(len(chunk))
                f.flush()
                os.fsync(f.fileno())
            bar.close()
            if hash_prefix is not None:
                digest = sha256.hexdigest()
                if digest[:len(hash_prefix)] != hash_prefix:
                    raise RuntimeError('invalid hash value (expected "{}", got "{}")'.format(hash_prefix, digest))
            os.replace(tmp, dst)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None):
    """`flow.load` of what `url` holds, downloaded once into `model_dir` (default `get_dir()/checkpoints`) under
    the URL's file name (or `file_name`). A zip archive (how OneFlow's model zoo ships `flow.save` folders) is
    unpacked there and its first entry loaded. `check_hash`: the file name must read `name-<sha256 prefix>.ext`
    and the download must match that prefix."""
    from oneflow_compat._global import serialization

    if os.getenv("ONEFLOW_MODEL_ZOO"):
        warnings.warn("ONEFLOW_MODEL_ZOO is deprecated, please use env ONEFLOW_HOME instead")
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    try:
        os.makedirs(model_dir)
    except OSError as e:
        if e.errno != errno.EEXIST:
            raise
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        sys.stderr.write('Downloading: "{}" to {}\n'.format(url, cached))
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress=progress)
    if zipfile.is_zipfile(cached):
        cached = _unzipped(cached, model_dir)
    return serialization.load(cached, map_location=map_location)


def _unzipped(archive, model_dir):
    """The folder (or file) that is the first entry of zip `archive`, unpacked into `model_dir` unless it already
    is. Unpacked into a temporary folder first and renamed into place: a reader never sees half of it, and of ranks
    unpacking the same archive at once, the first rename wins and the others keep its (identical) copy."""
    with zipfile.ZipFile(archive) as z:
        first = z.infolist()[0].filename.split("/")[0]
        target = os.path.join(model_dir, first)
        if os.path.exists(target):
            return target
        staging = tempfile.mkdtemp(prefix="." + first + ".", dir=model_dir)
        try:
            z.extractall(staging)
            try:
                os.rename(os.path.join(staging, first), target)
            except OSError as e:
                if e.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR):
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target

