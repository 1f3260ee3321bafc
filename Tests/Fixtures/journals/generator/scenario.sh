#!/bin/bash
# scenario.sh V  — runs the golden-journal scenario against /tmp/golden-bin-vV binaries.
set -u
V=$1
BIN=/tmp/golden-bin-v$V
RUN=/tmp/golden-run-v$V
SRV=/tmp/golden-servers-v$V
T=/tmp/golden-tools
rm -rf $RUN; mkdir -p -m 700 $RUN; mkdir -p $RUN/state $RUN/cache $RUN/files $RUN/out $RUN/listing
set -a; . $SRV/servers.env; set +a
SOCK=$RUN/control.sock
LOG=$RUN/commands.log
: > $LOG
CTL="$BIN/uploadctl --socket $SOCK"
note() { echo "# $*" >> $LOG; echo "== $*" >&2; }
run() { printf '%s\n' "$*" >> $LOG; "$@"; }
# the exact command with the run's paths, logged; prints stdout
ctl() { { printf 'uploadctl'; printf ' %q' "$@"; printf '\n'; } >> $LOG; $CTL "$@"; }
add() { local out; out=$(ctl add "$@"); local rc=$?; printf '%s\n' "$out" | sed 's/^/   -> /' >> $LOG; echo "   (rc $rc)" >> $LOG; printf '%s\n' "$out" | head -1; }
rpc() { printf 'rpc.py SOCKET %q\n' "$1" >> $LOG; python3 $T/rpc.py $SOCK "$1"; }
waitfor() { python3 $T/waitfor.py $BIN/uploadctl $SOCK "$@" || { echo "WAIT FAILED: $*" >&2; }; }

# --- files ---
F=$RUN/files
printf 'hello from uploadd golden journal v%s\n' $V > $F/hello-put.txt
printf 'a photo, pretend\n%.0s' {1..200} > $F/photo-post.jpg
printf 'copied into a local folder\n' > $F/local-copy.txt
head -c 70000 /dev/urandom > $F/small-tus.bin
head -c 12345 /dev/urandom > $F/small-s3.bin
head -c 300000 /dev/urandom > $F/small-chunked.bin
printf 'non-ASCII name\n' > "$F/Ünïcødé café 日本語 ✓.txt"
printf 'added over the socket\n' > $F/socket-token.txt
printf 'wrong password\n' > $F/unauthorized.txt
for n in big-tus-paused big-s3-paused big-chunked-paused big-tus-canceled big-put-running big-chunked-running; do
  head -c 200M /dev/urandom > $F/$n.bin
done
printf 'will be removed\n' > $F/removed-completed.txt
printf 'will be deleted from the server\n' > $F/deleted-put.txt
printf 'the server is busy\n' > $F/busy-retry.txt
printf 'queued post\n' > $F/queued-post.txt
head -c 5000 /dev/urandom > $F/queued-tus.bin
head -c 20000 /dev/urandom > $F/queued-s3.bin
printf 'queued, added over the socket\n' > $F/queued-socket.txt
printf 'paused and resumed many times\n' > $F/long-history.txt
printf 'canceled while queued\n' > $F/canceled-queued.txt
printf 'removed while queued\n' > $F/removed-queued.txt

printf '%s\n' "$UPLOADD_TEST_S3_SECRET_KEY" > $RUN/s3-secret
cat > $RUN/uploadd.conf <<CONF
[daemon]
transfers = 2
rate_limit = 1M
retry_attempts = 8
stall_timeout = 60

[remote golden3]
protocol = s3
url = s3://$UPLOADD_TEST_S3_BUCKET/golden-remote/
endpoint = $UPLOADD_TEST_S3_ENDPOINT
region = $UPLOADD_TEST_S3_REGION
access_key_id = $UPLOADD_TEST_S3_ACCESS_KEY
secret_access_key_file = $RUN/s3-secret
multipart_threshold = 1M
CONF

# 503 server
BUSYPORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
python3 $T/busy503.py $BUSYPORT $RUN/busy503.pid > $RUN/busy503.log 2>&1 &
sleep 0.5

note "daemon: uploadd $V with AWS_* env for the s3:// job"
printf 'AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_ENDPOINT_URL=%s AWS_REGION=%s uploadd --config %s --state-dir %s --cache-dir %s --socket %s --log-level debug\n' \
  "$UPLOADD_TEST_S3_ACCESS_KEY" "$UPLOADD_TEST_S3_SECRET_KEY" "$UPLOADD_TEST_S3_ENDPOINT" "$UPLOADD_TEST_S3_REGION" \
  $RUN/uploadd.conf $RUN/state $RUN/cache $SOCK >> $LOG
AWS_ACCESS_KEY_ID=$UPLOADD_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$UPLOADD_TEST_S3_SECRET_KEY \
AWS_ENDPOINT_URL=$UPLOADD_TEST_S3_ENDPOINT AWS_REGION=$UPLOADD_TEST_S3_REGION \
  setsid $BIN/uploadd --config $RUN/uploadd.conf --state-dir $RUN/state --cache-dir $RUN/cache --socket $SOCK --log-level debug \
  > $RUN/uploadd.log 2>&1 < /dev/null &
echo $! > $RUN/uploadd.pid
for i in $(seq 50); do [ -S $SOCK ] && $CTL status >/dev/null 2>&1 && break; sleep 0.1; done
ctl status

note "A. completed jobs, one at a time"
J_PUT=$(add $F/hello-put.txt --to $UPLOADD_TEST_NGINX_URL/private/golden/ --protocol put --user uploader:s3cret-pass --header 'X-Golden: one' --header 'X-Trace: put-1' --wait)
J_POST=$(add $F/photo-post.jpg --to $UPLOADD_TEST_RECEIVER_URL/form --protocol post --field album=2026 --field 'caption=a b=c' --header 'X-Client: golden' --priority 3 --wait)
J_FILE=$(add $F/local-copy.txt --to file://$RUN/out/ --snapshot copy --wait)
J_TUS=$(add $F/small-tus.bin --to $UPLOADD_TEST_TUS_URL --chunk-size 16K --wait)
J_S3=$(add $F/small-s3.bin --to s3://$UPLOADD_TEST_S3_BUCKET/golden/ --protocol s3 --wait)
J_CHUNK=$(add $F/small-chunked.bin --to $UPLOADD_TEST_RECEIVER_URL/upload --protocol chunked --chunk-size 64K --snapshot copy --wait)
J_UNI=$(add "$F/Ünïcødé café 日本語 ✓.txt" --to $UPLOADD_TEST_NGINX_URL/dav/golden/ --protocol put --snapshot none --wait)
J_SOCK=$(rpc '{"jsonrpc":"2.0","id":1,"method":"job.add","params":{"source":"'$F'/socket-token.txt","destination":"file://'$RUN'/out/","protocol":"file","client_token":"golden-token-completed","metadata":{"album":"2026","device":"phone-ü"},"priority":1,"snapshot":"none"}}' | python3 -c 'import json,sys;print(json.load(sys.stdin)["result"]["id"])')
waitfor $J_SOCK 'j["state"]=="completed"' 30

note "B. a failed job (401: wrong password)"
J_FAIL=$(add $F/unauthorized.txt --to $UPLOADD_TEST_NGINX_URL/private/golden/ --protocol put --user uploader:wrong-password --wait)

note "C. paused mid-upload, one per checkpoint kind"
J_PTUS=$(add $F/big-tus-paused.bin --to $UPLOADD_TEST_TUS_URL --protocol tus --chunk-size 1M --snapshot copy --header 'X-Golden: tus')
J_PS3=$(add $F/big-s3-paused.bin --to golden3:big/ --chunk-size 5M --snapshot none)
waitfor $J_PTUS 'j["bytes_acked"]>=3*1048576' 60
ctl pause $J_PTUS
waitfor $J_PS3 'j["bytes_acked"]>=5*1048576' 90
ctl pause $J_PS3
J_PCH=$(add $F/big-chunked-paused.bin --to $UPLOADD_TEST_RECEIVER_URL/upload --protocol chunked --chunk-size 256K --priority 5 --field token=golden-chunked)
waitfor $J_PCH 'j["bytes_acked"]>=1048576' 60
ctl pause $J_PCH

note "D. canceled mid-upload (tus, checkpoint discarded)"
J_CTUS=$(add $F/big-tus-canceled.bin --to $UPLOADD_TEST_TUS_URL --protocol tus --chunk-size 1M --snapshot none)
waitfor $J_CTUS 'j["bytes_acked"]>=1048576' 60
ctl cancel $J_CTUS
sleep 1

note "E. removed and deleted jobs"
J_REM=$(add $F/removed-completed.txt --to file://$RUN/out/ --wait)
ctl remove $J_REM
J_DEL=$(add $F/deleted-put.txt --to $UPLOADD_TEST_NGINX_URL/dav/golden/ --protocol put --wait)
ctl delete $J_DEL
sleep 1

note "F. a job waiting for a busy server (503, Retry-After)"
J_BUSY=$(add $F/busy-retry.txt --to http://127.0.0.1:$BUSYPORT/busy/ --protocol put --header 'Authorization: Bearer golden-secret-token')
waitfor $J_BUSY 'j["attempts"]>=1 and j["state"]=="queued" and j.get("next_attempt_at")' 30

note "G. two running uploads (killed in flight), queued jobs behind them"
J_RPUT=$(add $F/big-put-running.bin --to $UPLOADD_TEST_NGINX_URL/private/golden/big-put-running.bin --protocol put --user uploader:s3cret-pass --priority 10 --snapshot none)
J_RCH=$(add $F/big-chunked-running.bin --to $UPLOADD_TEST_RECEIVER_URL/upload --protocol chunked --chunk-size 8M --priority 10 --snapshot copy)
waitfor $J_RPUT 'j["state"]=="running" and j["bytes_sent"]>0' 30
waitfor $J_RCH 'j["state"]=="running" and j["bytes_acked"]>=8*1048576' 60
J_QPOST=$(add $F/queued-post.txt --to $UPLOADD_TEST_RECEIVER_URL/form --protocol post --field kind=queued --priority -3)
J_QTUS=$(add $F/queued-tus.bin --to $UPLOADD_TEST_TUS_URL --priority 2)
J_QS3=$(add $F/queued-s3.bin --to golden3:queued/ --protocol s3 --chunk-size 5M --snapshot copy)
J_QSOCK=$(rpc '{"jsonrpc":"2.0","id":2,"method":"job.add","params":{"source":"'$F'/queued-socket.txt","destination":"'$UPLOADD_TEST_NGINX_URL'/dav/golden/","protocol":"put","headers":["X-From: socket"],"fields":[],"client_token":"golden-token-queued","metadata":{"origin":"rpc","n":"7"},"priority":4,"snapshot":"auto"}}')
echo "   -> $J_QSOCK" >> $LOG
J_QSOCK=$(echo "$J_QSOCK" | python3 -c 'import json,sys;print(json.load(sys.stdin)["result"]["id"])')
J_LONG=$(add $F/long-history.txt --to $UPLOADD_TEST_NGINX_URL/dav/golden/ --protocol put --priority -1)
for i in $(seq 12); do ctl pause $J_LONG >/dev/null; ctl resume $J_LONG >/dev/null; done
J_CQ=$(add $F/canceled-queued.txt --to $UPLOADD_TEST_NGINX_URL/dav/golden/ --protocol put)
ctl cancel $J_CQ
J_RQ=$(add $F/removed-queued.txt --to $UPLOADD_TEST_NGINX_URL/dav/golden/ --protocol put)
ctl remove $J_RQ

if [ "$V" -ge 4 ]; then
  note "G2. formats 4 and 5: a prepared image and a batch of small copies, queued behind the running uploads"
  vips gaussnoise $F/photo-prepared.jpg 1200 800
  printf 'small copy %s\n' a > $F/pack-a.txt; printf 'small copy %s\n' b > $F/pack-b.txt
  head -c 3000 /dev/urandom > $F/pack-c.bin
  J_IMG=$(add $F/photo-prepared.jpg --to $UPLOADD_TEST_NGINX_URL/dav/golden/ --protocol put --image max=600,quality=70,strip-gps --priority 1)
  waitfor $J_IMG 'any(h["message"].startswith("prepared:") for h in j.get("history", []))' 60
  J_PACK=$(add $F/pack-a.txt $F/pack-b.txt $F/pack-c.bin --to $UPLOADD_TEST_NGINX_URL/dav/golden/ --protocol put --meta set=packed)
  ctl move $((J_PACK + 2)) --before $J_PACK   # a rank of its own
fi

cat > $RUN/ids.env <<IDS
J_PUT=$J_PUT
J_POST=$J_POST
J_FILE=$J_FILE
J_TUS=$J_TUS
J_S3=$J_S3
J_CHUNK=$J_CHUNK
J_UNI=$J_UNI
J_SOCK=$J_SOCK
J_FAIL=$J_FAIL
J_PTUS=$J_PTUS
J_PS3=$J_PS3
J_PCH=$J_PCH
J_CTUS=$J_CTUS
J_REM=$J_REM
J_DEL=$J_DEL
J_BUSY=$J_BUSY
J_RPUT=$J_RPUT
J_RCH=$J_RCH
J_QPOST=$J_QPOST
J_QTUS=$J_QTUS
J_QS3=$J_QS3
J_QSOCK=$J_QSOCK
J_LONG=$J_LONG
J_CQ=$J_CQ
J_RQ=$J_RQ
J_IMG=${J_IMG:-}
J_PACK=${J_PACK:-}
IDS
note "H. listing, then SIGKILL right after"
# wait just after a chunked block was acknowledged, so nothing moves between the listing and the kill
sleep 1
python3 - $BIN/uploadctl $SOCK $J_RCH <<'PY'
import json, subprocess, sys, time
ctl, sock, jid = sys.argv[1:4]
def acked():
    return json.loads(subprocess.run([ctl, "--socket", sock, "--json", "show", jid], capture_output=True, text=True).stdout)["bytes_acked"]
a = acked()
while acked() == a: time.sleep(0.05)
PY
sleep 0.5
$CTL --json list > $RUN/listing/list.json
for id in $(python3 -c 'import json,sys;print(" ".join(str(j["id"]) for j in json.load(open(sys.argv[1]))["jobs"]))' $RUN/listing/list.json); do
  $CTL --json show $id > $RUN/listing/show-$id.json
done
$CTL --json status > $RUN/listing/status.json
kill -KILL $(cat $RUN/uploadd.pid)
echo "kill -KILL \$(pidof uploadd)  # right after the listing" >> $LOG
sleep 0.5
cp -p $RUN/state/journal $RUN/journal.raw
sha256sum $RUN/journal.raw
ls -la $RUN/state $RUN/cache
