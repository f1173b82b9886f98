#!/usr/bin/env bash
# A real Slurm on this one machine, for tests and trials: slurmctld, slurmd and slurmdbd (with its
# own MariaDB, so sacct works) from Debian's packages, every daemon on localhost only, every file
# in one folder ($FAIRSIM_SLURM_DIR, default /tmp/fairsim-slurm). Needs root (Slurm's daemons).
#
#   tests/slurm/local_slurm.sh install   # apt-get install the packages that are absent
#   tests/slurm/local_slurm.sh start     # write the configs, start munge, mariadb, slurmdbd, slurmctld, slurmd
#   tests/slurm/local_slurm.sh env       # the line to eval so that sbatch, squeue, sacct find this Slurm
#   tests/slurm/local_slurm.sh status    # sinfo and the node's GPUs
#   tests/slurm/local_slurm.sh stop      # stop them all (the folder stays, with its logs)
#
# start is idempotent: daemons already running are left running. The node is `localhost` with
# this machine's CPUs and memory (slurmd -C), and 8 GPUs as GRES backed by device files
# (/dev/fgpu0-7, made here: a GRES without files registers 0 GPUs): gpu:t4 on fgpu0-3, gpu:a100
# on fgpu4-7. Accounting tracks gres/gpu per type. Ports: slurmctld 6817, slurmd 6818,
# slurmdbd 6819, MariaDB 3307, each bound to 127.0.0.1 only.
set -euo pipefail

DIR=${FAIRSIM_SLURM_DIR:-/tmp/fairsim-slurm}
CLUSTER=fairsim
PACKAGES=(slurm-wlm slurmdbd munge mariadb-server)
MYSQL_PORT=3307
DBPASS=fairsim-local
# Slurm 22.05's clients (sacctmgr, sbatch) reach munge at its default socket only
MUNGE_SOCKET=/run/munge/munge.socket.2

say() { echo "local_slurm: $*" >&2; }
die() { echo "local_slurm: error: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "needs root (Slurm's daemons run as root here)"; }
alive() { [ -s "$1" ] && kill -0 "$(cat "$1" 2>/dev/null)" 2>/dev/null; }
wait_for() {  # wait_for SECONDS WHAT COMMAND...
    local n=$(($1 * 5)) what=$2; shift 2
    for _ in $(seq "$n"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
    die "$what did not come up; see $DIR/log/"
}

missing() {
    local p out=()
    for p in "${PACKAGES[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || out+=("$p"); done
    echo "${out[@]:-}"
}

cmd_install() {
    local m; m=$(missing)
    [ -z "$m" ] && { say "packages present: ${PACKAGES[*]}"; return; }
    need_root
    say "installing: $m"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $m >/dev/null
}

write_configs() {
    mkdir -p "$DIR"/{state,spool,log,munge,run}
    chmod 755 "$DIR"
    local node mem
    node=$(slurmd -C | head -1)  # NodeName=<host> CPUs=.. Boards=.. SocketsPerBoard=.. ... RealMemory=..
    node=${node#NodeName=* }
    mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
    node=$(sed "s/RealMemory=[0-9]*/RealMemory=$((mem * 9 / 10))/" <<<"$node")  # leave the system some
    cat >"$DIR/slurm.conf" <<CONF
# written by tests/slurm/local_slurm.sh
ClusterName=$CLUSTER
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=6817
# bind to localhost's address (127.0.0.1), not to every address of the machine
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmdPort=6818
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=512
GresTypes=gpu
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
AccountingStorageTRES=gres/gpu,gres/gpu:t4,gres/gpu:a100
AccountingStorageEnforce=associations
JobCompType=jobcomp/none
MinJobAge=30
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
MessageTimeout=20
NodeName=localhost NodeAddr=127.0.0.1 $node Gres=gpu:t4:4,gpu:a100:4 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
    cat >"$DIR/gres.conf" <<CONF
NodeName=localhost Name=gpu Type=t4 File=/dev/fgpu[0-3]
NodeName=localhost Name=gpu Type=a100 File=/dev/fgpu[4-7]
CONF
    cat >"$DIR/slurmdbd.conf" <<CONF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
CommunicationParameters=NoInAddrAny
SlurmUser=root
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$MYSQL_PORT
StorageUser=slurm
StoragePass=$DBPASS
StorageLoc=slurm_acct_db
CONF
    chmod 600 "$DIR/slurmdbd.conf"
    for i in 0 1 2 3 4 5 6 7; do [ -e /dev/fgpu$i ] || mknod /dev/fgpu$i c 1 3; done  # like /dev/null
}

start_munge() {
    alive "$DIR/run/munged.pid" && return
    [ -s "$DIR/munge/munge.key" ] || { dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 2>/dev/null; chmod 400 "$DIR/munge/munge.key"; }
    chmod 755 "$DIR/munge"
    mkdir -p /run/munge && chmod 755 /run/munge
    munged --force --key-file="$DIR/munge/munge.key" --socket="$MUNGE_SOCKET" \
        --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munge.seed"
    wait_for 10 munged munge --socket="$MUNGE_SOCKET" -n
}

start_mariadb() {
    alive "$DIR/run/mariadb.pid" && return
    if [ ! -d "$DIR/mysql/mysql" ]; then
        mariadb-install-db --user=root --datadir="$DIR/mysql" --auth-root-authentication-method=socket >"$DIR/log/mariadb-install.log" 2>&1
    fi
    (mariadbd --user=root --datadir="$DIR/mysql" --socket="$DIR/run/mysql.sock" --pid-file="$DIR/run/mariadb.pid" \
        --port=$MYSQL_PORT --bind-address=127.0.0.1 --log-error="$DIR/log/mariadb.log" \
        --innodb-lock-wait-timeout=900 --innodb-buffer-pool-size=128M >/dev/null 2>&1 &)
    wait_for 60 mariadb mariadb --socket="$DIR/run/mysql.sock" -e "select 1"
    mariadb --socket="$DIR/run/mysql.sock" -e "
        CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DBPASS';
        CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DBPASS';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
}

cmd_start() {
    need_root
    [ -z "$(missing)" ] || die "packages absent: $(missing) (run: $0 install)"
    write_configs
    export SLURM_CONF=$DIR/slurm.conf
    start_munge
    start_mariadb
    if ! alive "$DIR/run/slurmdbd.pid"; then
        slurmdbd || die "slurmdbd did not start; see $DIR/log/slurmdbd.log"
        wait_for 60 slurmdbd sacctmgr -i show cluster
    fi
    # the cluster in accounting before slurmctld registers (sacctmgr is idempotent with -i)
    sacctmgr -i show cluster -n format=cluster | grep -qw $CLUSTER || sacctmgr -i add cluster $CLUSTER >/dev/null
    if ! alive "$DIR/run/slurmctld.pid"; then
        slurmctld || die "slurmctld did not start; see $DIR/log/slurmctld.log"
        wait_for 60 slurmctld scontrol ping
    fi
    if ! alive "$DIR/run/slurmd.pid"; then
        slurmd -N localhost || die "slurmd did not start; see $DIR/log/slurmd.log"
    fi
    wait_for 60 "node localhost" node_up
    # root's association, so that root may submit (AccountingStorageEnforce=associations)
    sacctmgr -i -n show assoc user=root cluster=$CLUSTER format=user | grep -qw root \
        || sacctmgr -i add user root account=root cluster=$CLUSTER >/dev/null 2>&1 || true
    scontrol update nodename=localhost state=resume >/dev/null 2>&1 || true
    say "up: $(sinfo -h -o '%P %a %D %T %G') (SLURM_CONF=$SLURM_CONF)"
}

node_up() { sinfo -h -n localhost -o %T | grep -Eq '^(idle|mixed|allocated)'; }

cmd_stop() {
    export SLURM_CONF=$DIR/slurm.conf
    local d
    for d in slurmd slurmctld slurmdbd mariadb munged; do
        if alive "$DIR/run/$d.pid"; then
            kill "$(cat "$DIR/run/$d.pid" 2>/dev/null)" 2>/dev/null || true
            for _ in $(seq 100); do alive "$DIR/run/$d.pid" || break; sleep 0.2; done
            say "stopped $d"
        fi
    done
}

cmd_env() { echo "export SLURM_CONF=$DIR/slurm.conf"; }

cmd_status() {
    export SLURM_CONF=$DIR/slurm.conf
    sinfo -o '%P %a %D %T %c %m %G'
    scontrol show node localhost | grep -E 'Gres|CfgTRES|State'
}

case "${1:-}" in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    env) cmd_env ;;
    status) cmd_status ;;
    *) echo "usage: $0 install|start|stop|env|status" >&2; exit 2 ;;
esac
