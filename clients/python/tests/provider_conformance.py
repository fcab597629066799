"""The conformance of DocksideSandbox to the two surfaces it is written for (dockside/provider.py): every
method, its results and its per-file errors. Run against the stub (tests/test_provider.py) and against the real
agent (e2e/test_client_e2e.py); provider is started, its working directory writable."""

import asyncio


def check_provider(test, provider):
    """Exercises every method of provider (a started DocksideSandbox) with test's asserts."""
    test.assertTrue(provider.id)

    # LangChain deep agents: execute, upload_files, download_files, and their coroutines.
    res = provider.execute("echo out; echo err >&2; exit 3")
    test.assertEqual((res.output, res.exit_code, res.truncated), ("out\nerr\n", 3, False))
    res = provider.execute("head -c 200000 /dev/zero | tr '\\0' x")
    test.assertEqual((res.exit_code, res.truncated, res.output[:3]), (0, True, "xxx"))
    test.assertTrue(res.output.endswith("[output cut at 100000 characters]"))
    res = provider.execute("sleep 300", timeout=2)
    test.assertIsNone(res.exit_code)
    test.assertIn("ran past its 2s timeout", res.output)

    ups = provider.upload_files([("/workspace/up/a.txt", b"A\x00B"), ("relative.txt", b"x")])
    test.assertEqual([(u.path, u.error) for u in ups],
                     [("/workspace/up/a.txt", None), ("relative.txt", "invalid_path")])
    downs = provider.download_files(["/workspace/up/a.txt", "/workspace/up/missing"])
    test.assertEqual([(d.path, d.content, d.error) for d in downs],
                     [("/workspace/up/a.txt", b"A\x00B", None), ("/workspace/up/missing", None, "file_not_found")])
    test.assertEqual(asyncio.run(provider.aexecute("echo async")).output, "async\n")
    test.assertIsNone(asyncio.run(provider.aupload_files([("/workspace/up/b.txt", b"b")]))[0].error)
    test.assertEqual(asyncio.run(provider.adownload_files(["/workspace/up/b.txt"]))[0].content, b"b")

    # The OpenAI Agents SDK's sandbox sessions: exec, read, write, snapshot, restore.
    async def session():
        res = await provider.exec("echo", "hi")
        test.assertEqual((res.stdout, res.stderr, res.exit_code, res.ok()), (b"hi\n", b"", 0, True))
        res = await provider.exec("sh", "-c", "exit 4", shell=False)
        test.assertEqual(res.exit_code, 4)
        await provider.write("notes/n.txt", b"kept")
        test.assertEqual((await provider.read("notes/n.txt")).read(), b"kept")
        before = provider.id
        snap = await provider.snapshot()
        await provider.write("notes/n.txt", b"changed after the snapshot")
        await provider.restore(snap)
        test.assertNotEqual(provider.id, before, "a new Sandbox took the old one's place")
        test.assertEqual((await provider.read("notes/n.txt")).read(), b"kept")
        return snap

    return asyncio.run(session())
