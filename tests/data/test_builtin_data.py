"""Built-in and downloadable datasets.

* The NQ-UTD shipped inside the package equals ../shared/data/nq-utd record for record, its files
  have the SHA-256 the registry records, and pyproject's package-data carries every one of them.
* ``load_dataset("nq-utd")`` and ``sourcebias evaluate nq-utd`` read it; a local folder of that
  name wins; ``sourcebias datasets`` lists it with licence and citation.
* ``sourcebias download``: against an HTTP server on 127.0.0.1 serving a small dataset archive —
  a download cut short resumes with a Range request, a checksum mismatch is refused (and the file
  removed), the unpacked folder is checked and then loads by name; without network the message
  names the URL and the file to put it at.
"""

from __future__ import annotations

import fnmatch
import hashlib
import http.server
import io
import json
import sys
import threading
import zipfile
from pathlib import Path

import pytest
from conftest import DATA

from sourcebias.cli.main import main
from sourcebias.core.errors import ConfigError, DataError
from sourcebias.data import load_dataset
from sourcebias.data.download import DownloadUnavailable, download_dataset, fetch
from sourcebias.data.io import iter_lines
from sourcebias.data.registry import NQ_UTD, KnownDataset, RemoteFile

REPO = Path(__file__).resolve().parents[2]
SHARED = DATA / "nq-utd"


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err.replace("\n", "")


@pytest.mark.skipif(not SHARED.is_dir(), reason="no shared copy of NQ-UTD here")
def test_the_shipped_nq_utd_equals_the_shared_copy_record_for_record():
    shipped = NQ_UTD.builtin_path()
    for rel, sha in NQ_UTD.shipped.items():
        path = shipped / rel
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sha, rel
        plain = SHARED / rel.removesuffix(".gz")
        ours, theirs = [t for _, t in iter_lines(path)], [t for _, t in iter_lines(plain)]
        assert ours == theirs and len(ours) > 1, rel
        if rel.endswith(".jsonl.gz"):
            assert [json.loads(t) for t in ours] == [json.loads(t) for t in theirs]
    files = sorted(p.relative_to(shipped).as_posix() for p in shipped.rglob("*") if p.is_file())
    assert files == sorted([*NQ_UTD.shipped, "LICENSE"])
    a, b = load_dataset("nq-utd"), load_dataset(SHARED)
    assert a.corpus.doc_ids == b.corpus.doc_ids and a.corpus.texts == b.corpus.texts and a.corpus.source_list() == b.corpus.source_list()
    assert {q: dict(v) for q, v in a.qrels.items()} == {q: dict(v) for q, v in b.qrels.items()} and a.queries == b.queries
    assert a.registered == "nq-utd" and a.describe()["registered"] == "nq-utd" and b.registered is None


def test_without_the_development_copy_the_nq_utd_tests_read_the_shipped_one(tmp_path, monkeypatch):
    """A clone without ../shared/data runs the tests of NQ-UTD on the copy the package ships, in
    the development copy's layout; the tests of NFCorpus (not shipped) skip."""
    import conftest

    monkeypatch.setattr(conftest, "DATA", tmp_path / "no-shared-data")
    try:
        path = conftest.data_dir("nq-utd")
    except pytest.skip.Exception as exc:
        pytest.fail(f"the tests of nq-utd would skip: {exc}")
    # ../shared/data/README.md: 80 queries, 800 documents per source, qrels "query-id corpus-id score"
    assert len((path / "queries.jsonl").read_text(encoding="utf-8").splitlines()) == 80
    for source in ("human", "llama-2-7b-chat-tmp0.2"):
        lines = (path / "corpus" / f"{source}.jsonl").read_text(encoding="utf-8").splitlines()
        assert len(lines) == 800 and {"_id", "title", "text"} <= set(json.loads(lines[0]))
    assert (path / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[0].split() == ["query-id", "corpus-id", "score"]
    assert not path.is_relative_to(tmp_path) and conftest.data_dir("nq-utd") == path  # written once per process
    with pytest.raises(pytest.skip.Exception, match="nfcorpus"):
        conftest.data_dir("nfcorpus")


def test_package_data_ships_every_builtin_file():
    toml = __import__("tomllib" if sys.version_info >= (3, 11) else "tomli")
    cfg = toml.loads((REPO / "pyproject.toml").read_text())
    patterns = cfg["tool"]["setuptools"]["package-data"]["sourcebias.data"]
    base = REPO / "src" / "sourcebias" / "data"
    for p in (base / "builtin").rglob("*"):
        if p.is_file():
            rel = p.relative_to(base).as_posix()
            assert any(fnmatch.fnmatch(rel, pat) for pat in patterns), rel


def test_a_local_folder_of_the_same_name_wins(tmp_path, monkeypatch, cocktail_dir):
    cocktail_dir.rename(tmp_path / "nq-utd")
    monkeypatch.chdir(tmp_path)
    ds = load_dataset("nq-utd")
    assert ds.registered is None and len(ds.corpus) == 6 and ds.root == Path("nq-utd")


def test_evaluate_and_list_the_builtin_dataset(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no nq-utd folder here
    code, out, err = run_cli(["evaluate", "nq-utd", "--k", "1", "--metric", "NDCG", "--no-sole", "--statistics", "none", "-o", "out"], capsys)
    assert code in (0, None), err
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["dataset"]["registered"] == "nq-utd" and result["dataset"]["queries_evaluated"] == 80
    code, out, _ = run_cli(["datasets"], capsys)
    text = " ".join(out.split())
    assert code in (0, None) and "nq-utd built-in" in text and "MIT" in text and "Cocktail: A Comprehensive Information Retrieval" in text
    assert "scifact download" in text and "MD5 b5b8e24ccad98c9ca959061af14bf833" in text and "SHA256 unknown (not published)" in text


def test_an_unknown_name_or_a_missing_download_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SOURCEBIAS_DATASETS", str(tmp_path / "cache"))
    with pytest.raises(DataError, match="dataset folder not found"):
        load_dataset("no-such-dataset")
    with pytest.raises(ConfigError, match=r"'scifact' is neither a folder here nor downloaded yet.*sourcebias download scifact"):
        load_dataset("scifact")
    with pytest.raises(ConfigError, match="ships with sourcebias"):
        download_dataset("nq-utd")


# -- downloads from a local server -------------------------------------------------------------------
class Server:
    """Serves ``files`` (name -> bytes) on 127.0.0.1 with Range support; ``cut`` sends only that
    many bytes of the next full response, then closes the connection."""

    def __init__(self, files: dict[str, bytes]):
        self.files, self.cut, self.requests = files, None, []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append((self.path, self.headers.get("Range")))
                data = server.files.get(self.path.lstrip("/"))
                if data is None:
                    self.send_error(404)
                    return
                start = int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
                if start >= len(data):
                    self.send_error(416)
                    return
                self.send_response(206 if start else 200)
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                body = data[start:]
                if server.cut is not None and not start:
                    body, server.cut = body[: server.cut], None
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = Server({})
    yield s
    s.close()


def tiny_archive(cocktail_dir: Path, top: str | None = "tiny") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in sorted(cocktail_dir.rglob("*")):
            if p.is_file():
                rel = p.relative_to(cocktail_dir).as_posix()
                z.write(p, f"{top}/{rel}" if top else rel)
    return buf.getvalue()


def test_a_cut_download_resumes_with_a_range_request(server, tmp_path):
    data = bytes(range(256)) * 400
    server.files["f.bin"] = data
    server.cut = 30_000
    remote = RemoteFile(f"{server.url}/f.bin", "f.bin", sha256=hashlib.sha256(data).hexdigest())
    dest = tmp_path / "f.bin"
    with pytest.raises(DownloadUnavailable, match=r"30,000 bytes are kept in .*f.bin.part; run the command again to resume"):
        fetch(remote, dest, timeout=5)
    assert (tmp_path / "f.bin.part").stat().st_size == 30_000 and not dest.exists()
    record = fetch(remote, dest, timeout=5)
    assert server.requests[-1] == ("/f.bin", "bytes=30000-")
    assert dest.read_bytes() == data and record["verified"] == ["sha256"] and record["unverified"] == ["md5"]
    assert not (tmp_path / "f.bin.part").exists()


def test_a_checksum_mismatch_is_refused_and_the_file_removed(server, tmp_path):
    server.files["f.bin"] = b"not what was published"
    remote = RemoteFile(f"{server.url}/f.bin", "f.bin", md5="0" * 32)
    with pytest.raises(DataError, match=f"MD5 {hashlib.md5(b'not what was published').hexdigest()} differs from the expected {'0' * 32}"):
        fetch(remote, tmp_path / "f.bin", timeout=5)
    assert not (tmp_path / "f.bin").exists() and not (tmp_path / "f.bin.part").exists()


@pytest.mark.parametrize("top", ["tiny", None])
def test_download_unpacks_checks_and_then_loads_by_name(server, tmp_path, cocktail_dir, monkeypatch, top):
    archive = tiny_archive(cocktail_dir, top)
    server.files["tiny.zip"] = archive
    entry = KnownDataset(
        "tiny",
        "a tiny test dataset",
        "test",
        "none",
        server.url,
        files=(RemoteFile(f"{server.url}/tiny.zip", "tiny.zip", md5=hashlib.md5(archive).hexdigest()),),
    )
    info = download_dataset(entry, tmp_path / "data", timeout=5)
    folder = tmp_path / "data" / "tiny"
    assert info["folder"] == str(folder) and info["layout"] == "cocktail" and info["sources"] == ["human", "llm"] and info["splits"] == ["test"]
    assert info["archives"][0]["verified"] == ["md5"] and info["archives"][0]["unverified"] == ["sha256"]
    assert not (tmp_path / "data" / "tiny.zip").exists()
    ref, got = load_dataset(cocktail_dir), load_dataset(folder)
    assert got.corpus.texts == ref.corpus.texts and got.qrels.n_judgements == ref.qrels.n_judgements
    n = len(server.requests)
    assert download_dataset(entry, tmp_path / "data")["folder"] == str(folder) and len(server.requests) == n  # done: nothing fetched again


def test_an_archive_without_qrels_is_refused(server, tmp_path, cocktail_dir):
    for p in (cocktail_dir / "qrels").iterdir():
        p.unlink()
    archive = tiny_archive(cocktail_dir)
    server.files["tiny.zip"] = archive
    entry = KnownDataset("tiny", "d", "l", "c", server.url, files=(RemoteFile(f"{server.url}/tiny.zip", "tiny.zip"),))
    with pytest.raises(DataError, match=r"no qrels/<split>\.tsv"):
        download_dataset(entry, tmp_path, timeout=5)


def test_offline_the_message_names_the_url_and_where_to_put_the_file(tmp_path, capsys, cocktail_dir, monkeypatch):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there: connection refused, as without network
    url = f"http://127.0.0.1:{port}/tiny.zip"
    archive = tiny_archive(cocktail_dir)
    entry = KnownDataset("tiny", "d", "l", "c", url, files=(RemoteFile(url, "tiny.zip", md5=hashlib.md5(archive).hexdigest()),))
    with pytest.raises(DownloadUnavailable) as info:
        download_dataset(entry, tmp_path, timeout=5)
    msg = str(info.value)
    assert f"could not download {url}" in msg and f"{url} -> {tmp_path / 'tiny.zip'}" in msg and "run the same command again" in msg
    (tmp_path / "tiny.zip").write_bytes(archive)  # placed by hand, as the message says
    assert download_dataset(entry, tmp_path, timeout=5)["archives"][0]["verified"] == ["md5"]
    from sourcebias.data import registry

    assert registry.KNOWN["scifact"].files[0].url == "https://huggingface.co/datasets/IR-Cocktail/scifact/resolve/main/scifact.zip"
    monkeypatch.setitem(registry.KNOWN, "scifact", KnownDataset("scifact", "d", "l", "c", url, files=(RemoteFile(url, "scifact.zip"),)))
    code, _, err = run_cli(["download", "scifact", "--to", str(tmp_path / "cocktail"), "--timeout", "2"], capsys)
    assert code == 2 and f"{url} -> {tmp_path / 'cocktail' / 'scifact.zip'}" in err


def test_downloading_again_checks_what_is_there_and_fetches_nothing(server, tmp_path, cocktail_dir, monkeypatch, capsys):
    """A second `sourcebias download` of a finished download re-checks the folder and says so (exit 0);
    a marker file from an older download that lacks the archive records still reads (the folder is
    checked again instead of a KeyError)."""
    from sourcebias.data import registry
    from sourcebias.data.registry import MARKER

    archive = tiny_archive(cocktail_dir)
    server.files["scifact.zip"] = archive
    entry = KnownDataset(
        "scifact", "d", "l", "c", server.url, files=(RemoteFile(f"{server.url}/scifact.zip", "scifact.zip", md5=hashlib.md5(archive).hexdigest()),)
    )
    monkeypatch.setitem(registry.KNOWN, "scifact", entry)
    download_dataset(entry, tmp_path, timeout=5)
    n = len(server.requests)
    code, out, err = run_cli(["download", "scifact", "--to", str(tmp_path)], capsys)
    assert code in (0, None), err
    assert "was downloaded before" in out and "verified MD5" in " ".join(out.split()) and len(server.requests) == n
    (tmp_path / "scifact" / MARKER).write_text("{}", encoding="utf-8")  # an older, shorter record
    code, out, err = run_cli(["download", "scifact", "--to", str(tmp_path)], capsys)
    assert code in (0, None), err
    assert "cocktail layout" in out and len(server.requests) == n
