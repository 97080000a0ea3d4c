#!/usr/bin/env bash
# The hosted render API in five steps: start `vid server`, create a user and an API key,
# upload a project zip, submit a render, poll it, download the video.
# Run from the repository root:  bash examples/server_quickstart.sh [project-dir] [output.mp4]
set -euo pipefail
project="${1:-examples/hello}"
output="${2:-renders/quickstart.mp4}"
data="$(mktemp -d)"
vid() { npx --yes deno@2 run -A cli.ts "$@"; }

# 1. An account and an API key (the key is printed once).
vid server users add me@example.com --password 'a long password' --data-dir "$data" >/dev/null
key="$(vid server keys create me@example.com --data-dir "$data")"

# 2. Start the server on a free port and read its address.
# Its own process group (job control on), so the exit trap stops npx, deno and the server.
set -m
vid server --port 0 --data-dir "$data" >"$data/server.log" 2>&1 &
server_pid=$!
set +m
trap 'kill -- -$server_pid 2>/dev/null || true; wait $server_pid 2>/dev/null || true; rm -rf "$data"' EXIT
until grep -q "listening on" "$data/server.log"; do sleep 0.2; done
api="$(grep -o 'http://[^ ]*' "$data/server.log" | head -1)"
auth="Authorization: Bearer $key"

# 3. Zip the project and upload it straight to storage through the signed upload URL.
zip_file="$data/project.zip"
(cd "$project" && zip -qr "$zip_file" .)
size="$(wc -c <"$zip_file" | tr -d ' ')"
asset="$(curl -sf -H "$auth" -H 'content-type: application/json' \
  -d "{\"size_bytes\": $size}" "$api/v3/assets")"
curl -sf -X PUT --data-binary "@$zip_file" "$(jq -r .upload_url <<<"$asset")" >/dev/null
asset_id="$(jq -r .asset_id <<<"$asset")"

# 4. Submit a render with variables, then poll until it terminates.
render_id="$(curl -sf -H "$auth" -H 'content-type: application/json' \
  -d "{\"asset_id\": \"$asset_id\", \"variables\": {\"title\": \"Rendered by vid server\"}}" \
  "$api/v3/vid/renders" | jq -r .render_id)"
while :; do
  render="$(curl -sf -H "$auth" "$api/v3/vid/renders/$render_id")"
  status="$(jq -r .status <<<"$render")"
  echo "render $render_id: $status $(jq -r .progress <<<"$render")"
  [ "$status" = completed ] && break
  [ "$status" = failed ] && { jq -r .error <<<"$render"; exit 1; }
  sleep 1
done

# 5. Download the video through its short-lived signed URL.
mkdir -p "$(dirname "$output")"
curl -sf -o "$output" "$(jq -r .video_url <<<"$render")"
echo "downloaded $output"
