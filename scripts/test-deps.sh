#!/usr/bin/env bash
# Installs the Debian packages the test suite drives for real: fuse3 (the
# fusermount path of the FUSE mount), awscli and rclone (real S3 clients
# against the gateway), chromium (the console's browser tests), docker-compose
# (to check docker-compose.yml; there is no Docker engine), rsync (the mount's
# rsync round trip), python3-boto3 (boto3's presigned POST and URLs against
# the gateway), git and sqlite3 (a repository cloned into and out of the
# mount, a database made and queried on it), acl (setfacl and getfacl on the
# mount), util-linux's flock (locks across two mounts). Only what is missing is
# installed; without root or apt the tests that need a package skip and say
# so.
set -uo pipefail
need=()
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)
[ -x /usr/bin/aws ] || need+=(awscli)
command -v rclone >/dev/null 2>&1 || need+=(rclone)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
command -v rsync >/dev/null 2>&1 || need+=(rsync)
command -v git >/dev/null 2>&1 || need+=(git)
command -v sqlite3 >/dev/null 2>&1 || need+=(sqlite3)
/usr/bin/python3 -c 'import boto3' >/dev/null 2>&1 || need+=(python3-boto3)
command -v setfacl >/dev/null 2>&1 || need+=(acl)
command -v flock >/dev/null 2>&1 || need+=(util-linux)
command -v curl >/dev/null 2>&1 || need+=(curl)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "test-deps: cannot install ${need[*]} (needs root and apt-get); their tests will skip" >&2
	exit 0
fi
echo "test-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || true
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1 ||
	echo "test-deps: apt-get install ${need[*]} failed; their tests will skip" >&2
exit 0
