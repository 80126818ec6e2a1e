#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real Slurm cluster on loopback: stock preemption against preempt/topopreempt.

Writes slurm.conf, gres.conf, topology.conf, topopreempt.conf and a munge key into a private
temporary directory, starts munged, slurmctld and 8 slurmd (n0..n7 on 127.0.0.1, one port
each) with private sockets, state, spool and log directories, and never reads or writes the
system's Slurm or munge configuration. Each scenario fills the cluster with low-priority
preemptible `sleep` jobs, then submits one high-priority job with a topology request. Every
scenario runs twice on identical states: with Slurm's stock preempt/partition_prio (slurmdbd
is kept out of CI, hence no preempt/qos) and with preempt/topopreempt.

Asserts: under topopreempt Slurm preempted exactly the plan the plugin logged for that state
(and verify_plan accepted it), the preemptor started inside its requirement, our victim cost
is never above stock's, and stock is worse on at least one scenario. Everything started here
is stopped on exit, even on failure; a final check fails if any of our processes survive.

Usage: run_scenarios.py --plugin-dir build/slurm/plugin [--results results.md] [--keep]
Needs root (fake GPUs are character devices made with mknod). Python standard library only.
"""
import argparse
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

NODES = [f"n{i}" for i in range(8)]
SWITCH_OF = {node: ("s0" if i < 4 else "s1") for i, node in enumerate(NODES)}
GPUS_PER_SOCKET = 4
CORES_PER_SOCKET = 8
TIERS = {"low": 1, "mid": 4, "high": 10}
PRIORITY_OFFSET = 1.0  # topopreempt.conf: cost of a victim = its partition's tier + 1
MARKER = "TOPOPREEMPT_SLURM_TEST"


def log(message):
    print(f"[scenarios {time.monotonic() - START:6.1f}s] {message}", flush=True)


START = time.monotonic()

# ---- scenarios --------------------------------------------------------------------------
# A fill is a list of (name, node, partition, gpus), submitted in order; Slurm's first fit
# gives each job the lowest free GPU indexes of its node, so the layout is the same in both
# runs (checked). `holes` are fill jobs cancelled afterwards, which scatters the free GPUs.


def full_node(node, pattern):
    """pattern: list of (partition, gpus) filling the node's 8 GPUs in order; gpus is a count
    (`--gpus=N`) or the literal "1/socket" (`--gpus-per-socket=1 --sockets-per-node=2`)."""
    jobs = []
    for k, (partition, gpus) in enumerate(pattern):
        if gpus == "1/socket":
            args = ["--gpus-per-socket=1", "--sockets-per-node=2"]
            label = "2s"
        else:
            args = [f"--gpus={gpus}"]
            label = str(gpus)
        jobs.append((f"{node}-{k}-{partition}{label}", node, partition, args))
    return jobs


MID_MID = [("mid", 4), ("mid", 4)]
SOCKET_REQUEST = "`--gpus-per-socket=4 --sockets-per-node=1 -N1`"
SOCKET_ARGS = ["-N1", "--gpus-per-socket=4", "--sockets-per-node=1", "--cpus-per-gpu=1"]


def scenario_socket():
    # Victim costs (tier + 1): low 2, mid 5. Freeing a socket costs 4 lows (8) on n0 and n1,
    # 3 lows (6) on n2's second socket, or one mid (5) anywhere.
    fill = full_node("n0", [("low", 1)] * 4 + [("mid", 4)])
    fill += full_node("n1", [("low", 1)] * 8)
    fill += full_node("n2", [("mid", 4)] + [("low", 1)] * 4)
    for node in NODES[3:]:
        fill += full_node(node, MID_MID)
    holes = ["n2-2-low1"]
    return {
        "name": "socket",
        "request": SOCKET_REQUEST,
        "args": SOCKET_ARGS,
        "requirement": "socket",
        "fill": fill,
        "holes": holes,
    }


def scenario_node():
    fill = full_node("n0", [("low", 1)] * 8)
    fill += full_node("n1", [("mid", 4)] + [("low", 1)] * 4)
    for node in NODES[2:]:
        fill += full_node(node, MID_MID)
    holes = ["n0-0-low1", "n0-1-low1", "n1-3-low1", "n1-4-low1"]
    return {
        "name": "node",
        "request": "`-N1 --gpus=6`",
        "args": ["-N1", "--gpus=6", "--cpus-per-gpu=1"],
        "requirement": "node",
        "fill": fill,
        "holes": holes,
    }


def scenario_switch():
    fill = []
    for node in NODES[:4]:
        fill += full_node(node, [("mid", 4)] + [("low", 1)] * 4)
    for node in NODES[4:]:
        fill += full_node(node, [("mid", 4)] + [("low", 1)] * 4 if node in ("n4", "n5") else MID_MID)
    holes = ["n4-1-low1", "n4-2-low1", "n5-1-low1", "n5-2-low1"]
    return {
        "name": "switch",
        "request": "`--switches=1 -N2 --gpus-per-node=4`",
        "args": ["-N2", "--switches=1", "--gpus-per-node=4", "--cpus-per-gpu=1"],
        "requirement": "switch",
        "fill": fill,
        "holes": holes,
    }


def scenario_unsatisfiable():
    # On every node a high-tier job (not a victim for a high-tier preemptor) holds one GPU of
    # each socket, wherever Slurm puts the rest: no victim set frees 4 GPUs of one socket.
    pattern = [("high", "1/socket")] + [("low", 1)] * 6
    fill = []
    for node in NODES:
        fill += full_node(node, pattern)
    return {
        "name": "unsatisfiable",
        "request": SOCKET_REQUEST + ", a high-tier job on every socket",
        "args": SOCKET_ARGS,
        "requirement": "socket",
        "fill": fill,
        "holes": [],
        "expect_pending": True,
    }


def scenario_no_n():
    # Most users never pass -N: max_nodes 0 means "not given", planned on min_nodes (1) nodes.
    scenario = scenario_node()
    scenario.update(name="no-N", request="`--gres=gpu:6` (no `-N`)", args=["--gres=gpu:6", "--cpus-per-gpu=1"])
    return scenario


def scenario_exclusive():
    # -N1 --gpus=4 --exclusive: cons_tres starts it only on an empty node. One low job (cost 2)
    # would free 4 GPUs on n1 but leaves a mid job there; emptying n0 costs 4 (two low jobs).
    fill = full_node("n0", [("low", 4), ("low", 4)])
    fill += full_node("n1", [("low", 4), ("mid", 4)])
    for node in NODES[2:]:
        fill += full_node(node, MID_MID)
    return {
        "name": "exclusive",
        "request": "`-N1 --gpus=4 --exclusive`",
        "args": ["-N1", "--gpus=4", "--exclusive", "--cpus-per-gpu=1"],
        "requirement": "node",
        "fill": fill,
        "holes": [],
    }


def scenario_backfill():
    # The tier scenario of the node case, with the main scheduling loop off (sched_interval=-1)
    # and backfill every second: backfill is the only thread that preempts and starts jobs, and
    # its _start_job sets exc_node_bitmap (to its reserved nodes, here none). With `defer` and a
    # long sched_interval instead, the main scheduler, woken by the victims' ends, sometimes
    # started the job after backfill had preempted for it, and the check below was a race.
    scenario = scenario_node()
    scenario.update(name="backfill", request="`-N1 --gpus=6`, started by backfill",
                    sched_params="sched_interval=-1,bf_interval=1", via_backfill=True)
    return scenario


SCENARIOS = [scenario_socket, scenario_node, scenario_no_n, scenario_switch, scenario_exclusive,
             scenario_backfill, scenario_unsatisfiable]

# ---- the cluster ------------------------------------------------------------------------


class Cluster:
    def __init__(self, root, plugin_dir, base_port):
        self.root = root
        self.plugin_dir = plugin_dir
        self.base_port = base_port
        self.processes = {}  # name -> Popen (each its own process group)
        self.env = dict(os.environ)
        self.env["SLURM_CONF"] = os.path.join(root, "etc", "slurm.conf")
        self.env[MARKER] = root
        for key in list(self.env):
            if key.startswith("SLURM_") and key != "SLURM_CONF":
                del self.env[key]
        self.plan_log = None
        self.nodes = NODES  # the slurmd to start; a subclass may describe another cluster

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def write_files(self):
        for sub in ("etc", "dev", "munge", "state", "log", "run", "spool"):
            os.makedirs(self.path(sub), exist_ok=True)
        for g in range(2 * GPUS_PER_SOCKET):
            os.mknod(self.path("dev", f"gpu{g}"), 0o666 | 0o020000, os.makedev(1, 3))
        key = self.path("munge", "munge.key")
        with open(key, "wb") as out:
            out.write(secrets.token_bytes(1024))
        os.chmod(key, 0o400)
        os.chmod(self.path("munge"), 0o700)
        gpu_last = 2 * GPUS_PER_SOCKET - 1
        with open(self.path("etc", "gres.conf"), "w") as out:
            out.write(f"NodeName=n[0-7] Name=gpu File={self.path('dev')}/gpu[0-{GPUS_PER_SOCKET - 1}] "
                      f"Cores=0-{CORES_PER_SOCKET - 1}\n")
            out.write(f"NodeName=n[0-7] Name=gpu File={self.path('dev')}/gpu[{GPUS_PER_SOCKET}-{gpu_last}] "
                      f"Cores={CORES_PER_SOCKET}-{2 * CORES_PER_SOCKET - 1}\n")
        with open(self.path("etc", "topology.conf"), "w") as out:
            out.write("SwitchName=s0 Nodes=n[0-3]\nSwitchName=s1 Nodes=n[4-7]\n"
                      "SwitchName=top Switches=s[0-1]\n")

    def write_slurm_conf(self, preempt_type, plan_log, sched_params=None, time_limit_ms=2000):
        self.plan_log = plan_log
        with open(self.path("etc", "topopreempt.conf"), "w") as out:
            out.write("# preempt/topopreempt for the loopback scenarios\n"
                      "solver = branch_and_bound\ncost_model = priority_weighted\n"
                      f"priority_offset = {PRIORITY_OFFSET:g}\ntime_limit_ms = {time_limit_ms}\n"
                      f"plan_log = {plan_log}\n")
        p = self.path
        ports = f"{self.base_port + 1}-{self.base_port + len(NODES)}"
        plugin_dirs = "/usr/lib/x86_64-linux-gnu/slurm-wlm"
        if preempt_type == "preempt/topopreempt":
            plugin_dirs = f"{self.plugin_dir}:{plugin_dirs}"
        conf = f"""# Written by integrations/slurm/tests/run_scenarios.py
ClusterName=topopreempt
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={self.base_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={p('munge', 'munge.socket')}
PluginDir={plugin_dirs}
StateSaveLocation={p('state')}
SlurmdSpoolDir={p('spool')}/%n
SlurmctldPidFile={p('run', 'slurmctld.pid')}
SlurmdPidFile={p('run', 'slurmd-%n.pid')}
SlurmctldLogFile={p('log', 'slurmctld.log')}
SlurmdLogFile={p('log', 'slurmd-%n.log')}
SlurmctldDebug=debug
SlurmdDebug=info
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
{"SchedulerParameters=" + sched_params if sched_params else ""}
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
TopologyPlugin=topology/tree
PreemptType={preempt_type}
PreemptMode=CANCEL
MinJobAge=600
KillWait=2
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName=n[0-7] NodeHostname=localhost NodeAddr=127.0.0.1 Port={ports} Sockets=2 CoresPerSocket={CORES_PER_SOCKET} ThreadsPerCore=1 RealMemory=64000 Gres=gpu:{2 * GPUS_PER_SOCKET} State=UNKNOWN
PartitionName=low Nodes=n[0-7] PriorityTier={TIERS['low']} PreemptMode=CANCEL Default=YES MaxTime=INFINITE State=UP
PartitionName=mid Nodes=n[0-7] PriorityTier={TIERS['mid']} PreemptMode=CANCEL MaxTime=INFINITE State=UP
PartitionName=high Nodes=n[0-7] PriorityTier={TIERS['high']} PreemptMode=OFF MaxTime=INFINITE State=UP
PartitionName=hs1 Nodes=n[0-3] PriorityTier={TIERS['high']} PreemptMode=OFF MaxTime=INFINITE State=UP
"""
        with open(p("etc", "slurm.conf"), "w") as out:
            out.write(conf)

    def spawn(self, name, argv):
        out = open(self.path("log", f"{name}.stdout"), "ab")
        self.processes[name] = subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, start_new_session=True)

    def start_munge(self):
        self.spawn("munged", ["munged", "-F", "--force", f"--socket={self.path('munge', 'munge.socket')}",
                              f"--key-file={self.path('munge', 'munge.key')}",
                              f"--pid-file={self.path('run', 'munged.pid')}",
                              f"--log-file={self.path('log', 'munged.log')}",
                              f"--seed-file={self.path('munge', 'munged.seed')}"])
        wait_for(lambda: os.path.exists(self.path("munge", "munge.socket")), 10, "munged socket")

    def start_slurm(self, preempt_type, plan_log, sched_params=None, **conf):
        for sub in ("state", "spool"):
            shutil.rmtree(self.path(sub), ignore_errors=True)
            os.makedirs(self.path(sub))
        self.write_slurm_conf(preempt_type, plan_log, sched_params, **conf)
        conf = self.env["SLURM_CONF"]
        self.spawn("slurmctld", ["slurmctld", "-D", "-c", "-i", "-f", conf])
        wait_for(lambda: self.run(["scontrol", "ping"], check=False).returncode == 0, 30, "slurmctld")
        for node in self.nodes:
            self.spawn(f"slurmd-{node}", ["slurmd", "-D", "-N", node, "-f", conf])
        wait_for(self.all_idle, 60, "all nodes idle")

    def stop_slurm(self):
        self.run(["scancel", "--full", "-u", "root"], check=False)
        for name in [n for n in self.processes if n.startswith("slurm")]:
            stop_process_group(self.processes.pop(name))
        # A job's slurmstepd may still be starting when its slurmd stops (two clusters at once
        # load the machine): kill until none is left, so that none outlives this cluster.
        deadline = time.monotonic() + 10
        while self.kill_marked_processes(exclude_daemons=("munged",)) and time.monotonic() < deadline:
            time.sleep(0.25)

    def stop_all(self):
        for name in list(self.processes):
            stop_process_group(self.processes.pop(name))
        return self.kill_marked_processes()

    def marked_processes(self):
        """Our processes: every one started here carries MARKER=<root> in its environment."""
        found = []
        needle = f"{MARKER}={self.root}".encode()
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as environ:
                    if needle in environ.read().split(b"\0"):
                        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                            found.append((int(pid), cmdline.read().replace(b"\0", b" ").decode(errors="replace")))
            except OSError:
                continue
        return found

    def settled_marked_processes(self, seconds=5.0):
        """Our processes still alive after up to `seconds` (SIGKILLed ones take a moment)."""
        deadline = time.monotonic() + seconds
        left = self.marked_processes()
        while left and time.monotonic() < deadline:
            time.sleep(0.25)
            left = self.marked_processes()
        return left

    def print_log_tails(self, names, count=40):
        """The last `count` lines of each of our log files in `names`, for a failure report."""
        for name in names:
            logfile = self.path("log", name)
            if os.path.exists(logfile):
                print(f"--- last lines of {logfile}")
                with open(logfile, errors="replace") as lines:
                    print("".join(lines.readlines()[-count:]))

    def kill_marked_processes(self, exclude_daemons=()):
        survivors = [(pid, cmd) for pid, cmd in self.marked_processes()
                     if not any(d in cmd for d in exclude_daemons)]
        for pid, _ in survivors:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return survivors

    def run(self, argv, check=True):
        result = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60)
        if check and result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {result.stderr.strip()}")
        return result

    def all_idle(self):
        result = self.run(["sinfo", "-h", "-N", "-o", "%N %t"], check=False)
        states = dict(line.split() for line in result.stdout.splitlines() if line.strip())
        return result.returncode == 0 and len(states) == len(self.nodes) and all(
            s == "idle" for s in states.values())

    def submit(self, name, partition, args):
        result = self.run(["sbatch", "--parsable", "-J", name, "-p", partition, "-o", "/dev/null",
                           *args, "--wrap", "sleep 3000"])
        return int(result.stdout.strip().split(";")[0])

    def job(self, job_id):
        text = self.run(["scontrol", "show", "job", "-d", str(job_id)]).stdout
        fields = dict(re.findall(r"(\w+)=(\S*)", text))
        gpus = {}
        for node_spec, idx in re.findall(r"Nodes=(\S+) CPU_IDs=\S+ Mem=\S+ GRES=gpu[^(]*\(IDX:([^)]*)\)", text):
            for node in expand_hostlist(node_spec):
                gpus[node] = expand_ranges(idx)
        fields["gpus"] = gpus
        return fields


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise RuntimeError(f"timed out after {timeout}s waiting for {what}")


def stop_process_group(process):
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def expand_ranges(text):
    values = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        values += list(range(int(low), int(high or low) + 1))
    return values


def expand_hostlist(text):
    match = re.fullmatch(r"(\w*?)\[([^\]]+)\]", text)
    if not match:
        return text.split(",")
    return [f"{match.group(1)}{i}" for i in expand_ranges(match.group(2))]


# ---- one scenario -----------------------------------------------------------------------


def fill_cluster(cluster, scenario):
    ids = {}
    for name, node, partition, gpu_args in scenario["fill"]:
        ids[name] = cluster.submit(name, partition, ["-N1", "-w", node, *gpu_args, "--cpus-per-gpu=1"])
    wait_for(lambda: all(cluster.job(i).get("JobState") == "RUNNING" for i in ids.values()), 60,
             "the fill jobs to run")
    for name in scenario["holes"]:
        cluster.run(["scancel", str(ids.pop(name))])
    wait_for(lambda: all(cluster.job(i).get("JobState") == "RUNNING" for i in ids.values()) and
             not cluster.run(["squeue", "-h", "-t", "CG"]).stdout.strip(), 30, "holes to drain")
    layout = {}
    for name, job_id in ids.items():
        info = cluster.job(job_id)
        layout[name] = {node: sorted(gpus) for node, gpus in info["gpus"].items()}
    return ids, layout


def requirement_held(requirement, gpus):
    if not gpus:
        return False
    if requirement == "node":
        return len(gpus) == 1
    if requirement == "socket":
        return len(gpus) == 1 and len({g // GPUS_PER_SOCKET for g in next(iter(gpus.values()))}) == 1
    if requirement == "switch":
        return len({SWITCH_OF[node] for node in gpus}) == 1
    raise ValueError(requirement)


def run_scenario(cluster, scenario, mode):
    ids, layout = fill_cluster(cluster, scenario)
    by_id = {job_id: name for name, job_id in ids.items()}
    # Where Slurm asks the preempt plugin for --test-only (job_start_data): what it would preempt.
    test_only = cluster.run(["sbatch", "--test-only", "-p", "high", "-o", "/dev/null", *scenario["args"],
                             "--wrap", "sleep 3000"], check=False)
    test_only_preempts = sorted(int(j) for j in re.findall(r"Preempts: (\S+)", test_only.stderr + test_only.stdout)
                                [0].split(",")) if "Preempts:" in test_only.stderr + test_only.stdout else []
    submitted = time.time()
    preemptor = cluster.submit(f"preemptor-{scenario['name']}", "high", scenario["args"])
    started = None
    deadline = time.monotonic() + (8 if scenario.get("expect_pending") else 30)
    while time.monotonic() < deadline:
        info = cluster.job(preemptor)
        if info.get("JobState") == "RUNNING":
            started = time.time()
            break
        time.sleep(0.1)
    info = cluster.job(preemptor)
    victims = sorted(by_id[j] for j in ids.values() if cluster.job(j).get("JobState") == "PREEMPTED")
    victim_ids = sorted(ids[name] for name in victims)
    cost = sum(TIERS[partition_of(name)] + PRIORITY_OFFSET for name in victims)
    result = {
        "scenario": scenario["name"], "mode": mode, "preemptor": preemptor, "layout": layout,
        "victims": victims, "victim_ids": victim_ids, "cost": cost,
        "started": started is not None,
        "seconds_to_start": round(started - submitted, 2) if started else None,
        "placement": info["gpus"],
        "requirement_held": requirement_held(scenario["requirement"], info["gpus"]) if started else None,
        "reason": info.get("Reason"),
        "test_only_preempts": test_only_preempts,
        "started_by_backfill": bool(re.search(rf"Started JobId={preemptor} ", read_log(cluster))),
        "stock_fallbacks": re.findall(rf"JobId={preemptor}[:,][^\n]*stock (?:behaviour|answers)", read_log(cluster)),
    }
    cluster.run(["scancel", "--full", "-u", "root"], check=False)
    wait_for(cluster.all_idle, 60, "nodes idle after the scenario")
    return result


# ---- the blocked job: what an impossible job costs the controller ---------------------------
# Partition hs1 (n0..n3, tier 10); n0 holds a `high` job (PreemptMode=OFF: nothing may preempt
# it), n1..n3 hold 8 `low` jobs each, so a pending `-p hs1 -N4 --exclusive` job can never start. While it waits, short jobs
# start and end elsewhere (n4..n7): BLOCKED_CHANGES state changes in about BLOCKED_SECONDS. We
# measure what the controller costs everyone meanwhile: the main scheduler's cycles (sdiag,
# reset when the window opens) and the latency of `squeue`, which waits on the same locks.

BLOCKED_SECONDS = 30
BLOCKED_CHANGES = 20  # each short job is two: it starts, it ends
BLOCKED_TIME_LIMIT_MS = 500  # the plugin's default solver limit, as an administrator has it


def sdiag_field(section, name):
    match = re.search(rf"{name}:\s+(\d+)", section)
    return int(match.group(1)) if match else None


def sdiag_sections(cluster):
    """sdiag's main-scheduler and backfill sections (text)."""
    text = cluster.run(["sdiag"]).stdout
    main = text.split("Main schedule statistics", 1)[1].split("statistics", 1)[0]
    backfill = text.split("Backfilling stats", 1)[1] if "Backfilling stats" in text else ""
    return main, backfill


def sample_main_cycle(main, seen_cycles, samples):
    """Appends the main scheduler's last cycle (us; `main` is sdiag's section) to `samples`
    when a cycle ended since `seen_cycles` were counted; returns the count now. Polled a few
    times a second, so nearly every cycle is one sample; where two ended between polls, the
    later one stands for both."""
    total, last = sdiag_field(main, "Total cycles"), sdiag_field(main, "Last cycle")
    if total is None or last is None or total == seen_cycles:
        return seen_cycles
    if total > 0:
        samples.append(last)
    return total


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def start_blocked(cluster, preempt_type):
    """Starts a cluster in the blocked state; returns (blocker id, blocked job id)."""
    cluster.start_slurm(preempt_type, cluster.path("plans-blocked.jsonl"), time_limit_ms=BLOCKED_TIME_LIMIT_MS)
    blocker = cluster.submit("blocker-high1", "high", ["-N1", "-w", "n0", "--gpus=1", "--cpus-per-gpu=1"])
    # n1..n3 full of preemptible 1-GPU jobs: many victim sets to search, none enough, because
    # n0 can never be emptied (a search without that proof runs into its time limit).
    fill = [cluster.submit(f"{node}-{k}-low1", "low", ["-N1", "-w", node, "--gpus=1", "--cpus-per-gpu=1"])
            for node in NODES[1:4] for k in range(2 * GPUS_PER_SOCKET)]
    wait_for(lambda: all(cluster.job(j).get("JobState") == "RUNNING" for j in [blocker] + fill), 60,
             "the blocker and the fill to run")
    blocked = cluster.submit("blocked-hs1", "hs1", ["-N4", "--exclusive"])
    wait_for(lambda: cluster.job(blocked).get("Reason") not in (None, "None"), 30,
             "the blocked job to be tested")
    return blocker, blocked


def run_blocked(clusters):
    """Both variants at once, each on its own cluster (`clusters`: mode -> (cluster, preempt
    type)), through the same window: the same short jobs at the same moments, and `squeue`
    asked of each in turn. Both then see the same load from the rest of the machine, which a
    shared CI machine changes from one minute to the next."""
    jobs = {mode: start_blocked(cluster, preempt_type) for mode, (cluster, preempt_type) in clusters.items()}
    for cluster, _ in clusters.values():
        cluster.run(["sdiag", "-r"])
    squeue_ms = {mode: [] for mode in clusters}
    # The main scheduler's cycles one by one (sdiag's "Last cycle" as each ends): about ten per
    # window, so one cycle slowed by the machine's other work moves their mean by hundreds of
    # microseconds; their median does not move.
    cycle_us = {mode: [] for mode in clusters}
    seen_cycles = {mode: 0 for mode in clusters}
    submitted = 0
    start = time.monotonic()
    # One short job (`sleep 1`) every few seconds on n4..n7 in turn, the last one early enough
    # to have ended when the window closes.
    every = (BLOCKED_SECONDS - 4) / (BLOCKED_CHANGES / 2)
    turn = 0
    while time.monotonic() - start < BLOCKED_SECONDS:
        if submitted < BLOCKED_CHANGES // 2 and time.monotonic() - start >= submitted * every:
            node = NODES[4 + submitted % 4]
            for cluster, _ in clusters.values():
                cluster.run(["sbatch", "--parsable", "-J", f"churn-{submitted}", "-p", "low", "-N1", "-w", node,
                             "--gpus=1", "--cpus-per-gpu=1", "-o", "/dev/null", "--wrap", "sleep 1"])
            submitted += 1
        modes = list(clusters)
        for mode in modes[turn % 2:] + modes[:turn % 2]:  # who goes first alternates
            before = time.monotonic()
            clusters[mode][0].run(["squeue"])
            squeue_ms[mode].append((time.monotonic() - before) * 1000)
            main_stats, _ = sdiag_sections(clusters[mode][0])
            seen_cycles[mode] = sample_main_cycle(main_stats, seen_cycles[mode], cycle_us[mode])
        turn += 1
        time.sleep(0.2)
    seconds = round(time.monotonic() - start, 1)
    records = []
    for mode, (cluster, _) in clusters.items():
        blocker, blocked = jobs[mode]
        main_stats, backfill_stats = sdiag_sections(cluster)
        sample_main_cycle(main_stats, seen_cycles[mode], cycle_us[mode])  # one that just ended
        # Each short job that ran is two state changes (MinJobAge keeps completed jobs listed).
        completed = cluster.run(["squeue", "-h", "-t", "CD", "-o", "%j"]).stdout.split()
        plans = [p for p in read_plans(cluster.path("plans-blocked.jsonl")) if p["preemptor"] == blocked]
        records.append({
            "scenario": "blocked", "mode": mode, "seconds": seconds, "short_jobs": submitted,
            "state_changes": 2 * sum(1 for name in completed if name.startswith("churn-")),
            "main_mean_cycle_us": sdiag_field(main_stats, "Mean cycle"),
            "main_cycles": sdiag_field(main_stats, "Total cycles"),
            "main_cycle_samples_us": cycle_us[mode],
            "main_median_cycle_us": percentile(cycle_us[mode], 0.5) if cycle_us[mode] else None,
            "backfill_mean_cycle_us": sdiag_field(backfill_stats, "Mean cycle"), "squeue_samples": len(squeue_ms[mode]),
            "squeue_p50_ms": round(percentile(squeue_ms[mode], 0.5), 1),
            "squeue_p95_ms": round(percentile(squeue_ms[mode], 0.95), 1),
            "blocked_state": cluster.job(blocked).get("JobState"),
            "blocker_state": cluster.job(blocker).get("JobState"),
            "plans": len(plans), "plan_statuses": sorted({p["status"] for p in plans}),
            "solving_ms": round(1000 * sum(p["seconds"] for p in plans), 2),
        })
    for cluster, _ in clusters.values():
        cluster.stop_slurm()
    return records


def read_log(cluster):
    with open(cluster.path("log", "slurmctld.log"), errors="replace") as lines:
        return lines.read()


def partition_of(name):
    return re.search(r"-(low|mid|high)\w+$", name).group(1)


def read_plans(path):
    if not os.path.exists(path):
        return []
    with open(path) as lines:
        return [json.loads(line) for line in lines if line.strip()]


# ---- main -------------------------------------------------------------------------------


def check(condition, message, failures):
    log(("ok    " if condition else "FAIL  ") + message)
    if not condition:
        failures.append(message)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plugin-dir", required=True)
    parser.add_argument("--results", help="write the comparison table (markdown) here")
    parser.add_argument("--json", help="write every record (JSON) here")
    parser.add_argument("--base-port", type=int, default=16817)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--scenario", action="append", metavar="NAME",
                        help="run only this scenario (repeatable): one of "
                             + ", ".join([make()["name"] for make in SCENARIOS] + ["blocked"]))
    args = parser.parse_args()
    known = [make()["name"] for make in SCENARIOS]
    for name in args.scenario or []:
        if name not in known + ["blocked"]:
            sys.exit(f"unknown scenario {name!r}; known: {', '.join(known + ['blocked'])}")
    chosen = [make for make in SCENARIOS if not args.scenario or make()["name"] in args.scenario]
    run_blocked_scenario = not args.scenario or "blocked" in args.scenario
    plugin_dir = os.path.abspath(args.plugin_dir)
    if not os.path.exists(os.path.join(plugin_dir, "preempt_topopreempt.so")):
        sys.exit(f"no preempt_topopreempt.so in {plugin_dir}; run integrations/slurm/build-plugin.sh")
    if os.geteuid() != 0:
        sys.exit("run_scenarios.py needs root (mknod for the fake GPUs, slurmd as SlurmdUser=root)")

    root = tempfile.mkdtemp(prefix="topopreempt-slurm.")
    os.chmod(root, 0o755)
    cluster = Cluster(root, plugin_dir, args.base_port)
    # SIGTERM (a CI timeout) must still stop the daemons: turn it into an exception.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    failures, records = [], []
    second = None  # the blocked scenario's second cluster
    try:
        cluster.write_files()
        cluster.start_munge()
        plans = {}
        for mode, preempt_type in (("stock", "preempt/partition_prio"), ("topopreempt", "preempt/topopreempt")):
            for make in chosen:
                scenario = make()
                # A fresh slurmctld (state cleared) and slurmds per scenario: cons_tres's choice of
                # GPU indexes depends on the nodes' history, so only a restart makes the two runs
                # start from identical layouts (checked).
                log(f"{scenario['name']}: slurmctld -c + {len(NODES)} slurmd with {preempt_type}")
                plan_log = cluster.path(f"plans-{scenario['name']}.jsonl")
                cluster.start_slurm(preempt_type, plan_log, scenario.get("sched_params"))
                record = run_scenario(cluster, scenario, mode)
                records.append(record)
                if mode == "topopreempt":
                    plans[scenario["name"]] = read_plans(plan_log)
                log(f"{mode:12s} {scenario['name']:14s} victims={record['victims']} cost={record['cost']:g} "
                    f"started={record['started']} placement={record['placement']} "
                    f"requirement_held={record['requirement_held']} t={record['seconds_to_start']}")
                cluster.stop_slurm()
        blocked = []
        if run_blocked_scenario:
            # A second cluster beside the first (own directory, munged and ports) for the other
            # variant: both are measured in the same window.
            root2 = tempfile.mkdtemp(prefix="topopreempt-slurm.")
            os.chmod(root2, 0o755)
            second = Cluster(root2, plugin_dir, args.base_port + 100)
            second.write_files()
            second.start_munge()
            log(f"blocked: two clusters (stock partition_prio, topopreempt) side by side, {BLOCKED_SECONDS} s")
            blocked = run_blocked({"stock": (cluster, "preempt/partition_prio"),
                                   "topopreempt": (second, "preempt/topopreempt")})
            for record in blocked:
                log(f"{record['mode']:12s} blocked        main median / mean cycle "
                    f"{record['main_median_cycle_us']} / {record['main_mean_cycle_us']} us "
                    f"({record['main_cycles']} cycles), squeue p95 {record['squeue_p95_ms']} ms, "
                    f"{record['state_changes']} state changes, {record['plans']} plan(s) "
                    f"{record['plan_statuses']}, {record['solving_ms']} ms solving")
        evaluate(records, plans, failures, chosen)
        if blocked:
            evaluate_blocked(blocked, failures)
        report = (table(records, chosen) if records else "") + (blocked_table(blocked) if blocked else "")
        if args.results:
            with open(args.results, "w") as out:
                out.write(report)
        if args.json:
            with open(args.json, "w") as out:
                json.dump({"records": records, "plans": plans, "blocked": blocked}, out, indent=1)
        print(report)
    except BaseException as error:  # noqa: BLE001 - report, then clean up, then fail
        failures.append(f"{type(error).__name__}: {error}")
        log(f"FAIL  {type(error).__name__}: {error}")
        cluster.print_log_tails(("slurmctld.log",))
    finally:
        survivors = cluster.stop_all()
        if second is not None:
            survivors += second.stop_all()
            left = second.marked_processes()
            check(not left, f"no process of the second cluster left running ({len(left)} found)", failures)
            if not args.keep:
                shutil.rmtree(second.root, ignore_errors=True)
        if survivors:
            failures.append(f"{len(survivors)} process(es) survived the shutdown and were killed: {survivors}")
        left = cluster.marked_processes()
        check(not left, f"no process of ours left running ({len(left)} found)", failures)
        if args.keep:
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    if failures:
        log(f"{len(failures)} failure(s):\n  " + "\n  ".join(failures))
        return 1
    log("all scenario checks passed")
    return 0


def evaluate(records, plans, failures, chosen):
    if not chosen:
        return
    stock = {r["scenario"]: r for r in records if r["mode"] == "stock"}
    ours = {r["scenario"]: r for r in records if r["mode"] == "topopreempt"}
    stock_worse = []
    for make in chosen:
        scenario = make()
        name = scenario["name"]
        s, t = stock[name], ours[name]
        check(s["layout"] == t["layout"], f"{name}: both runs start from the identical layout", failures)
        mine = [p for p in plans.get(name, []) if p["preemptor"] == t["preemptor"]]
        check(all(p["verified"] for p in mine), f"{name}: verify_plan accepted all {len(mine)} plan(s)", failures)
        imposed = [p for p in mine if p["imposed"]]
        if scenario.get("expect_pending"):
            check(any(p["status"] == "infeasible" for p in mine), f"{name}: the plugin's plan is infeasible",
                  failures)
            check(not t["started"] and not t["victims"], f"{name}: nothing preempted, preemptor pending",
                  failures)
            check(not s["victims"], f"{name}: stock preempted nothing either", failures)
            continue
        check(bool(imposed), f"{name}: the plugin imposed a plan", failures)
        if scenario.get("via_backfill"):
            # The main loop is off (sched_interval=-1), so only backfill can start the job.
            check(t["started_by_backfill"] and s["started_by_backfill"],
                  f"{name}: backfill started the preemptor in both runs", failures)
            # Backfill's _start_job sets exc_node_bitmap; the plugin once fell back to stock on it.
            check(not t["stock_fallbacks"], f"{name}: no stock fallback logged for the preemptor "
                  f"({t['stock_fallbacks']})", failures)
        if imposed:
            planned = sorted(v["job_id"] for v in imposed[-1]["victims"])
            check(planned == t["victim_ids"], f"{name}: Slurm preempted exactly the plan {planned} "
                  f"(preempted {t['victim_ids']})", failures)
            check(abs(imposed[-1]["cost"] - t["cost"]) < 1e-9, f"{name}: plan cost {imposed[-1]['cost']:g} "
                  f"equals the cost of what was preempted", failures)
            check(t["test_only_preempts"] == planned, f"{name}: sbatch --test-only would preempt the plan "
                  f"({t['test_only_preempts']})", failures)
        check(t["started"] and t["requirement_held"], f"{name}: preemptor started inside its "
              f"{scenario['requirement']} requirement ({t['placement']})", failures)
        check(t["cost"] <= s["cost"] + 1e-9, f"{name}: victim cost {t['cost']:g} <= stock's {s['cost']:g}",
              failures)
        if s["cost"] > t["cost"] or len(s["victims"]) > len(t["victims"]):
            stock_worse.append(name)
    if any(not make().get("expect_pending") for make in chosen):
        check(bool(stock_worse), f"stock preempts more or costlier jobs on at least one scenario ({stock_worse})",
              failures)


# The target of issue 34: with an impossible job pending, the controller stays within 1.5x of
# stock's main-scheduler cycle and squeue latency.
BLOCKED_RATIO = 1.5
BLOCKED_CYCLE_NOISE_US = 500
BLOCKED_SQUEUE_NOISE_MS = 15


def evaluate_blocked(blocked, failures):
    s, t = (next(r for r in blocked if r["mode"] == mode) for mode in ("stock", "topopreempt"))
    for r in (s, t):
        check(r["blocked_state"] == "PENDING" and r["blocker_state"] == "RUNNING",
              f"blocked ({r['mode']}): the -N4 --exclusive job pending, the blocker running", failures)
        check(r["state_changes"] >= BLOCKED_CHANGES - 2, f"blocked ({r['mode']}): {r['state_changes']} state "
              f"changes in the window (want about {BLOCKED_CHANGES})", failures)
        check(bool(r["main_cycles"]), f"blocked ({r['mode']}): the main scheduler ran "
              f"({r['main_cycles']} cycles)", failures)
    # One verdict per request (the main scheduler's and backfill's may differ), kept through the
    # state changes on nodes the job may not use: never one plan per change.
    check(1 <= t["plans"] <= 2, f"blocked: planned {t['plans']} time(s) through {t['state_changes']} state "
          f"changes elsewhere, {t['solving_ms']} ms solving", failures)
    check(t["plan_statuses"] == ["infeasible"], f"blocked: the verdict is infeasible ({t['plan_statuses']})",
          failures)
    # The verdict is a proof, found before any search: far below the solver's time limit.
    check(t["solving_ms"] < BLOCKED_TIME_LIMIT_MS / 10, f"blocked: the verdict took {t['solving_ms']} ms, "
          f"well below the {BLOCKED_TIME_LIMIT_MS} ms limit (a proof, not a search stopped by it)", failures)
    # Within 1.5x of stock's, or within the noise of two clusters measured side by side on a
    # loaded 2-core machine (runs of identical builds differ by up to a few hundred us and ms).
    # The cycle compared is the median of the window's cycles, not sdiag's mean: with about ten
    # cycles, one cycle that the machine's other work slowed by 5 ms moves the mean by 500 us
    # (a CI run failed so: 1133 us against 573 us, the plugin's own verdict 0.1 ms). A plugin
    # slow under the locks is slow in every cycle the blocked job is tested in, so the median
    # shows it; the failure this guards against is two orders of magnitude larger (180 ms
    # against 1.3 ms; 256 ms against 23 ms).
    for r in (s, t):
        check(len(r["main_cycle_samples_us"]) >= 3, f"blocked ({r['mode']}): {len(r['main_cycle_samples_us'])} "
              f"main scheduler cycles sampled one by one (want at least 3)", failures)
    if s["main_median_cycle_us"] is not None and t["main_median_cycle_us"] is not None:
        check(t["main_median_cycle_us"] <= max(BLOCKED_RATIO * s["main_median_cycle_us"],
                                               s["main_median_cycle_us"] + BLOCKED_CYCLE_NOISE_US),
              f"blocked: main scheduler median cycle {t['main_median_cycle_us']} us <= {BLOCKED_RATIO} x "
              f"stock's {s['main_median_cycle_us']} us (or within {BLOCKED_CYCLE_NOISE_US} us of it); "
              f"means {t['main_mean_cycle_us']} and {s['main_mean_cycle_us']} us", failures)
    check(t["squeue_p95_ms"] <= max(BLOCKED_RATIO * s["squeue_p95_ms"],
                                    s["squeue_p95_ms"] + BLOCKED_SQUEUE_NOISE_MS),
          f"blocked: squeue p95 {t['squeue_p95_ms']} ms <= {BLOCKED_RATIO} x stock's {s['squeue_p95_ms']} ms "
          f"(or within {BLOCKED_SQUEUE_NOISE_MS} ms of it)", failures)


def blocked_table(blocked):
    rows = ["", f"Blocked job (`-p hs1 -N4 --exclusive`, n0 held by a job nothing may preempt), "
                f"{BLOCKED_SECONDS} s window:", "",
            "| preemption | state changes | main scheduler: median / mean cycle (cycles) "
            "| backfill: mean cycle | `squeue` p50 / p95 | plans of the blocked job | time spent solving |",
            "|---|---|---|---|---|---|---|"]
    for r in blocked:
        rows.append(f"| {r['mode']} | {r['state_changes']} | {r['main_median_cycle_us']} / "
                    f"{r['main_mean_cycle_us']} us ({r['main_cycles']}) "
                    f"| {r['backfill_mean_cycle_us'] if r['backfill_mean_cycle_us'] is not None else '-'} us "
                    f"| {r['squeue_p50_ms']} / {r['squeue_p95_ms']} ms "
                    f"| {r['plans']} {', '.join(r['plan_statuses']) or ''} | {r['solving_ms']} ms |")
    return "\n".join(rows) + "\n"


def table(records, chosen):
    rows = ["| scenario | request | preemption | victims | victim cost | preemptor placement (GPU indexes) "
            "| requirement kept | time to start |", "|---|---|---|---|---|---|---|---|"]
    requests = {make()["name"]: make()["request"] for make in chosen}
    for r in records:
        placement = "; ".join(f"{node}: {','.join(map(str, gpus))}" for node, gpus in sorted(r["placement"].items()))
        rows.append(
            f"| {r['scenario']} | {requests[r['scenario']]} | {r['mode']} | {len(r['victims'])}: "
            f"{', '.join(r['victims']) or '-'} | {r['cost']:g} | {placement or 'pending (' + str(r['reason']) + ')'} "
            f"| {'yes' if r['requirement_held'] else ('-' if r['requirement_held'] is None else 'NO')} "
            f"| {str(r['seconds_to_start']) + ' s' if r['seconds_to_start'] is not None else '-'} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.exit(main())
