"""The README's "Run it as a service" commands run as written: the server starts and prints its token,
the page's address opens the page and its token works, the curl example gets the CLI's solve JSON.

They sit in ```sh blocks (tests/docs/test_readme_commands.py runs the ```bash ones through the CLI in
process, where a server would never return); this test starts the server as a subprocess on a free
port instead of 8000, and stops it.
"""

import json
import re
import shlex
import sys
import time
from urllib.parse import urlsplit

import pytest

from tests.support.common import ROOT
from tests.support.service_server import START_TIMEOUT_SECONDS, Server, free_port

README = (ROOT / "README.md").read_text()
SECTION = README.split("## Run it as a service", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"```sh\n(.*?)```", SECTION, flags=re.S)


def test_the_section_shows_the_two_commands_and_a_curl_example():
    assert len(BLOCKS) >= 2
    start, open_page = BLOCKS[0].strip().splitlines()
    assert start.startswith(".venv/bin/planopt serve") and "xdg-open" in open_page


@pytest.mark.slow  # 7 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_the_readme_commands_start_the_service_open_the_page_and_solve(tmp_path):
    start, open_page = BLOCKS[0].strip().splitlines()
    args = shlex.split(start)
    port = free_port()
    args = [sys.executable, "-m", "planopt.cli", *args[1:]]
    args[args.index("--port") + 1] = str(port)
    server = Server(tmp_path, token=None)
    server.port = port
    import os
    import subprocess
    log = open(server.log, "ab")
    env = {k: v for k, v in os.environ.items() if k != "PLANOPT_TOKEN"}
    server.process = subprocess.Popen(args, cwd=tmp_path, stdout=log, stderr=log, start_new_session=True, env=env)
    server._log = log
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            try:
                if server.request("GET", "/api/health", token=None)[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline and server.process.poll() is None, server.log.read_text()
            time.sleep(0.2)
        token = re.search(r"bearer token \(printed once\): (\S+)", server.log.read_text())[1]
        url = urlsplit(shlex.split(open_page)[1].replace("TOKEN", token).replace(":8000", f":{port}"))
        status, page = server.request("GET", url.path, token=None)
        assert status == 200 and "<title>planopt" in page
        assert url.fragment == f"token={token}"
        server.token = token
        assert server.call("GET", "/api/instances")
        # the curl example, sent as curl would send it
        curl = shlex.split(BLOCKS[1].strip().replace("TOKEN", token))
        headers = dict(h.split(": ", 1) for h in (curl[i + 1] for i, a in enumerate(curl) if a == "-H"))
        body = curl[curl.index("-d") + 1]
        target = urlsplit(curl[-1])
        status, out = server.request("POST", target.path, raw=body.encode(), token=None,
                                     headers={k.lower(): v for k, v in headers.items()})
        assert status == 200 and out["status"] == "optimal" and out["plan"], out
        assert json.loads(body)["budget_usd"] >= out["metrics"]["cost_usd"]
    finally:
        server.stop()
