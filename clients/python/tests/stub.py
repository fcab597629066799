"""An in-memory stand-in for dockside.api.Api: objects kept in a dict, and an agent of the test's own that
acts each time the client watches, as the real agent acts while the client waits."""

import copy
import itertools
import time


class StubApi:
    def __init__(self, agent=None):
        self.objects = {}  # (plural, name) -> object
        self.calls = []  # (verb, plural, name, body), in order
        self.agent = agent or (lambda api, plural, obj: None)
        self._seq = itertools.count(1)

    def _stamp(self, obj):
        obj["metadata"]["resourceVersion"] = str(next(self._seq))

    def get(self, namespace, plural, name):
        obj = self.objects.get((plural, name))
        return copy.deepcopy(obj) if obj else None

    def create(self, namespace, plural, body):
        obj = copy.deepcopy(body)
        meta = obj["metadata"]
        meta.setdefault("name", meta.get("generateName", "x-") + str(next(self._seq)))
        meta.update(namespace=namespace, uid=f"uid-{meta['name']}", generation=1)
        obj.setdefault("status", {"observedGeneration": 0})
        self._stamp(obj)
        self.objects[(plural, meta["name"])] = obj
        self.calls.append(("create", plural, meta["name"], body))
        return copy.deepcopy(obj)

    def patch(self, namespace, plural, name, body):
        obj = self.objects[(plural, name)]
        obj["spec"].update(body.get("spec", {}))
        obj["metadata"]["generation"] += 1
        self._stamp(obj)
        self.calls.append(("patch", plural, name, body))
        return copy.deepcopy(obj)

    def delete(self, namespace, plural, name, uid=None):
        self.calls.append(("delete", plural, name, uid))
        obj = self.objects.get((plural, name))
        if obj and (uid is None or obj["metadata"]["uid"] == uid):
            del self.objects[(plural, name)]

    def watch(self, namespace, plural, name, resource_version, seconds):
        obj = self.objects.get((plural, name))
        if obj is None:
            return
        before = copy.deepcopy(obj)
        self.agent(self, plural, obj)
        if (plural, name) not in self.objects:
            yield "DELETED", before
        elif obj != before:
            self._stamp(obj)
            yield "MODIFIED", copy.deepcopy(obj)
        else:
            time.sleep(0.01)  # nothing happened: the real watch would wait

    def verbs(self, plural):
        return [(verb, name) for verb, p, name, _ in self.calls if p == plural]


def set_condition(obj, kind, status, reason="", message=""):
    conditions = obj.setdefault("status", {}).setdefault("conditions", [])
    conditions[:] = [c for c in conditions if c["type"] != kind]
    conditions.append({"type": kind, "status": status, "reason": reason, "message": message})


def observe(obj):
    obj["status"]["observedGeneration"] = obj["metadata"]["generation"]


def healthy_agent(api, plural, obj):
    """Starts, pauses and resumes Sandboxes as asked, at once; Executions and Checkpoints are left to tests."""
    if plural != "sandboxes":
        return
    observe(obj)
    is_paused = obj["spec"].get("lifecycle") == "Paused"
    set_condition(obj, "Paused", "True" if is_paused else "False", "Paused" if is_paused else "Running")
    set_condition(obj, "Ready", "False" if is_paused else "True", "Paused" if is_paused else "Running")
    obj["status"]["phase"] = "Paused" if is_paused else "Running"
