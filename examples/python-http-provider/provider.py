#!/usr/bin/env python3
"""A bare-metal pool as a Corral infrastructure provider, over HTTP/JSON, standard library only.

The "generic bare-metal controller" of Cluster API's 2019 extension discussion: a static pool of
hosts, each given to one machine at a time. It implements corral.provider.v1 as
docs/provider-protocol.md describes it (POST /<Method>, canonical JSON, errors as
{"code", "message", "retryAfterSeconds"}), so Corral creates, polls and deletes its machines.

    python3 provider.py --listen 127.0.0.1:9000 --hosts 10.0.0.1,10.0.0.2 --state pool.json

then register it:

    kubectl apply -f - <<<'{"apiVersion": "corral.dev/v1alpha1", "kind": "ProviderPlugin",
      "metadata": {"name": "bare-metal"}, "spec": {"endpoint": "http://127.0.0.1:9000"}}'

A real pool would power the host on through its BMC and hand it the bootstrap data (PXE, a
config drive); this one records the bootstrap data and says the host is RUNNING after it has
been asked about it --boot-polls times. With --state, the pool survives a restart: machines are
keyed by the Machine's uid, so Corral's repeated CreateMachine finds them again.
"""

import argparse
import base64
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MACHINE_CONFIG_SCHEMA = {
    "type": "object",
    "properties": {
        "pool": {"type": "string", "description": "Which pool of hosts to take from."},
        "profile": {"type": "string", "enum": ["small", "medium", "large"],
                    "description": "The BIOS and RAID profile to apply."},
        "disks": {
            "type": "array",
            "description": "Disks to partition on the host.",
            "items": {
                "type": "object",
                "required": ["sizeGiB"],
                "properties": {
                    "name": {"type": "string"},
                    "sizeGiB": {"type": "integer", "minimum": 1},
                },
            },
        },
    },
}

# What a host's disks hold: a check the schema cannot express, made by ValidateConfig.
DISK_CAPACITY_GIB = 1000


class ProviderError(Exception):
    """A failed call: code is INVALID_CONFIG, NOT_FOUND, UNAVAILABLE or INTERNAL."""

    STATUS = {"INVALID_CONFIG": 400, "NOT_FOUND": 404, "UNAVAILABLE": 503, "INTERNAL": 500}

    def __init__(self, code, message, retry_after_seconds=0):
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_after_seconds = retry_after_seconds


class Pool:
    """The hosts and the machines on them, by Machine uid."""

    def __init__(self, hosts, faulty, state_file, boot_polls, contract, misbehave=""):
        self.misbehave = misbehave
        self.hosts = hosts
        self.faulty = faulty
        self.state_file = state_file
        self.boot_polls = boot_polls
        self.contract = contract
        self.lock = threading.Lock()
        self.machines = {}
        if state_file and os.path.exists(state_file):
            with open(state_file) as f:
                self.machines = json.load(f)

    def save(self):
        if not self.state_file:
            return
        temporary = self.state_file + ".tmp"
        with open(temporary, "w") as f:
            json.dump(self.machines, f)
        os.replace(temporary, self.state_file)

    # The calls, each taking and returning a message as a dict of canonical JSON.

    def GetInfo(self, request):
        return {
            "name": "bare-metal-pool",
            "version": "0.1.0",
            "contractVersions": [self.contract],
            "capabilities": ["ListMachines", "ValidateConfig"],
            "clusterConfigSchema": {"type": "object"},
            "machineConfigSchema": MACHINE_CONFIG_SCHEMA,
        }

    def ValidateConfig(self, request):
        config = request.get("config") or {}
        errors = []
        if request.get("kind") == "MACHINE":
            disks = config.get("disks") or []
            total = sum(disk.get("sizeGiB", 0) for disk in disks if isinstance(disk, dict))
            if total > DISK_CAPACITY_GIB:
                errors.append({
                    "field": "disks",
                    "message": "%d GiB of disks requested; the pool's hosts hold %d GiB"
                               % (total, DISK_CAPACITY_GIB),
                })
        return {"fieldErrors": errors}

    def ReconcileCluster(self, request):
        # A pool has no per-cluster infrastructure; its hosts are in one rack.
        return {"ready": True, "failureDomains": [{"name": "rack-1", "controlPlane": True}]}

    def DeleteCluster(self, request):
        return {"deleted": True}

    def CreateMachine(self, request):
        machine = request.get("machine", {})
        uid = machine.get("uid", "")
        if not uid:
            raise ProviderError("INVALID_CONFIG", "machine.uid is required")
        bootstrap = base64.b64decode(request.get("bootstrapData", ""))
        with self.lock:
            if uid in self.machines and self.misbehave != "duplicates":
                # Idempotent: the machine already made for this uid.
                return self.answer(self.machines[uid])
            key = uid
            if uid in self.machines:  # --misbehave duplicates: a second machine, kept apart
                key = "%s-%d" % (uid, len(self.machines))
            taken = {held["host"] for held in self.machines.values()}
            free = [host for host in self.hosts if host not in taken]
            if not free:
                raise ProviderError("UNAVAILABLE", "every host of the pool is taken", 5)
            held = {
                "host": free[0],
                "uid": uid,
                "name": machine.get("name", ""),
                "clusterName": machine.get("clusterName", ""),
                "state": "PENDING",
                "polls": 0,
                "bootstrapBytes": len(bootstrap),
                "bootstrapFormat": request.get("bootstrapFormat", ""),
            }
            self.machines[key] = held
            self.save()
            return self.answer(held)

    def GetMachine(self, request):
        with self.lock:
            held = self.find(request)
            if held["state"] == "PENDING":
                held["polls"] += 1
                if held["polls"] >= self.boot_polls:
                    if held["host"] in self.faulty:
                        held["state"] = "FAILED"
                        held["message"] = "host %s failed its power-on self test" % held["host"]
                    else:
                        held["state"] = "RUNNING"
                self.save()
            return self.answer(held)

    def DeleteMachine(self, request):
        with self.lock:
            try:
                held = self.find(request)
            except ProviderError:
                return {"deleted": True}
            del self.machines[held["uid"]]
            self.save()
            return {"deleted": True}

    def ListMachines(self, request):
        cluster = request.get("clusterName", "")
        with self.lock:
            return {
                "machines": [
                    self.answer(held)
                    for held in self.machines.values()
                    if not cluster or held["clusterName"] == cluster
                ]
            }

    def find(self, request):
        uid = request.get("machine", {}).get("uid", "")
        if uid in self.machines:
            return self.machines[uid]
        provider_id = request.get("providerId", "")
        for held in self.machines.values():
            if provider_id and self.provider_id(held) == provider_id:
                return held
        raise ProviderError("NOT_FOUND", "no machine with uid %s in the pool" % uid)

    @staticmethod
    def provider_id(held):
        return "baremetal://" + held["host"]

    def answer(self, held):
        return {
            "providerId": self.provider_id(held),
            "state": held["state"],
            "addresses": [
                {"type": "InternalIP", "address": held["host"]},
                {"type": "Hostname", "address": held["name"]},
            ],
            "failureDomain": "rack-1",
            "message": held.get("message", ""),
            "machineUid": held["uid"],
            "clusterName": held["clusterName"],
        }


def handler(pool):
    calls = {"GetInfo", "ValidateConfig", "ReconcileCluster", "DeleteCluster", "CreateMachine",
             "GetMachine", "DeleteMachine", "ListMachines"}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            method = self.path.strip("/")
            try:
                if method not in calls:
                    raise ProviderError("INTERNAL", "no method %r" % method)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b"{}"
                try:
                    request = json.loads(body or b"{}")
                except ValueError as error:
                    raise ProviderError("INTERNAL", "the body is not JSON: %s" % error)
                answer = getattr(pool, method)(request)
                if pool.misbehave == "garbage" and method == "GetMachine":
                    self.send_raw(200, b"<html>not the message</html>")
                    return
                self.send(200, answer)
            except ProviderError as error:
                status = 501 if method not in calls else ProviderError.STATUS[error.code]
                self.send(status, {
                    "code": error.code,
                    "message": error.message,
                    "retryAfterSeconds": error.retry_after_seconds,
                })

        def send(self, status, message):
            self.send_raw(status, json.dumps(message).encode())

        def send_raw(self, status, body):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):
            pass

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:9000", help="host:port; port 0 picks one")
    parser.add_argument("--hosts", default="10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4",
                        help="the pool's hosts, comma-separated")
    parser.add_argument("--faulty", default="",
                        help="hosts that never boot (their machines FAILED), comma-separated")
    parser.add_argument("--state", help="a JSON file that keeps the pool across restarts")
    parser.add_argument("--boot-polls", type=int, default=1,
                        help="GetMachine calls before a new machine is RUNNING")
    parser.add_argument("--contract", default="v1", help="the contract version to announce")
    parser.add_argument("--misbehave", choices=["", "duplicates", "garbage"], default="",
                        help="break the contract, for `corral provider test`: a second machine "
                             "for a repeated CreateMachine, or GetMachine answers that are not JSON")
    args = parser.parse_args()
    host, port = args.listen.rsplit(":", 1)
    pool = Pool([h for h in args.hosts.split(",") if h],
                {h for h in args.faulty.split(",") if h}, args.state, args.boot_polls,
                args.contract, args.misbehave)
    server = ThreadingHTTPServer((host, int(port)), handler(pool))
    print("listening on http://%s:%d" % server.server_address[:2], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
