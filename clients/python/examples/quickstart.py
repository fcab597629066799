from dockside import Sandbox

# A Python session with its own Redis, in kubectl's current namespace; deleted when the block ends.
with Sandbox("dockside.dev/python:local", cpus=1, memory_mb=512, workspace_mb=64, services=["redis"]) as sbx:
    r = sbx.run(["python3", "-"], stdin="open('/workspace/n', 'w').write(str(6 * 7))\nprint('saved')\n", timeout=30)
    print(r.exit_code, r.stdout, end="")  # 0 saved
    sbx.pause(); sbx.resume()  # frozen in place with its processes, then thawed
    with sbx.checkpoint() as snap, sbx.restore_into(sbx.name + "-copy") as copy:
        print(snap.digest[:7], copy.run(["python3", "-c", "print(open('/workspace/n').read())"]).stdout, end="")
