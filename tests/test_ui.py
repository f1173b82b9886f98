"""make ui and make ui-stop: the MLflow UI's whole process group ends on Ctrl-C and on ui-stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fairsim.experiment import ui
from fairsim.experiment.ui_check import free_port


def members(group: int) -> list[int]:
    """The processes of a process group (Linux: /proc/<pid>/stat's fifth field)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def wait_for(condition, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.5)


def test_ui_stop_ends_every_process_of_the_recorded_group(tmp_path):
    """A stand-in for the UI: a process group of a parent and a child that outlives it, as
    MLflow's huey consumers outlive its server."""
    leader = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, time; subprocess.Popen(['sleep', '300']); time.sleep(300)"],
        start_new_session=True,
    )
    threading.Thread(target=leader.wait, daemon=True).start()  # reaped as make ui's launcher reaps the UI
    wait_for(lambda: len(members(leader.pid)) == 2, timeout=30)
    (tmp_path / ui.PID_FILE).write_text(f"{leader.pid}\n")
    out = subprocess.run(
        [sys.executable, "-m", "fairsim.experiment.ui", str(tmp_path), "--stop"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout == f"stopped the MLflow UI over {tmp_path} (process group {leader.pid})\n"
    leader.wait(timeout=30)
    assert members(leader.pid) == [] and not (tmp_path / ui.PID_FILE).exists()
    again = subprocess.run(
        [sys.executable, "-m", "fairsim.experiment.ui", str(tmp_path), "--stop"], capture_output=True, text=True
    )
    assert again.stdout == f"no MLflow UI serves {tmp_path}\n"


@pytest.mark.slow
def test_ctrl_c_ends_every_process_of_the_mlflow_ui(tmp_path):
    """The real UI (some ten processes); Ctrl-C reaches the foreground group: make and this launcher."""
    launcher = subprocess.Popen(
        [sys.executable, "-m", "fairsim.experiment.ui", str(tmp_path), "--port", str(free_port())],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    pid_file = tmp_path / ui.PID_FILE
    wait_for(lambda: pid_file.is_file() and pid_file.read_text().strip())
    group = int(pid_file.read_text())
    wait_for(lambda: len(members(group)) >= 5)  # the server, its worker, the job runner and its consumers
    os.killpg(launcher.pid, signal.SIGINT)
    assert launcher.wait(timeout=120) == 0
    assert members(group) == [] and not pid_file.exists()
