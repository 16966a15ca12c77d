#!/usr/bin/env bash
# stream.sh NAME -- <quire eval args...>: one relay + one quire eval run, logs under $LIVE_DIR/NAME (default ./live/NAME)
set -u
name=$1; shift; [ "$1" = "--" ] && shift
d=${LIVE_DIR:-$PWD/live}/$name; mkdir -p $d/spool
python3 ${RELAY:-relay.py} serve --spool $d/spool --portfile $d/port --timeout 3600 > $d/relay.log 2>&1 &
echo $! > $d/relay.pid
for i in $(seq 50); do [ -s $d/port ] && break; sleep 0.2; done
port=$(cat $d/port)
OPENAI_API_KEY=relay-not-a-key ${QUIRE:-quire} --home ${QUIRE_LIVE_HOME:-$PWD/live-home} --base-url http://127.0.0.1:$port/v1 --model relay \
  -c model.request_timeout_secs=1800 -c model.max_attempts=1 -c model.stream_idle_timeout_secs=1800 "$@" > $d/quire.out 2> $d/quire.err
echo "exit $?" >> $d/quire.out
# Players waiting for a next request stop at once (play.py show reads it).
touch $d/spool/ENDED
