#!/usr/bin/env bash
# A single-node SLURM 22.05 (Debian's packages) on this machine, for the SLURM test and for
# trying `hydra/launcher=slurm` without a cluster. Root only; idempotent.
#
#   scripts/slurm-local.sh up       # install (apt) if needed, configure, start; waits for the node
#   scripts/slurm-local.sh status   # daemons, sinfo, and whether sacct answers
#   scripts/slurm-local.sh down     # stop the daemons this script starts (by their pid files)
#
# One node (the short hostname, at 127.0.0.1) with CPUs=$(nproc) and RealMemory a little under
# the total, one partition `debug` (the default), auth/munge, proctrack/linuxproc, task/none
# (no cgroups needed), select/cons_tres with CR_CPU, SlurmUser=root.
#
# Job accounting: a local slurmdbd on MariaDB, so that `sacct` answers. submitit polls job
# states with `sacct`; without accounting every poll warns "Bypassing sacct error ...
# accounting storage is disabled", and a job cancelled with `scancel` (which never writes its
# result file) is never seen as finished: the launching command would wait for it forever.
# See docs/cluster.md.
#
# Environment: SLURM_LOCAL_CLUSTER (cluster name, default `local`), SLURM_LOCAL_KILLWAIT
# (seconds between SIGTERM and SIGKILL on scancel/timeout, default 5; submitit's jobs ignore
# SIGTERM, so this is how long a cancelled job keeps running).
set -euo pipefail

CLUSTER=${SLURM_LOCAL_CLUSTER:-local}
KILLWAIT=${SLURM_LOCAL_KILLWAIT:-5}
PACKAGES=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server)
CONF_DIR=/etc/slurm
LOG_DIR=/var/log/slurm
STATE_DIR=/var/lib/slurm
MARKER="# written by delusion_bayes scripts/slurm-local.sh"
CHANGED=0

say() { echo "slurm-local: $*"; }
die() { echo "slurm-local: error: $*" >&2; exit 2; }

usage() {
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

preflight() {
  [ "$(uname -s)" = Linux ] || die "runs on Linux only (Debian's slurm packages); this is $(uname -s)"
  [ "$(id -u)" = 0 ] || die "must run as root (it installs packages, writes /etc/slurm and \
starts munged, slurmdbd, slurmctld and slurmd); try: sudo $0 $*"
}

# --- install --------------------------------------------------------------------------------
have_all() {
  local b
  for b in munged slurmctld slurmd slurmdbd sinfo sacct sacctmgr mariadbd; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || return 1
  done
}

install_packages() {
  have_all && return 0
  command -v apt-get >/dev/null 2>&1 || die "SLURM is not installed and there is no apt-get to \
install it (needs Debian's ${PACKAGES[*]})"
  local t0=$SECONDS
  say "installing ${PACKAGES[*]} (apt)"
  # the packages' postinst scripts try to start services; there is no init system to do it here
  # (and no config yet): policy-rc.d says no, we start the daemons ourselves below
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod 755 "$policy"; made_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/tmp/slurm-local-apt.log 2>&1; then
    apt-get update -qq >>/tmp/slurm-local-apt.log 2>&1 || true
    apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >>/tmp/slurm-local-apt.log 2>&1 \
      || { [ "$made_policy" = 1 ] && rm -f "$policy"; tail -20 /tmp/slurm-local-apt.log >&2;
           die "apt-get install ${PACKAGES[*]} failed (log: /tmp/slurm-local-apt.log)"; }
  fi
  [ "$made_policy" = 1 ] && rm -f "$policy"
  have_all || die "installed, but a daemon or client is still missing (log: /tmp/slurm-local-apt.log)"
  say "installed in $((SECONDS - t0)) s"
}

# --- configure ------------------------------------------------------------------------------
write_if_ours() {  # write_if_ours FILE MODE < content: leave a file someone else wrote alone
  local file=$1 mode=$2 tmp
  tmp=$(mktemp)
  cat >"$tmp"
  if [ -e "$file" ] && ! grep -qF "$MARKER" "$file"; then
    rm -f "$tmp"
    die "$file exists and was not written by this script; move it away first (this script \
configures a throw-away single-node SLURM, not a real one)"
  fi
  if ! cmp -s "$tmp" "$file" 2>/dev/null; then
    install -m "$mode" -o root -g root "$tmp" "$file"
    say "wrote $file"
    CHANGED=1  # daemons already running read the old one: up restarts them
  fi
  rm -f "$tmp"
}

configure() {
  local host cpus mem_mb real
  host=$(hostname -s)
  cpus=$(nproc)
  mem_mb=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
  real=$(( mem_mb * 95 / 100 ))  # a little under the total, or slurmd drains the node
  mkdir -p "$CONF_DIR" "$LOG_DIR" "$STATE_DIR/slurmctld" "$STATE_DIR/slurmd"
  write_if_ours "$CONF_DIR/slurm.conf" 644 <<EOF
$MARKER
ClusterName=$CLUSTER
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
KillWait=$KILLWAIT
StateSaveLocation=$STATE_DIR/slurmctld
SlurmdSpoolDir=$STATE_DIR/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$real State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  # slurmdbd refuses a config others can read (it may hold a password; this one holds none)
  write_if_ours "$CONF_DIR/slurmdbd.conf" 600 <<EOF
$MARKER
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=root
StorageLoc=slurm_acct_db
LogFile=$LOG_DIR/slurmdbd.log
PidFile=/run/slurmdbd.pid
EOF
  if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    if command -v mungekey >/dev/null 2>&1; then
      mungekey --create --keyfile=/etc/munge/munge.key
    else
      dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
    fi
    say "made /etc/munge/munge.key"
  fi
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  chmod 755 /run/munge
}

# --- start / stop ---------------------------------------------------------------------------
alive() {  # alive PIDFILE: the daemon it names runs (not a zombie, not a reused pid)
  local pid comm state
  [ -s "$1" ] || return 1
  pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
  [ "$state" != Z ] || return 1
  case "$comm" in munged|mariadbd|mysqld|slurmdbd|slurmctld|slurmd) return 0 ;; esac
  return 1
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...
  local limit=$1 what=$2
  shift 2
  local t=0
  until "$@" >/dev/null 2>&1; do
    t=$((t + 1))
    [ "$t" -le $((limit * 2)) ] || return 1
    sleep 0.5
  done
}

start_munge() {
  if alive /run/munge/munged.pid; then return 0; fi
  runuser -u munge -- /usr/sbin/munged --force
  wait_for 10 munged munge -n </dev/null || die "munged did not start (see /var/log/munge/munged.log)"
  say "munged started"
}

start_mariadb() {
  if alive /run/mysqld/mysqld.pid && mariadb -e 'select 1' >/dev/null 2>&1; then return 0; fi
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
  if [ ! -d /var/lib/mysql/mysql ]; then
    mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/tmp/slurm-local-mariadb.log 2>&1
  fi
  # small buffers: a job accounting database of a few rows
  (cd / && setsid nohup /usr/sbin/mariadbd --user=mysql --pid-file=/run/mysqld/mysqld.pid \
     --socket=/run/mysqld/mysqld.sock --bind-address=127.0.0.1 --skip-networking=0 \
     --innodb-buffer-pool-size=32M --innodb-log-file-size=16M --performance-schema=OFF \
     >>/var/log/slurm/mariadb.log 2>&1 </dev/null &)
  wait_for 60 mariadb mariadb -e 'select 1' || die "MariaDB did not start (see $LOG_DIR/mariadb.log)"
  say "mariadb started"
}

restart_if_changed() {  # restart_if_changed NAME PIDFILE: a running daemon with an old config
  if [ "$CHANGED" = 1 ] && alive "$2"; then stop_pidfile "$1" "$2"; fi
}

start_slurmdbd() {
  restart_if_changed slurmdbd /run/slurmdbd.pid
  if ! alive /run/slurmdbd.pid; then
    /usr/sbin/slurmdbd
    say "slurmdbd started"
  fi
  wait_for 60 slurmdbd sacctmgr -n list cluster \
    || die "slurmdbd does not answer (see $LOG_DIR/slurmdbd.log)"
  if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
    sacctmgr -i add cluster "$CLUSTER" >/dev/null
    say "cluster $CLUSTER added to the accounting database"
  fi
}

start_slurm() {
  restart_if_changed slurmd /run/slurmd.pid
  restart_if_changed slurmctld /run/slurmctld.pid
  if ! alive /run/slurmctld.pid; then /usr/sbin/slurmctld; say "slurmctld started"; fi
  wait_for 30 slurmctld scontrol ping || die "slurmctld does not answer (see $LOG_DIR/slurmctld.log)"
  if ! alive /run/slurmd.pid; then /usr/sbin/slurmd; say "slurmd started"; fi
  local host state
  host=$(hostname -s)
  node_idle() { sinfo -h -n "$host" -o %t | grep -Eq '^(idle|mix|alloc)'; }
  if ! wait_for 30 node node_idle; then
    state=$(sinfo -h -n "$host" -o %t 2>/dev/null || true)
    # a node drained by an earlier run (e.g. killed daemons) comes back here
    scontrol update nodename="$host" state=resume >/dev/null 2>&1 || true
    wait_for 15 node node_idle || die "node $host is '$state', not idle (see $LOG_DIR/slurmd.log)"
  fi
}

check_sacct() {
  sacct -n -X -o JobID --starttime now >/dev/null 2>&1
}

up() {
  local t0=$SECONDS
  install_packages
  configure
  start_munge
  start_mariadb
  start_slurmdbd
  start_slurm
  check_sacct || die "sacct does not answer: job accounting is not running"
  say "up in $((SECONDS - t0)) s: $(sinfo -h -o '%P %D node(s) %t cpus=%c mem=%m' | head -1)"
}

stop_pidfile() {  # stop_pidfile NAME PIDFILE
  local name=$1 file=$2 pid i
  alive "$file" || return 0
  pid=$(cat "$file")
  kill "$pid" 2>/dev/null || true
  for i in $(seq 1 40); do alive "$file" || break; sleep 0.25; done
  if alive "$file"; then kill -9 "$pid" 2>/dev/null || true; fi
  say "$name stopped"
}

down() {
  stop_pidfile slurmd /run/slurmd.pid
  stop_pidfile slurmctld /run/slurmctld.pid
  stop_pidfile slurmdbd /run/slurmdbd.pid
  stop_pidfile mariadb /run/mysqld/mysqld.pid
  stop_pidfile munged /run/munge/munged.pid
  say "down"
}

status() {
  local rc=0 d
  for d in munged:/run/munge/munged.pid mariadb:/run/mysqld/mysqld.pid \
           slurmdbd:/run/slurmdbd.pid slurmctld:/run/slurmctld.pid slurmd:/run/slurmd.pid; do
    if alive "${d#*:}"; then say "${d%%:*} running (pid $(cat "${d#*:}"))"
    else say "${d%%:*} not running"; rc=1; fi
  done
  if command -v sinfo >/dev/null 2>&1; then sinfo 2>&1 || rc=1; fi
  if check_sacct; then say "sacct answers"; else say "sacct does not answer"; rc=1; fi
  return $rc
}

cmd=${1:-}
case "$cmd" in
  up) preflight "$@"; up ;;
  down) preflight "$@"; down ;;
  status) status ;;
  *) usage ;;
esac
