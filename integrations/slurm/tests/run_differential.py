#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Randomised differential test: stock preempt/partition_prio against preempt/topopreempt.

Two loopback clusters run side by side, one with each preempt plugin, on the same random cases.
Each cluster has GROUPS independent groups of two 8-GPU nodes (one leaf switch and partitions
lo<g> (tier 1), mi<g> (tier 4) and hi<g> (tier 10) per group), with SelectTypeParameters=
CR_Core_Memory. A case is one group's random fill (jobs of 1, 2, 4 or 8 GPUs in lo or mid
partitions, some --exclusive, some with --mem), a few cancelled holes, and one random preemptor
in hi<g> (-N1 --gpus, --gres=gpu:N without -N, --gpus-per-node, --exclusive, --mem,
--mem-per-gpu, --ntasks-per-node with --gpus-per-task, -N2, --gpus-per-socket). The groups run
their cases concurrently in rounds; between cases a group is emptied (scancel) and reused, and
between rounds slurmctld restarts with its state cleared (the slurmds keep running).

A case counts when both clusters started from the identical GPU layout (checked). Asserts, over
at least --min-cases counted cases: topopreempt never leaves pending a preemptor that stock
started, and never preempts a costlier set (cost of a victim = its tier + 1, as the plugin's
priority_weighted cost with priority_offset 1).

Usage: run_differential.py --plugin-dir build/slurm/plugin [--cases 336] [--json out.json]
Needs root, like run_scenarios.py, whose cluster code it reuses.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_scenarios as rs  # noqa: E402

GROUPS = 12
NODES = [f"d{i}" for i in range(2 * GROUPS)]
TIER = {"lo": 1, "mi": 4}
MEMORY_MB = 64000
START_TIMEOUT = 25.0  # stock starts every preemptor here within a few seconds


def log(message):
    rs.log(message)


class DiffCluster(rs.Cluster):
    """A cluster of GROUPS two-node groups, each its own switch and partitions."""

    def __init__(self, root, plugin_dir, base_port):
        super().__init__(root, plugin_dir, base_port)
        self.nodes = NODES

    def write_files(self):
        super().write_files()
        g = rs.GPUS_PER_SOCKET
        c = rs.CORES_PER_SOCKET
        with open(self.path("etc", "gres.conf"), "w") as out:
            out.write(f"NodeName=d[0-{len(NODES) - 1}] Name=gpu File={self.path('dev')}/gpu[0-{g - 1}] Cores=0-{c - 1}\n")
            out.write(f"NodeName=d[0-{len(NODES) - 1}] Name=gpu File={self.path('dev')}/gpu[{g}-{2 * g - 1}] "
                      f"Cores={c}-{2 * c - 1}\n")
        with open(self.path("etc", "topology.conf"), "w") as out:
            for group in range(GROUPS):
                out.write(f"SwitchName=sw{group} Nodes=d[{2 * group}-{2 * group + 1}]\n")
            out.write(f"SwitchName=top Switches=sw[0-{GROUPS - 1}]\n")

    def write_slurm_conf(self, preempt_type, plan_log, sched_params=None):
        super().write_slurm_conf(preempt_type, plan_log, sched_params)
        conf_path = self.path("etc", "slurm.conf")
        with open(conf_path) as lines:
            conf = [line for line in lines if not line.startswith(("NodeName=", "PartitionName="))]
        conf = [line.replace("SelectTypeParameters=CR_Core\n", "SelectTypeParameters=CR_Core_Memory\nDefMemPerCPU=1000\n")
                for line in conf]
        conf = [line for line in conf if not line.startswith("SlurmctldDebug=")] + ["SlurmctldDebug=info\n"]
        conf.append(f"NodeName=d[0-{len(NODES) - 1}] NodeHostname=localhost NodeAddr=127.0.0.1 "
                    f"Port={self.base_port + 1}-{self.base_port + len(NODES)} Sockets=2 "
                    f"CoresPerSocket={rs.CORES_PER_SOCKET} ThreadsPerCore=1 RealMemory={MEMORY_MB} "
                    f"Gres=gpu:{2 * rs.GPUS_PER_SOCKET} State=UNKNOWN\n")
        for group in range(GROUPS):
            nodes = f"d[{2 * group}-{2 * group + 1}]"
            conf.append(f"PartitionName=lo{group} Nodes={nodes} PriorityTier=1 PreemptMode=CANCEL MaxTime=INFINITE "
                        f"State=UP{' Default=YES' if group == 0 else ''}\n")
            conf.append(f"PartitionName=mi{group} Nodes={nodes} PriorityTier=4 PreemptMode=CANCEL MaxTime=INFINITE State=UP\n")
            conf.append(f"PartitionName=hi{group} Nodes={nodes} PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP\n")
        with open(conf_path, "w") as out:
            out.writelines(conf)

    def jobs(self):
        """Every job: id -> (state, name, {node: [gpu indexes]})."""
        text = self.run(["scontrol", "show", "job", "-d"], check=False).stdout
        found = {}
        for block in text.split("\n\n"):
            job = re.search(r"JobId=(\d+)", block)
            if not job:
                continue
            fields = dict(re.findall(r"(\w+)=(\S*)", block))
            gpus = {}
            for node_spec, idx in re.findall(r"Nodes=(\S+) CPU_IDs=\S+ Mem=\S+ GRES=gpu[^(]*\(IDX:([^)]*)\)", block):
                for node in rs.expand_hostlist(node_spec):
                    gpus[node] = rs.expand_ranges(idx)
            found[int(job.group(1))] = (fields.get("JobState"), fields.get("JobName"), gpus)
        return found


# ---- random cases -----------------------------------------------------------------------


def make_case(index, group):
    rng = random.Random(1000 + index)
    nodes = [f"d{2 * group}", f"d{2 * group + 1}"]
    fill = []
    for node in nodes:
        if rng.random() < 0.15:
            size = rng.choice([1, 2, 4, 8])
            tier = rng.choice(["lo", "mi"])
            fill.append((f"{node}-0-{tier}{size}x", node, tier, [f"--gpus={size}", "--exclusive"]))
            continue
        free_gpus, free_mem, k = 8, MEMORY_MB, 0
        while free_gpus > 0 and rng.random() > 0.06:
            size = rng.choice([s for s in (1, 2, 4, 8) if s <= free_gpus])
            tier = rng.choice(["lo", "mi"])
            args = [f"--gpus={size}"]
            memory = 1000 * size  # DefMemPerCPU with one core per GPU
            if rng.random() < 0.3:
                memory = rng.choice([8000, 16000, 24000])
                args.append(f"--mem={memory}")
            if memory > free_mem:
                break
            fill.append((f"{node}-{k}-{tier}{size}", node, tier, args))
            free_gpus -= size
            free_mem -= memory
            k += 1
    holes = [name for name, *_ in fill if rng.random() < 0.1]
    g = rng.choice([1, 2, 4, 8])
    shapes = [
        ["-N1", f"--gpus={g}", "--cpus-per-gpu=1"],
        [f"--gres=gpu:{g}", "--cpus-per-gpu=1"],
        [f"--gpus-per-node={g}", "--cpus-per-gpu=1"],
        ["-N1", f"--gpus={g}", "--cpus-per-gpu=1", "--exclusive"],
        ["-N1", f"--gpus={g}", "--cpus-per-gpu=1", f"--mem={rng.choice([16000, 32000, 48000])}"],
        ["-N1", f"--gpus={g}", "--cpus-per-gpu=1", f"--mem-per-gpu={rng.choice([4000, 6000])}"],
        [f"--ntasks-per-node={min(g, 4)}", "--gpus-per-task=1"],
        ["-N2", f"--gpus-per-node={min(g, 4)}", "--cpus-per-gpu=1"],
        ["-N1", f"--gpus-per-socket={min(g, 4)}", "--sockets-per-node=1", "--cpus-per-gpu=1"],
    ]
    preemptor = rng.choice(shapes)
    return {"index": index, "group": group, "fill": fill, "holes": holes, "preemptor": preemptor}


def cost_of(name):
    return TIER[re.search(r"-(lo|mi)\d", name).group(1)] + 1.0


def run_case(cluster, case):
    group = case["group"]
    ids = {}
    for name, node, tier, args in case["fill"]:
        ids[name] = cluster.submit(name, f"{tier}{group}", ["-N1", "-w", node, "--cpus-per-gpu=1", *args])
    rs.wait_for(lambda: all(state == "RUNNING" for i, (state, _, _) in cluster.jobs().items() if i in ids.values()),
                60, f"case {case['index']}: fill running")
    for name in case["holes"]:
        cluster.run(["scancel", str(ids.pop(name))])
    rs.wait_for(lambda: all(state == "RUNNING" for i, (state, _, _) in cluster.jobs().items() if i in ids.values()),
                30, f"case {case['index']}: holes")
    nodes_of_group = {f"d{2 * group}", f"d{2 * group + 1}"}
    rs.wait_for(lambda: not any(n in nodes_of_group for n in re.findall(
        r"\S+", cluster.run(["squeue", "-h", "-t", "CG", "-o", "%N"], check=False).stdout)), 30,
        f"case {case['index']}: holes drained")
    snapshot = cluster.jobs()
    layout = {name: snapshot[job_id][2] for name, job_id in ids.items()}
    preemptor = cluster.submit(f"pre{case['index']}", f"hi{group}", case["preemptor"])
    deadline = time.monotonic() + START_TIMEOUT
    started = False
    while time.monotonic() < deadline:
        state = cluster.jobs().get(preemptor, ("?",))[0]
        if state == "RUNNING":
            started = True
            break
        time.sleep(0.3)
    final = cluster.jobs()
    by_id = {job_id: name for name, job_id in ids.items()}
    victims = sorted(by_id[i] for i, (state, _, _) in final.items() if i in by_id and state == "PREEMPTED")
    # scancel -p takes one partition: cancel this case's jobs by id.
    cluster.run(["scancel", str(preemptor), *map(str, ids.values())], check=False)
    rs.wait_for(lambda: not cluster.run(["squeue", "-h", "-p", f"lo{group},mi{group},hi{group}"],
                                        check=False).stdout.strip(), 60, f"case {case['index']}: group empty")
    return {"index": case["index"], "group": group, "layout": layout, "started": started,
            "victims": victims, "cost": sum(cost_of(v) for v in victims), "preemptor": case["preemptor"],
            "placement": final.get(preemptor, (None, None, {}))[2]}


def restart_slurmctld(cluster):
    """A fresh slurmctld (state cleared) under the running slurmds: cons_tres's choice of GPU
    indexes depends on a node's history in slurmctld, so only a restart between rounds makes
    both clusters place the same fill on the same GPUs (the first round always matched)."""
    stop = rs.stop_process_group
    stop(cluster.processes.pop("slurmctld"))
    cluster.spawn("slurmctld", ["slurmctld", "-D", "-c", "-i", "-f", cluster.env["SLURM_CONF"]])
    rs.wait_for(lambda: cluster.run(["scontrol", "ping"], check=False).returncode == 0, 30, "slurmctld")
    rs.wait_for(cluster.all_idle, 60, "all nodes idle after the restart")


def run_all(cluster, cases, results, errors):
    """Runs `cases` on `cluster` in rounds of GROUPS cases (one thread per group), with a fresh
    slurmctld between rounds."""
    rounds = [cases[i:i + GROUPS] for i in range(0, len(cases), GROUPS)]

    def worker(case):
        try:
            results[case["index"]] = run_case(cluster, case)
        except Exception as error:  # noqa: BLE001 - recorded, reported, fails the run
            errors.append(f"case {case['index']}: {type(error).__name__}: {error}")

    for number, round_cases in enumerate(rounds):
        if number:
            restart_slurmctld(cluster)
        threads = [threading.Thread(target=worker, args=(case,), daemon=True) for case in round_cases]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            return


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plugin-dir", required=True)
    parser.add_argument("--cases", type=int, default=336)
    parser.add_argument("--min-cases", type=int, default=200, help="comparable cases required")
    parser.add_argument("--json", help="write every case's records here")
    parser.add_argument("--results", help="write the counts (markdown) here")
    parser.add_argument("--base-port", type=int, default=17817)
    args = parser.parse_args()
    plugin_dir = os.path.abspath(args.plugin_dir)
    if os.geteuid() != 0:
        sys.exit("run_differential.py needs root")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    cases = [make_case(i, i % GROUPS) for i in range(args.cases)]
    clusters = {}
    failures = []
    outcome = {}
    try:
        for offset, (mode, preempt_type) in enumerate((("stock", "preempt/partition_prio"),
                                                         ("topopreempt", "preempt/topopreempt"))):
            root = tempfile.mkdtemp(prefix="topopreempt-slurm.")
            os.chmod(root, 0o755)
            cluster = DiffCluster(root, plugin_dir, args.base_port + 100 * offset)
            clusters[mode] = cluster
            cluster.write_files()
            cluster.start_munge()
            log(f"{mode}: slurmctld + {len(NODES)} slurmd with {preempt_type}")
            cluster.start_slurm(preempt_type, cluster.path("plans.jsonl"))
        results = {mode: {} for mode in clusters}
        errors = []
        threads = [threading.Thread(target=run_all, args=(clusters[m], cases, results[m], errors), daemon=True)
                   for m in clusters]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for error in errors:
            failures.append(error)
        outcome = evaluate(cases, results, failures, args.min_cases)
        if args.json:
            with open(args.json, "w") as out:
                json.dump({"outcome": outcome, "results": results}, out, indent=1)
        if args.results:
            with open(args.results, "w") as out:
                out.write(counts_table(outcome))
        print(counts_table(outcome))
    except BaseException as error:  # noqa: BLE001 - report, then clean up, then fail
        failures.append(f"{type(error).__name__}: {error}")
        log(f"FAIL  {type(error).__name__}: {error}")
        for mode, cluster in clusters.items():
            print(f"--- {mode}")
            cluster.print_log_tails(("slurmctld.log",), 30)
    finally:
        for mode, cluster in clusters.items():
            cluster.run(["scancel", "--full", "-u", "root"], check=False)
            time.sleep(2)  # let slurmd end the jobs' steps before the daemons stop
            survivors = cluster.stop_all()
            if survivors:
                log(f"{mode}: {len(survivors)} process(es) outlived the daemons and were killed")
            left = cluster.settled_marked_processes()
            rs.check(not left, f"{mode}: no process of ours left running ({len(left)} found)", failures)
            shutil.rmtree(cluster.root, ignore_errors=True)
    if failures:
        log(f"{len(failures)} failure(s):\n  " + "\n  ".join(failures[:40]))
        return 1
    log("differential test passed")
    return 0


def evaluate(cases, results, failures, min_cases):
    stock, ours = results["stock"], results["topopreempt"]
    counted = layout_differs = both_started = stock_only = ours_only = neither = 0
    cheaper = equal = costlier = 0
    for case in cases:
        i = case["index"]
        if i not in stock or i not in ours:
            continue
        s, t = stock[i], ours[i]
        if s["layout"] != t["layout"]:
            layout_differs += 1
            continue
        counted += 1
        if s["started"] and not t["started"]:
            stock_only += 1
            failures.append(f"case {i} {t['preemptor']}: stock started it, topopreempt left it pending")
        elif t["started"] and not s["started"]:
            ours_only += 1
        elif t["started"]:
            both_started += 1
        else:
            neither += 1
        if s["started"] and t["started"]:
            if t["cost"] > s["cost"] + 1e-9:
                costlier += 1
                failures.append(f"case {i} {t['preemptor']}: topopreempt preempted {t['victims']} (cost "
                                f"{t['cost']:g}), stock {s['victims']} (cost {s['cost']:g})")
            elif t["cost"] < s["cost"] - 1e-9:
                cheaper += 1
            else:
                equal += 1
    rs.check(counted >= min_cases, f"{counted} comparable cases (identical layouts; {layout_differs} differed) "
             f">= {min_cases}", failures)
    rs.check(stock_only == 0, f"topopreempt never left pending a job stock started ({stock_only})", failures)
    rs.check(costlier == 0, f"topopreempt never preempted a costlier set ({costlier})", failures)
    return {"cases": len(cases), "counted": counted, "layout_differs": layout_differs,
            "both_started": both_started, "stock_only": stock_only, "ours_only": ours_only, "neither": neither,
            "cheaper": cheaper, "equal": equal, "costlier": costlier,
            "stock_cost": sum(stock[i]["cost"] for i in stock if i in ours and stock[i]["layout"] == ours[i]["layout"]),
            "our_cost": sum(ours[i]["cost"] for i in ours if i in stock and stock[i]["layout"] == ours[i]["layout"])}


def counts_table(o):
    return ("| cases | comparable | both started | only stock started | only topopreempt started | neither "
            "| topopreempt cheaper | equal cost | topopreempt costlier | total cost stock / topopreempt |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n"
            f"| {o.get('cases')} | {o.get('counted')} | {o.get('both_started')} | {o.get('stock_only')} "
            f"| {o.get('ours_only')} | {o.get('neither')} | {o.get('cheaper')} | {o.get('equal')} "
            f"| {o.get('costlier')} | {o.get('stock_cost', 0):g} / {o.get('our_cost', 0):g} |\n")


if __name__ == "__main__":
    sys.exit(main())
