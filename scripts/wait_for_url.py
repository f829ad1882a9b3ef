"""``wait_for_url.py URL -- COMMAND...``: wait until URL answers HTTP, then exec COMMAND.

The simulated cluster calls the web server's admission webhook for every pod it creates, so
under ``make run`` it starts only once the web server answers.
"""

from __future__ import annotations

import os
import sys
import time
import urllib.error
import urllib.request


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).close()
    except urllib.error.HTTPError:
        return True  # any HTTP answer means the server is up
    except OSError:
        return False
    return True


def main(argv: list[str]) -> None:
    if "--" not in argv or argv.index("--") != 1 or len(argv) < 3:
        sys.exit("usage: wait_for_url.py URL -- COMMAND [ARGS...]")
    url, command = argv[0], argv[2:]
    deadline = time.monotonic() + 120
    while not answers(url):
        if time.monotonic() > deadline:
            sys.exit(f"{url} did not answer within 120 s")
        time.sleep(0.5)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
