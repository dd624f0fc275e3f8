"""A real OTLP/HTTP receiver for troupe's telemetry tests: the OpenTelemetry project's own test
sink (oteltest's HttpSink, which decodes OTLP protobuf and JSON with opentelemetry-proto), on a
free loopback port. Each request it receives is appended to the file named on the command line
as one JSON line: {"signal": "traces"|"metrics"|"logs", "request": <the decoded request>}.
It prints its port on stdout once it listens, then serves until killed."""

import base64
import json
import logging
import sys
import threading
import time

from google.protobuf.json_format import MessageToDict
from oteltest.sink import HttpSink

OUT = sys.argv[1]
LOCK = threading.Lock()


IDS = ("traceId", "spanId", "parentSpanId")


def hex_ids(value):
    """OTLP/JSON spells trace and span ids in hex; protobuf's JSON mapping in base64. The
    requests are written down the way OTLP/JSON spells them, whichever encoding they came in."""
    if isinstance(value, dict):
        return {
            k: base64.b64decode(v).hex() if k in IDS and isinstance(v, str) else hex_ids(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [hex_ids(v) for v in value]
    return value


class Listener:
    def _write(self, signal, request, headers):
        decoded = MessageToDict(request)
        if not headers.get("Content-Type", "").lower().startswith("application/json"):
            decoded = hex_ids(decoded)
        line = json.dumps({"signal": signal, "request": decoded})
        with LOCK, open(OUT, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def handle_trace(self, request, headers):
        self._write("traces", request, headers)

    def handle_metrics(self, request, headers):
        self._write("metrics", request, headers)

    def handle_logs(self, request, headers):
        self._write("logs", request, headers)


class Sink(HttpSink):
    """HttpSink with HTTP's header names read case-insensitively (the sink looks up
    `Content-Type` exactly; HTTP/1.1 clients may send `content-type`)."""

    def handle_trace(self, post_data, headers):
        super().handle_trace(post_data, {k.title(): v for k, v in headers.items()})

    def handle_metrics(self, post_data, headers):
        super().handle_metrics(post_data, {k.title(): v for k, v in headers.items()})

    def handle_logs(self, post_data, headers):
        super().handle_logs(post_data, {k.title(): v for k, v in headers.items()})


sink = Sink(Listener(), logging.getLogger("otlp-sink"), port=0)
sink.start()
for _ in range(500):
    if sink.httpd is not None:
        break
    time.sleep(0.01)
if sink.httpd is None:
    sys.exit("the OTLP sink did not start")
print(sink.httpd.server_address[1], flush=True)
# The test process holds the other end of stdin: when it ends, so does the sink.
sys.stdin.read()

