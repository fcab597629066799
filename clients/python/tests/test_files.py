import io
import os
import shutil
import tarfile
import tempfile
import unittest

from dockside import ApiError
from tests.stub import Response, StubApi, healthy_agent
from tests.test_sandbox import sandbox


def started():
    api = StubApi(healthy_agent)
    return api, sandbox(api).start()


def tempdir(test):
    d = tempfile.mkdtemp(prefix="dockside-files-")
    test.addCleanup(shutil.rmtree, d)
    return d


class ReadWriteTest(unittest.TestCase):
    def test_bytes_and_text_round_trip_with_the_mode_asked(self):
        api, sbx = started()
        blob = os.urandom(3 << 20)
        info = sbx.files.write("/workspace/blob", blob, mode=0o600)
        self.assertEqual((info.path, info.size, info.mode, info.type), ("/workspace/blob", len(blob), 0o600, "file"))
        self.assertEqual(sbx.files.read("/workspace/blob", format="bytes"), blob)
        sbx.files.write("/workspace/t.txt", "h\u00e9llo\n")
        self.assertEqual(sbx.files.read("/workspace/t.txt"), "h\u00e9llo\n")
        # Past PLAIN_BODY the body goes over an upgraded connection, its length in the query.
        method, params, _ = api.requests[0]
        self.assertEqual((method, params), ("PUT", [("path", "/workspace/blob"), ("mode", "0600"), ("length", str(len(blob)))]))
        self.assertEqual(api.requests[2][:2], ("PUT", [("path", "/workspace/t.txt")]))

    def test_a_file_object_is_sent_as_it_is_with_its_length(self):
        api, sbx = started()
        with tempfile.TemporaryFile() as f:
            f.write(b"0123456789")
            f.seek(4)
            sbx.files.write("/workspace/tail", f)
        self.assertEqual(api.filesystem.tree["/workspace/tail"], b"456789")
        self.assertEqual(api.requests[0][2]["Content-Length"], "6")

    def test_a_stream_read_comes_in_blocks_and_releases_the_connection(self):
        api, sbx = started()
        api.filesystem.tree["/workspace/big"] = b"x" * (2 << 20) + b"y"
        blocks = list(sbx.files.read("/workspace/big", format="stream"))
        self.assertEqual([len(b) for b in blocks], [1 << 20, 1 << 20, 1])

    def test_a_refusal_is_the_agents_words_and_a_bad_format_is_refused(self):
        _, sbx = started()
        with self.assertRaisesRegex(ApiError, "Forbidden: /etc/passwd is on the read-only root file system"):
            sbx.files.write("/etc/passwd", "x")
        with self.assertRaises(ApiError) as caught:
            sbx.files.read("/workspace/missing")
        self.assertEqual((caught.exception.reason, caught.exception.status), ("NotFound", 404))
        with self.assertRaisesRegex(ValueError, "format='json'"):
            sbx.files.read("/workspace/x", format="json")


class DirectoryTest(unittest.TestCase):
    def test_make_list_stat_exists_and_remove(self):
        api, sbx = started()
        self.assertTrue(sbx.files.make_dir("/workspace/d"))
        self.assertFalse(sbx.files.make_dir("/workspace/d"))
        sbx.files.write("/workspace/d/b", b"22")
        sbx.files.write("/workspace/d/a", b"1")
        self.assertEqual([(e.name, e.path, e.size, e.type) for e in sbx.files.list("/workspace/d")],
                         [("a", "/workspace/d/a", 1, "file"), ("b", "/workspace/d/b", 2, "file")])
        self.assertEqual(sbx.files.stat("/workspace/d").type, "dir")
        self.assertEqual(sbx.files.stat("/workspace/d").mtime.isoformat(), "2026-12-04T14:00:00+00:00")
        with self.assertRaisesRegex(ApiError, "Conflict: /workspace/d is a directory that is not empty"):
            sbx.files.remove("/workspace/d")
        sbx.files.remove("/workspace/d", recursive=True)
        self.assertFalse(sbx.files.exists("/workspace/d"))
        self.assertTrue(sbx.files.exists("/workspace"))
        self.assertIn(("DELETE", [("path", "/workspace/d"), ("recursive", "true")], None),
                      [(m, p, h) for m, p, h in api.requests])
        self.assertIn(("POST", [("op", "mkdir"), ("path", "/workspace/d"), ("parents", "true")]),
                      [(m, p) for m, p, _ in api.requests])


class TarTest(unittest.TestCase):
    def test_upload_then_download_round_trips_a_directory_with_its_modes(self):
        api, sbx = started()
        src, dst = tempdir(self), tempdir(self)
        os.makedirs(os.path.join(src, "pkg", "sub"))
        with open(os.path.join(src, "pkg", "sub", "data.bin"), "wb") as f:
            f.write(os.urandom(100_000))
        with open(os.path.join(src, "run.sh"), "w") as f:
            f.write("#!/bin/sh\necho hi\n")
        os.chmod(os.path.join(src, "run.sh"), 0o755)
        sbx.files.upload(src, "/workspace/repo")
        self.assertEqual(api.filesystem.tree["/workspace/repo/run.sh"], b"#!/bin/sh\necho hi\n")
        method, params, headers = api.requests[-1]
        self.assertEqual((method, params, headers["Content-Type"]),
                         ("PUT", [("op", "tar"), ("path", "/workspace/repo")], "application/x-tar"))
        written = sbx.files.download("/workspace/repo", os.path.join(dst, "copy"))
        for rel in ("run.sh", "pkg/sub/data.bin"):
            with open(os.path.join(src, rel), "rb") as a, open(os.path.join(dst, "copy", rel), "rb") as b:
                self.assertEqual(a.read(), b.read(), rel)
        self.assertEqual(os.stat(os.path.join(dst, "copy", "run.sh")).st_mode & 0o777, 0o755)
        self.assertIn(os.path.join(os.path.realpath(dst), "copy", "pkg", "sub", "data.bin"), written)

    def test_upload_of_a_missing_directory_sends_nothing(self):
        api, sbx = started()
        with self.assertRaises(NotADirectoryError):
            sbx.files.upload("/nonexistent/dir", "/workspace/x")
        self.assertEqual(api.requests, [])

    def archive(self, *entries):
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w") as tar:
            for name, kind, link in entries:
                info = tarfile.TarInfo(name)
                info.type, info.linkname = kind, link
                data = b"pwned" if kind == tarfile.REGTYPE else b""
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return out.getvalue()

    def test_download_refuses_entries_that_would_land_outside(self):
        outside = tempdir(self)
        cases = {
            "..": [("../escape", tarfile.REGTYPE, "")],
            "absolute": [(os.path.join(outside, "abs"), tarfile.REGTYPE, "")],
            "through a link": [("./out", tarfile.SYMTYPE, outside), ("./out/file", tarfile.REGTYPE, "")],
            "hard link": [("./h", tarfile.LNKTYPE, "../../etc/passwd")],
            "device": [("./dev", tarfile.CHRTYPE, "")],
        }
        for case, entries in cases.items():
            with self.subTest(case):
                api, sbx = started()
                body = self.archive(*entries)
                api.files = lambda *a, **k: Response(200, body)
                dst = tempdir(self)
                with self.assertRaisesRegex(ApiError, "BadArchive"):
                    sbx.files.download("/workspace", dst)
                self.assertEqual(os.listdir(outside), [])
        self.assertFalse(os.path.exists(os.path.join(os.path.dirname(dst), "escape")))


if __name__ == "__main__":
    unittest.main()
