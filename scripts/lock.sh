#!/usr/bin/env bash
# Refresh the dependency locks from pyproject.toml (Python 3.11 on Linux, every file's hash):
#   requirements/test.txt  everything the tests need (.[test]): README's test command, .ci/run
#   requirements/app.txt   what the Docker image runs (.[hosting]: the app with gunicorn,
#                          Celery and Redis's client), at the same versions
# Run after changing dependencies in pyproject.toml, or to take newer releases:
#   scripts/lock.sh            # keep what is locked where pyproject.toml still allows it
#   scripts/lock.sh --upgrade  # newest releases pyproject.toml allows
# Needs uv (in the test extra). Then run the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
UV="${UV:-uv}"
common=(--generate-hashes --python-version 3.11 --python-platform linux --quiet "$@")
"$UV" pip compile pyproject.toml --extra test "${common[@]}" -o requirements/test.txt
"$UV" pip compile pyproject.toml --extra hosting -c requirements/test.txt "${common[@]}" \
  -o requirements/app.txt
