#!/usr/bin/env bash
# Starts the MongoDB stand-in (mongo-java-server) in the background.
# Usage: tests/mongo-server/start.sh PIDFILE
# Prints the connection URI (mongodb://127.0.0.1:PORT/) on stdout; stop it with
# `kill "$(cat PIDFILE)"`. Builds the launcher with Maven on first use and whenever
# its source or pom.xml is newer than the build.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pidfile="${1:?usage: start.sh PIDFILE}"
cd "$here"
launcher=target/classes/socialite/Launcher.class
if [[ ! -f "$launcher" || ! -f target/classpath.txt \
      || src/main/java/socialite/Launcher.java -nt "$launcher" || pom.xml -nt target/classpath.txt ]]; then
  mvn -q -B compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt >&2
fi
portfile="$(mktemp -u "${TMPDIR:-/tmp}/mongo-stand-in.XXXXXX")"
java -cp "target/classes:$(cat target/classpath.txt)" socialite.Launcher --port-file "$portfile" \
  > "${portfile}.log" 2>&1 &
echo $! > "$pidfile"
for _ in $(seq 1 600); do
  if [[ -s "$portfile" ]]; then
    echo "mongodb://127.0.0.1:$(cat "$portfile")/"
    rm -f "$portfile"
    exit 0
  fi
  if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "the MongoDB stand-in exited:" >&2
    cat "${portfile}.log" >&2
    exit 1
  fi
  sleep 0.1
done
echo "the MongoDB stand-in did not report its port within 60 s" >&2
exit 1
