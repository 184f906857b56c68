#!/usr/bin/env bash
# A real Moodle, its course of students, and `grader serve` as its LTI 1.3 tool, on this machine:
#   scripts/moodle/lti-moodle.sh GRADER DRIVER OUT
# GRADER is the grader, DRIVER the built tests/test_lti_moodle, OUT a folder for the run's record.
# GRADER_MOODLE_SRC names a Moodle source tree (moodle/moodle, which carries its PHP libraries);
# where it is not set or not there, this exits 77 (CTest: skipped), as the real Slurm test does
# without Slurm. Needs Debian's PHP 8.2 (php-cli php-mysql php-xml php-mbstring php-curl php-zip
# php-gd php-intl php-soap), MariaDB 10.11 (mariadb-server) and Chromium; docs/lti.md says more.
#
# GRADER and DRIVER find the exercises and fixtures from where they lie in the build: do not
# rebuild them while it runs (a relinked grader makes its workers fail to start).
# Everything it starts is its own and stopped at the end: a MariaDB on a socket in OUT (no TCP),
# Moodle under PHP's built-in server, `grader serve` (the simulator's lane), each on 127.0.0.1.
# Moodle's source is copied (hard links) into OUT, as its installer writes config.php beside it.
# GRADER_MOODLE_STUDENTS (default 30) students; GRADER_MOODLE_PORT, GRADER_TOOL_PORT.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
grader=${1:?usage: lti-moodle.sh GRADER DRIVER OUT}
driver=${2:?usage: lti-moodle.sh GRADER DRIVER OUT}
out=${3:?usage: lti-moodle.sh GRADER DRIVER OUT}
say() { echo "lti-moodle: $*"; }

src=${GRADER_MOODLE_SRC:-}
if [ -z "$src" ] || { [ ! -f "$src/version.php" ] && [ ! -f "$src/public/version.php" ]; }; then
  say "SKIPPED: no Moodle source (set GRADER_MOODLE_SRC to a checkout of moodle/moodle)"
  exit 77
fi
for tool in php mariadbd mariadb-install-db mariadb; do
  command -v "$tool" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin"
  if ! command -v "$tool" >/dev/null 2>&1; then
    say "SKIPPED: $tool is not installed (apt-get install php-cli php-mysql php-xml php-mbstring php-curl php-zip php-gd php-intl php-soap mariadb-server)"
    exit 77
  fi
done
chromium=${GRADER_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { say "SKIPPED: Chromium is not installed at $chromium"; exit 77; }

students=${GRADER_MOODLE_STUDENTS:-30}
moodle_port=${GRADER_MOODLE_PORT:-8081}
tool_port=${GRADER_TOOL_PORT:-8090}
moodle_url="http://127.0.0.1:$moodle_port"
tool_url="http://127.0.0.1:$tool_port"
password='Student-pass-1'
mkdir -p "$out"
out=$(cd "$out" && pwd)
work="$out/work"
rm -rf "$work"
mkdir -p "$work"

pids=()
cleanup() {
  local pid
  # PHP's server forks its workers: they go with it.
  for pid in "${pids[@]}"; do pkill -P "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# MariaDB of its own: a data folder and a socket in the work folder, no network.
say "starting MariaDB ($(mariadbd --version | sed 's/.*Ver //'))"
mariadb-install-db --no-defaults --datadir="$work/mysql" --user="$(id -un)" \
  --auth-root-authentication-method=socket >"$work/mariadb-install.log" 2>&1
mariadbd --no-defaults --datadir="$work/mysql" --socket="$work/mysql.sock" --skip-networking \
  --pid-file="$work/mysql.pid" --user="$(id -un)" --innodb-flush-log-at-trx-commit=2 \
  >"$work/mariadb.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$work/mysql.sock" ] && break; sleep 0.2; done
mariadb --socket="$work/mysql.sock" -u root -e \
  "CREATE DATABASE moodle DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
   CREATE USER 'moodle'@'localhost' IDENTIFIED BY 'moodle';
   GRANT ALL ON moodle.* TO 'moodle'@'localhost';"

say "copying Moodle's source ($src)"
cp -al "$src" "$work/moodle" 2>/dev/null || cp -a "$src" "$work/moodle"
rm -f "$work/moodle/config.php"
php_options=(-d max_input_vars=5000 -d memory_limit=512M)
say "installing Moodle $(sed -n "s/^\$release *= *'\([^']*\)'.*/\1/p" "$work/moodle/public/version.php" "$work/moodle/version.php" 2>/dev/null | head -1) on PHP $(php -r 'echo PHP_VERSION;') (a few minutes)"
started=$(date +%s)
php "${php_options[@]}" "$work/moodle/admin/cli/install.php" --non-interactive --agree-license \
  --allow-unstable --lang=en --wwwroot="$moodle_url" --dataroot="$work/moodledata" \
  --dbtype=mariadb --dbname=moodle --dbuser=moodle --dbpass=moodle --dbsocket="$work/mysql.sock" \
  --fullname="GPU course" --shortname=gpu --adminuser=admin --adminpass='Admin-pass-1' \
  --adminemail=admin@example.edu --supportemail=admin@example.edu >"$work/moodle-install.log" 2>&1
say "Moodle installed in $(( $(date +%s) - started )) s"
# Moodle refuses to fetch from the loopback by default (its curl security); here the tool is there.
php "${php_options[@]}" "$work/moodle/admin/cli/cfg.php" --name=curlsecurityblockedhosts --set=""
php "${php_options[@]}" "$work/moodle/admin/cli/cfg.php" --name=curlsecurityallowedport --set=""

web_root="$work/moodle"
[ -d "$web_root/public" ] && web_root="$web_root/public"
( cd "$web_root" && PHP_CLI_SERVER_WORKERS=4 exec php "${php_options[@]}" -S "127.0.0.1:$moodle_port" ) \
  >"$work/moodle-web.log" 2>&1 &
pids+=($!)

say "starting grader serve at $tool_url"
"$grader" serve --state "$work/state" --listen "127.0.0.1:$tool_port" --backend sim \
  --lti-url "$tool_url" --rate none >"$work/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$work/serve.log" && break; sleep 0.2; done

say "making the course: $students students, a teacher, the tool, an activity per exercise"
php "${php_options[@]}" "$here/setup.php" "$work/moodle" "$tool_url" "$students" "$password" \
  >"$out/moodle-run.json" 2>"$work/setup.log"
client_id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["client_id"])' "$out/moodle-run.json")
deployment=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["deployment_id"])' "$out/moodle-run.json")
"$grader" lti platform add --moodle "$moodle_url" --client-id "$client_id" \
  --deployment "$deployment" --state "$work/state"
for _ in $(seq 300); do curl -fs -o /dev/null "$moodle_url/login/index.php" && break; sleep 1; done

say "each student launches, submits and reads the gradebook (Chromium)"
status=0
GRADER_MOODLE_RUN="$out/moodle-run.json" GRADER_MOODLE_URL="$moodle_url" \
  GRADER_MOODLE_PASSWORD="$password" GRADER_MOODLE_OUT="$out" GRADER_CHROMIUM="$chromium" \
  "$driver" || status=$?

# What Moodle's gradebook holds, as its database has it: each grade and when it was written.
php "${php_options[@]}" "$here/grades.php" "$work/moodle" "$out/moodle-run.json" >"$out/grades.json"
python3 "$here/figures.py" "$out" | tee "$out/figures.md"
exit "$status"
