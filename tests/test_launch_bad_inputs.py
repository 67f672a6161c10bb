"""Every bad input of `parallel-keras launch` and `notebook_launcher`, as a table.

Each row is what a user typed, and the parts the message must hold: the
rule, what was received, and the fix (naming the flag or path typed). Each
case also checks that nothing started and no file changed.
"""

import hashlib
import os
import re
import socket
import subprocess
import sys
import threading

import psutil
import pytest

import parallel_keras
from parallel_keras.cli import main
from parallel_keras.multi_worker import launch as launch_lib

SCRIPTS = os.path.join(os.path.dirname(__file__), "multi_worker_scripts")
ECHO = os.path.join(SCRIPTS, "echo.py")
SLURM_ENV = {
    "SLURM_PROCID": "0",
    "SLURM_STEP_NUM_TASKS": "2",
    "SLURM_STEP_NODELIST": "localhost",
    "SLURM_STEP_TASKS_PER_NODE": "2",
}

# id, launch arguments, environment, fragments the message must contain.
CASES = [
    ("devices-per-worker-0", ["--workers", "2", "--devices-per-worker", "0", "{script}"], {},
     ["--devices-per-worker must be a positive integer", "Received: --devices-per-worker 0",
      "Pass e.g. --devices-per-worker 2"]),
    ("devices-per-worker-text", ["--workers", "2", "--devices-per-worker", "two", "{script}"], {},
     ["--devices-per-worker must be a positive integer", "Received: --devices-per-worker two"]),
    ("collective-timeout-negative", ["--workers", "2", "--collective-timeout=-5", "{script}"], {},
     ["--collective-timeout must be a positive number", "Received: --collective-timeout -5",
      "Pass e.g. --collective-timeout 60"]),
    ("startup-timeout-0", ["--workers", "2", "--startup-timeout", "0", "{script}"], {},
     ["--startup-timeout must be a positive number", "Received: --startup-timeout 0",
      "Pass e.g. --startup-timeout 120"]),
    ("slurm-port-base-0", ["--slurm", "--slurm-port-base", "0", "{script}"], SLURM_ENV,
     ["--slurm-port-base must be a positive integer", "Received: --slurm-port-base 0"]),
    ("missing-script", ["--workers", "2", "{missing}"], {},
     ["The training script must exist before any worker starts",
      "Received: '{missing}', which is not a file", "Check the path"]),
    ("min-workers-above-workers", ["--workers", "3", "--min-workers", "4", "{script}"], {},
     ["--min-workers must be between 1 and --workers",
      "Received: --min-workers 4 with --workers 3", "Pass --min-workers at most 3"]),
    ("min-workers-0", ["--workers", "3", "--min-workers", "0", "{script}"], {},
     ["--min-workers must be between 1 and --workers", "Received: --min-workers 0"]),
    ("min-workers-with-hosts",
     ["--hosts", "127.0.0.1:1,127.0.0.1:2", "--index", "0", "--min-workers", "1", "{script}"],
     {}, ["--min-workers applies to a group on this machine", "with hosts",
          "Use --workers N --min-workers M"]),
    ("workers-0", ["--workers", "0", "{script}"], {},
     ["workers must be an integer >= 1", "Received: workers=0"]),
    ("index-with-workers", ["--workers", "2", "--index", "1", "{script}"], {},
     ["index is only meaningful with hosts", "index=1", "Drop --index"]),
    ("host-without-port", ["--hosts", "127.0.0.1:1,nohost", "--index", "0", "{script}"], {},
     ["Each host must be written host:port", "'nohost'", "--hosts 10.0.0.1:2222"]),
    ("hosts-without-index", ["--hosts", "127.0.0.1:1,127.0.0.1:2", "{script}"], {},
     ["index must say which", "Received: index=None for 2 hosts", "--index between 0 and 1"]),
    ("index-out-of-range", ["--hosts", "127.0.0.1:1,127.0.0.1:2", "--index", "2", "{script}"], {},
     ["index must say which", "Received: index=2 for 2 hosts", "--index between 0 and 1"]),
    ("max-restarts-negative", ["--workers", "2", "--max-restarts=-1", "{script}"], {},
     ["max_restarts must be an integer >= 0", "Received: max_restarts=-1"]),
    ("port-in-use", ["--hosts", "127.0.0.1:{busy},127.0.0.1:1", "--index", "0", "{script}"], {},
     ["needs its port free", "Received: port {busy} of 127.0.0.1:{busy}", "is in use",
      "give this worker another port in --hosts"]),
    ("slurm-missing-nodelist", ["--slurm", "{script}"],
     {k: v for k, v in SLURM_ENV.items() if k != "SLURM_STEP_NODELIST"},
     ["--slurm reads the cluster from the environment srun gives",
      "Received: no SLURM_STEP_NODELIST", "through `srun`"]),
    ("slurm-outside-slurm", ["--slurm", "{script}"], {},
     ["Received: no SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST, "
      "SLURM_STEP_TASKS_PER_NODE"]),
    ("slurm-with-index", ["--slurm", "--index", "1", "{script}"], SLURM_ENV,
     ["Slurm says which task this is", "Received: index=1", "Drop --index"]),
    ("workers-and-hosts", ["--workers", "2", "--hosts", "a:1", "{script}"], {},
     ["not allowed with argument --workers"]),
]


def snapshot(folder):
    return {
        os.path.relpath(os.path.join(root, name), folder): hashlib.sha256(
            open(os.path.join(root, name), "rb").read()
        ).hexdigest()
        for root, _, names in os.walk(folder)
        for name in names
    }


@pytest.fixture
def user_folder(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(open(ECHO).read())
    (tmp_path / "model.keras").write_bytes(b"the user's model")
    return tmp_path


@pytest.mark.parametrize(
    "argv, environment, fragments", [case[1:] for case in CASES], ids=[c[0] for c in CASES]
)
def test_launch_bad_input(argv, environment, fragments, user_folder, monkeypatch, capsys):
    busy = socket.socket()
    busy.bind(("", 0))
    busy.listen()
    values = {
        "script": str(user_folder / "train.py"),
        "missing": str(user_folder / "trian.py"),
        "busy": str(busy.getsockname()[1]),
    }
    for name in [name for name in os.environ if name.startswith("SLURM_")]:
        monkeypatch.delenv(name)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(main, "SUBCOMMANDS", {"launch": "parallel_keras.cli.launch"})
    before = snapshot(user_folder)
    try:
        args = main.parse_flags(
            ["parallel-keras", "launch", *(part.format(**values) for part in argv)]
        )
        code = main.main(args)
    except SystemExit as exit_:  # argparse: usage error.
        code = exit_.code
    finally:
        busy.close()
    message = " ".join(capsys.readouterr().err.split())
    assert code == 2, message
    for fragment in fragments:
        assert fragment.format(**values) in message, message
    assert snapshot(user_folder) == before
    assert not psutil.Process().children(recursive=True)


def _closure_over_lock():
    lock = threading.Lock()

    def train():
        with lock:
            return 1

    return train


# id, (function, args, keyword arguments), error, fragments.
API_CASES = [
    ("closure-over-a-lock", lambda: (_closure_over_lock(), (), {}), TypeError,
     ["must be picklable", "variable 'lock' captured by function",
      "cannot pickle '_thread.lock'", "Create it inside the function"]),
    ("argument-a-lock", lambda: (print, (threading.Lock(),), {}), TypeError,
     ["must be picklable", "Received: args[0] = lock", "Create it inside"]),
    ("not-callable", lambda: ("train", (), {}), TypeError,
     ["needs a function", "Received: function='train'",
      "notebook_launcher(train, args=(...))"]),
    ("devices-per-worker-0", lambda: (print, (), {"devices_per_worker": 0}), ValueError,
     ["devices_per_worker must be a positive integer",
      "Received: devices_per_worker=0", "devices_per_worker=2"]),
]


@pytest.mark.parametrize(
    "make, error, fragments", [case[1:] for case in API_CASES], ids=[c[0] for c in API_CASES]
)
def test_notebook_launcher_bad_input(make, error, fragments):
    function, args, kwargs = make()
    with pytest.raises(error) as raised:
        parallel_keras.notebook_launcher(function, args=args, **kwargs)
    message = " ".join(str(raised.value).split())
    for fragment in fragments:
        assert fragment in message, message
    assert not psutil.Process().children(recursive=True)


@pytest.mark.parametrize(
    "kwargs, fragments",
    [
        (dict(save_freq=0), ["save_freq must be 'epoch' or a positive number of batches",
                             "Received: save_freq=0", "save_freq=10"]),
        (dict(save_freq="batch"), ["Received: save_freq='batch'"]),
    ],
    ids=["save-freq-0", "save-freq-text"],
)
def test_backup_bad_input(tmp_path, kwargs, fragments):
    with pytest.raises(ValueError) as raised:
        parallel_keras.BackupAndRestore(tmp_path / "backup", **kwargs)
    for fragment in fragments:
        assert fragment in str(raised.value)
    assert not (tmp_path / "backup").exists()


def test_peer_that_never_starts_bounds_the_start_up_naming_it(tmp_path):
    """`--hosts ... --index 1` while worker 0 never comes up: no hang."""
    hosts = ",".join(f"127.0.0.1:{port}" for port in launch_lib.pick_loopback_ports(2))
    (tmp_path / "out").mkdir()
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    process = subprocess.run(
        [sys.executable, "-c",
         "from parallel_keras.cli import main; "
         "main.SUBCOMMANDS = {'launch': 'parallel_keras.cli.launch'}; main.run()",
         "launch", "--hosts", hosts, "--index", "1", "--startup-timeout", "10",
         os.path.join(SCRIPTS, "train.py"), "--out", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=240,
    )
    assert process.returncode != 0
    worker_0 = hosts.split(",")[0]
    message = " ".join(process.stdout.split())
    assert "every worker must start within the start-up timeout of 10 s" in message
    assert f"Received: worker 1 waited, and worker 0 ({worker_0}) never arrived" in message
    assert "raise --startup-timeout" in message
    assert os.listdir(tmp_path / "out") == []
    alive = [p.pid for p in psutil.process_iter(["cmdline"])
             if str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert not alive
