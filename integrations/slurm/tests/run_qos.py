#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""QOS preemption on a loopback cluster with slurmdbd and MariaDB: preempt/qos against
preempt/topopreempt with `relation = qos`.

Starts a private MariaDB (its own data directory, socket and port on 127.0.0.1), slurmdbd,
munged, slurmctld and the 8 slurmd of run_scenarios.py, and registers the cluster, an account,
the user root and three QOS: `low` (priority 1), `mid` (priority 4) and `high` (priority 10,
`Preempt=low,mid`). All partitions have the same PriorityTier, so only the QOS relation lets
anyone preempt. The node scenario of run_scenarios.py runs with the fill in QOS low and mid and
the preemptor in QOS high, once with preempt/qos and once with preempt/topopreempt.

Asserts: the preemptor starts under both; under topopreempt Slurm preempted exactly the
plugin's imposed plan; its cost (QOS priority + tier + 1) is not above preempt/qos's. Everything
started here (MariaDB and slurmdbd included) is stopped on exit, even on failure.

Usage: run_qos.py --plugin-dir build/slurm/install     Needs root and Debian's slurmdbd and
mariadb-server packages.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_scenarios as rs  # noqa: E402

QOS_PRIORITY = {"low": 1, "mid": 4}
PARTITION_TIER = 1
DB_PASSWORD = "topopreempt-test"


class QosCluster(rs.Cluster):
    """run_scenarios.py's cluster plus MariaDB and slurmdbd; QOS instead of partition tiers."""

    def __init__(self, root, plugin_dir, base_port):
        super().__init__(root, plugin_dir, base_port)
        self.db_port = base_port + 40
        self.dbd_port = base_port + 41

    def start_database(self):
        data = self.path("mariadb")
        os.makedirs(data, exist_ok=True)
        subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", "--user=root",
                        "--auth-root-authentication-method=socket", "--skip-test-db"],
                       env=self.env, check=True, capture_output=True, timeout=120)
        self.spawn("mariadbd", ["mariadbd", "--no-defaults", f"--datadir={data}", "--user=root",
                                f"--socket={self.path('run', 'mariadb.sock')}", f"--port={self.db_port}",
                                "--bind-address=127.0.0.1", f"--pid-file={self.path('run', 'mariadb.pid')}",
                                "--innodb-buffer-pool-size=32M", "--skip-log-bin"])
        sql = ["mariadb", "--no-defaults", f"--socket={self.path('run', 'mariadb.sock')}", "-uroot"]
        rs.wait_for(lambda: subprocess.run([*sql, "-e", "SELECT 1"], env=self.env, capture_output=True,
                                           timeout=10).returncode == 0, 60, "MariaDB")
        subprocess.run([*sql, "-e", f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{DB_PASSWORD}'; "
                        "GRANT ALL ON *.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"],
                       env=self.env, check=True, capture_output=True, timeout=30)

    def start_slurmdbd(self):
        conf = self.path("etc", "slurmdbd.conf")
        with open(conf, "w") as out:
            out.write(f"""AuthType=auth/munge
AuthInfo=socket={self.path('munge', 'munge.socket')}
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={self.dbd_port}
SlurmUser=root
PidFile={self.path('run', 'slurmdbd.pid')}
LogFile={self.path('log', 'slurmdbd.log')}
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={self.db_port}
StorageUser=slurm
StoragePass={DB_PASSWORD}
StorageLoc=topopreempt_acct
""")
        os.chmod(conf, 0o600)
        self.spawn("slurmdbd", ["slurmdbd", "-D"])
        last = []

        def answers():
            result = self.run(["sacctmgr", "-n", "show", "cluster"], check=False)
            last[:] = [result.stderr.strip()]
            return result.returncode == 0

        try:
            rs.wait_for(answers, 60, "slurmdbd")
        except RuntimeError as error:
            raise RuntimeError(f"{error}; sacctmgr said: {last}") from None

    def add_accounting(self):
        sacctmgr = ["sacctmgr", "-i"]
        self.run([*sacctmgr, "add", "cluster", "topopreempt"], check=False)
        for name, priority in (("low", 1), ("mid", 4), ("high", 10)):
            self.run([*sacctmgr, "add", "qos", name, f"priority={priority}"], check=False)
        self.run([*sacctmgr, "modify", "qos", "where", "name=high", "set", "preempt=low,mid"])
        self.run([*sacctmgr, "add", "account", "acct", "cluster=topopreempt"], check=False)
        self.run([*sacctmgr, "add", "user", "root", "account=acct", "cluster=topopreempt",
                  "qos=normal,low,mid,high"], check=False)
        self.run([*sacctmgr, "modify", "user", "root", "set", "qos=normal,low,mid,high"], check=False)
        shown = self.run(["sacctmgr", "-n", "-P", "show", "qos", "format=name,preempt"]).stdout
        if "high|low,mid" not in shown and "high|mid,low" not in shown:
            raise RuntimeError(f"QOS high has no Preempt=low,mid: {shown!r}")

    def write_slurm_conf(self, preempt_type, plan_log, sched_params=None):
        super().write_slurm_conf(preempt_type, plan_log, sched_params)
        with open(self.path("etc", "topopreempt.conf"), "a") as out:
            out.write("relation = qos\n")
        conf_path = self.path("etc", "slurm.conf")
        with open(conf_path) as lines:
            conf = [line for line in lines if not line.startswith(("PartitionName=", "AccountingStorageType="))]
        conf += [
            "AccountingStorageType=accounting_storage/slurmdbd\n",
            "AccountingStorageHost=localhost\n",
            f"AccountingStoragePort={self.dbd_port}\n",
            # For slurmdbd this is the munge socket to authenticate with (not a password).
            f"AccountingStoragePass={self.path('munge', 'munge.socket')}\n",
            "AccountingStorageEnforce=associations,limits,qos\n",
        ]
        # One tier for all: partition priority cannot preempt anything, only the QOS relation.
        for name in ("low", "mid", "high"):
            conf.append(f"PartitionName={name} Nodes=n[0-7] PriorityTier={PARTITION_TIER} PreemptMode=CANCEL "
                        f"MaxTime=INFINITE State=UP{' Default=YES' if name == 'low' else ''}\n")
        with open(conf_path, "w") as out:
            out.writelines(conf)

    def stop_slurm(self):
        """Stops slurmctld and the slurmds between runs; MariaDB and slurmdbd stay up."""
        self.run(["scancel", "--full", "-u", "root"], check=False)
        for name in [n for n in self.processes if n == "slurmctld" or n.startswith("slurmd-")]:
            rs.stop_process_group(self.processes.pop(name))
        self.kill_marked_processes(exclude_daemons=("munged", "slurmdbd", "mariadbd"))

    def submit(self, name, partition, args):
        # The fill's partition names double as its QOS; the preemptor runs in QOS high.
        return super().submit(name, partition, [f"--qos={partition}", *args])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plugin-dir", required=True)
    parser.add_argument("--base-port", type=int, default=18817)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("run_qos.py needs root")
    for tool in ("mariadbd", "mariadb-install-db", "slurmdbd", "sacctmgr"):
        if not shutil.which(tool):
            sys.exit(f"run_qos.py needs {tool} (Debian packages mariadb-server, slurmdbd)")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    root = tempfile.mkdtemp(prefix="topopreempt-slurm.")
    os.chmod(root, 0o755)
    cluster = QosCluster(root, os.path.abspath(args.plugin_dir), args.base_port)
    failures, records, plans = [], {}, []
    try:
        cluster.write_files()
        cluster.start_munge()
        # sacctmgr finds slurmdbd through slurm.conf: write it before the accounting is set up.
        cluster.write_slurm_conf("preempt/qos", cluster.path("plans-none.jsonl"))
        cluster.start_database()
        cluster.start_slurmdbd()
        cluster.add_accounting()
        for mode, preempt_type in (("stock", "preempt/qos"), ("topopreempt", "preempt/topopreempt")):
            scenario = rs.scenario_node()
            plan_log = cluster.path(f"plans-{mode}.jsonl")
            rs.log(f"qos {mode}: slurmctld -c + {len(rs.NODES)} slurmd with {preempt_type}")
            cluster.start_slurm(preempt_type, plan_log)
            records[mode] = rs.run_scenario(cluster, scenario, mode)
            if mode == "topopreempt":
                plans = rs.read_plans(plan_log)
            rs.log(f"qos {mode:12s} victims={records[mode]['victims']} started={records[mode]['started']}")
            cluster.stop_slurm()
        evaluate(records, plans, failures)
    except BaseException as error:  # noqa: BLE001 - report, then clean up, then fail
        failures.append(f"{type(error).__name__}: {error}")
        rs.log(f"FAIL  {type(error).__name__}: {error}")
        cluster.print_log_tails(("slurmctld.log", "slurmdbd.log", "slurmdbd.stdout", "mariadbd.stdout"), 25)
    finally:
        survivors = cluster.stop_all()
        if survivors:
            rs.log(f"{len(survivors)} process(es) outlived their daemons and were killed")
        left = cluster.settled_marked_processes()
        rs.check(not left, f"no process of ours left running, MariaDB and slurmdbd included ({len(left)} found)",
                 failures)
        shutil.rmtree(root, ignore_errors=True)
    if failures:
        rs.log(f"{len(failures)} failure(s):\n  " + "\n  ".join(failures))
        return 1
    rs.log("QOS checks passed")
    return 0


def qos_cost(name):
    """The fill job's partition name is its QOS."""
    return QOS_PRIORITY[rs.partition_of(name)] + PARTITION_TIER + rs.PRIORITY_OFFSET


def evaluate(records, plans, failures):
    s, t = records["stock"], records["topopreempt"]
    check = rs.check
    check(s["layout"] == t["layout"], "qos: both runs start from the identical layout", failures)
    check(s["started"], f"qos: preempt/qos started the high-QOS preemptor ({s['victims']})", failures)
    check(t["started"], f"qos: preempt/topopreempt started the high-QOS preemptor ({t['victims']})", failures)
    mine = [p for p in plans if p["preemptor"] == t["preemptor"] and p["imposed"]]
    check(bool(mine), "qos: the plugin imposed a plan from the QOS relation", failures)
    if mine:
        planned = sorted(v["job_id"] for v in mine[-1]["victims"])
        check(planned == t["victim_ids"], f"qos: Slurm preempted exactly the plan {planned} "
              f"(preempted {t['victim_ids']})", failures)
    ours = sum(qos_cost(v) for v in t["victims"])
    stock = sum(qos_cost(v) for v in s["victims"])
    check(ours <= stock, f"qos: victim cost {ours:g} <= preempt/qos's {stock:g}", failures)


if __name__ == "__main__":
    sys.exit(main())
