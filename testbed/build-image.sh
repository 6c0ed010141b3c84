#!/usr/bin/env bash
# Builds the testbed's node image locally: no container registry is reachable,
# so the root filesystem comes from debootstrap and is imported into podman.
# The image is rebuilt only when this script changes (its hash is the tag).
set -euo pipefail
script=$(realpath "$0")
cd "$(dirname "$script")"

image=localhost/stretch-kafka-node
recipe=$(sha256sum "$script" | cut -c1-12)
if podman image exists "$image:$recipe"; then
  exit 0
fi

# Java is baked in to save every container the same 200 MB install; the
# kafka_install role still declares it, as it must on a real host.
include=sudo,openssh-server,systemd,systemd-sysv,dbus,python3,python3-apt,iproute2,procps,ca-certificates,openjdk-17-jre-headless
rootfs=$(mktemp -d /var/tmp/stretch-kafka-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT

echo "build-image: debootstrap bookworm into $rootfs"
debootstrap --variant=minbase --include="$include" bookworm "$rootfs" >/dev/null

# Units that make no sense in a container and slow its boot.
for unit in getty@tty1.service console-getty.service systemd-udevd.service \
            systemd-udev-trigger.service systemd-logind.service apt-daily.timer \
            apt-daily-upgrade.timer; do
  ln -sf /dev/null "$rootfs/etc/systemd/system/$unit"
done
rm -rf "$rootfs"/var/cache/apt/archives/*.deb

tar -C "$rootfs" -c . | podman import \
  --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' - "$image:$recipe" >/dev/null
podman tag "$image:$recipe" "$image:latest"
echo "build-image: built $image:$recipe"
