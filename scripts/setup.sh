#!/usr/bin/env bash
# Sets up everything dbsweep needs on Debian 12, as root: Debian packages, the
# unprivileged user servers run as, the Python environment (.venv, from uv.lock)
# and the load client (load/, from Cargo.lock). Safe to run again: it only does
# what is missing, so a second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
die() { printf 'setup: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (it installs Debian packages and creates the user 'dbsweep')"

packages=(
  postgresql-15 postgresql-client-15 postgresql-contrib libpq5  # the engine and its client library
  python3 python3-venv                                          # the orchestrator
  build-essential pkg-config ca-certificates git                # the load client and source builds
  dpkg-dev debian-archive-keyring                               # fetching Debian's source packages
  debian-keyring gpg                                            # checking a .dsc fetched from the archive's pool
  bison flex libreadline-dev zlib1g-dev libicu-dev liblz4-dev    # building Postgres from source
  libzstd-dev liburing-dev libssl-dev ccache clang
  procps psmisc                                                 # process inspection in tests
  sysbench libpq-dev                                            # references the load client is checked against (bench/)
  valgrind                                                      # instruction counts per operation
  bolt-19                                                       # BOLT variants (llvm-bolt, merge-fdata); the tests rewrite a toy
  linux-perf                                                    # sampled CPU profiles and flame graphs
  libsqlite3-0 sqlite3 tcl                                      # SQLite: Debian's library and shell; tclsh makes the amalgamation
  mariadb-server mariadb-client mariadb-plugin-rocksdb          # MariaDB: Debian's server, its tools, MyRocks
  cmake libpcre2-dev libfmt-dev                                 # building MariaDB from source (else it downloads PCRE2, {fmt})
  libprotobuf-dev libprotoc-dev protobuf-compiler               # building MySQL from source against Debian's protobuf
  rocksdb-tools                                                 # RocksDB: Debian's db_bench
  libgflags-dev libsnappy-dev libbz2-dev                        # building db_bench from source (with lz4, zstd, zlib above)
  chromium fonts-dejavu-core                                    # the HTML report's test renders it headless
  slurm-client slurmctld slurmd munge                           # studies through Slurm; the tests run a private cluster
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  # dbsweep makes its own clusters; the package's default cluster would only sit there using memory.
  mkdir -p /etc/postgresql-common/createcluster.d
  echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/dbsweep.conf
  export DEBIAN_FRONTEND=noninteractive
  # Nor does the MariaDB package's server start (dbsweep starts its own): a policy that refuses every service
  # start for the install, only where the machine has none of its own (a container's), removed after it.
  policy=/usr/sbin/policy-rc.d
  own_policy=
  if [ ! -e "$policy" ]; then
    own_policy=1
    trap 'rm -f "$policy"' EXIT  # also when the install fails
    printf '#!/bin/sh\n# written by dbsweep setup.sh for the install; removed after it\nexit 101\n' > "$policy"
    chmod 755 "$policy"
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [ -n "$own_policy" ]; then rm -f "$policy"; trap - EXIT; fi
  # Not at the next boot either, where systemd runs the machine.
  if [ -d /run/systemd/system ] && systemctl is-enabled --quiet mariadb.service 2>/dev/null; then
    systemctl disable --now --quiet mariadb.service
  fi
  # Slurm's and munge's daemons too, when this setup installed them: the tests start a private cluster of their
  # own; a machine that is part of a cluster had them installed and configured before.
  for svc in munge slurmctld slurmd; do
    if [[ " ${missing[*]} " == *" $svc "* ]] && [ -d /run/systemd/system ]; then
      systemctl disable --now --quiet "$svc.service" 2>/dev/null || true
    fi
  done
fi

if ! getent passwd dbsweep >/dev/null; then
  say "creating the system user 'dbsweep' (Postgres servers run as it)"
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin dbsweep
fi

# uv, pinned, in a private bootstrap environment (Debian's Python forbids global pip installs).
UV=.tools/bin/uv
if ! [ -x "$UV" ] || [ "$("$UV" --version | cut -d' ' -f2)" != "0.13.8" ]; then
  say "installing uv into .tools/"
  python3 -m venv .tools
  .tools/bin/pip install -q uv==0.13.8
fi
say "syncing the Python environment (.venv) from uv.lock"
"$UV" sync --locked --python python3 -q

CARGO=$(command -v cargo || true)
[ -n "$CARGO" ] || { [ -x "$HOME/.cargo/bin/cargo" ] && CARGO="$HOME/.cargo/bin/cargo"; }
if [ -z "$CARGO" ]; then
  say "installing Rust from Debian's packages"
  apt-get install -y -qq --no-install-recommends cargo rustc >/dev/null
  CARGO=$(command -v cargo)
fi
say "building the load client (load/target/release/dbsweep-load)"
"$CARGO" build --release --locked --quiet --manifest-path load/Cargo.toml \
  || die "the load client did not build; it needs Rust 1.80 or newer ($("$CARGO" --version))"
say "ready: .venv/bin/dbsweep --help"
