#!/bin/bash
# compaction-run.sh V JOBID: restarts uploadd V on the scenario's state (after journal.raw was saved),
# drives it past the compaction threshold with pause/resume of JOBID, lists, SIGKILLs, copies the file.
set -u
V=$1; JID=$2
BIN=/tmp/golden-bin-v$V; RUN=/tmp/golden-run-v$V; SRV=/tmp/golden-servers-v$V; T=/tmp/golden-tools
set -a; . $SRV/servers.env; set +a
SOCK=$RUN/control.sock; CTL="$BIN/uploadctl --socket $SOCK"
mkdir -p $RUN/listing-compacted
cmp $RUN/state/journal $RUN/journal.raw || { echo "state journal differs from journal.raw"; exit 1; }
AWS_ACCESS_KEY_ID=$UPLOADD_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$UPLOADD_TEST_S3_SECRET_KEY \
AWS_ENDPOINT_URL=$UPLOADD_TEST_S3_ENDPOINT AWS_REGION=$UPLOADD_TEST_S3_REGION \
  setsid $BIN/uploadd --config $RUN/uploadd.conf --state-dir $RUN/state --cache-dir $RUN/cache --socket $SOCK --log-level debug \
  > $RUN/uploadd-compaction.log 2>&1 < /dev/null &
echo $! > $RUN/uploadd.pid
for i in $(seq 50); do [ -S $SOCK ] && $CTL status >/dev/null 2>&1 && break; sleep 0.1; done
cp -p $RUN/state/journal $RUN/journal.after-start
$CTL status
time python3 $T/compact.py $SOCK $RUN/state/journal $JID
$CTL --json list > $RUN/listing-compacted/list.json
for id in $(python3 -c 'import json,sys;print(" ".join(str(j["id"]) for j in json.load(open(sys.argv[1]))["jobs"]))' $RUN/listing-compacted/list.json); do
  $CTL --json show $id > $RUN/listing-compacted/show-$id.json
done
kill -KILL $(cat $RUN/uploadd.pid)
sleep 0.5
cp -p $RUN/state/journal $RUN/journal.compacted
ls -la $RUN/journal.*
