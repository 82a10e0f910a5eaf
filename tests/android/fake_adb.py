"""A fake ``adb`` for the ADB backend's tests: a test copies it into a folder as an executable ``adb`` (with a
``#!`` line naming this Python) next to a ``fake_adb.json`` that says how to answer.

It appends its arguments (after ``adb``) as one JSON line to the config's ``log`` file, then answers:
``fail`` (``{"rc": 1, "stderr": "..."}``) for every command when set; after ``sleep`` seconds when set; the
config's ``dump`` (and uiautomator's closing line) for ``exec-out uiautomator dump /dev/tty``; and for any other
command the ``outputs`` entry keyed by its words after ``-s SERIAL`` joined by spaces (``"shell wm size"``), or
nothing.
"""

import json
import pathlib
import sys
import time


def main() -> int:
    config = json.loads((pathlib.Path(sys.argv[0]).resolve().parent / "fake_adb.json").read_text())
    args = sys.argv[1:]
    with open(config["log"], "a", encoding="utf-8") as log:
        log.write(json.dumps(args) + "\n")
    if config.get("sleep"):
        time.sleep(config["sleep"])
    if config.get("fail"):
        sys.stderr.write(config["fail"]["stderr"] + "\n")
        return config["fail"]["rc"]
    words = args[2:] if args[:1] == ["-s"] else args
    if words == ["exec-out", "uiautomator", "dump", "/dev/tty"] and config.get("dump") is not None:
        sys.stdout.write(config["dump"] + "UI hierchary dumped to: /dev/tty\n")
        return 0
    sys.stdout.write(config.get("outputs", {}).get(" ".join(words), ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
