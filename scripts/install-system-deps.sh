#!/usr/bin/env bash
# System packages the test suite needs: Debian's chromium (browser tests), Java 17 (the real Spark
# History Server), PostgreSQL server binaries (throwaway test database). Installs what is missing.
set -euo pipefail
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
need=()
command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need+=(chromium)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
java -version 2>&1 | head -1
chromium --version 2>/dev/null || /usr/bin/chromium --version
